"""Sweeps: one run per grid point, seeded by the point's index, whatever runs it."""

import csv

import numpy as np
import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.launch.launchers import ProcessLauncher
from mixlab.runfile.lock import directory_lock
from mixlab.runfile.store import RunReader
from mixlab.sweep.grid import plan
from mixlab.sweep.launch import run_points, run_sweep

TOY = """
experiment: toy.gaussian
dim: 2
chains: 2
budget: {draws: 300}
sweep:
  grid: {step: [0.2, 1.0], dim: [2, 3]}
  summary: [accept_rate, final_mean_error]
"""


@pytest.fixture
def spec(tmp_path):
    p = tmp_path / "toy.yaml"
    p.write_text(TOY)
    return p


def _streams(csv_path):
    with open(csv_path) as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for r in rows:
        with RunReader(r["run"]) as run:
            out.append((r, run.stream("rwm")))
    return out


def test_cli_sweep_two_keys_and_show(spec, tmp_path):
    r = CliRunner().invoke(cli, ["sweep", str(spec), "step=0.1,0.5", "chains=1,2", "-o",
                                 str(tmp_path / "sw"), "-q"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    rows = _streams(tmp_path / "sw" / "sweep.csv")
    assert len(rows) == 4
    assert [(row["step"], row["chains"]) for row, _ in rows] == [
        ("0.1", "1"), ("0.1", "2"), ("0.5", "1"), ("0.5", "2")]
    assert rows[1][1].shape == (2, 300, 2)
    shown = CliRunner().invoke(cli, ["show", str(tmp_path / "sw")])
    assert shown.exit_code == 0 and "4 point(s)" in shown.output


def test_points_get_distinct_child_seeds(spec, tmp_path):
    sweep_dir, specs, summary, grid = plan(str(spec), ("step=0.5,0.5",), scale="quick", seed=None,
                                           out=str(tmp_path / "s"))
    run_sweep(sweep_dir, specs, grid, summary)
    (a_row, a), (b_row, b) = _streams(sweep_dir / "sweep.csv")
    assert not np.array_equal(a, b)  # same settings, different child SeedSequence


def test_pool_and_dask_localcluster_identical(spec, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    sweep_dir, specs, summary, grid = plan(str(spec), (), scale="quick", seed=None,
                                           out=str(tmp_path / "serial"))
    assert summary == ["accept_rate", "final_mean_error"] and len(specs) == 4
    # the pool's workers are forked copies of this process (no imports to repeat: the figures'
    # modules too, imported here first), the Dask workers fresh interpreters: the points'
    # results depend on neither. The default spawned pool is `mixlab sweep -j 2`'s, tested end
    # to end in tests/sweeps/test_sweep_pool_kill.py.
    import mixlab.plotting  # noqa: F401
    with ProcessLauncher(2, "fork") as launcher, directory_lock(sweep_dir, "sweep"):
        run_points(sweep_dir, specs, grid, summary, launcher)
    pool = _streams(sweep_dir / "sweep.csv")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        d_dir, d_specs, _, _ = plan(str(spec), (), scale="quick", seed=None,
                                    out=str(tmp_path / "dask"))
        run_sweep(d_dir, d_specs, grid, summary, scheduler=cluster.scheduler_address)
    dask = _streams(d_dir / "sweep.csv")
    for (pr, ps), (dr, ds) in zip(pool, dask):
        assert pr["accept_rate"] == dr["accept_rate"]
        assert pr["final_mean_error"] == dr["final_mean_error"]
        assert np.array_equal(ps, ds)


def test_bad_axis_is_usage_error(spec):
    r = CliRunner().invoke(cli, ["sweep", str(spec), "step"])
    assert r.exit_code == 2 and "key.sub=a,b,c" in r.output
    r = CliRunner().invoke(cli, ["sweep", str(spec), "chains=1,0"])
    assert r.exit_code == 2 and "'chains'" in r.output


