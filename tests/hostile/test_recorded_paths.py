"""A path recorded in a run file is data: ``mixlab show`` (text and ``--json``) judges a
stream's plugin code without opening the plugin file the run names, wherever it points.

The run's stream record names, as its sampler's plugin file, a regular file outside the run
holding a secret (a read would leak it, or at least answer "is its hash this?") and, as its
experiment's plugin file, a FIFO outside the run (a blocking open would never return). Each
command runs in a subprocess whose audit hook (``sys.addaudithook``) reports every path it
opens; none may be outside the run, and each must end well within the timeout.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
from click.testing import CliRunner

from mixlab.cli import cli

from . import variants as V

REPO = Path(__file__).resolve().parents[2]
SPEC = str(REPO / "experiments/toy/gaussian.yaml")
SECONDS = 30   # a blocked open of the FIFO never returns: any bound tells the two apart

# Runs ``mixlab ARGS`` and writes every path opened under OUTSIDE (audit event "open") to REPORT.
DRIVER = """
import atexit, json, os, runpy, sys
outside, report = sys.argv[1], sys.argv[2]
seen = []
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        p = os.path.abspath(os.fsdecode(args[0]))
        if p.startswith(outside + os.sep):
            seen.append(p)
            with open(report, "w") as fh:
                json.dump(seen, fh)
sys.addaudithook(hook)
sys.argv = ["mixlab", *sys.argv[3:]]
runpy.run_module("mixlab", run_name="__main__")
"""


def _plugin_code(path: Path, sha256: str) -> dict:
    return {"plugin": str(path), "file": str(path), "sha256": sha256, "version": None,
            "module": f"plugin_{path.stem}"}


def _mixlab(outside: Path, report: Path, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("MIXLAB_PLUGINS", None)
    return subprocess.run([sys.executable, "-c", DRIVER, str(outside), str(report),
                           *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=SECONDS)


def test_show_never_opens_a_plugin_file_the_run_names(tmp_path):
    run, outside = tmp_path / "run", tmp_path / "outside"
    r = CliRunner().invoke(cli, ["run", SPEC, "--out", str(run), "-q", "budget.draws=50"])
    assert r.exit_code == 0, r.output
    outside.mkdir()
    secret = outside / "secret.py"
    secret.write_text(f"api_key = '{V.TOKEN}'\n")
    fifo = outside / "pipe.py"
    os.mkfifo(fifo)
    with h5py.File(run / "run.h5", "r+") as f:
        g = f["streams/rwm"]
        rec = json.loads(g.attrs["inputs"])
        # the secret's true hash: a show that hashed the file would call the code unchanged
        rec["code"] = {"sampler": _plugin_code(secret, hashlib.sha256(
                           secret.read_bytes()).hexdigest()),
                       "experiment": _plugin_code(fifo, "0" * 64)}
        g.attrs["inputs"] = json.dumps(rec)

    for args in (("show", run), ("show", "--json", run)):
        report = tmp_path / "opened.json"
        r = _mixlab(outside, report, *args)
        opened = json.loads(report.read_text()) if report.exists() else []
        assert opened == [], (args, opened)
        assert r.returncode == 0, r.stderr
        assert V.TOKEN not in r.stdout + r.stderr
        if "--json" in args:
            out = json.loads(r.stdout)
            assert out["stale"] == {}, out["stale"]
            assert out["code_unchecked"] == sorted([str(secret), str(fifo)])
        else:
            assert "stale:" not in r.stdout, r.stdout
            assert f"plugin code not checked: {fifo}, {secret} (show opens no file a run " \
                   f"names; 'mixlab run SPEC' with the spec that names the plugin says " \
                   f"whether it changed" in r.stdout, r.stdout
    assert secret.read_text() == f"api_key = '{V.TOKEN}'\n"
