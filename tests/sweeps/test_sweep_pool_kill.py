"""A local-pool worker SIGKILLed in the middle of a point (the OOM killer, a kill): the point
is re-run (resumed) in a fresh worker and the sweep completes with the streams a serial sweep
gives. Every wait is bounded."""

from __future__ import annotations

import csv
import json
import os
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

REPO = Path(__file__).resolve().parents[2]
SPEC = "experiment: toy.gaussian\nname: toy\ndim: 1\nchains: 1\nbudget: {draws: 1000}\n"
AXIS = "budget.draws=25000,2000,3000"  # point 0 samples for ~0.75 s (~30 µs a draw)


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_pool_worker_killed_mid_point(tmp_path):
    (tmp_path / "toy.yaml").write_text(SPEC)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    sweep = subprocess.Popen([sys.executable, "-m", "mixlab", "sweep", "toy.yaml", AXIS, "-j",
                              "2", "-o", "sw", "-q"], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock = tmp_path / "sw" / "000_draws=25000" / "writer.lock"
    victim = None
    try:
        end = time.monotonic() + 60
        while victim is None and time.monotonic() < end and sweep.poll() is None:
            try:
                pid = int(json.loads(lock.read_text())["pid"])
            except (OSError, ValueError, KeyError):
                time.sleep(0.02)
                continue
            if _parent(pid) == sweep.pid:  # a pool worker of our sweep, running point 0
                victim = pid
        assert victim is not None, "point 0 never started in a pool worker"
        log = lock.with_name("log.txt")
        while time.monotonic() < end and "starting" not in (
                log.read_text() if log.exists() else ""):
            time.sleep(0.02)
        time.sleep(0.2)  # inside its sampling (~0.75 s, after its start-up)
        assert "complete" not in log.read_text(), "point 0 ended before it could be killed"
        os.kill(victim, signal.SIGKILL)
        out, err = sweep.communicate(timeout=180)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait(timeout=10)
    assert sweep.returncode == 0, err
    # every point ran in this sweep, also one that completed before the kill broke its pool
    assert "3 of 3 point(s) complete (3 run now, 0 already complete)" in out, out
    assert "leaked semaphore" not in err, err
    starts = [line for line in log.read_text().splitlines()
              if " starting " in line or " resuming " in line]
    assert len(starts) == 2, log.read_text()  # killed once, run again once
    with open(tmp_path / "sw" / "sweep.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["status"] for r in rows] == ["complete"] * 3
    # each point run on its own in this process (the spec the sweep's plan gives it), without
    # figures: the streams and results a serial sweep gives
    _, specs, _, _ = plan(str(tmp_path / "toy.yaml"), (AXIS,), scale="quick", seed=None,
                          out=str(tmp_path / "serial"))
    for r, spec in zip(rows, specs, strict=True):
        serial_run, _ = execute(spec, tmp_path / "serial" / Path(r["run"]).name, quiet=True,
                                render=False)
        with RunReader(tmp_path / r["run"]) as a, RunReader(serial_run) as b:
            assert np.array_equal(a.stream("rwm"), b.stream("rwm"))
            assert a.results() == b.results()
