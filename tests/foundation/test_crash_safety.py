"""Runs survive anything: SIGKILL at any instant, a second writer, a full disk, a hostile file.

The writer under test is a process of its own: killed, stopped or refused a write by the kernel
while it writes. A writer that is only ever killed or stopped is forked from this process with its
imports done (`Writer`): what a kill proves starts once it has created its run file. The full-disk
writer is ``python -m mixlab`` as a user's shell starts it: its exit code and its one-line message
are what is tested. What reads or finishes a run after its writer is gone, or is refused while it
lives, runs in this process (`here`); so do the uninterrupted runs whose bytes a resumed run must
give (the references).
"""

from __future__ import annotations

import os
import pickle
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import h5py
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "experiments" / "toy" / "gaussian.yaml"


def _argv(args) -> list[str]:
    """``python -m mixlab ARGS``; a run draws no figures (drawing is not what is tested here,
    and a run's figures come from its file alone: tests/foundation/test_cli_runs.py)."""
    args = [str(a) for a in args]
    return [sys.executable, "-m", "mixlab", *args, *(["--no-figures"] if args[0] == "run" else [])]


def mixlab(*args, cwd=None, env=None, limit_bytes=None, timeout=120):
    """Run ``python -m mixlab ARGS`` to completion; RLIMIT_FSIZE when ``limit_bytes``."""

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    # under the limit, no bytecode: CPython would cache a .pyc cut short at the limit (its
    # partial write goes unchecked), and every later import of that module would fail
    bytecode = {"PYTHONDONTWRITEBYTECODE": "1"} if limit_bytes else {}
    return subprocess.run(_argv(args), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {}), **bytecode},
                          preexec_fn=limit if limit_bytes else None)


def here(*args) -> SimpleNamespace:
    """``mixlab ARGS`` in this process (click's CliRunner; an exception escaping the CLI fails the
    test): its exit code as ``returncode``, its ``stdout`` and ``stderr``."""
    from click.testing import CliRunner

    from mixlab.cli import cli

    r = CliRunner().invoke(cli, _argv(args)[3:], catch_exceptions=False)
    return SimpleNamespace(returncode=r.exit_code, stdout=r.stdout, stderr=r.stderr)


def reference_run(*args) -> None:
    """``mixlab run ARGS`` in this process: an uninterrupted run, the reference for the bytes."""
    r = here(*args)
    assert r.returncode == 0, r.stderr


class Writer:
    """``mixlab ARGS`` in a child process forked from this one, output discarded: a writer to
    kill or stop (``pid``, ``send_signal``, ``poll``, ``wait`` as for a ``subprocess.Popen``)."""

    def __init__(self, *args, env=None):
        self.returncode = None
        self.pid = os.fork()
        if self.pid == 0:  # the child: the CLI's main, then out without this process's clean-up
            code = 1
            try:
                sys.stdout = sys.stderr = open(os.devnull, "w")
                os.environ.update(env or {})
                sys.argv = ["mixlab", *_argv(args)[3:]]
                from mixlab.cli import main
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            finally:
                os._exit(code)

    def send_signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float = 60.0) -> int:
        wait_for(lambda: self.poll() is not None, timeout)
        return self.returncode


def start(*args, env=None) -> Writer:
    return Writer(*args, env=env)


def streams(run_dir: Path) -> dict:
    """Every draw-stream dataset's bytes (not its timings), read through run.h5 alone."""
    out = {}
    with h5py.File(run_dir / "run.h5", "r") as f:
        def visit(name, obj):
            if (isinstance(obj, h5py.Dataset) and name.startswith("streams/")
                    and "/_checkpoint" not in name and not name.endswith("/time")):
                out[name] = obj[()].tobytes()
        f.visititems(visit)
        out["metric"] = f["metrics/mean_error/rwm/y"][()].tobytes()
        assert f.attrs["status"] == "complete"
    return out


def wait_for(predicate, seconds=60.0):
    t0 = time.time()
    while not predicate():
        if time.time() - t0 > seconds:
            raise AssertionError("timed out")
        time.sleep(0.02)


