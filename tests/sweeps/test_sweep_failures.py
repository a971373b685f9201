"""Sweeps lose nothing: a failing point is listed (status, reason), the others complete, the
command exits 1, and running it again runs only the failed point."""

from __future__ import annotations

import contextlib
import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.plugins import registry
from mixlab.runfile.store import RunReader
from mixlab.spec.schema import Param

REPO = Path(__file__).resolve().parents[2]


def _flaky(ctx):
    p = ctx.params
    if p["x"] == p["fail_at"] and not Path(p["marker"]).exists():
        raise RuntimeError(f"marker {p['marker']} is missing\n(second line of the message)")
    ctx.store.set_result("x2", p["x"] ** 2)


@pytest.fixture(autouse=True)
def flaky_kind():
    """Experiment kind 'test.flaky_point' (in this process only), removed afterwards."""
    registry.experiment("test.flaky_point", schema={
        "x": Param(1.0, float, help="the point's value"),
        "fail_at": Param(2.0, float, help="the value of x that needs the marker file"),
        "marker": Param("", str, help="file that must exist for the point x == fail_at to run"),
    }, help="test only: x squared, failing at x == fail_at until the marker file exists")(_flaky)
    yield
    registry._EXPERIMENTS.pop("test.flaky_point", None)


def _rows(path: Path) -> list[dict]:
    with open(path) as fh:
        return list(csv.DictReader(fh))


def test_failed_point_is_listed_and_rerun_runs_only_it(tmp_path):
    spec = tmp_path / "flaky.yaml"
    spec.write_text("experiment: test.flaky_point\nname: flaky\n"
                    "sweep: {summary: [x2]}\n")
    marker = tmp_path / "marker"
    args = ["sweep", str(spec), "x=1,2,3", "--set", f"marker={marker}", "-o",
            str(tmp_path / "sw"), "-q"]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 1, first.output
    assert "1 of 3 sweep point(s) failed" in first.output
    assert "marker" in first.output and "is missing" in first.output
    rows = _rows(tmp_path / "sw" / "sweep.csv")
    assert [r["status"] for r in rows] == ["complete", "failed", "complete"]
    assert [r["x2"] for r in rows] == ["1.0", "", "9.0"]
    assert rows[1]["error"] == (f"RuntimeError: marker {marker} is missing (second line of the "
                                f"message)")  # one line
    assert rows[0]["error"] == rows[2]["error"] == ""
    shown = CliRunner().invoke(cli, ["show", str(tmp_path / "sw")])
    assert shown.exit_code == 0
    assert "status" in shown.output and "error" in shown.output
    assert "failed" in shown.output and "is missing" in shown.output

    dry = CliRunner().invoke(cli, args + ["--dry-run"])
    assert [line.rsplit("  ", 1)[1] for line in dry.output.splitlines()] == [
        "complete (skipped)", "would resume or re-run", "complete (skipped)"]
    done = [Path(rows[i]["run"]) / "run.h5" for i in (0, 2)]
    before = [(p.stat().st_mtime_ns, p.stat().st_size) for p in done]
    marker.write_text("")
    second = CliRunner().invoke(cli, args)
    assert second.exit_code == 0, second.output
    assert "3 of 3 point(s) complete (1 run now, 2 already complete)" in second.output
    assert [(p.stat().st_mtime_ns, p.stat().st_size) for p in done] == before
    rows = _rows(tmp_path / "sw" / "sweep.csv")
    assert [r["status"] for r in rows] == ["complete"] * 3
    assert [r["x2"] for r in rows] == ["1.0", "4.0", "9.0"]
    with RunReader(rows[1]["run"]) as run:
        assert run.status == "complete"
    third = CliRunner().invoke(cli, args)
    assert third.exit_code == 0 and "(0 run now, 3 already complete)" in third.output


