"""``mixlab compare RUN_OR_SWEEP... [--results KEY...] [--metric NAME] [--json] [-o FILE.png]``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..runfile.provenance import json_clean as _clean


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return json.dumps(_clean(v))
    return "-" if v is None else str(v)


def _table(title: str, rows: dict, labels: list[str]) -> None:
    click.echo(title)
    if not rows:
        click.echo("  (none)")
        return
    cells = {k: [_cell(v) for v in vals] for k, vals in rows.items()}
    kw = max(len(k) for k in rows)
    widths = [max(len(lab), *(len(c[i]) for c in cells.values())) for i, lab in
              enumerate(labels)]
    click.echo("  " + " " * kw + "  " + "  ".join(f"{lab:>{w}}" for lab, w in
                                                   zip(labels, widths)))
    for k, c in cells.items():
        click.echo(f"  {k:<{kw}}  " + "  ".join(f"{x:>{w}}" for x, w in zip(c, widths)))


@click.command("compare")
@click.argument("runs", metavar="RUN_OR_SWEEP...", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False))
@click.option("--results", "-r", "patterns", multiple=True,
              help="result keys to show (repeatable; shell patterns such as 'isl_final/*') "
                   "[default: the keys every run has]")
@click.option("--metric", "-m", default=None,
              help="overlay this metric's curves of every run in one figure")
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="PNG of the overlay [default: compare-<metric>.png]")
@click.option("--json", "as_json", is_flag=True,
              help='print {"runs", "spec_differences", "results", "figure"}')
def compare(runs, patterns, metric, output, as_json):
    """Put runs side by side: their results (shared keys, or those asked for), the spec keys
    whose values differ, and with --metric one figure overlaying their curves. A sweep
    directory stands for its complete points."""
    from ..diagnostics.compare import load, overlay, result_table, spec_differences

    views = load(list(runs))
    labels = [v.label for v in views]
    diffs = spec_differences(views)
    table = result_table(views, list(patterns) or None)
    fig = None
    if metric:
        fig = overlay(views, metric, Path(output or f"compare-{metric.replace('/', '_')}.png"))
    if as_json:
        click.echo(json.dumps({"runs": labels, "spec_differences": _clean(diffs),
                               "results": {k: _clean(v) for k, v in table.items()},
                               "figure": None if fig is None else str(fig)}, indent=1))
        return
    _table("spec keys that differ", diffs, labels)
    _table("results", table, labels)
    if fig is not None:
        click.echo(f"overlay of '{metric}': {fig}")
