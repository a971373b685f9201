"""The league's figure (one per family): heat maps of the ranks (samplers x targets) at equal
time and at equal work, and, for each target, the yardstick against sampling seconds for every
sampler (every seed's equal-time stream, read from the cells' run files: nothing is re-run).
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np

from .rank import Entry


def prepare() -> None:
    """Import what drawing needs (about a second of CPU)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.figure  # noqa: F401

    from .. import plotting  # noqa: F401


def time_curves(run_dir: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A cell's equal-time curves ``{stream: (seconds (k,), error (k,))}`` from its run file
    (empty when it cannot be read: the figure leaves the cell out, its row says why)."""
    from ..runfile.store import RunReader

    if not (Path(run_dir) / "run.h5").is_file():
        return {}
    try:
        with RunReader(Path(run_dir)) as r:
            series = r.metrics().get("error_vs_seconds", {})
    except Exception:  # noqa: BLE001  (an unreadable cell is simply not drawn)
        return {}
    return {name: (np.asarray(c["x"], float), np.asarray(c["y"], float))
            for name, c in sorted(series.items()) if name.endswith("_time") and len(c["x"])}


def draw_league(league_dir: Path, entries: list[Entry], info: dict,
                curves: dict[str, dict] | None = None, output: Path | None = None) -> Path:
    """The figure, written to ``league_dir/league.png`` (or ``output``); ``curves``: run dir
    -> :func:`time_curves`, for the cells already read."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.style
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ..plotting import PNG_METADATA, STYLE
    from ..runfile import confined

    tnames = list(dict.fromkeys(e.target for e in entries))
    snames = list(dict.fromkeys(e.sampler for e in entries))
    ncols = 3
    nrows = 1 + math.ceil(len(tnames) / ncols)
    with matplotlib.style.context(str(STYLE)):
        fig = Figure(figsize=(4.2 * ncols, 3.4 * nrows))
        FigureCanvasAgg(fig)
        # fixed margins and gaps, room for the heat maps' slanted target names (tight_layout
        # would measure every text first: about as long as drawing the figure)
        width, height = 4.2 * ncols, 3.4 * nrows                  # inches
        names = 0.06 * max(len(s) for s in snames) + 0.5          # sampler names + axis label
        axes_width = (width - names - 0.2) / ncols / 1.1
        grid = fig.add_gridspec(nrows, ncols, left=names / width, right=1 - 0.2 / width,
                                bottom=0.55 / height, top=1 - 0.6 / height,
                                wspace=(names + 0.9) / axes_width, hspace=0.75)
        for k, clock in enumerate(("time", "work")):
            _heat(fig.add_subplot(grid[0, k]), entries, tnames, snames, clock, info)
        ax = fig.add_subplot(grid[0, 2])
        ax.axis("off")
        ax.text(0, 0.95, _legend_text(info), va="top", fontsize=7, wrap=True)
        colors = {s: f"C{i % 10}" for i, s in enumerate(snames)}
        for i, t in enumerate(tnames):
            ax = fig.add_subplot(grid[1 + i // ncols, i % ncols])
            _curves(ax, [e for e in entries if e.target == t], colors, info, curves or {})
            ax.set_title(t, fontsize=9)
        fig.suptitle(f"{info['family']} league ({info['scale']}): rank and "
                     f"{info['yardstick']} vs time", fontsize=10)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", metadata=PNG_METADATA)
    if output is not None:
        output = Path(output)
        return confined.write_atomic(output.parent, output.name, buf.getvalue())
    return confined.write_atomic(league_dir, "league.png", buf.getvalue())


def _legend_text(info: dict) -> str:
    return (f"{info['seeds']} seeds per cell\nequal time: {info['seconds']:g} s per stream\n"
            f"equal work: {info['work']:g} {info['unit']}\nrank 1 = smallest median error\n"
            f"'=' tie (seed ranges overlap)\n'B' biased (chains agree, not with the truth)\n"
            f"'M' not mixed (chains disagree, or error still falling)\n"
            f"blank: no rank (failed, or no cost statistic at equal work)")


def _heat(ax, entries, tnames, snames, clock, info) -> None:
    ranks = np.full((len(snames), len(tnames)), np.nan)
    labels = {}
    for e in entries:
        i, j = snames.index(e.sampler), tnames.index(e.target)
        r = e.rank.get(clock)
        if r is not None:
            ranks[i, j] = r
            mark = "B" if e.biased else "M" if e.not_mixed else ""
            labels[i, j] = f"{r}{'=' if e.tied.get(clock) else ''}{mark}"
    im = ax.imshow(ranks, cmap="viridis_r", aspect="auto",
                   vmin=1, vmax=max(2, len(snames)))
    for (i, j), s in labels.items():   # dark text on the light (high-rank) end of the map
        r, g, b, _ = im.cmap(im.norm(ranks[i, j]))
        light = 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5        # relative luminance
        ax.text(j, i, s, ha="center", va="center", fontsize=7, color="k" if light else "w")
    ax.set_xticks(range(len(tnames)), tnames, rotation=40, ha="right", fontsize=7)
    ax.set_yticks(range(len(snames)), snames, fontsize=7)
    ax.set_xlabel("target")
    ax.set_ylabel("sampler")
    what = "equal wall time" if clock == "time" else f"equal work ({info['unit']})"
    ax.set_title(f"rank at {what}", fontsize=9)
    ax.figure.colorbar(im, ax=ax, label="rank (1 = best)")


def _curves(ax, entries: list[Entry], colors: dict, info: dict, curves: dict) -> None:
    positive = True                 # a reference truth's error can fall below 0
    for e in entries:
        if not e.run_dir:
            continue
        series = curves.get(e.run_dir)
        first = True
        for x, y in (time_curves(Path(e.run_dir)) if series is None else series).values():
            positive = positive and bool(np.all(y > 0))
            ax.plot(x, y, color=colors[e.sampler], lw=0.8, alpha=0.8,
                    marker="o" if len(x) < 3 else None, ms=3,   # a slow sampler's points
                    label=e.sampler if first else None)
            first = False
    from matplotlib.ticker import NullLocator

    ax.set_xscale("log")
    ax.set_yscale("log" if positive else "linear")
    for axis in (ax.xaxis, ax.yaxis):     # no minor ticks: a log axis makes dozens, each drawn
        axis.set_minor_locator(NullLocator())
    ax.set_xlabel("sampling time (seconds)")
    names = [e.results.get("yardstick") for e in entries if e.results.get("yardstick")]
    ax.set_ylabel(names[0] if names else info["yardstick"], fontsize=7)
    if ax.lines:
        ax.legend(fontsize=6)