TOY_ARGS = ("budget.draws=30000", "block=200", "dim=3")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "run"
    reference_run("run", TOY, *TOY_ARGS, "--out", out, "-q")
    return streams(out)


def test_sigkill_at_random_instants_resumes_to_the_same_bytes(reference, tmp_path):
    """Killed with SIGKILL at many instants (checkpoints every block, so many kills land inside
    a checkpoint write), each time `show` reads the run, and the same command finishes it."""
    out = tmp_path / "run"
    env = {"MIXLAB_CHECKPOINT_SECONDS": "0"}
    rng = np.random.default_rng(1)
    killed_mid_run = 0
    for _ in range(8):
        p = start("run", TOY, *TOY_ARGS, "--out", out, "-q", env=env)
        try:
            wait_for(lambda p=p: (out / "run.h5").exists() or p.poll() is not None)
            time.sleep(float(rng.uniform(0.0, 0.5)))
        finally:
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
        killed_mid_run += p.returncode == -signal.SIGKILL
        shown = here("show", out)
        assert shown.returncode == 0, shown.stderr
        assert "Traceback" not in shown.stderr
        if "status    complete" not in shown.stdout:
            # a kill before the new writer described itself in the lock file names the writer
            # before it, or (the first run, killed right after creating the file) none
            assert ("interrupted (its writer, pid" in shown.stdout
                    or "interrupted (its writer, an earlier process, is gone)" in shown.stdout), \
                shown.stdout
    assert killed_mid_run >= 4
    r = here("run", TOY, *TOY_ARGS, "--out", out, "-q")
    assert r.returncode == 0, r.stderr
    assert streams(out) == reference
    seg_files = sorted((out / "segments").rglob("*.h5"))
    with h5py.File(out / "run.h5") as f:
        used = {m.file_name for m in f["streams/rwm/samples"].virtual_sources()}
    assert {str(p.relative_to(out)) for p in seg_files} == used  # no orphan left behind


def test_second_writer_is_refused_with_the_live_pid(tmp_path):
    out = tmp_path / "run"
    first = start("run", TOY, "budget.draws=null", "budget.seconds=60", "--out", out, "-q",
                  env={"MIXLAB_CHECKPOINT_SECONDS": "0.2"})
    try:
        # a checkpoint first, so that the refusals have segments to keep
        wait_for(lambda: checkpointed(out))
        # stopped while the second writers are refused: a stopped writer still holds its lock
        # and spends no CPU; it writes again while show and plot read the file
        first.send_signal(signal.SIGSTOP)
        for extra in ((), ("--force",)):
            r = here("run", TOY, "budget.draws=null", "budget.seconds=60", "--out", out, *extra)
            assert r.returncode == 1
            assert f"being written by pid {first.pid} since" in r.stderr, r.stderr
            assert "--force" not in r.stderr and "Traceback" not in r.stderr
        first.send_signal(signal.SIGCONT)
        shown = here("show", out)
        assert shown.returncode == 0 and f"running (pid {first.pid}" in shown.stdout
        assert here("show", out, "--json").returncode == 0
        assert here("plot", out, "-o", tmp_path / "live.png").returncode in (0, 1)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    shown = here("show", out)
    assert f"interrupted (its writer, pid {first.pid}" in shown.stdout
    assert (out / "run.h5").exists() and (out / "segments").exists()  # the refusals kept it all


def checkpointed(run_dir: Path) -> bool:
    """The run's file holds a checkpoint of its stream (False while it cannot be read yet)."""
    try:
        with h5py.File(run_dir / "run.h5", "r") as f:
            return f["streams/rwm/_checkpoint"].attrs["count"] > 0
    except (OSError, KeyError):
        return False


