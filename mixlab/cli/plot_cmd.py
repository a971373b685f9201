"""``mixlab plot RUN [--figure NAME] [-o FILE.png]``: figures from the run file alone."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import FigureNotReady, UsageError
from ..plotting import figure_names, render
from ..runfile import confined
from ..runfile.store import RunReader


@click.command("plot")
@click.argument("run_dir", metavar="RUN", type=click.Path(exists=True))
@click.option("--figure", "-f", "name", default=None, help="figure name [default: all]")
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="PNG file (one figure) [default: RUN/figures/NAME.png]")
def plot(run_dir, name, output):
    """Render a run's figures as PNG (fixed size and DPI; identical runs, identical bytes).
    RUN may be a league directory: its figure is drawn again from its cells."""
    from ..league.replot import FIGURES, is_league, redraw

    if is_league(Path(run_dir)):
        if name is not None and name not in FIGURES:
            raise UsageError(f"a league has the figure(s) {', '.join(FIGURES)}; "
                             f"--figure {name} is not one of them")
        click.echo(str(redraw(Path(run_dir), Path(output) if output else None)))
        return
    with RunReader(run_dir) as run:
        names = [name] if name else figure_names(run)
        if not names:
            raise UsageError(f"no figures are registered for experiment "
                             f"'{run.attrs.get('experiment')}'")
        if output and len(names) > 1:
            stem = Path(output)
            outs = [stem.with_name(f"{stem.stem}-{n.split('.')[-1]}{stem.suffix or '.png'}")
                    for n in names]
        elif output:
            outs = [Path(output)]
        else:  # into the run directory, through mixlab.runfile.confined
            confined.make_dirs(run.run_dir, "figures")
            outs = [f"figures/{n}.png" for n in names]
        inside = None if output else run.run_dir
        for n, out in zip(names, outs):
            try:
                out = render(run, n, out, inside=inside)
            except FigureNotReady as exc:
                if name:           # asked for by name: an error (exit 1)
                    raise
                click.echo(f"skipped {n}: {exc}", err=True)
                continue
            click.echo(str(out))
