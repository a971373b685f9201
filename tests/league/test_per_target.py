"""A league sampler's ``per_target`` keys apply to that target's cells only."""

from __future__ import annotations

import pytest

from mixlab.errors import SpecError
from mixlab.league.league import plan
from mixlab.spec.builtin import resolve_spec
from mixlab.spec.resolver import load_spec


def _cells(*overrides):
    spec = load_spec(resolve_spec("league/logistic"), scale="quick",
                     overrides=["targets=[fashion-7v9,synthetic-1e6]", *overrides])
    return {(c["target"]["name"], c["label"]): c["sampler"] for c in plan(spec)[1]}


def test_per_target_keys_reach_only_their_target():
    cells = _cells("samplers.sgld.per_target.fashion-7v9.batch=100")
    assert cells[("fashion-7v9", "rw_mh")] == {"method": "rw_mh", "sigma": 0.01, "m": 500}
    assert cells[("synthetic-1e6", "rw_mh")]["sigma"] == 0.0015
    assert cells[("fashion-7v9", "sgld")]["batch"] == 100
    assert cells[("synthetic-1e6", "sgld")]["batch"] == 500
    assert all("per_target" not in entry for entry in cells.values())


@pytest.mark.parametrize("override, key", [
    ("samplers.rw_mh.per_target.nope.sigma=0.1", "samplers.rw_mh.per_target.nope"),
    ("samplers.rw_mh.per_target.kdd99.method=sgld", "samplers.rw_mh.per_target.kdd99"),
    ("samplers.rw_mh.per_target=3", "samplers.rw_mh.per_target"),
])
def test_a_wrong_per_target_entry_names_its_key(override, key):
    with pytest.raises(SpecError) as err:
        _cells(override)
    assert err.value.key == key


@pytest.mark.parametrize("override, key", [
    ("samplers.rw_mh.sigma=-1", "samplers.rw_mh.sigma"),
    ("samplers.rw_mh.sigmaa=0.1", "samplers.rw_mh.sigmaa"),
    ("samplers.rw_mh.per_target.kdd99.sigma=-1", "samplers.rw_mh.per_target.kdd99.sigma"),
    ("samplers.sgld.per_target.synthetic-1e6.batchh=10",
     "samplers.sgld.per_target.synthetic-1e6.batchh"),
])
def test_a_sampler_key_its_schema_refuses_stops_the_league_at_start(override, key):
    """Checked against the sampler's parameters before any cell runs, also on targets the
    league does not run, and named where it was given."""
    with pytest.raises(SpecError) as err:
        _cells(override)
    assert err.value.key == key
