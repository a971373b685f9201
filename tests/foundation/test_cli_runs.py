"""The CLI end to end on the built-in toy experiment: run, show, plot, resume, errors."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.runfile.store import RunReader
from mixlab.toy.generic import GaussianRWM

TOY = """
experiment: toy.gaussian
dim: 3
chains: 2
budget: {draws: 400}
block: 50
"""


@pytest.fixture
def spec(tmp_path):
    p = tmp_path / "toy.yaml"
    p.write_text(TOY)
    return p


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_run_show_plot(spec, tmp_path):
    out = tmp_path / "run"
    r = invoke("run", spec, "--out", out, "--quiet")
    assert r.exit_code == 0, r.output
    assert (out / "spec.yaml").exists() and (out / "log.txt").exists()
    with RunReader(out) as run:
        assert run.status == "complete"
        assert run.stream("rwm").shape == (2, 400, 3)
        assert run.stream_time("rwm").shape == (400,)
        for key in ("mixlab_version", "git_commit", "git_dirty", "packages", "created",
                    "seed_entropy", "spec", "status"):
            assert key in run.attrs
    r = invoke("show", out, "--json")
    doc = json.loads(r.output)
    assert doc["status"] == "complete"
    assert doc["results"]["draws"] == 400
    assert doc["metrics"]["mean_error"]["rwm"]["x"][-1] == 400
    r = invoke("run", spec, "--out", out)
    assert r.exit_code == 0 and "already complete" in r.output
    png = tmp_path / "f.png"
    assert invoke("plot", out, "-o", png).exit_code == 0
    first = png.read_bytes()
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    invoke("plot", out, "-o", png)
    assert png.read_bytes() == first  # identical run file -> identical bytes


def test_identical_runs_identical_figures(spec, tmp_path):
    for d in ("a", "b"):
        assert invoke("run", spec, "--out", tmp_path / d, "-q").exit_code == 0
    fa = (tmp_path / "a/figures/toy.mean_error.png").read_bytes()
    fb = (tmp_path / "b/figures/toy.mean_error.png").read_bytes()
    assert fa == fb


def test_no_figures_draws_none_and_plot_draws_them_later(spec, tmp_path):
    assert invoke("run", spec, "--out", tmp_path / "a", "-q").exit_code == 0
    assert invoke("run", spec, "--out", tmp_path / "b", "-q", "--no-figures").exit_code == 0
    assert not (tmp_path / "b" / "figures").exists()
    with RunReader(tmp_path / "b") as run:
        assert run.status == "complete"
    assert invoke("plot", tmp_path / "b").exit_code == 0
    drawn = tmp_path / "b/figures/toy.mean_error.png"
    assert drawn.read_bytes() == (tmp_path / "a/figures/toy.mean_error.png").read_bytes()


def test_seed_changes_stream_and_same_seed_repeats(spec, tmp_path):
    invoke("run", spec, "--out", tmp_path / "a", "-q", "--no-figures")
    invoke("run", spec, "--out", tmp_path / "b", "-q", "--no-figures")
    invoke("run", spec, "--out", tmp_path / "c", "-q", "--no-figures", "--seed", "5")
    with RunReader(tmp_path / "a") as a, RunReader(tmp_path / "b") as b, \
            RunReader(tmp_path / "c") as c:
        assert np.array_equal(a.stream("rwm"), b.stream("rwm"))
        assert not np.array_equal(a.stream("rwm"), c.stream("rwm"))


def test_dry_run_prints_resolved_spec(spec, tmp_path):
    r = invoke("run", spec, "chains=7", "--dry-run")
    assert r.exit_code == 0 and "chains: 7" in r.output and "would run" in r.output
    assert not Path("runs").exists() or not any(Path("runs").glob("toy/*/run.h5"))


@pytest.mark.parametrize("args,code,words", [
    (["chains=0"], 2, "'chains'"),
    (["step=-1"], 2, "'step'"),
    (["budget.drawz=5"], 2, "did you mean 'draws'"),
    (["--scale", "huge"], 2, "huge"),
])
def test_spec_errors_exit_2(spec, args, code, words):
    r = CliRunner().invoke(cli, ["run", str(spec), *args])
    assert r.exit_code == code, r.output
    assert words in r.output
    assert "Traceback" not in r.output


def test_missing_and_malformed_spec(tmp_path):
    r = CliRunner().invoke(cli, ["run", str(tmp_path / "nope.yaml")])
    assert r.exit_code == 2 and "does not exist" in r.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiment: [toy\n")
    r = CliRunner().invoke(cli, ["run", str(bad)])
    assert r.exit_code == 2 and "not valid YAML" in r.output


def test_truncated_run_file_is_a_clear_error(spec, tmp_path):
    out = tmp_path / "run"
    invoke("run", spec, "--out", out, "-q", "--no-figures")
    data = (out / "run.h5").read_bytes()
    (out / "run.h5").write_bytes(data[: len(data) // 3])
    for cmd in (["show", out], ["plot", out]):
        r = CliRunner().invoke(cli, [str(c) for c in cmd])
        assert r.exit_code == 1, r.output
        assert "truncated or corrupt" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["run", str(spec), "--out", str(out)])
    assert r.exit_code == 1 and "--force" in r.output
    assert invoke("run", spec, "--out", out, "-q", "--force", "--no-figures").exit_code == 0


def test_interrupted_run_resumes_to_same_bytes(spec, tmp_path, monkeypatch):
    monkeypatch.setenv("MIXLAB_CHECKPOINT_SECONDS", "0")
    invoke("run", spec, "--out", tmp_path / "whole", "-q", "--no-figures")
    calls = {"n": 0}
    real_step = GaussianRWM.step

    def flaky(self, state, rng):
        calls["n"] += 1
        if calls["n"] == 237:  # mid-block: the partial block must be discarded
            raise KeyboardInterrupt
        return real_step(self, state, rng)

    monkeypatch.setattr(GaussianRWM, "step", flaky)
    r = CliRunner().invoke(cli, ["run", str(spec), "--out", str(tmp_path / "cut"), "-q"])
    assert r.exit_code == 130
    with RunReader(tmp_path / "cut") as run:
        assert run.status == "interrupted"
        assert run.stream("rwm").shape[1] == 200  # four checkpointed blocks of 50
    monkeypatch.setattr(GaussianRWM, "step", real_step)
    r = invoke("run", spec, "--out", tmp_path / "cut", "-q")
    assert "resumed" in r.output
    with h5py.File(tmp_path / "whole/run.h5") as a, h5py.File(tmp_path / "cut/run.h5") as b:
        assert a["streams/rwm/samples"][()].tobytes() == b["streams/rwm/samples"][()].tobytes()
        assert np.array_equal(a["metrics/mean_error/rwm/y"][()], b["metrics/mean_error/rwm/y"][()])
        assert b.attrs["status"] == "complete"


def test_signal_during_checkpoint_write_is_held_until_it_is_complete(spec, tmp_path,
                                                                       monkeypatch, request):
    """A SIGINT arriving while a checkpoint is being rewritten (old one deleted, new one half
    written) is delivered only after the write: the run stops cleanly and resumes to the same
    bytes.  Without the hold the checkpoint is left broken."""
    import mixlab.run.streams as runner

    # The hold re-delivers the signal to the handler found on entry; start from Python's default
    # (KeyboardInterrupt): a suite launched in the background (`cmd &`) inherits SIGINT ignored.
    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, old_handler))
    monkeypatch.setenv("MIXLAB_CHECKPOINT_SECONDS", "0")
    invoke("run", spec, "--out", tmp_path / "whole", "-q", "--no-figures")
    real = runner._rng_state_json
    calls = {"n": 0}

    def signal_inside_checkpoint(rng):
        calls["n"] += 1
        if calls["n"] == 3:                        # third checkpoint: one to lose exists
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)                       # let the signal arrive mid-write
        return real(rng)

    monkeypatch.setattr(runner, "_rng_state_json", signal_inside_checkpoint)
    r = CliRunner().invoke(cli, ["run", str(spec), "--out", str(tmp_path / "cut"), "-q"])
    assert r.exit_code == 130, r.output
    monkeypatch.setattr(runner, "_rng_state_json", real)
    with RunReader(tmp_path / "cut") as run:
        assert run.status == "interrupted"
        assert run.stream("rwm").shape[1] == 150     # the third block and its checkpoint
    r = invoke("run", spec, "--out", tmp_path / "cut", "-q")
    assert "resumed" in r.output
    with h5py.File(tmp_path / "whole/run.h5") as a, h5py.File(tmp_path / "cut/run.h5") as b:
        assert a["streams/rwm/samples"][()].tobytes() == b["streams/rwm/samples"][()].tobytes()


def _mixlab(*args, **kw):
    return subprocess.run([sys.executable, "-m", "mixlab", *map(str, args)], capture_output=True,
                          text=True, **kw)


def test_subprocess_readme_path_and_sigterm_resume(tmp_path):
    spec = tmp_path / "long.yaml"
    # 80 blocks, each checkpointed: the SIGTERM lands after some 15 of them (run.h5 > 50 kB;
    # it ends near 240 kB, and a signal after the streams end meets no run to interrupt)
    spec.write_text(TOY.replace("draws: 400", "draws: 40000").replace("block: 50", "block: 500"))
    every_block = {**os.environ, "MIXLAB_CHECKPOINT_SECONDS": "0"}
    # the uninterrupted reference run, in this process: only the processes below are under test.
    # It and the resumed run checkpoint at the default interval: a stream's bytes do not depend
    # on when it was checkpointed (as tests/foundation/test_crash_safety.py's references show)
    assert invoke("run", spec, "--out", tmp_path / "whole", "-q", "--no-figures").exit_code == 0
    proc = subprocess.Popen([sys.executable, "-m", "mixlab", "run", str(spec), "--out",
                             str(tmp_path / "cut"), "-q"], env=every_block,
                            stderr=subprocess.PIPE, text=True)
    h5 = tmp_path / "cut" / "run.h5"
    deadline = time.time() + 60
    while time.time() < deadline:  # wait until some blocks are on disk
        time.sleep(0.02)
        if h5.exists() and h5.stat().st_size > 50_000:
            break
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the run finished before SIGTERM arrived (machine too fast)")
    assert proc.returncode == 130, err
    assert "resume" in err
    with RunReader(tmp_path / "cut") as run:  # readable after the signal
        assert run.status == "interrupted"
    again = _mixlab("run", spec, "--out", tmp_path / "cut", "-q")
    assert again.returncode == 0 and "resumed" in again.stdout
    with h5py.File(tmp_path / "whole/run.h5") as a, h5py.File(h5) as b:
        assert a["streams/rwm/samples"][()].tobytes() == b["streams/rwm/samples"][()].tobytes()
    shown = _mixlab("show", tmp_path / "cut", "--json")
    assert json.loads(shown.stdout)["status"] == "complete"


def test_interruption_sees_the_signal_behind_a_system_error():
    from mixlab.launch.worker import Terminated
    from mixlab.run.context import interruption

    stop = Terminated()
    try:
        try:
            raise stop
        except KeyboardInterrupt as exc:
            raise SystemError("returned a result with an exception set") from exc
    except SystemError as exc:
        assert interruption(exc) is stop
    assert interruption(KeyboardInterrupt()) is not None
    assert interruption(SystemError("a real one")) is None
    try:
        try:
            raise ValueError("bad")
        except ValueError as exc:
            raise SystemError("wrapped") from exc
    except SystemError as exc:
        assert interruption(exc) is None


def _spin_until_stopped(n, out, stop):
    """Work until ``stop[0]`` (set by another thread) or n steps, then return an array (boxing):
    ``out[0]`` grows from the second step on, so another thread can tell the kernel is running.
    (``out`` and ``stop`` are two arrays: the store to one makes the kernel read the other again.)
    """
    s = 0.0
    for i in range(n):
        s += np.sqrt(i + s * 1e-300)
        out[0] = s
        if stop[0]:
            break
    return out


def test_sigterm_inside_compiled_code_is_an_interruption(spec, tmp_path, monkeypatch):
    """SIGTERM while a numba kernel runs: its Python handler runs when the kernel calls back into
    Python (boxing the array it returns), which numba reports as a SystemError.  The run must end
    'interrupted' (exit 130, resumable), not 'failed'."""
    import threading

    from numba import njit

    spin = njit(nogil=True, cache=True)(_spin_until_stopped)
    out, stop = np.zeros(1), np.zeros(1, dtype=np.bool_)
    spin(10, out, stop)                  # compiled (or loaded from numba's cache) before the run
    real, calls = GaussianRWM.step, []

    def signal_then_stop():
        while out[0] == 0.0:             # until the kernel runs
            time.sleep(0.001)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.02)                 # the signal is pending while the kernel still runs
        stop[0] = True

    def step(self, state, rng):
        calls.append(1)
        if len(calls) == 60:             # mid-run: a signal lands inside the kernel
            out[0] = 0.0
            threading.Thread(target=signal_then_stop).start()
            spin(300_000_000, out, stop)
        return real(self, state, rng)

    monkeypatch.setattr(GaussianRWM, "step", step)
    r = CliRunner().invoke(cli, ["run", str(spec), "--out", str(tmp_path / "cut"), "-q"])
    assert r.exit_code == 130, r.output
    assert "resume" in r.output and "SystemError" not in r.output
    with RunReader(tmp_path / "cut") as run:
        assert run.status == "interrupted"
    monkeypatch.setattr(GaussianRWM, "step", real)
    r = invoke("run", spec, "--out", tmp_path / "cut", "-q")
    assert r.exit_code == 0 and "resumed" in r.output


def test_edited_spec_needs_replace_or_force(spec, tmp_path):
    out = tmp_path / "run"
    invoke("run", spec, "--out", out, "-q")
    r = CliRunner().invoke(cli, ["run", str(spec), "dim=2", "--out", str(out)])
    assert r.exit_code == 1 and "different spec" in r.output
    r = invoke("run", spec, "dim=2", "--out", out, "-q", "--replace")
    assert r.exit_code == 0
    with RunReader(out) as new, RunReader(tmp_path / "run.previous") as old:
        assert new.stream("rwm").shape[-1] == 2 and old.stream("rwm").shape[-1] == 3
