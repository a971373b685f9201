"""The page of a sweep or of several runs compared: the points' table (sortable) and each
metric's curves overlaid (mixlab.diagnostics.compare, the code of ``mixlab compare``).

A sweep's table is its ``sweep.csv`` (read through mixlab.runfile.confined, within the bound of
``mixlab show``); runs compared get one row each: the spec keys whose values differ and the
results every run has. A sweep's curves are those of its complete points.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ..errors import UsageError
from ..runfile import confined
from ..runfile.store import RUN_FILE
from .cells import cell
from .page import Figure
from .values import SHOWN_ITEMS, cut_items

SWEEP_TABLE_BYTES = 64 << 20
MAX_METRICS = 12   # overlays drawn at most (the page says how many were left out)


def is_sweep(path: Path) -> bool:
    return confined.exists(path, "sweep.csv") and not confined.exists(path, RUN_FILE)


def _sweep_table(d: Path) -> tuple[list, list, int]:
    text = confined.read_text(d, "sweep.csv", limit=SWEEP_TABLE_BYTES)
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    cols = list(rows[0]) if rows else []
    shown, more = cut_items(rows)
    numeric = {c: any(cell(r.get(c))["sort"] != "" for r in shown) for c in cols}
    head = [(c, numeric[c]) for c in cols[:SHOWN_ITEMS]]
    body = [[cell(_number(r.get(c))) if numeric[c] else
             cell(r.get(c), numeric=False, text=str(r.get(c) or "")) for c, _ in head]
            for r in shown]
    return head, body, more


def _number(text):
    """A table's text as a float when it is one (shown to 4 digits, sorted as a number)."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return text


def _overlays(views) -> tuple[list[Figure], int]:
    from ..diagnostics.compare import overlay_png

    metrics = sorted(set().union(*(v.metrics for v in views)))
    figs = []
    for metric in metrics[:MAX_METRICS]:
        n = sum(1 for v in views if metric in v.metrics)
        figs.append(Figure(metric, overlay_png(views, metric),
                           f"the curves of metric {metric} of {n} runs overlaid (line style: "
                           f"run, colour: series)"))
    return figs, max(0, len(metrics) - MAX_METRICS)


def context(paths: list[str]) -> dict:
    """The template context of ``compare.html`` for one sweep directory or several runs (and
    sweeps)."""
    from ..diagnostics.compare import load, result_table, spec_differences

    sweep = len(paths) == 1 and is_sweep(Path(paths[0]))
    head, body, more, note = [], [], 0, ""
    if sweep:
        head, body, more = _sweep_table(Path(paths[0]))
    try:
        views = load(list(paths))
    except UsageError as exc:   # fewer than two complete runs: the table alone
        if not sweep:
            raise
        views, note = [], str(exc)
    if views and not sweep:
        diffs = spec_differences(views)
        results = result_table(views, None)
        head = [("run", False)] + [(k, False) for k in diffs] + [(k, True) for k in results]
        body = [[cell(v.label, numeric=False)]
                + [cell(vals[i], numeric=False) for vals in diffs.values()]
                + [cell(vals[i]) for vals in results.values()]
                for i, v in enumerate(views)]
    figures, metrics_more = _overlays(views) if views else ([], 0)
    title = (f"sweep {Path(paths[0]).name}" if sweep else f"{len(views)} runs compared")
    return {"kind": "sweep" if sweep else "comparison", "title": title, "head": head,
            "rows": body, "rows_more": more, "figures": figures,
            "metrics_more": metrics_more, "note": note,
            "runs": [v.label for v in views], "generated_from": ", ".join(paths)}