def _mixlab_limited(args: list[str], cwd: Path, fsize: int | None) -> subprocess.CompletedProcess:
    """``mixlab ARGS`` in a subprocess whose files may not grow beyond ``fsize`` bytes (writes
    past it fail with EFBIG, as on a full disk: CPython ignores SIGXFSZ)."""
    code = ("import resource, sys\n"
            f"lim = {fsize!r}\n"
            "if lim is not None:\n"
            "    sys.dont_write_bytecode = True\n"   # a .pyc cut short at the limit is cached
            "    resource.setrlimit(resource.RLIMIT_FSIZE, (lim, lim))\n"
            "from mixlab.cli import main\n"
            "sys.argv = ['mixlab'] + sys.argv[1:]\n"
            "main()\n")
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)


def _mixlab_here(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``mixlab ARGS`` in this process, run from ``cwd`` (a run with no file size limit needs no
    process of its own)."""
    with contextlib.chdir(cwd):
        r = CliRunner().invoke(cli, args, prog_name="mixlab")
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception  # a bare traceback in a real process: fail with it
    return subprocess.CompletedProcess(args, r.exit_code, r.stdout, r.stderr)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_write_failure_fails_only_its_point(tmp_path, workers):
    """A point whose run file cannot be written (full disk) is failed with a reason; the small
    points complete; the same sweep without the limit then finishes only the failed point."""
    (tmp_path / "toy.yaml").write_text("experiment: toy.gaussian\nname: toy\ndim: 2\n"
                                       "chains: 2\nbudget: {draws: 200}\n")
    args = ["sweep", "toy.yaml", "budget.draws=200,10000,300", "-o", "sw", "-q", "-j", workers]
    # the 10,000-draw run's segment needs ~400 kB; the small points' largest file (a figure)
    # is ~40 kB
    first = _mixlab_limited(args, tmp_path, 150_000)
    assert first.returncode == 1, first.stderr
    assert "1 of 3 sweep point(s) failed" in first.stderr
    assert "Traceback" not in first.stderr
    rows = _rows(tmp_path / "sw" / "sweep.csv")
    assert [r["status"] for r in rows] == ["complete", "failed", "complete"], rows
    assert rows[1]["error"] and "\n" not in rows[1]["error"]
    second = _mixlab_here(args, tmp_path)
    assert second.returncode == 0, second.stderr
    assert "(1 run now, 2 already complete)" in second.stdout
    rows = _rows(tmp_path / "sw" / "sweep.csv")
    assert [r["status"] for r in rows] == ["complete"] * 3
    with RunReader(tmp_path / rows[1]["run"]) as run:
        assert run.status == "complete" and run.results()["draws"] == 10000


def test_changed_spec_is_refused_per_point_not_overwritten(tmp_path):
    """Re-running a sweep directory with other --set values never overwrites its runs: each
    point says what is wrong (exit 1) and the old runs stay complete."""
    spec = tmp_path / "flaky.yaml"
    spec.write_text("experiment: test.flaky_point\nname: flaky\nsweep: {summary: [x2]}\n")
    args = ["sweep", str(spec), "x=1,3", "-o", str(tmp_path / "sw"), "-q"]
    assert CliRunner().invoke(cli, args).exit_code == 0
    changed = CliRunner().invoke(cli, args + ["--set", "fail_at=5"])
    assert changed.exit_code == 1 and "holds a run of a different spec" in changed.output
    rows = _rows(tmp_path / "sw" / "sweep.csv")
    assert [r["status"] for r in rows] == ["failed", "failed"]
    for r in rows:
        with RunReader(r["run"]) as run:
            assert run.status == "complete" and run.results()["x2"] in (1.0, 9.0)


def test_sweep_table_write_failure_is_one_message(tmp_path):
    """When even the sweep's own table cannot be written (a full disk), the command says so in
    one message (exit 1) and the same command later completes the sweep."""
    (tmp_path / "toy.yaml").write_text("experiment: toy.gaussian\nname: toy\ndim: 2\n"
                                       "chains: 2\nbudget: {draws: 200}\n")
    args = ["sweep", "toy.yaml", "step=0.5,1.0", "-o", "sw", "-q"]
    first = _mixlab_limited(args, tmp_path, 1)
    assert first.returncode == 1, first.stderr
    assert "cannot write sw/sweep.yaml" in first.stderr and "Traceback" not in first.stderr
    assert "run the same command again" in first.stderr
    assert not list((tmp_path / "sw").glob(".*tmp*"))  # no stray temporary file
    second = _mixlab_here(args, tmp_path)
    assert second.returncode == 0, second.stderr
    assert [r["status"] for r in _rows(tmp_path / "sw" / "sweep.csv")] == ["complete"] * 2


def test_dask_point_scratch_is_removed_when_the_point_ends_fails_or_its_worker_died(
        tmp_path, monkeypatch):
    """A Dask point runs in a temporary directory of its worker: gone when the point completes
    or fails; one left by a killed worker (its pid dead) is removed by the next point."""
    import tempfile

    from mixlab.spec.resolver import resolve
    from mixlab.sweep.point import SCRATCH_PREFIX, run_point_portable

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = tmp_path / f"{SCRATCH_PREFIX}{dead}-abc123"
    (stale / "run" / "segments").mkdir(parents=True)
    (stale / "run" / "run.h5").write_bytes(b"partial")
    live = tmp_path / f"{SCRATCH_PREFIX}{os.getpid()}-def456"   # a point running right now
    live.mkdir()
    other = tmp_path / f"not-mixlab-{dead}-x"
    other.mkdir()
    toy = {"experiment": "toy.gaussian", "name": "toy", "dim": 1, "chains": 1, "block": 50}
    done = run_point_portable(resolve(dict(toy, budget={"draws": 100})), None)
    assert done["status"] == "complete" and done["archive"]
    failed = run_point_portable(resolve(dict(toy, budget={"draws": None})), None)
    assert failed["status"] == "failed"
    assert not stale.exists() and live.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.glob(f"{SCRATCH_PREFIX}*")) == [live.name]


def test_a_second_sweep_on_a_running_sweeps_directory_stops_naming_the_first(tmp_path):
    """While one process runs a sweep's directory (holds its lock), a second on the same
    directory exits 1 at once naming it: it does not run, or record as failed, the points."""
    from mixlab.runfile.lock import directory_lock

    spec = tmp_path / "flaky.yaml"
    spec.write_text("experiment: test.flaky_point\nname: flaky\nsweep: {summary: [x2]}\n")
    out = tmp_path / "sw"
    args = ["sweep", str(spec), "x=1,3", "--set", f"marker={tmp_path}", "-o", str(out), "-q"]
    with directory_lock(out, "sweep"):
        second = CliRunner().invoke(cli, args)
        assert second.exit_code == 1, second.output
        assert f"sweep {out} is being written by pid {os.getpid()}" in second.output
        assert not (out / "sweep.csv").exists()
    assert not (out / "writer.lock").exists()
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0, again.output
    assert [r["status"] for r in _rows(out / "sweep.csv")] == ["complete", "complete"]
    assert not (out / "writer.lock").exists()


def test_a_forked_child_does_not_keep_its_parents_directory_lock(tmp_path):
    """A process forked while the lock is held (a league's pool worker) closes its copy: once
    the holder lets go (or is killed), the next process takes the lock even while the child
    still runs."""
    import multiprocessing

    from mixlab.runfile.lock import RunLock

    holder = RunLock.acquire(tmp_path / "d", "league")
    ctx = multiprocessing.get_context("fork")
    running = ctx.Event()
    child = ctx.Process(target=_set_then_sleep, args=(running,))
    child.start()
    assert running.wait(30)            # the child runs (its fork hooks have run)
    holder.release()                   # as a killed holder: the lock file stays
    try:
        RunLock.acquire(tmp_path / "d", "league").release(remove=True)
    finally:
        child.kill()
        child.join()


def _set_then_sleep(event) -> None:
    import time

    event.set()
    time.sleep(60)
