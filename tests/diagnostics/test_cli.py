"""diagnose, export and compare through the CLI on real (toy) runs.

The commands run in this process through click's runner (what they print and their exit codes
do not depend on a process of their own, and each fresh process would pay ArviZ's import); the
full-disk case needs a real process for its file size limit and runs in one."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.runfile.store import RunReader

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "experiments" / "toy" / "gaussian.yaml"


def mixlab(*args):
    """``mixlab ARGS`` in this process: (returncode, stdout, stderr) as a subprocess gives them."""
    r = CliRunner().invoke(cli, [str(a) for a in args], prog_name="mixlab")
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception  # a bare traceback in a real process: fail with it
    return subprocess.CompletedProcess(args, r.exit_code, r.stdout, r.stderr)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("diag-cli")
    for seed in (1, 2):
        r = mixlab("run", TOY, "--seed", seed, "--out", d / f"seed{seed}", "-q", "--no-figures",
                   "budget.draws=3000")
        assert r.returncode == 0, r.stderr
    return d


def test_diagnose_json_rows_follow_the_table(runs):
    r = mixlab("diagnose", runs / "seed1", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [list(x) for x in rows] == [["stream", "statistic", "ess_bulk", "ess_tail", "rhat",
                                        "mcse", "ess_per_s"]] * 4
    table = mixlab("diagnose", runs / "seed1").stdout.splitlines()
    assert table[0].split()[:4] == ["stream", "statistic", "ESS", "bulk"]
    for row, line in zip(rows, table[1:5]):
        cells = line.split()
        assert cells[:2] == [row["stream"], row["statistic"]]
        assert float(cells[2]) == pytest.approx(row["ess_bulk"], abs=0.05)
    r = mixlab("diagnose", runs / "seed1", "--stream", "nope")
    assert r.returncode == 2 and "its streams: rwm" in r.stderr


def test_export_round_trip_and_arviz_summary_agrees(runs, tmp_path):
    from mixlab.diagnostics.arviz_quiet import arviz

    az = arviz()
    out = tmp_path / "toy.nc"
    r = mixlab("export", runs / "seed1", "--format", "netcdf", "-o", out)
    assert r.returncode == 0, r.stderr
    idata = az.from_netcdf(out)
    with RunReader(runs / "seed1") as run:
        draws = run.stream("rwm", "samples")
        accept = run.stream_stats("rwm")["accept"]
        spec = run.attrs["spec"]
    assert np.array_equal(idata.posterior["samples"].values, draws)
    assert idata.posterior["samples"].dims[:2] == ("chain", "draw")
    assert np.array_equal(idata.sample_stats["accept"].values, accept.T)
    assert idata.posterior.attrs["mixlab_spec"] == spec
    summary = az.summary(idata, kind="diagnostics")
    rows = json.loads(mixlab("diagnose", runs / "seed1", "--json").stdout)
    for row in rows:
        assert summary.loc[row["statistic"], "ess_bulk"] == pytest.approx(row["ess_bulk"],
                                                                          abs=0.5)
        assert summary.loc[row["statistic"], "r_hat"] == pytest.approx(row["rhat"], abs=0.005)


def _same_inference_data(a, b) -> None:
    for group in ("posterior", "sample_stats"):
        x, y = getattr(a, group), getattr(b, group)
        assert sorted(x.data_vars) == sorted(y.data_vars) and x.attrs == y.attrs
        for v in x.data_vars:
            assert x[v].dims == y[v].dims and x[v].dtype == y[v].dtype, v
            assert np.array_equal(x[v].values, y[v].values), v


def test_zarr_export_holds_what_netcdf_holds(runs, tmp_path, monkeypatch):
    """Zarr through the CLI, and in-process with 700-draw chunks (appended along draw), read
    back as ArviZ says to with zarr 3: the same variables, dims, dtypes, values, attributes."""
    import xarray as xr

    from mixlab.diagnostics import export
    from mixlab.diagnostics.arviz_quiet import arviz

    az = arviz()
    assert mixlab("export", runs / "seed1", "-o", tmp_path / "toy.nc").returncode == 0
    r = mixlab("export", runs / "seed1", "--format", "zarr", "-o", tmp_path / "toy.zarr")
    assert r.returncode == 0, r.stderr
    assert "open_datatree" in r.stdout
    reference = az.from_netcdf(tmp_path / "toy.nc")
    assert reference.posterior.sizes["draw"] == 3000
    _same_inference_data(reference, az.InferenceData.from_datatree(
        xr.open_datatree(tmp_path / "toy.zarr", engine="zarr")))
    monkeypatch.setattr(export, "CHUNK_DRAWS", 700)
    with RunReader(runs / "seed1") as run:
        export.export_zarr(run, None, tmp_path / "chunked.zarr")
    _same_inference_data(reference, az.InferenceData.from_datatree(
        xr.open_datatree(tmp_path / "chunked.zarr", engine="zarr")))
    r = mixlab("export", runs / "seed1", "--format", "zarr", "-o", tmp_path / "toy.zarr")
    assert r.returncode == 2 and "exists" in r.stderr  # never deletes a directory


def test_export_refusals(runs, tmp_path):
    r = mixlab("export", runs / "seed1", "--stream", "nope", "-o", tmp_path / "x.nc")
    assert r.returncode == 2 and "its streams: rwm" in r.stderr
    assert not (tmp_path / "x.nc").exists()
    r = mixlab("export", runs / "seed1", "--stream", "nope", "--format", "zarr", "-o",
               tmp_path / "x.zarr")
    assert r.returncode == 2 and "its streams: rwm" in r.stderr and "Traceback" not in r.stderr
    assert not list(tmp_path.iterdir())


def test_compare_two_seeds_and_a_sweep(runs, tmp_path):
    r = mixlab("compare", runs / "seed1", runs / "seed2", "--metric", "mean_error", "-o",
               tmp_path / "cmp.png", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["spec_differences"] == {"seed": [1, 2]}
    with RunReader(runs / "seed1") as a, RunReader(runs / "seed2") as b:
        want = [a.results()["accept_rate"], b.results()["accept_rate"]]
    assert out["results"]["accept_rate"] == pytest.approx(want)
    assert (tmp_path / "cmp.png").stat().st_size > 10_000
    text = mixlab("compare", runs / "seed1", runs / "seed2", "-r", "accept*").stdout
    assert "accept_rate" in text and "final_mean_error" not in text
    sw = tmp_path / "sw"
    r = mixlab("sweep", TOY, "step=0.3,2.0", "budget.draws=500", "-o", sw, "-q")
    assert r.returncode == 0, r.stderr
    out = json.loads(mixlab("compare", sw, "--json").stdout)
    assert len(out["runs"]) == 2 and out["spec_differences"]["step"] == [0.3, 2.0]
    r = mixlab("compare", runs / "seed1")
    assert r.returncode == 2 and "at least two runs" in r.stderr


def test_diagnostics_figure_for_any_run(runs, tmp_path):
    r = mixlab("plot", runs / "seed1", "--figure", "diagnostics", "-o", tmp_path / "d.png")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "d.png").stat().st_size > 20_000
    assert not (runs / "seed1" / "figures" / "diagnostics.png").exists()   # not by default


def test_export_on_a_full_disk_is_one_message_and_leaves_nothing(runs, tmp_path):
    """RLIMIT_FSIZE makes writes past 16 KiB fail with EFBIG, as a full disk would."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))

    out = tmp_path / "out"
    out.mkdir()
    r = subprocess.run([sys.executable, "-m", "mixlab", "export", str(runs / "seed1"),
                        "--format", "zarr", "-o", str(out / "toy.zarr")],
                       # no bytecode: a .pyc written under the limit would be cut short and
                       # cached, and every later import of that module would fail
                       env=dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1"),
                       capture_output=True,
                       text=True, timeout=300, preexec_fn=limit)
    assert r.returncode == 1, r.stderr
    assert "file size limit was reached" in r.stderr and "nothing was written" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not list(out.iterdir())