class _Payload:
    """Unpickling this object runs a shell command (the attack on pickled checkpoints)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_planted_pickles_are_never_run(tmp_path):
    """A pickled payload in every attribute and as an opaque dataset in every group: resume,
    show and plot treat them as bytes; one in place of the evaluators' state is refused."""
    out = tmp_path / "run"
    marker = tmp_path / "PWNED"
    env = {"MIXLAB_CHECKPOINT_SECONDS": "0"}
    p = start("run", TOY, *TOY_ARGS, "--out", out, "-q", env=env)
    wait_for(lambda: checkpointed(out))
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    out2 = tmp_path / "run2"  # a second interrupted run, for the attack on the evaluators' state
    shutil.copytree(out, out2)
    blob = np.void(pickle.dumps(_Payload(marker)))
    with h5py.File(out / "run.h5", "r+") as f:
        groups = [f]
        f.visititems(lambda n, o: groups.append(o) if isinstance(o, h5py.Group) else None)
        for g in groups:
            g.attrs["planted"] = blob
            g.create_dataset("planted_pickle", data=blob)
    for args in (("run", TOY, *TOY_ARGS, "--out", out, "-q"), ("show", out), ("show", out, "--json"),
                 ("plot", out, "-o", tmp_path / "fig.png")):
        r = here(*args)
        assert r.returncode == 0, (args, r.stderr)
    assert not marker.exists()

    # the old attack: the evaluators' state replaced by a pickle
    with h5py.File(out2 / "run.h5", "r+") as f:
        ck = f["streams/rwm/_checkpoint"]
        del ck["evaluators"]
        ck.create_dataset("evaluators", data=blob)
    r = here("run", TOY, *TOY_ARGS, "--out", out2, "-q")
    assert r.returncode == 1 and "does not hold the state" in r.stderr, r.stderr
    assert not marker.exists()


@pytest.mark.parametrize("limit_kib, checkpoint, draws, block, safe", [
    # a checkpoint every block: run.h5 (one virtual-dataset mapping per segment) outgrows 60 KiB
    # after some of its 120 checkpoints, so the earlier ones are safe
    (60, "0", 12000, 100, True),
    # `ulimit -f 400`: the first segment (4 chains x 20000 draws x 4 float32 = 1.25 MiB) is too
    # big, before any checkpoint
    (400, None, 20000, 500, False),
])
def test_full_disk_ends_cleanly_and_resumes_to_the_same_bytes(limit_kib, checkpoint, draws, block,
                                                               safe, tmp_path):
    """Writes past RLIMIT_FSIZE fail with EFBIG, as on a full disk: one short message, exit 1,
    then the same command without the limit completes with the uninterrupted run's bytes."""
    args = ("run", TOY, f"budget.draws={draws}", f"block={block}", "--out", tmp_path / "run", "-q")
    env = {"MIXLAB_CHECKPOINT_SECONDS": checkpoint} if checkpoint else {}
    r = mixlab(*args, env=env, limit_bytes=limit_kib * 1024)
    assert r.returncode == 1, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "file size limit" in r.stderr
    assert "free space and run the same command again to resume" in r.stderr
    assert ("draws per chain" in r.stderr) == safe, r.stderr
    assert here("show", tmp_path / "run").returncode == 0
    r = here(*args)
    assert r.returncode == 0, r.stderr
    whole = tmp_path / "whole"
    reference_run("run", TOY, f"budget.draws={draws}", f"block={block}", "--out", whole, "-q")
    assert streams(tmp_path / "run") == streams(whole)


def test_older_run_file_format_is_refused_with_its_version(tmp_path):
    out = tmp_path / "run"
    p = start("run", TOY, *TOY_ARGS, "--out", out, "-q", env={"MIXLAB_CHECKPOINT_SECONDS": "0"})
    wait_for(lambda: (out / "run.h5").exists())
    time.sleep(0.3)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    with h5py.File(out / "run.h5", "r+") as f:
        f.attrs["format_version"] = 1
    r = here("run", TOY, *TOY_ARGS, "--out", out)
    assert r.returncode == 1 and "run-file format 1" in r.stderr, r.stderr
    assert here("show", out).returncode == 0
