"""The league: every sampler of a family x every standard target, as cells on the sweep
machinery (mixlab.sweep), then ranked and tabulated.

A league spec (experiment ``league``; built-in ``league/<family>``) names the family and the
budgets; its cells are ``league.cell`` runs (mixlab.league.cell), one per (target, sampler), in
``<league dir>/<i>_target=<name>_sampler=<label>/``. They run in this process, on a process
pool (``workers`` processes) or on a Dask cluster, with one BLAS thread per cell, exactly as sweep
points: a complete cell is never run again, an unfinished one resumes from its checkpoint, a
failing one is recorded with its one-line reason and the others go on. When the cells are done
the league writes ``league.csv``, ``league.md``, ``league.txt``, ``league.json``, the
figure ``league.png`` and the page ``league.html`` into the league directory.

Samplers: every sampler registered for the family (mixlab's, installed plugins', and the
spec's ``plugins:``), each under its own name with its default parameters; an entry of
``samplers:`` (label -> ``{method, ...keys}``, ``method`` defaulting to the label) overrides
a sampler's parameters or adds a variant, and its ``per_target: {target: {keys}}`` overrides
keys on one target only (a step size that suits 10^4 rows does not suit 10^6);
``only_samplers`` and ``targets`` narrow the set.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from ..errors import MixlabError, SpecError
from ..plugins import registry
from ..plugins.registry import experiment
from ..spec.resolver import dump, resolve
from ..spec.schema import Param
from . import cost, targets
from .cell import SCHEMA as CELL_SCHEMA
from .cell import sampler_params
from .rank import Entry, rank_all
from .report import csv_text, markdown, text_table
from .schedule import StartOrder

_CELL_KEYS = ("seeds", "chains", "seconds", "work", "work_max_seconds", "fractions",
              "reach_error", "block", "work_points", "time_points", "init", "calibration",
              "every_draw")

SCHEMA = {
    "family": Param(type=str, choices=registry.family_names, help="the sampler family"),
    "samplers": Param({}, dict, help="label -> {method (default: the label), its keys}: "
                                     "overrides a registered sampler's keys or adds a variant"),
    "only_samplers": Param(None, list, item=str, nullable=True,
                           help="run only these sampler labels (null: all)"),
    "targets": Param(None, list, item=str, nullable=True,
                     help="run only these targets (null: all the family's standard targets)"),
    **{k: CELL_SCHEMA[k] for k in _CELL_KEYS},
}


def check_league(spec: dict) -> None:
    """Start-up validation (``mixlab run --dry-run`` runs it too): the samplers and targets
    the league names exist, so do the targets of every ``per_target`` entry, and each sampler's
    keys (with each target's ``per_target`` keys on top) pass its parameter schema, so a typo
    or a value out of range stops the league before any cell runs."""
    entries = sampler_entries(spec)
    target_defs(spec)
    std = targets.standard_targets(spec["family"])
    for label, entry in entries.items():
        per = entry.get("per_target", {})
        if not isinstance(per, dict):
            raise SpecError(f"must map target names to the sampler's keys, got {per!r}",
                            f"samplers.{label}.per_target")
        for t, keys in per.items():
            where = f"samplers.{label}.per_target.{t}"
            if t not in std:
                raise SpecError(f"unknown target {t!r}; the {spec['family']} targets are "
                                f"{', '.join(std)}", where)
            if not isinstance(keys, dict) or "method" in keys or "per_target" in keys:
                raise SpecError("must be a mapping of the sampler's own keys (not 'method')",
                                where)
        _check_sampler_keys(spec["family"], label, entry)


def _check_sampler_keys(family: str, label: str, entry: dict) -> None:
    """The sampler's keys, alone and with each ``per_target`` entry on top, against the
    registered sampler's parameters (as each cell validates them); a SpecError names the key
    where it was given (``samplers.<label>.<key>`` or ``...per_target.<target>.<key>``)."""
    per = entry.get("per_target") or {}
    for t in (None, *per):
        try:
            sampler_params(family, entry_for(entry, t), "")
        except SpecError as exc:
            first = (exc.key or "").split(".")[0].split("[")[0]
            where = (f"samplers.{label}.per_target.{t}" if t and first in per[t]
                     else f"samplers.{label}")
            msg = str(exc).removeprefix(f"spec key '{exc.key}': ") if exc.key else str(exc)
            raise SpecError(msg, f"{where}.{exc.key}" if exc.key else where) from None


def entry_for(entry: dict, target: str | None) -> dict:
    """A sampler's entry on ``target``: its keys, with that target's ``per_target`` keys on
    top (and no ``per_target``; ``target`` None: its keys alone)."""
    out = {k: v for k, v in entry.items() if k != "per_target"}
    out.update((entry.get("per_target") or {}).get(target) or {})
    return out


@experiment("league", schema=SCHEMA, check=check_league,
            help="a sampler league: run it with 'mixlab league FAMILY' or 'mixlab run SPEC'")
def _not_a_single_run(ctx) -> None:
    raise SpecError("a league is many runs, not one: run it with 'mixlab league FAMILY' or "
                    "'mixlab run league/FAMILY'", "experiment")


def sampler_entries(spec: dict) -> dict[str, dict]:
    """label -> sampler entry: every registered sampler (with ``calibration``: the family's
    calibration set instead, mixlab.league.calibration), then the spec's ``samplers``."""
    from . import calibration

    fam = spec["family"]
    if spec.get("calibration"):
        entries = {label: dict(entry) for label, (entry, _) in
                   calibration.load(fam).SET.items()}
    else:
        entries = {name: {"method": name} for name, kind in
                   sorted(registry.samplers_for(fam).items())
                   if not calibration.is_calibration_sampler(kind)}
    for label, entry in (spec["samplers"] or {}).items():
        if entry is None:
            entry = {}
        if not isinstance(entry, dict):
            raise SpecError(f"must be a mapping of the sampler's keys, got {entry!r}",
                            f"samplers.{label}")
        base = dict(entries.get(label, {"method": label}))
        base.update(entry)
        registry.get_sampler(fam, base["method"], f"samplers.{label}.method")
        entries[str(label)] = base
    only = spec["only_samplers"]
    if only:
        unknown = [s for s in only if s not in entries]
        if unknown:
            raise SpecError(f"unknown sampler(s) {', '.join(unknown)} (--samplers); this league "
                            f"has {', '.join(entries)}", "only_samplers")
        entries = {k: v for k, v in entries.items() if k in only}
    return entries


def target_defs(spec: dict) -> dict[str, dict]:
    std = targets.standard_targets(spec["family"])
    wanted = spec["targets"]
    if wanted:
        unknown = [t for t in wanted if t not in std]
        if unknown:
            raise SpecError(f"unknown target(s) {', '.join(unknown)} (--targets); the "
                            f"{spec['family']} targets are {', '.join(std)}", "targets")
        std = {k: v for k, v in std.items() if k in wanted}
    return std


def plan(spec: dict) -> tuple[dict, list[dict]]:
    """``(grid, cell specs)``: grid ``{"target": [...], "sampler": [...]}`` and one resolved
    ``league.cell`` spec per grid point (row-major: targets, then samplers)."""
    check_league(spec)
    tdefs, entries = target_defs(spec), sampler_entries(spec)
    grid = {"target": list(tdefs), "sampler": list(entries)}
    cells = []
    for t, d in tdefs.items():
        for label, entry in entries.items():
            raw = {"name": spec["name"], "experiment": "league.cell", "seed": spec["seed"],
                   "plugins": list(spec.get("plugins") or []), "family": spec["family"],
                   "target": {"name": t, "definition": d}, "label": label,
                   "sampler": entry_for(entry, t),
                   **{k: spec[k] for k in _CELL_KEYS}}
            cell = resolve(raw, scale=spec["scale"], default_name=spec["name"])
            cell["seed_key"] = [len(cells)]
            cells.append(cell)
    return grid, cells


def run_league(spec: dict, league_dir: Path, *, workers: int = 1, scheduler: str | None = None,
               quiet: bool = True) -> tuple[str, list[Entry]]:
    """Run (or resume) every cell, rank, write the outputs; returns (terminal table, entries).
    A second process on the same directory stops at once (RunLocked, exit 1) naming this one."""
    from ..runfile.lock import directory_lock

    t0 = time.perf_counter()
    grid, cells = plan(spec)
    league_dir.mkdir(parents=True, exist_ok=True)
    with directory_lock(league_dir, "league"):
        return _run_locked(spec, league_dir, grid, cells, workers, scheduler, quiet, t0)


def _run_locked(spec: dict, league_dir: Path, grid: dict, cells: list[dict], workers: int,
                scheduler: str | None, quiet: bool, t0: float) -> tuple[str, list[Entry]]:
    """:func:`run_league` once it holds the league directory's writer lock."""
    from ..launch.launchers import choose
    from ..runfile import confined
    from ..sweep.launch import OtherSpecPoints, run_points

    schedule = _Schedule(cells, workers, league_dir, grid, warm=workers > 1 and not scheduler)
    with choose(workers, scheduler, _start_method(), reuse=True) as launcher:
        try:
            outcome = run_points(league_dir, cells, grid, [], launcher, schedule, quiet=quiet,
                                 refuse_other=True)
        except OtherSpecPoints as exc:    # nothing run or written: the old league stays whole
            raise MixlabError(
                f"{league_dir} holds a league of a different spec: {len(exc.dirs)} of its "
                f"{len(cells)} cells ran with other keys (the spec, its overrides, the seed or "
                f"a --plugin file's samplers changed since), e.g. {exc.dirs[0].name}; give this "
                f"league another --out directory (without --out each spec has its own), or "
                f"move the old one away") from None
    confined.write_atomic(league_dir, "league.yaml", dump(spec).encode())
    entries = [Entry(c["target"]["name"], c["label"], outcome.status[i], outcome.error[i],
                     outcome.results[i], str(outcome.dirs[i])) for i, c in enumerate(cells)]
    rank_all(entries)
    wall = time.perf_counter() - t0
    info = league_info(spec, entries, wall, workers, [str(d) for d in outcome.dirs],
                       scheduler)
    text = write_outputs(league_dir, entries, info, schedule.curves)
    if spec.get("calibration"):
        text += write_calibration(league_dir, spec, entries, cells)
    return text, entries


def write_calibration(league_dir: Path, spec: dict, entries: list[Entry],
                      cells: list[dict]) -> str:
    """``calibration.md`` and ``calibration.csv`` (mixlab.league.calibration); returns the
    markdown for the terminal."""
    from ..runfile import confined
    from . import calibration

    labels = {c["label"]: c["sampler"] for c in cells}
    definitions = {c["target"]["name"]: c["target"]["definition"] for c in cells}
    rows = calibration.summary(entries, spec["family"], labels, definitions)
    md = calibration.markdown(rows, spec["family"])
    confined.write_atomic(league_dir, "calibration.md", md.encode())
    confined.write_atomic(league_dir, "calibration.csv", calibration.csv_text(rows).encode())
    return "\n" + md


class _Schedule(StartOrder):
    """The cells' start order (mixlab.league.schedule), with the league's uses of the
    launcher's hooks: the warm-up before a pool forks, and the finished cells' curves read on
    the core a worker leaves once no cell is left to start (they would otherwise wait for the
    last cell; while cells wait to start, that work would delay them)."""

    def __init__(self, cells: list[dict], workers: int, league_dir: Path, grid: dict,
                 warm: bool):
        from ..sweep.grid import grid_points, point_dir

        super().__init__(cells, workers)
        self.dirs = [point_dir(league_dir, i, p) for i, p in enumerate(grid_points(grid))]
        self.warm = warm
        self.curves: dict[str, dict] = {}
        self.unread: list[Path] = []    # complete cells whose curves are not read yet

    def before_start(self) -> None:     # only when a cell is left to run
        if self.warm:
            warm_up()

    def ended(self, i: int, end) -> None:
        if end.kind == "done" and end.value.get("status") == "complete":
            self.unread.append(self.dirs[i])

    def idle(self) -> None:
        from . import figure

        if not self.curves:
            figure.prepare()
        while self.unread:
            d = self.unread.pop()
            self.curves[str(d)] = figure.time_curves(d)


def _start_method() -> str:
    """Forked workers on Linux: they inherit what :func:`warm_up` imported, where
    fresh interpreters would each spend seconds importing it again (elsewhere, spawned: macOS's
    system libraries are not safe to fork)."""
    import sys

    return "fork" if sys.platform.startswith("linux") else "spawn"


def warm_up() -> None:
    """Before the pool forks: import what every cell imports (the run machinery, the yardsticks'
    SciPy functions), so that no worker spends time importing it again. The truths are not
    computed here: each target's first cell computes its own (mixlab.league.truth's lock makes
    the others wait for it, then read it from the cache), and mixlab.league.schedule starts one
    cell of each target first, so the workers compute different truths at once."""
    import scipy.fft  # noqa: F401  (the ESS's FFT length)
    import scipy.special  # noqa: F401
    import tqdm  # noqa: F401  (each stream's progress bar, disabled in a cell)

    from ..run import context, workers  # noqa: F401  (each cell runs through them)
    from . import cell, ess  # noqa: F401


def league_info(spec: dict, entries: list[Entry], wall: float, workers: int,
                dirs: list[str], scheduler: str | None = None) -> dict:
    truth, yards, reach = {}, {}, {}
    for e in entries:
        if e.results.get("truth"):
            truth[e.target] = e.results["truth"]
            yards[e.target] = e.results.get("yardstick", "?")
        if e.results.get("reach_error") is not None:
            reach[e.target] = float(e.results["reach_error"])
    names = set(yards.values())
    yard = names.pop() if len(names) == 1 else "each target's own (below)" if names else "?"
    return {"family": spec["family"], "scale": spec["scale"], "seeds": spec["seeds"],
            "seconds": spec["seconds"], "work": spec["work"], "unit": cost.unit(spec["family"]),
            "reach_error": spec["reach_error"], "reach_errors": reach,
            "fractions": spec["fractions"], "yardstick": yard, "yardsticks": yards,
            "truth": truth, "wall_seconds": wall, "workers": workers, "scheduler": scheduler,
            "sampling_seconds": sum(e.get("sampling_seconds") for e in entries
                                    if e.status == "complete"),
            **{k: _total(entries, k) for k in ("evaluation_seconds", "ess_seconds")},
            "cells": dirs, "name": spec["name"]}


def _total(entries: list[Entry], key: str) -> float | None:
    """The sum of a result over the complete cells (None if one of them lacks it)."""
    values = [e.get(key) for e in entries if e.status == "complete"]
    return None if any(math.isnan(v) for v in values) else float(sum(values))


def write_outputs(league_dir: Path, entries: list[Entry], info: dict,
                  curves: dict | None = None) -> str:
    from ..report.league_page import write_league_html
    from ..runfile import confined
    from .figure import draw_league

    fr = sorted({float(f) for f in info["fractions"]} | {1.0})
    text = text_table(entries, info)
    confined.write_atomic(league_dir, "league.csv", csv_text(entries, fr).encode())
    confined.write_atomic(league_dir, "league.md", markdown(entries, info).encode())
    confined.write_atomic(league_dir, "league.txt", text.encode())
    draw_league(league_dir, entries, info, curves)
    confined.write_atomic(league_dir, "league.json", json.dumps(info, indent=1).encode())
    write_league_html(league_dir)     # the page of the files just written (mixlab.report)
    return text
