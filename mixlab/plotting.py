"""Render a run's figures from its run file alone (matplotlib object API, Agg, one style)."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.style  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from .errors import FigureNotReady, RunFileError, UsageError  # noqa: E402
from .plugins import registry  # noqa: E402
from .runfile import confined  # noqa: E402
from .runfile.atomic import atomic_write  # noqa: E402
from .runfile.store import RunReader  # noqa: E402

STYLE = Path(__file__).with_name("mixlab.mplstyle")
# No timestamps or software versions in the PNG, so identical runs give identical bytes.
PNG_METADATA = {"Software": None}


def render(run: RunReader, name: str, out: str | Path, inside: Path | None = None) -> Path:
    """Draw figure ``name`` of ``run`` into the PNG file ``out`` (a name relative to the
    directory ``inside`` when given: written through mixlab.runfile.confined)."""
    experiment = str(run.attrs.get("experiment", ""))
    figs = registry.figures_of_run(experiment)
    if name not in figs:
        figs = registry.all_figures()   # a figure of another experiment's, drawn from this run
    if name not in figs:
        own = sorted(registry.figures_for(experiment))
        raise UsageError(f"unknown figure '{name}'; figures of this run: "
                         f"{', '.join(own + ['diagnostics'])}")
    kind = figs[name]
    with matplotlib.style.context(str(STYLE)):
        fig = Figure(figsize=kind.size)
        FigureCanvasAgg(fig)
        try:
            kind.draw(run, fig)
        except (KeyError, RunFileError) as exc:
            raise RunFileError(f"figure {name} cannot be drawn from {run.path}: missing {exc} "
                               f"(run status: {run.status})") from exc
        png = io.BytesIO()
        fig.savefig(png, format="png", metadata=PNG_METADATA)
        if inside is not None:  # never a half-written PNG, never through a link
            return confined.write_atomic(inside, out, png.getvalue())
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(out, png.getvalue())
    return out


def figure_names(run: RunReader) -> list[str]:
    return sorted(registry.figures_for(str(run.attrs.get("experiment", ""))))


def render_all(run_dir: str | Path) -> list[Path]:
    """Render every figure registered for the run's experiment into ``<run>/figures/``; a
    figure whose data the run does not hold yet (:class:`FigureNotReady`) is left out."""
    run_dir = Path(run_dir)
    outs = []
    with RunReader(run_dir) as run:
        names = figure_names(run)
        if names:
            confined.make_dirs(run_dir, "figures")  # before drawing: a link here is refused
        for name in names:
            try:
                outs.append(render(run, name, f"figures/{name}.png", inside=run_dir))
            except FigureNotReady:
                pass
    return outs
