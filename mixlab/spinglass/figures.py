"""The perturb-and-MAP figures, drawn from run files alone (Hazan, Maji & Jaakkola 2013).

``perturb_map.fig1_left`` (log Z estimates vs coupling), ``fig1_middle`` (expected passes of the
unbiased sampler vs grid size), ``fig1_right`` (single-site marginal error vs coupling, every
sampler of the spec) and ``perturb_map.marginal_vs_time`` (marginal error vs seconds and vs site
updates on one model).
"""

from __future__ import annotations

import numpy as np

from ..figure_notes import note as figure_note
from ..plugins.registry import figure
from .experiments import BASELINES
from .experiments import LABELS as ESTIMATOR_LABELS
from .experiments_sampling import PM_METHODS, series_style


@figure("perturb_map.fig1_left", experiment="perturb_map.logz_vs_coupling", size=(6.4, 4.8))
def fig1_left(run, fig) -> None:
    """Signed log Z error vs coupling (mean over models, bars = s.e. over models)."""
    curves = run.metrics()["logz_error"]
    res = run.results()
    ax = fig.add_subplot()
    order = ["upper", "expected_lb", "probable_lb"] + list(BASELINES)
    for k in order:
        if k not in curves:
            continue
        cv = curves[k]
        ax.errorbar(cv["x"], cv["y"], yerr=cv.get("yerr"), marker="o", ms=3, capsize=2,
                    label=ESTIMATOR_LABELS[k] + (f" (m={res.get('copies')})" if k == "probable_lb" else ""))
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xlabel("coupling strength c")
    ax.set_ylabel("estimate − log Z (nats)")
    ax.set_title("Fig 1 left: log Z estimates, 10x10 attractive grids", fontsize=9)
    note = (f"probable LB with m={res.get('copies')} copies (paper: 10^4), mean of "
            f"{res.get('probable_draws', 1)} draws per model, copy-model MAP "
            f"certified to within {res.get('probable_lb_max_gap', float('nan')):.1e} nats, "
            f"discrepancy ignored")
    if res.get("missing_baselines"):
        note += f"; missing baselines: {res['missing_baselines']}"
    figure_note(fig, note)
    ax.legend(fontsize=7)


@figure("perturb_map.fig1_middle", experiment="perturb_map.sampler_complexity", size=(6.4, 4.8))
def fig1_middle(run, fig) -> None:
    """Log of the unbiased sampler's expected number of passes vs the number of spins."""
    curves = run.metrics()["log_passes"]
    res = run.results()
    ax = fig.add_subplot()
    style = {"U-logZ": "o-", "U-probable_lb": "s--", "measured": "k^"}
    for k, cv in curves.items():
        ax.errorbar(cv["x"], cv["y"], yerr=cv.get("yerr"), fmt=style.get(k, "o-"), ms=4,
                    capsize=2, label=cv["attrs"].get("label", k))
    ax.set_xlabel("number of spins n (square grids)")
    ax.set_ylabel("log expected passes = U − log Z")
    ax.set_title(f"Fig 1 middle: unbiased sampler complexity (c={res.get('coupling')})",
                 fontsize=9)
    ax.legend(fontsize=7)


def _budget_text(spec: dict, methods) -> str:
    parts = []
    entries = spec["samplers"]
    pm = {m for m in methods if entries.get(m, {}).get("method", m) in PM_METHODS}
    if set(methods) - pm:
        parts.append(f"MCMC {spec['mcmc']['updates']:.0e} site updates "
                     f"({spec['mcmc']['chains']} chains)")
    if pm:
        parts.append(f"P&M {spec['perturb']['samples']} MAP samples")
    return "; ".join(parts)


def _series_order(spec: dict, curves: dict) -> list[str]:
    """The series of ``curves`` in the spec's order (then any others)."""
    return [m for m in spec["samplers"] if m in curves] + [m for m in curves
                                                           if m not in spec["samplers"]]


@figure("perturb_map.fig1_right", experiment="perturb_map.marginals_vs_coupling",
        size=(6.4, 4.8))
