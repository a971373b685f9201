"""A run (or sweep) directory from a stranger is confined: every command that takes a run, on
every hostile variant of a real run directory (tests/hostile/variants.py), ends with exit 1 or
2 and one line, or with a correct result; no byte of a file outside the directory reaches the
output, no file outside is created, changed or deleted, no command runs past 30 s, and every
command stays under a 2 GB address-space limit (``ulimit -v 2000000``).

The commands run in two worker processes (tests/hostile/worker.py) under RLIMIT_AS, in
parallel; each cell's outcome is checked by its own test, and the table of outcomes is written
to ``$MIXLAB_HOSTILE_TABLE`` when that is set.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from mixlab.cli import cli

from . import variants as V

REPO = Path(__file__).resolve().parents[2]
SPEC = str(REPO / "experiments/toy/gaussian.yaml")
RUN_ARGS = ["budget.draws=200"]
SWEEP_ARGS = ["step=0.5,1.0", "--set", "budget.draws=100"]
ADDRESS_SPACE = 2_000_000 * 1024  # ulimit -v 2000000
LEAKS = [V.TOKEN, str(V.OUTSIDE_VALUE)]
COMMANDS = ("show", "show --json", "plot", "diagnose", "export", "compare", "report",
            "resume")
FULL_DISK_LIMITS = (1024, 8192, 24576)
# glibc keeps freed memory in the worker's heap instead of unmapping it, so the buffers of the
# 100 MB attribute are faulted in once, not by every command that reads it (most of the worker's
# system time). The heap still counts toward RLIMIT_AS: the limit checked is no looser.
KEEP_FREED_MEMORY = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 31)}
PRELOAD = ["arviz", "mixlab.diagnostics.mixing", "mixlab.plotting", "mixlab.diagnostics.export",
           "mixlab.report.run_page"]


def _invoke(*args) -> None:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exit_code == 0, r.output


def _commands(kind: str, d: Path, target: Path, pristine: Path) -> dict[str, list[str]]:
    """argv of each command on variant directory ``d`` (``target``: the run, or the sweep)."""
    exports = str(d / "exports" / "x.nc")
    page = ["report", str(target), "-o", str(d / "exports" / "report.html")]
    if kind == "run":
        return {"show": ["show", str(target)], "show --json": ["show", "--json", str(target)],
                "plot": ["plot", str(target)], "diagnose": ["diagnose", str(target)],
                "export": ["export", str(target), "-o", exports],
                "compare": ["compare", str(target), str(pristine)], "report": page,
                "resume": ["run", SPEC, "--out", str(target), "-q", *RUN_ARGS]}
    point = sorted(p for p in target.iterdir() if p.is_dir() and not p.is_symlink())
    cmds = {"show": ["show", str(target)], "show --json": ["show", "--json", str(target)],
            "compare": ["compare", str(target)], "report": page,
            "resume": ["sweep", SPEC, *SWEEP_ARGS, "--out", str(target), "-q"]}
    if point:  # the commands that take a run, on the sweep's first point
        cmds.update({"plot": ["plot", str(point[0])], "diagnose": ["diagnose", str(point[0])],
                     "export": ["export", str(point[0]), "-o", exports]})
    return cmds


def _worker(cells: list[dict], where: Path, preload: list[str]) -> list[dict]:
    where.mkdir()
    job, out = where / "cells.json", where / "results.json"
    job.write_text(json.dumps({"cells": cells, "token": LEAKS, "preload": preload}))

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        **KEEP_FREED_MEMORY)
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("worker.py")), str(job),
                           str(out)], env=env, preexec_fn=limit, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, f"worker ended with {proc.returncode}: {proc.stderr[-3000:]}"
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    base, pristine, sweep = root / "base", root / "pristine", root / "sweep-base"
    _invoke("run", SPEC, "--out", base, "-q", *RUN_ARGS)
    _invoke("sweep", SPEC, *SWEEP_ARGS, "--out", sweep, "-q")
    shutil.copytree(base, pristine)
    V.set_status(base, "running")  # interrupted, so a resume reaches every file it writes
    groups: dict[str, list[dict]] = {"run": [], "sweep": [], "full disk": []}
    groups["sweep"] = groups["run"]  # one worker process for both: imports paid once
    where: dict[str, tuple] = {}
    V.make_outside(root / "outside-template", base)  # copied for each variant: h5py edits once
    for kind, table in (("run", V.RUN_VARIANTS), ("sweep", {**V.RUN_VARIANTS,
                                                              **V.SWEEP_VARIANTS})):
        for name, build in table.items():
            d = root / f"{kind}-{name}"
            target = d / kind
            shutil.copytree(base if kind == "run" else sweep, target, symlinks=True)
            (d / "exports").mkdir()
            shutil.copytree(root / "outside-template", d / "outside")
            if kind == "run" or name in V.SWEEP_VARIANTS:
                build(target, d / "outside")
            else:
                build(sorted(p for p in target.iterdir() if p.is_dir())[0], d / "outside")
            for cmd, argv in _commands(kind, d, target, pristine).items():
                cell = f"{kind}|{name}|{cmd}"
                groups[kind].append({"id": cell, "args": argv, "watch": str(d / "outside")})
                where[cell] = (d, target)
    d = root / "full-disk"
    shutil.copytree(pristine, d / "run")
    (d / "exports").mkdir(parents=True)
    export = ["export", str(d / "run"), "-o", str(d / "exports" / "x.nc")]
    groups["full disk"].append({"id": "full disk|earlier export|export", "args": export})
    for limit in FULL_DISK_LIMITS:
        groups["full disk"].append({"id": f"full disk|ulimit -f {limit // 1024}K|export",
                                    "args": export, "fsize": limit, "watch": str(d / "exports")})
    with ThreadPoolExecutor(2) as pool:  # a full disk in a process of its own
        futures = [pool.submit(_worker, groups["run"], root / "worker-dirs", PRELOAD),
                   pool.submit(_worker, groups["full disk"], root / "worker-disk", [])]
        results = {r["id"]: r for f in futures for r in f.result()}
    table = _table(results)
    if os.environ.get("MIXLAB_HOSTILE_TABLE"):
        Path(os.environ["MIXLAB_HOSTILE_TABLE"]).write_text(table)
    return results, where


def _outcome(r: dict) -> str:
    if r["uncaught"]:
        return f"FAIL {r['uncaught'][:40]}"
    if r["rc"] == 0:
        return "ok"
    lines = r["stderr"].strip().splitlines() or [""]
    line = next((ln for ln in lines if "failed: " in ln[:12]), lines[0])
    reason = line.split(";")[0].rsplit(": ", 1)[-1].replace("|", "/")
    if r["seconds"] >= 30:
        return "FAIL timeout"
    return f"{r['rc']}: {reason[:60]}"


def _table(results: dict) -> str:
    rows: dict[tuple, dict] = {}
    for cell, r in results.items():
        kind, variant, cmd = cell.split("|")
        rows.setdefault((kind, variant), {})[cmd] = _outcome(r)
    lines = ["| dir | variant | " + " | ".join(COMMANDS) + " |",
             "|---" * (len(COMMANDS) + 2) + "|"]
    for (kind, variant), cells in rows.items():
        lines.append(f"| {kind} | {variant} | " + " | ".join(cells.get(c, "n/a")
                                                              for c in COMMANDS) + " |")
    peak = max(r["maxrss_mb"] for r in results.values())
    slow = max(results.values(), key=lambda r: r["seconds"])
    cpu = sum(r["cpu"] for r in results.values())
    return "\n".join(lines) + (
        f"\n\npeak RSS of a worker: {peak} MB (limit: RLIMIT_AS 2 GB); slowest command: "
        f"{slow['id']} {slow['seconds']:.1f} s; CPU of all commands: {cpu:.1f} s\n")


CELLS = ([f"run|{v}|{c}" for v in V.RUN_VARIANTS for c in COMMANDS]
         + [f"sweep|{v}|{c}" for v in V.RUN_VARIANTS for c in COMMANDS]
         + [f"sweep|{v}|{c}" for v in V.SWEEP_VARIANTS for c in
            ("show", "show --json", "compare", "report", "resume")])


@pytest.mark.parametrize("cell", CELLS)
def test_a_hostile_directory_is_refused_or_read_without_what_is_outside(outcomes, cell):
    results, where = outcomes
    r = results[cell]
    assert r["uncaught"] is None, r            # no traceback, no hang past 30 s
    assert r["seconds"] < 30
    assert r["rc"] in (0, 1, 2), r
    if r["rc"] != 0:  # one line (a sweep adds one 'failed: <point>: <reason>' per point)
        lines = [ln for ln in r["stderr"].strip().splitlines() if "failed: " not in ln[:12]]
        assert len(lines) == 1 and r["stderr_lines"] <= 2, r["stderr"]
        assert "MemoryError" not in r["stderr"]
    if "|intact|" in cell:
        assert r["rc"] == 0, r                 # the control: every command works
    assert r["leaked"] == [], r                # no byte of an outside file in the output
    assert r["changed"] == [], r               # nothing outside created, changed or deleted
    assert r["stdout_chars"] < 200_000         # long values are shown cut
    d, _ = where[cell]
    for f in (d / "exports").glob("*") if (d / "exports").exists() else ():
        data = f.read_bytes()
        assert V.TOKEN.encode() not in data and np.float64(V.OUTSIDE_VALUE).tobytes() not in data


def test_an_export_on_a_full_disk_is_one_line_and_keeps_the_earlier_export(outcomes):
    results, _ = outcomes
    first = results["full disk|earlier export|export"]
    assert first["rc"] == 0, first
    for limit in FULL_DISK_LIMITS:
        r = results[f"full disk|ulimit -f {limit // 1024}K|export"]
        assert r["rc"] == 1 and r["stderr_lines"] == 1, r
        assert "file size limit" in r["stderr"] and "Exception ignored" not in r["stderr"]
        assert r["changed"] == [], r    # no temporary file left, the earlier export unchanged


SPEC_CELLS = [f"run|{v}|{c}" for v in V.SPEC_VARIANTS for c in COMMANDS]


@pytest.mark.parametrize("cell", SPEC_CELLS)
def test_a_hostile_stored_spec_is_refused_naming_the_file_and_attribute(outcomes, cell):
    """An alias bomb, a self-referencing alias, a 2 MB spec or a Python tag in run.h5's 'spec'
    attribute: every command ends with exit 1 and one line naming run.h5 and the attribute,
    within the time and address-space limits (the bomb would need gigabytes if expanded)."""
    results, _ = outcomes
    r = results[cell]
    assert r["uncaught"] is None and r["seconds"] < 30, r
    assert r["rc"] == 1 and r["stderr_lines"] == 1, r
    assert "run.h5: its 'spec' attribute is refused" in r["stderr"], r["stderr"]
