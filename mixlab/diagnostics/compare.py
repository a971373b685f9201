"""Runs side by side: their shared (or chosen) results, the spec keys that differ, and one
metric's curves overlaid.

A sweep directory (one holding ``sweep.csv``) stands for its complete points' runs, in point
order. Runs are labelled by their directory path as given (sweep points by their directory
name)."""

from __future__ import annotations

import csv
import fnmatch
import io
import math
import os
from dataclasses import dataclass
from pathlib import Path, PurePath

import numpy as np

from ..errors import UsageError
from ..runfile import confined
from ..runfile.store import RUN_FILE, RunReader

SWEEP_TABLE_BYTES = 64 << 20


@dataclass
class RunView:
    label: str
    path: Path
    spec: dict
    results: dict
    metrics: dict


def expand(paths: list[str]) -> list[tuple[str, Path]]:
    """``(label, run directory)`` for every run named, sweep directories expanded."""
    out = []
    for p in paths:
        d = Path(p)
        if os.path.lexists(d / "sweep.csv") and not os.path.lexists(d / RUN_FILE):
            text = confined.read_text(d, "sweep.csv", limit=SWEEP_TABLE_BYTES)
            rows = [r for r in csv.DictReader(io.StringIO(text, newline=""))
                    if r.get("status") == "complete"]
            if not rows:
                raise UsageError(f"sweep {p} has no complete point yet")
            for r in rows:  # a point is a directory of the sweep, whatever the table says
                name = PurePath(str(r.get("run") or "")).name
                run = confined.check(d, name or ".", directory=True)
                out.append((f"{p.rstrip('/')}/{name}", run))
        elif os.path.lexists(d / RUN_FILE):
            out.append((p, d))
        else:
            raise UsageError(f"{p} is neither a run directory (no {RUN_FILE}) nor a sweep "
                             f"directory (no sweep.csv)")
    if len(out) < 2:
        raise UsageError("compare needs at least two runs (or a sweep with two complete points)")
    return out


def load(paths: list[str]) -> list[RunView]:
    views = []
    for label, d in expand(paths):
        with RunReader(d) as r:
            views.append(RunView(label, d, r.spec, r.results(), r.metrics()))
    return views


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def spec_differences(views: list[RunView]) -> dict[str, list]:
    """``{dotted key: [value per run]}`` for the spec keys whose values are not all equal."""
    flat = [_flatten(v.spec) for v in views]
    keys = sorted(set().union(*flat))
    return {k: [f.get(k) for f in flat] for k in keys
            if len({repr(f.get(k)) for f in flat}) > 1}


def result_table(views: list[RunView], patterns: list[str] | None) -> dict[str, list]:
    """``{result key: [value per run]}``: the keys every run has (default) or those matching
    ``patterns`` (exact keys or shell patterns such as ``isl_final/*``) in any run."""
    if patterns:
        every = sorted(set().union(*(v.results for v in views)))
        keys = [k for k in every if any(fnmatch.fnmatchcase(k, p) for p in patterns)]
        if not keys:
            raise UsageError(f"no result matches {', '.join(patterns)}; results of the first "
                             f"run: {', '.join(sorted(views[0].results)[:20])}")
    else:
        keys = sorted(set.intersection(*(set(v.results) for v in views)))
    return {k: [v.results.get(k) for v in views] for k in keys}


def overlay(views: list[RunView], metric: str, out: Path) -> Path:
    """One axes with every run's series of ``metric`` (PNG written atomically)."""
    from ..runfile.atomic import atomic_write

    atomic_write(out, overlay_png(views, metric))
    return out


def overlay_png(views: list[RunView], metric: str) -> bytes:
    """The PNG bytes of :func:`overlay`."""
    import io

    import matplotlib.style
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ..plotting import PNG_METADATA, STYLE

    have = [v for v in views if metric in v.metrics]
    if not have:
        known = sorted(set().union(*(v.metrics for v in views)))
        raise UsageError(f"no run has the metric '{metric}'; metrics: {', '.join(known)}")
    with matplotlib.style.context(str(STYLE)):
        fig = Figure(figsize=(7.5, 4.8))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        styles = ["-", "--", ":", "-."]
        xl = yl = ""
        for i, v in enumerate(have):
            for j, (series, c) in enumerate(sorted(v.metrics[metric].items())):
                ax.plot(c["x"], c["y"], ls=styles[i % len(styles)], color=f"C{j % 10}",
                        label=f"{v.label}: {series}")
                xl = xl or c["attrs"].get("x_label", "")
                yl = yl or c["attrs"].get("y_label", "")
        ys = np.concatenate([np.asarray(c["y"], float) for v in have
                             for c in v.metrics[metric].values()])
        xs = np.concatenate([np.asarray(c["x"], float) for v in have
                             for c in v.metrics[metric].values()])
        if np.all(ys[np.isfinite(ys)] > 0) and _spans_decades(ys):
            ax.set_yscale("log")
        if np.all(xs[np.isfinite(xs)] > 0) and _spans_decades(xs):
            ax.set_xscale("log")
        ax.set_xlabel(xl or "x")
        ax.set_ylabel(yl or metric)
        ax.set_title(f"{metric}: {len(have)} runs (line style = run, colour = series)",
                     fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        png = io.BytesIO()
        fig.savefig(png, format="png", metadata=PNG_METADATA)
    return png.getvalue()


def _spans_decades(a: np.ndarray) -> bool:
    a = a[np.isfinite(a) & (a > 0)]
    return a.size > 1 and math.log10(a.max() / a.min()) > 2
