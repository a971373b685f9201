"""``mixlab report PATH... [-o FILE.html]`` and ``mixlab report --figures DIR RUNS``: one
self-contained HTML page (mixlab.report)."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import UsageError


@click.command("report")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False))
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="the HTML file [default: report.html; with --figures: DIR/index.html]")
@click.option("--figures", "figures_dir", type=click.Path(file_okay=False), default=None,
              metavar="DIR", help="the figures index of 'make figures': PATH is the runs "
                                  "directory (runs/<scale>), claims from --claims")
@click.option("--claims", "claims_dir", type=click.Path(file_okay=False),
              default="claims", help="with --figures: the directory of the papers' "
                                     "claims tables (<paper>.yaml)")
def report(paths, output, figures_dir, claims_dir):
    """Write one HTML page for a run, a sweep, a league, or several runs compared (or, with
    --figures, each figure of 'make figures' beside the paper's claims it tests).

    The page is one file: figures embedded, style and script inline, nothing fetched; open it
    in a browser (it works from file:// offline) or attach it to a message. Every string from
    a run is shown as text; run directories are read as 'mixlab show' reads them."""
    from ..report import kinds, page

    if figures_dir is not None:
        if len(paths) != 1:
            raise UsageError("with --figures, give one PATH: the runs directory of the "
                             "figures (e.g. 'mixlab report --figures figures/quick runs/quick')")
        # checked here, not by click: a page of runs or a league reads no claims, so a
        # missing claims/ (any directory but a clone's) must not refuse it
        if not Path(claims_dir).is_dir():
            raise UsageError(f"--claims: {claims_dir} is not a directory; give the claims "
                             "tables' directory (a clone's claims/)")
        html = kinds.figures_html(figures_dir, paths[0], claims_dir)
        out = page.write(html, output or Path(figures_dir) / "index.html")
        click.echo(f"figures index: {out}")
        return
    kind, html = kinds.report_html(list(paths))
    out = page.write(html, output or "report.html")
    click.echo(f"{kind} report: {out}")