def fig1_right(run, fig) -> None:
    """Mean absolute single-site marginal error vs coupling strength, one line per sampler."""
    ax = fig.add_subplot()
    spec = run.spec
    curves = run.metrics().get("marginal_error", {})
    for k, m in enumerate(_series_order(spec, curves)):
        c = curves[m]
        secs = c["attrs"].get("seconds")
        tail = f", {np.mean(secs):.2g} s/model" if secs is not None else ""
        label, color = series_style(m, spec["samplers"].get(m), k)
        ax.errorbar(c["x"], c["y"], yerr=c["yerr"], marker="o", ms=4, capsize=2,
                    color=color, label=f"{label}{tail}")
    ax.set_yscale("log")
    ax.set_xlabel("coupling strength c  (θ_ij ~ U[0, c])")
    ax.set_ylabel("mean |P̂(x_i=+1) − P(x_i=+1)|")
    g = spec["grid"]
    ax.set_title(f"{g['rows']}×{g['cols']} grid, field {spec['field']:g}, "
                 f"{spec['models']} model(s)/point\n{_budget_text(spec, curves)}", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)


@figure("perturb_map.marginal_vs_time", experiment="perturb_map.marginal_vs_time",
        size=(9.6, 4.4))
def fig_marginal_vs_time(run, fig) -> None:
    """Left: error vs sampling seconds; right: error vs site updates (P&M: one MAP = one sweep)."""
    spec = run.spec
    met = run.metrics()
    res = run.results()
    axes = fig.subplots(1, 2)
    for ax, key, xl in ((axes[0], "error_vs_seconds", "sampling wall-clock seconds"),
                        (axes[1], "error_vs_updates",
                         "site updates, all chains (one MAP sample counted as R·C)")):
        curves = met.get(key, {})
        for k, m in enumerate(_series_order(spec, curves)):
            c = curves[m]
            if len(c["x"]) == 0:
                continue
            label, color = series_style(m, spec["samplers"].get(m), k)
            ax.plot(c["x"], c["y"], marker=".", ms=3, color=color,
                    label=f"{label} ({res.get(f'final_error/{m}', float('nan')):.3g})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xl)
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes:
        ax.set_ylabel("mean |P̂(x_i=+1) − P(x_i=+1)| (probability)")
    axes[0].legend(fontsize=8, title="final error", title_fontsize=8)
    g = spec["grid"]
    if spec.get("model", {}).get("file"):
        what = (f"{res.get('model/file')}: {res.get('model/shape')} grid, "
                f"{res.get('model/couplings')}")
    else:
        what = (f"{g['rows']}×{g['cols']} grid, field {spec['field']:g}, coupling "
                f"{spec['coupling']:g}{' (mixed signs)' if spec.get('mixed') else ''}")
    fig.suptitle(f"{what}, {spec['seconds']:g} s per sampler", fontsize=10)



@figure("perturb_map.logz_of_models", experiment="perturb_map.logz_of_models", size=(7.2, 5.6))
def logz_of_models(run, fig) -> None:
    """Each estimator on each model file: estimate − exact log Z (or the estimate, unknown)."""
    curves = run.metrics()["logz_of_models"]
    res = run.results()
    labels = str(res.get("model_labels", "")).split(",")
    ax = fig.add_subplot()
    keys = [k for k in ["upper", "expected_lb", "probable_lb"] + list(BASELINES) if k in curves]
    width = 0.8 / max(1, len(keys))
    for j, k in enumerate(keys):
        cv = curves[k]
        ax.bar(np.asarray(cv["x"]) + (j - (len(keys) - 1) / 2) * width, cv["y"], width,
               label=ESTIMATOR_LABELS[k])
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels([f"{lab}\n{_short(str(res.get(f'model/{lab}', '')))}" for lab in labels],
                       fontsize=7)
    ax.set_xlabel("model (its file)")
    ax.set_ylabel(next(iter(curves.values()))["attrs"].get("y_label", ""))
    ax.set_title(f"log Z estimates on your models (probable LB: m={res.get('copies')} copies); "
                 f"reference: {res.get('reference')}", fontsize=8)
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    fig.subplots_adjust(bottom=0.3)


def _short(desc: str) -> str:
    """"6x6, mixed (34 of 60 couplings negative)" -> "6x6, 34/60 negative"."""
    import re

    m = re.match(r"(.*?), mixed \((\d+) of (\d+) couplings negative\)", desc)
    return f"{m.group(1)}, {m.group(2)}/{m.group(3)} negative" if m else desc
