"""A closed stdout ends any command quietly: exit 141 (128 + SIGPIPE), nothing on stderr.

Real subprocesses and real pipes: the read end is closed before the command writes, so the
command's first write (or the interpreter's final flush) meets EPIPE every time.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mixlab.cli import cli

REPO = Path(__file__).resolve().parents[2]
TOY = "experiment: toy.gaussian\nname: toy\ndim: 2\nchains: 2\nbudget: {draws: 200}\n"


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _into_closed_pipe(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run mixlab with stdout the write end of a pipe whose read end is already closed."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "mixlab", *args], cwd=cwd, env=_env(),
                              stdout=w, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)


@pytest.fixture(scope="module")
def toy_runs(tmp_path_factory):
    """A complete run and a two-point sweep of the toy spec, made in this process (they are the
    commands' input; the commands under test each run in a real process)."""
    d = tmp_path_factory.mktemp("pipes")
    (d / "toy.yaml").write_text(TOY)
    with contextlib.chdir(d):
        for args in (["run", "toy.yaml", "--out", "run", "-q"],
                     ["sweep", "toy.yaml", "step=0.5,1.0", "--out", "sw", "-q"]):
            r = CliRunner().invoke(cli, args, prog_name="mixlab")
            assert r.exit_code == 0 and r.exception is None, r.output
    return d


@pytest.mark.parametrize("args", [
    ("show", "run"), ("show", "run", "--json"), ("show", "sw"), ("data", "list"),
    ("run", "--list"), ("--help",), ("run", "toy.yaml", "--out", "run", "-q"),
    ("sweep", "toy.yaml", "step=0.5,1.0", "--out", "sw", "-q"),
    ("compare", "sw"), ("compare", "sw", "--json"), ("diagnose", "run"),
])
def test_closed_stdout_is_quiet(toy_runs, args):
    p = _into_closed_pipe(*args, cwd=toy_runs)
    assert p.returncode == 141, p.stderr
    assert p.stderr == ""


def test_shell_pipe_into_head(toy_runs):
    """`mixlab show RUN | head -1`: one line out, nothing on stderr, a status a shell accepts."""
    cmd = f"{sys.executable} -m mixlab show run | head -1; echo \"rc=${{PIPESTATUS[0]}}\""
    p = subprocess.run(["bash", "-c", cmd], cwd=toy_runs, env=_env(), capture_output=True,
                       text=True, timeout=120)
    lines = p.stdout.splitlines()
    assert lines[0].startswith("run") and lines[-1] in ("rc=0", "rc=141"), p.stdout
    assert "Error" not in p.stderr and "Traceback" not in p.stderr and "Exception" not in p.stderr


def test_a_failure_is_still_reported_when_stdout_is_closed(toy_runs):
    """Only the closed stdout is silenced: a real error still says what went wrong."""
    p = _into_closed_pipe("show", "no-such-run", cwd=toy_runs)
    assert p.returncode == 2 and "no-such-run" in p.stderr
