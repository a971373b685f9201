"""A sweep on a real Dask cluster (``dask scheduler`` + two ``dask worker`` processes on
127.0.0.1) whose workers run in other working directories, and one worker SIGKILLed mid-point:
the point is re-run on the other worker, every point's run directory comes back to the client's
sweep directory, and the streams equal those of a serial sweep (seeds depend on the point's
index only). Every wait is bounded."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mixlab.run.context import execute
from mixlab.runfile.store import RunReader
from mixlab.sweep.grid import plan

pytest.importorskip("dask.distributed")

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SPEC = "experiment: toy.gaussian\nname: toy\ndim: 1\nchains: 1\nbudget: {draws: 1000}\n"
# the first point samples for ~0.6 s (~30 µs a draw; the kill comes within one 50 ms poll of
# its run file appearing): a worker is killed in it; the next two are short; the last point
# fails at run time (no draws and no seconds budget)
AXIS = "budget.draws=20000,2000,3000,null"


def _env(**extra) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.update(extra)
    return env


def _wait(cond, timeout: float, what: str, procs=()):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        for p in procs:
            if p.poll() is not None:
                pytest.fail(f"{what}: process {p.args[:3]} exited with {p.returncode}")
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def _running_point(tmp: Path) -> bool:
    """A worker (temporary directory ``tmp``) is in the middle of the long point."""
    for spec in tmp.glob("mixlab-point-*/run/spec.yaml"):
        try:
            if "draws: 20000" in spec.read_text() and (spec.parent / "run.h5").exists():
                return True
        except OSError:  # the directory went away meanwhile
            pass
    return False


@pytest.fixture
def cluster(tmp_path):
    """A scheduler and two no-nanny workers, each in its own working and temporary directory."""
    if not (BIN / "dask").exists():
        pytest.skip("the 'dask' command is not installed next to this Python")
    procs: list[subprocess.Popen] = []
    sched_file = tmp_path / "scheduler.json"
    logs = tmp_path / "logs"
    logs.mkdir()

    def start(args, cwd, name, **env):
        cwd.mkdir(parents=True, exist_ok=True)
        out = open(logs / f"{name}.log", "w")
        p = subprocess.Popen(args, cwd=cwd, env=_env(**env), stdout=out, stderr=subprocess.STDOUT)
        out.close()
        procs.append(p)
        return p

    try:
        start([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
               "--no-dashboard", "--scheduler-file", str(sched_file)], tmp_path / "sched", "sched")
        _wait(lambda: sched_file.exists() and sched_file.stat().st_size > 0, 30,
              "the scheduler file", procs)
        address = json.loads(sched_file.read_text())["address"]
        workers = {}
        for name in ("wa", "wb"):
            home = tmp_path / name
            (home / "tmp").mkdir(parents=True)
            workers[name] = (start([str(BIN / "dask"), "worker", address, "--nthreads", "1",
                                    "--no-nanny", "--no-dashboard", "--host", "127.0.0.1",
                                    "--name", name, "--local-directory", str(home / "local")],
                                   home, name, TMPDIR=str(home / "tmp")), home)
        from dask.distributed import Client

        with Client(address, timeout="30s") as c:
            c.wait_for_workers(2, timeout=30)
        yield address, workers
    finally:  # workers first (a worker whose scheduler is gone waits for it), then scheduler
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)


def test_worker_killed_mid_point_and_no_shared_directory(tmp_path, cluster):
    address, workers = cluster
    client_dir = tmp_path / "client"
    client_dir.mkdir()
    (client_dir / "toy.yaml").write_text(SPEC)
    sweep = subprocess.Popen([sys.executable, "-m", "mixlab", "sweep", "toy.yaml", AXIS,
                              "--scheduler", address, "-o", "sw", "-q"], cwd=client_dir,
                             env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        # kill the first worker seen running a point (its temporary run directory exists)
        _wait(lambda: any(_running_point(home / "tmp") for _, home in workers.values()), 60,
              "a worker to start a point", [sweep])
        victim = next(n for n, (_, home) in workers.items() if _running_point(home / "tmp"))
        proc = workers[victim][0]
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        out, err = sweep.communicate(timeout=120)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait(timeout=10)
    assert sweep.returncode == 1, err
    assert "3 of 4 point(s) complete (3 run now, 0 already complete), 1 failed" in out
    assert "1 of 4 sweep point(s) failed" in err and "Traceback" not in err
    with open(client_dir / "sw" / "sweep.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["status"] for r in rows] == ["complete"] * 3 + ["failed"]
    assert "give budget.draws or budget.seconds" in rows[3]["error"]
    with RunReader(client_dir / rows[3]["run"]) as failed:  # its run directory came back too
        assert failed.status == "failed"
    rows = rows[:3]
    # the runs came back to the client's (relative) sweep directory, nowhere in the workers'
    for _, home in workers.values():
        assert not (home / "sw").exists()
    survivor = next(home for n, (_, home) in workers.items() if n != victim)
    assert not list((survivor / "tmp").glob("mixlab-point-*"))  # temporary dirs removed
    # byte for byte what a serial sweep of the same points gives: each point run on its own in
    # this process (the spec the sweep's plan gives it), without figures
    serial_dir, specs, _, _ = plan(str(client_dir / "toy.yaml"), (AXIS,), scale="quick",
                                   seed=None, out=str(tmp_path / "serial"))
    for r, spec in zip(rows, specs[:3], strict=True):
        run_dir = client_dir / r["run"]
        serial_run, _ = execute(spec, serial_dir / run_dir.name, quiet=True, render=False)
        with RunReader(run_dir) as a, RunReader(serial_run) as b:
            assert a.status == "complete"
            assert np.array_equal(a.stream("rwm"), b.stream("rwm"))
            assert a.results() == b.results()
    shutil.rmtree(serial_dir)
