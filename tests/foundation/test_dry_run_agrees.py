"""``mixlab run --dry-run`` refuses exactly what the run refuses at start, with the same message.

For every shipped spec (experiments/*/*.yaml) and a set of hostile overrides, the same command
line is given twice to the CLI, in this process:

- with ``--dry-run``;
- as a real run into a temporary directory, stopped at the start of its first piece of work:
  ``Context.once`` (a cached stage), ``Context.stream`` (a sampler) or ``Context.rng`` (random
  numbers for anything) raise :class:`StartedWork`. Everything the experiment does before
  that -- loading its data, reading the user's files, checking combinations -- runs for real.

Both must agree: both accepted, or both refused with the same exit code and the same message,
which names the key with its full dotted path. A refusal the run made only after work started
is not covered here; the hostile values below include the ones that used to be refused after
training and sampling (``isl.reference``), which the start-up check now refuses.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import mixlab.data
from mixlab.cli import cli
from mixlab.run.context import Context
from mixlab.spec.resolver import get_dotted, load_spec

REPO = Path(__file__).resolve().parents[2]
# every shipped spec of an experiment kind; a league spec (experiments/league/) is many runs,
# started by the league command's own planner rather than one experiment's start-up
SPECS = sorted(p for p in (REPO / "experiments").glob("*/*.yaml") if p.parent.name != "league")


class StartedWork(BaseException):
    """The run reached its first piece of work: everything before it was accepted."""


def _hostile(tmp: Path) -> list[list[str]]:
    table = tmp / "two.csv"
    rng = np.random.default_rng(0)
    rows = ["a,b,y"] + [f"{x:.4f},{z:.4f},{int(x + z > 0)}"
                        for x, z in rng.standard_normal((40, 2))]
    table.write_text("\n".join(rows) + "\n")
    return [
        [],
        ["isl.reference=nan"],
        ["train.lr_tau=1e30"],
        ["train.trainer=cd", "train.fast_lr=0.1"],
        ["budget.draws=null"],
        ["budget.seconds=null"],
        ["budget.seconds=null", "budget.sweeps=null"],
        ["data.file=/nonexistent/x.csv"],
        [f"data.file={table}", "data.label=y", "data.features=[a,b]"],
        [f"data.file={table}", "data.label=nope"],
        [f"data.file={table}", "data.label=y", "data.test_fraction=0.3",
         f"data.test_file={table}"],
        ["data.classes=[1,2,3]"],
        ["data.classes=[7,70]"],
        ["data.pca=5000"],
        ["data.name=kdd99"],
        ["dims=[0,100000]"],
        ["dims=[0,1,2]"],
        ["summary_dims=[0,99999]"],
        ["model_file=/nonexistent/rbm.h5"],
        ["sequence.length=3", "record=[]"],
        ["subsets.size=400"],
        ["samplers.a/b.method=gibbs"],
        ["grid.rows=40", "grid.cols=40"],
        ["model.file=/nonexistent/sg.npz"],
        ["eps=[]", "samplers={}"],
        ["couplings=[]"],
        ["models=0"],
        ["field=nan"],
        ["sides=[0]"],
        ["perturbations=1e30"],
    ]


@functools.cache
def _resolved(spec_path: Path) -> dict:
    return load_spec(spec_path)


def _applies(spec_path: Path, overrides: list[str]) -> bool:
    """Every overridden key's parent section exists in the spec's resolved form."""
    base = _resolved(spec_path)
    for o in overrides:
        key = o.split("=", 1)[0]
        head = key.split(".")[0]
        if head not in base:
            return False
        if "." in key and key.count(".") > 1 and head != "samplers":
            try:
                get_dotted(base, key.rsplit(".", 1)[0])
            except KeyError:
                return False
    return True


def _outcome(runner: CliRunner, args: list[str]) -> tuple:
    try:
        result = runner.invoke(cli, args)
    except StartedWork:
        return ("accepted",)
    if result.exit_code == 0:
        return ("accepted",)
    return ("refused", result.exit_code, result.output.strip().splitlines()[-1:])


_LOADED: dict = {}


@pytest.fixture
def stop_at_first_work(monkeypatch):
    def stop(*_a, **_k):
        raise StartedWork()

    for name in ("once", "stream", "rng"):
        monkeypatch.setattr(Context, name, stop)
    # the same data set is loaded by many cases: load it once (a cache, not a change)
    real_load = mixlab.data.load

    def load(name, **kw):
        key = (name, repr(sorted(kw.items())))
        if key not in _LOADED:
            _LOADED[key] = real_load(name, **kw)
        return _LOADED[key]

    monkeypatch.setattr(mixlab.data, "load", load)


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_dry_run_and_the_run_start_agree(spec, tmp_path, stop_at_first_work, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    cases = refused = 0
    disagreements = []
    for overrides in _hostile(tmp_path):
        if not _applies(spec, overrides):
            continue
        args = ["run", str(spec), *overrides]
        dry = _outcome(runner, [*args, "--dry-run"])
        real = _outcome(runner, [*args, "-o", str(tmp_path / f"r{cases}")])
        if real[0] == "refused" and real[1] == 1 and "is not installed" in str(real[2]):
            # the spec's data set is neither installed nor in MIXLAB_DATA_MIRROR: its run
            # cannot start here, so there is nothing to compare (the dry run does not look for
            # installed data)
            pytest.skip(f"{spec.parent.name}/{spec.name}: {real[2][0][:300]}")
        cases += 1
        refused += dry[0] == "refused"
        if dry != real:
            disagreements.append(f"{overrides}: dry-run {dry}, run {real}")
    assert not disagreements, "\n".join(disagreements)
    assert cases >= 4 and refused >= 2, (cases, refused)


def test_every_shipped_spec_is_covered():
    assert len(SPECS) >= 20
    assert {p.parent.name for p in SPECS} >= {"rates_fpcd", "perturb_map", "austerity", "toy"}


@pytest.mark.parametrize("overrides, key", [
    (["isl.reference=nan"], "isl.reference"),
    (["train.lr_tau=1e30"], "train.lr_tau"),
    (["sequence.length=3", "record=[]"], "record"),
])
def test_the_dry_run_names_the_full_key(overrides, key):
    r = CliRunner().invoke(cli, ["run", "rates_fpcd/fig2", *overrides, "--dry-run"])
    assert r.exit_code == 2, r.output
    assert f"spec key '{key}'" in r.output, r.output


def test_a_null_budget_is_refused_by_the_dry_run():
    r = CliRunner().invoke(cli, ["run", "toy/gaussian", "budget.draws=null", "--dry-run"])
    assert r.exit_code == 2 and "spec key 'budget.draws'" in r.output, r.output


def test_a_sweep_dry_run_names_the_points_that_would_fail_at_start(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["sweep", "toy/gaussian", "budget.draws=100,null", "--dry-run"])
    assert r.exit_code == 0, r.output
    first, second = r.output.strip().splitlines()
    assert first.endswith("would run")
    assert "would fail at start: spec key 'budget.draws'" in second
    assert not (tmp_path / "runs").exists()


def test_a_league_dry_run_checks_its_samplers_and_targets():
    r = CliRunner().invoke(cli, ["run", "league/mrf", "samplers.a/b.method=gibbs", "--dry-run"])
    assert r.exit_code == 2 and "spec key 'samplers.a/b.method'" in r.output, r.output
    r = CliRunner().invoke(cli, ["run", "league/spinglass", "targets=[nope]", "--dry-run"])
    assert r.exit_code == 2 and "spec key 'targets'" in r.output, r.output
