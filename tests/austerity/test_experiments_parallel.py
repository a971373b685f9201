"""Austerity experiments under ``mixlab run -j 2``: draw-budgeted tiny Figs 7 and 8 give the
results, curves and streams of ``-j 1`` (timings aside)."""

from pathlib import Path

import h5py
import numpy as np
import pytest

from mixlab.run.context import execute
from mixlab.run.workers import available_cores
from mixlab.spec.resolver import load_spec

SPECS = Path(__file__).resolve().parents[2] / "experiments" / "austerity"
# -j is capped at the cores the process may use: these runs need two workers
pytestmark = pytest.mark.skipif(available_cores() < 2, reason="needs two cores for -j 2")


def _timed(name: str) -> bool:
    return any(w in name for w in ("second", "time", "_sec"))


def contents(run_dir: Path) -> dict:
    """Results, curves, stream datasets and final sampler states, without the timings."""
    out = {}
    with h5py.File(run_dir / "run.h5", "r") as f:
        assert f.attrs["status"] == "complete"

        def visit(name, obj):
            if name.startswith("metrics/") and name.endswith("/x") and _timed(
                    str(obj.parent.attrs.get("x_label", ""))):
                return                                   # a curve against wall time
            if isinstance(obj, h5py.Dataset) and not _timed(name) and (
                    "/_checkpoint/" not in name or "/_checkpoint/state/" in name):
                out[name] = obj[()].tobytes()
        f.visititems(visit)
        out.update({f"results/{k}": np.asarray(v).tobytes()
                    for k, v in f["results"].attrs.items() if not _timed(k)})
        streams = set(f["streams"])
    return out, streams


def same_at_jobs_1_and_2(spec: dict, tmp_path: Path) -> set:
    serial, streams = contents(execute(spec, tmp_path / "j1", quiet=True, render=False)[0])
    par, _ = contents(execute(spec, tmp_path / "j2", quiet=True, render=False, jobs=2)[0])
    assert "in 2 worker processes" in (tmp_path / "j2" / "log.txt").read_text()
    assert par.keys() == serial.keys()
    assert [k for k in serial if par[k] != serial[k]] == []
    return streams


def test_fig7_and_fig8_tiny(tmp_path):
    spec = load_spec(SPECS / "fig7.yaml", overrides=[
        "model.D=12", "minibatch=10", "eps=[0.0,0.2]", "chains=4", "budget.seconds=null",
        "budget.sweeps=40", "burn_in=5", "bins=5", "min_count=10", "block=16"])
    assert same_at_jobs_1_and_2(spec, tmp_path / "f7") == {"exact", "eps=0", "eps=0.2"}
    spec = load_spec(SPECS / "fig8.yaml", overrides=[
        "model.D=9", "minibatch=7", "chains=3", "subsets.M=40", "truth.chains=8",
        "truth.sweeps=400", "truth.burn_in=20", f"truth.cache_dir={tmp_path / 'cache'}",
        "budget.seconds=null", "budget.sweeps=200", "points=10", "block=64",
        "samplers={exact: {method: exact}, eps=0.25: {method: approx, eps: 0.25}}"])
    assert same_at_jobs_1_and_2(spec, tmp_path / "f8") == {"exact", "eps=0.25"}
