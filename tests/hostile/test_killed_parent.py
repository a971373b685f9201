"""A league (or sweep) whose parent process is killed leaves no worker behind, and the same
command then completes with the numbers of an uninterrupted league.

The league runs as a real ``mixlab league ... -j 2`` in a process group of its own. At seeded
random instants after its workers have started, the parent alone gets SIGKILL (or SIGTERM, or
the whole group SIGINT, as Ctrl-C in a terminal sends it). Every process below the parent at
that instant, and any process naming the unique output directory in its command line, must be
gone within a few seconds; after SIGTERM or Ctrl-C the league says it was interrupted (exit
130) and every cell it had started ended at a checkpoint, with its status written. The same
command is then run again to completion, and the
equal-work columns of league.csv (the draw-determined ones) must equal those of an
uninterrupted league.
"""

from __future__ import annotations

import csv
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mixlab.league.report import WORK_COLUMNS

LEAGUE = ["league", "spinglass", "--targets", "attractive-c0.5,mixed-c1.5",
          "--samplers", "gibbs,metropolis", "-j", "2", "-q",
          "seeds=2", "chains=4", "seconds=0.5", "work=2e5", "block=10"]
SWEEP = ["sweep", str(Path(__file__).resolve().parents[2] / "experiments/toy/gaussian.yaml"),
         "step=0.5,1.0,1.5", "-j", "2", "-q", "--set", "budget.draws=100000"]
SAME = WORK_COLUMNS + ("reach_error",)
GONE_SECONDS = 10


def _start(args: list[str], out: Path, env: dict, log: Path) -> subprocess.Popen:
    """The command in a process group of its own; its stderr to ``log`` (a pipe would stay open, and
    a read of it blocked, for as long as a worker outlives the parent)."""
    with open(log, "w") as fh:
        return subprocess.Popen([sys.executable, "-m", "mixlab", *args, "-o", str(out)],
                                env=env, stdout=subprocess.DEVNULL, stderr=fh,
                                start_new_session=True)


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid``: {pid: its start time} (a pid reused later is not it)."""
    out, todo = {}, _children(pid)
    while todo:
        p = todo.pop()
        start = _start_time(p)
        if start is not None:
            out[p] = start
            todo += _children(p)
    return out


def _start_time(pid: int) -> str | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields[19]      # a zombie has ended


def _left(workers: dict[int, str], marker: str) -> list[str]:
    """The recorded workers still alive, and any live process whose command line names
    ``marker`` (forked workers share the parent's; spawned ones are in ``workers``)."""
    found = {p for p, start in workers.items() if _start_time(p) == start}
    for d in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd and _start_time(int(d.name)) is not None:
            found.add(int(d.name))
    return sorted(f"{p}: {_cmdline(p)[:120]}" for p in found)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "(gone)"


def _table(out: Path) -> dict:
    with open(out / "league.csv") as fh:
        return {(r["target"], r["sampler"]): tuple(r[c] for c in SAME)
                for r in csv.DictReader(fh)}


def _kill_after_workers_start(args, out, env, how: str, delay: float) -> None:
    log = out.with_name(f"{out.name}.stderr")
    proc = _start(args, out, env, log)
    deadline = time.monotonic() + 120
    while not _children(proc.pid) and proc.poll() is None:
        assert time.monotonic() < deadline, "the workers never started"
        time.sleep(0.05)
    end = time.monotonic() + delay
    while proc.poll() is None and time.monotonic() < end:
        time.sleep(0.02)
    workers = _descendants(proc.pid)
    try:          # a league that ended before the instant (a fast host) has nothing to kill
        if how == "SIGINT (Ctrl-C)":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, getattr(signal, how))
    except ProcessLookupError:
        pass
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"{how}: the parent did not end within 60 s")
    deadline = time.monotonic() + GONE_SECONDS
    while _left(workers, str(out)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _left(workers, str(out))
    for line in left:                              # never leave them to the next test
        os.kill(int(line.split(":")[0]), signal.SIGKILL)
    assert left == [], f"{how} {delay:.2f}s after {len(workers)} workers started: {left}"
    if how != "SIGKILL":
        said = log.read_text()
        assert "Traceback" not in said, said
        if proc.returncode != 0:      # 0: it ended before the signal
            assert proc.returncode == 130, (how, proc.returncode, said)
            assert "interrupted; run the same command again to resume" in said, said
            _every_cell_stopped_at_a_checkpoint(out, how)


def _every_cell_stopped_at_a_checkpoint(out: Path, how: str) -> None:
    """A cell running when the parent was stopped ended ``interrupted`` (it wrote its last
    checkpoint and its status), not ``running`` as a killed worker leaves it."""
    from mixlab.runfile.store import RunReader

    for h5 in sorted(out.glob("*/run.h5")):
        with RunReader(h5.parent) as r:
            assert r.status in ("complete", "interrupted"), (how, h5.parent.name, r.status)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    repo = str(Path(__file__).resolve().parents[2])
    return dict(os.environ, MIXLAB_DATA_DIR=str(data),
                PYTHONPATH=os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")]))


def test_a_killed_league_leaves_no_worker_and_resumes_to_the_same_table(tmp_path, env):
    ref = subprocess.run([sys.executable, "-m", "mixlab", *LEAGUE, "-o", str(tmp_path / "ref")],
                         env=env, capture_output=True, text=True, timeout=600)
    assert ref.returncode == 0, ref.stderr[-2000:]
    rng = random.Random(52)
    out = tmp_path / "killed"
    for how in ("SIGKILL", "SIGKILL", "SIGTERM", "SIGINT (Ctrl-C)"):
        _kill_after_workers_start(LEAGUE, out, env, how, rng.uniform(0.2, 1.0))
    again = subprocess.run([sys.executable, "-m", "mixlab", *LEAGUE, "-o", str(out)], env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert _table(out) == _table(tmp_path / "ref")


def test_a_killed_sweep_leaves_no_worker_and_its_rerun_completes(tmp_path, env):
    out = tmp_path / "sweep"
    _kill_after_workers_start(SWEEP, out, env, "SIGKILL", 1.0)
    again = subprocess.run([sys.executable, "-m", "mixlab", *SWEEP, "-o", str(out)], env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    with open(out / "sweep.csv") as fh:
        assert [r["status"] for r in csv.DictReader(fh)] == ["complete"] * 3
