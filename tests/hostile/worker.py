"""Runs mixlab commands one after another in one process under an address-space limit, and
reports for each: exit code, output, seconds, peak memory and what changed in a watched folder.

Used by test_hostile_rundir.py as ``python worker.py CELLS.json RESULTS.json``. Each cell is
``{"id", "args", "watch", "fsize"}``; a cell past :data:`SECONDS` is stopped by SIGALRM (which
interrupts a blocked open() or read()), and ``fsize`` lowers ``RLIMIT_FSIZE`` for that cell only.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import resource
import signal
import stat
import sys
import time

SECONDS = 30
KEEP = 4000  # characters of each output kept in the report


class Hang(BaseException):
    """A cell past SECONDS (a BaseException, so that no command's error handling takes it)."""


def tree_state(root: str) -> dict:
    """Every entry under ``root`` (links not followed, FIFOs never opened) with its content."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as fh:
                    out[p] = "file " + hashlib.sha256(fh.read()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                out[p] = "link " + os.readlink(p)
            else:
                out[p] = f"mode {stat.S_IFMT(st.st_mode)}"
    return out


def run_cell(runner, cli, cell: dict, token: str) -> dict:
    before = tree_state(cell["watch"]) if cell.get("watch") else {}
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    if cell.get("fsize"):
        # no bytecode under the limit: CPython would cache a .pyc cut short at it (its partial
        # write goes unchecked), and every later import of that module would fail
        sys.dont_write_bytecode = True
        resource.setrlimit(resource.RLIMIT_FSIZE, (cell["fsize"], hard))
    signal.alarm(SECONDS)
    t0, cpu0 = time.monotonic(), time.process_time()
    try:
        result = runner.invoke(cli, cell["args"], catch_exceptions=True)
        rc, out, err = result.exit_code, result.stdout, result.stderr
        exc = result.exception
        uncaught = (None if exc is None or isinstance(exc, SystemExit)
                    else f"{type(exc).__name__}: {exc}")
    except Hang:
        rc, out, err, uncaught = None, "", "", "timeout"
    finally:
        signal.alarm(0)
        if cell.get("fsize"):
            resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    seconds, cpu = time.monotonic() - t0, time.process_time() - cpu0
    after = tree_state(cell["watch"]) if cell.get("watch") else {}
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    both = out + err
    return {"id": cell["id"], "rc": rc, "stdout": out[:KEEP], "stderr": err[:KEEP],
            "stdout_chars": len(out), "stderr_lines": len(err.strip().splitlines()),
            "leaked": [t for t in token if t in both], "uncaught": uncaught,
            "seconds": round(seconds, 2), "cpu": round(cpu, 2), "changed": changed,
            "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def main() -> None:
    cells_path, results_path = sys.argv[1:3]
    with open(cells_path) as fh:
        job = json.load(fh)

    def on_alarm(signum, frame):
        raise Hang()

    signal.signal(signal.SIGALRM, on_alarm)
    from click.testing import CliRunner

    for module in job.get("preload", []):  # imported once here, not inside a timed cell
        importlib.import_module(module)
    from mixlab.cli import cli

    runner = CliRunner()
    results = [run_cell(runner, cli, cell, job["token"]) for cell in job["cells"]]
    with open(results_path, "w") as fh:
        json.dump(results, fh)


if __name__ == "__main__":
    main()
