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
from .figure_notes import draw_below, notes_of  # noqa: E402
from .plugins import registry  # noqa: E402
from .runfile import confined  # noqa: E402
from .runfile.atomic import atomic_write  # noqa: E402
from .runfile.store import RunReader  # noqa: E402

STYLE = Path(__file__).with_name("mixlab.mplstyle")
# No timestamps or software versions in the PNG, so identical runs give identical bytes.
PNG_METADATA = {"Software": None}


def draw(run: RunReader, name: str, *, notes_below: bool = True) -> tuple[bytes, list[str]]:
    """Figure ``name`` of ``run`` as PNG bytes, and its notes (mixlab.figure_notes): drawn
    below the axes when ``notes_below``, else left out of the image for a caption."""
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
        notes = notes_of(fig)
        if notes_below:
            draw_below(fig)
        png = io.BytesIO()
        fig.savefig(png, format="png", metadata=PNG_METADATA)
    return png.getvalue(), notes


def describe(run: RunReader, name: str) -> str:
    """The first line of figure ``name``'s docstring (what it shows), or its name."""
    kind = registry.figures_of_run(str(run.attrs.get("experiment", ""))).get(name) \
        or registry.all_figures().get(name)
    doc = kind.help if kind is not None else ""
    return " ".join(doc.split("\n\n")[0].split()) or name


def render(run: RunReader, name: str, out: str | Path, inside: Path | None = None) -> Path:
    """Draw figure ``name`` of ``run`` into the PNG file ``out`` (a name relative to the
    directory ``inside`` when given: written through mixlab.runfile.confined), its notes below the
    axes."""
    png, _ = draw(run, name)
    if inside is not None:  # never a half-written PNG, never through a link
        return confined.write_atomic(inside, out, png)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, png)
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
