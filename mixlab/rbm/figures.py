"""Figures of the rates-FPCD experiments (``@figure``): they read the run file only.

Every figure draws one series per sampler label of the run, whatever the sampler (a plugin's
registered ``rbm`` sampler gets a colour and a line of its own); colours are fixed for the
paper's four methods.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import FigureNotReady
from ..figure_notes import note
from ..plugins.registry import figure

_COLORS = {"gibbs": "C3", "sample-penalization": "C2", "rates-herding": "C1",
           "rates-fpcd": "C0"}
_SYMBOLS = {"eps_f": "ε_F", "alpha": "α"}


def _method_of(run, label: str) -> str:
    try:
        return run.spec["samplers"][label]["method"]
    except KeyError:
        return ""


def _binary_centres(run, res: dict, label: str, method: str) -> bool:
    """Whether the ISL of ``label`` used binary centres although the spec asked for means (a
    sampler without means); runs before ``isl_centres/<label>`` was stored: rates-herding."""
    if run.spec.get("isl", {}).get("centres") != "means":
        return False
    used = res.get(f"isl_centres/{label}")
    return used == "samples" if used is not None else method == "rates-herding"


def _describe(entry: dict, label: str) -> str:
    """A sampler entry as a title: its method and settings (ε_F, α, ..., k last)."""
    desc = entry.get("method", label)
    if entry.get("method") == "gibbs" or not entry:
        return f"{desc}, k={entry.get('k')}"
    rest = [f"{_SYMBOLS.get(k, k)}={v}" for k, v in entry.items()
            if k not in ("method", "k") and not (k == "shared" and v is False)]
    tail = f", k={entry['k']}" if "k" in entry else ""
    return " ".join([desc, *rest]) + tail


@figure("rates_fpcd.isl_curves", experiment="rates_fpcd.isl", size=(6.4, 4.8))
def fig_isl(run, fig) -> None:
    """ISL on the test set vs number of generated samples (log x), one curve per sampler, and
    the training set used as kernel centres."""
    ax = fig.add_subplot()
    res = run.results()
    metrics = run.metrics()
    styles = ["-", "--", "-.", ":"]
    for i, (label, c) in enumerate(metrics.get("isl", {}).items()):
        meth = _method_of(run, label)
        col = _COLORS.get(meth, f"C{4 + i}")
        ls = styles[sum(1 for lab in list(metrics["isl"])[:i] if _method_of(run, lab) == meth)
                    % len(styles)]
        fin = res.get(f"isl_final/{label}")
        lab = f"{label} ({fin:.1f})" if isinstance(fin, float) else label
        if c.get("attrs", {}).get("centres") == "samples" or _binary_centres(run, res, label,
                                                                              meth):
            lab += " [binary centres]"
        ax.plot(c["x"], c["y"], ls, color=col, label=lab)
        if c["yerr"] is not None:
            ax.fill_between(c["x"], c["y"] - c["yerr"], c["y"] + c["yerr"], color=col,
                            alpha=0.15, lw=0)
    for label, c in metrics.get("isl_baseline", {}).items():
        ax.axhline(c["y"][0], color="k", ls=":", lw=1,
                   label=f"{label} ({c['y'][0]:.1f})")
    ax.set_xscale("log")
    ax.set_xlabel("number of samples")
    ax.set_ylabel("ISL of the test set (nats)")
    spec = run.spec
    title = spec.get("description") or spec.get("name", "")
    ax.set_title(f"{title}\n{res.get('data_used', '')}, {res.get('hidden', '?')} hidden, "
                 f"{res.get('isl_test_points', '?')} test points", fontsize=9)
    lines = []
    for key, v in sorted(res.items()):
        if key.startswith("speedup/") or key.startswith("speedup@"):
            pre, lab = key.split("/", 1)
            n_at = res.get(f"speedup_n{pre[len('speedup'):]}/{lab}")
            lines.append(f"{lab} vs {spec['isl'].get('reference')}: " +
                         (f"{v:.3g}x at {n_at} samples" if isinstance(v, float) else
                          f"not reached within budget at {n_at} samples"))
    note(fig, spec.get("note") or "", *lines)   # a caption below the axes, not over the curves
    ax.legend(fontsize=7, loc="lower right")
    ylo = [np.nanmin(c["y"][c["x"] >= 10]) for c in metrics.get("isl", {}).values()
           if np.any(c["x"] >= 10)]
    if ylo:
        top = max(np.nanmax(c["y"]) for c in metrics["isl"].values())
        for c in metrics.get("isl_baseline", {}).values():
            top = max(top, c["y"][0])
        ax.set_ylim(min(ylo) - 5, top + 3)


@figure("rates_fpcd.fig1", experiment="rates_fpcd.sequences", size=(8.0, 4.0))
def fig_sequences(run, fig) -> None:
    """Consecutive samples (E[x|h] for the stochastic samplers, x for herding) of one chain per
    sampler, a row per method."""
    names = [n for n in run.array_names() if n.startswith("sequence/")]
    labels = [n.split("/", 1)[1] for n in names]
    order = list(run.spec.get("samplers", {}))
    labels = sorted(labels, key=lambda lab: order.index(lab) if lab in order else 99)
    axes = fig.subplots(len(labels), 1, squeeze=False)[:, 0]
    res = run.results()
    for ax, lab in zip(axes, labels):
        seq = run.array(f"sequence/{lab}")
        shape = tuple(run.array_attrs(f"sequence/{lab}").get("shape") or ())
        if len(shape) != 2:
            side = int(round(math.sqrt(seq.shape[1])))
            shape = (side, seq.shape[1] // side)
        imgs = seq.reshape((-1,) + shape)
        pad = np.ones((imgs.shape[0], shape[0], 1), np.float32)
        row = np.concatenate([np.concatenate([im, p], axis=1) for im, p in zip(imgs, pad)],
                             axis=1)
        ax.imshow(1.0 - row, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_ylabel(lab, rotation=0, ha="right", va="center", fontsize=8)
        ax.set_title(_describe(run.spec["samplers"].get(lab, {}), lab), fontsize=7, loc="left")
    fig.suptitle(f"{run.spec.get('description') or 'consecutive samples'} "
                 f"({res.get('data_used', '')}, {res.get('hidden', '?')} hidden)", fontsize=9)


@figure("rates_fpcd.bias", experiment="rates_fpcd.bias", size=(6.4, 4.8))
def fig_bias(run, fig) -> None:
    """Log-likelihood of θ⁻ = θ + θ_F (chain 0) vs samples drawn, against the trained model."""
    ax = fig.add_subplot()
    m = run.metrics()
    res = run.results()
    used: set = set()
    for i, (label, c) in enumerate(m.get("ll_eff", {}).items()):
        col = _COLORS.get(_method_of(run, label), f"C{4 + i}")
        ax.errorbar(c["x"], c["y"], yerr=c["yerr"], marker="o", ms=3, capsize=2, color=col,
                    ls="--" if col in used else "-",  # same method, other settings: dashed
                    label=f"{label} θ+θ_F ({c['y'][-1]:.2f})")
        used.add(col)
    for label, c in m.get("ll_model", {}).items():
        ax.axhline(c["y"][0], color="k", ls=":", label=f"{label} θ ({c['y'][0]:.2f})")
    ax.set_xscale("log")
    ax.set_xlabel("number of samples")
    split = run.spec.get("ll", {}).get("split", "test")
    ax.set_ylabel(f"{split} log-likelihood (nats)")
    how = res.get("ll_method", "")
    ax.set_title(f"{run.spec.get('description') or 'effective parameters while sampling'}\n"
                 f"{res.get('data_used', '')}, log Z {'exact' if how == 'exact' else 'by AIS'}",
                 fontsize=9)
    ax.legend(fontsize=7)


# ---------------------------------------------------------------------------------------------
# rates_fpcd.sample ('mixlab sample' runs)

GRID_COLUMNS = 10
GRID_ROWS = 6


def _image_shape(run, dim: int) -> tuple[int, int]:
    """The image shape recorded with the run (result ``image_shape``, "RxC"), else square."""
    text = run.results().get("image_shape")
    if isinstance(text, str) and "x" in text:
        r, c = (int(v) for v in text.split("x"))
        if r * c == dim:
            return r, c
    side = int(round(math.sqrt(dim)))
    return (side, dim // side) if side * (dim // side) == dim else (1, dim)


def _tile(imgs: np.ndarray, columns: int) -> np.ndarray:
    """(n, r, c) images -> one (rows·(r+1), columns·(c+1)) mosaic, row-major, 1-pixel gaps
    (white, as the unused cells)."""
    n, r, c = imgs.shape
    rows = -(-n // columns)
    out = np.ones((rows * (r + 1), columns * (c + 1)), np.float32)
    for i, im in enumerate(imgs):
        y, x = divmod(i, columns)
        out[y * (r + 1):y * (r + 1) + r, x * (c + 1):x * (c + 1) + c] = 1.0 - im
    return out


@figure("rates_fpcd.sample_grid", experiment="rates_fpcd.sample", size=(6.4, 4.8))
def fig_sample_grid(run, fig) -> None:
    """The first consecutive draws of chain 0 of each stream (E[x|h] when recorded, else the
    binary x), row-major in a grid of 10 columns."""
    names = run.stream_names()
    if not names:
        ax = fig.add_subplot()
        ax.axis("off")
        ax.text(0.5, 0.5, "no draws recorded in this run", ha="center", va="center")
        return
    axes = fig.subplots(len(names), 1, squeeze=False)[:, 0]
    n = GRID_COLUMNS * GRID_ROWS
    for ax, name in zip(axes, names):
        keys = run.stream_keys(name)
        key = "means" if "means" in keys else "samples"
        draws = run.stream(name, key, draws=slice(0, n))  # (chain, draw, V)
        seq = np.asarray(draws[0], np.float32).reshape(draws.shape[1], -1)
        imgs = seq.reshape((seq.shape[0],) + _image_shape(run, seq.shape[1]))
        ax.imshow(_tile(imgs, GRID_COLUMNS), cmap="gray", vmin=0, vmax=1,
                  interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        what = "E[x|h]" if key == "means" else "binary x"
        entry = run.spec.get("samplers", {}).get(name, {})
        ax.set_title(f"{_describe(entry, name)}: draws 1-{seq.shape[0]} of chain 0 ({what})",
                     fontsize=8, loc="left")
    res = run.results()
    fig.suptitle(f"{run.spec.get('description') or 'samples'}\n({res.get('data_used', '')}, "
                 f"{res.get('hidden', '?')} hidden)", fontsize=8)


@figure("rates_fpcd.sample_isl", experiment="rates_fpcd.sample", size=(6.4, 4.8))
def fig_sample_isl(run, fig) -> None:
    """The ISL curve(s) that 'mixlab evaluate isl RUN' stored (metric isl/<stream>); until
    then the figure is not drawn (FigureNotReady says how to compute them)."""
    if not run.metrics().get("isl"):
        raise FigureNotReady(f"no ISL stored yet: mixlab evaluate isl {run.run_dir}")
    fig_isl(run, fig)
