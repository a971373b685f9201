"""Figures 1-8 of Korattikara, Chen & Welling (2014) and the big-N figure (``@figure`` functions:
they read the run file only, never run model code)."""

from __future__ import annotations

import numpy as np

from ..figure_notes import note as figure_note
from ..plugins.registry import figure
from .evaluators import JointL1
from .experiment_bign import TESTS, series_label
from .experiments_logistic import series_labels

PAPER_T = {"exact": 2897, 0.01: 3429, 0.05: 3979, 0.1: 4494, 0.15: 4889, 0.2: 5507, 0.25: 5959}


def _eps_name(eps: float) -> str:
    """Legend name of an RW-MH tolerance."""
    return "exact MH (eps=0)" if eps == 0 else f"eps={eps:g}"


def _test_note(run, unit: str = "rows") -> str:
    """'; test over blocks of b rows' when the run's sequential test used blocks."""
    b = int(run.spec.get("test_block") or 1)
    return f"; sequential test over blocks of {b} {unit}" if b > 1 else ""


def _data_note(run) -> str:
    """Which data the run used, against the paper's (and the test's blocks, if any)."""
    r = run.results()
    name = r.get("data/name", "?")
    note = f"data: {name}, N = {r.get('data/N', '?')}"
    if "data/file" not in r and name != "mnist":                # not the user's own table
        note += " (paper: MNIST 7 vs 9, N = 12,214)" if "kdd" not in name else ""
    return note + _test_note(run)


@figure("austerity.fig1", experiment="austerity.tstat", size=(11.0, 3.6))
def fig1(run, fig) -> None:
    """Histograms of the t statistic vs the Student-t density, one panel per n."""
    from scipy import stats as sst
    names = sorted([a.split("/")[1] for a in run.array_names()
                    if a.startswith("tstat/n")], key=lambda s: int(s[1:]))
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    res = run.results()
    for ax, nm in zip(axes, names):
        t = run.array(f"tstat/{nm}")
        at = run.array_attrs(f"tstat/{nm}")
        n_eff, N = int(at["n_eff"]), int(at["N"])
        ax.hist(t, bins=50, density=True, color="tab:blue", alpha=0.6, label="empirical")
        g = np.linspace(-4.5, 4.5, 400)
        ax.plot(g, sst.t(df=n_eff - 1).pdf(g), color="tab:red", label=f"Student-t, {n_eff - 1} dof")
        ttl = f"n = {n_eff} of N = {N}"
        if n_eff != int(at["n"]):
            ttl += f"\n(paper n = {int(at['n'])}, rescaled to N)"
        ax.set_title(ttl, fontsize=9)
        ax.set_xlim(-4.5, 4.5)
        ax.set_xlabel("t statistic (dimensionless)")
        ax.set_ylabel("probability density")
        ax.text(0.02, 0.97, f"KS = {res.get(f'tstat/{nm}/ks_stat', float('nan')):.3f}",
                transform=ax.transAxes, va="top", fontsize=8)
    axes[0].legend(fontsize=7, loc="upper right")
    fig.suptitle("t statistic under resampling without replacement; " + _data_note(run),
                 fontsize=9, y=0.99)
    fig.subplots_adjust(top=0.78, wspace=0.25)


@figure("austerity.fig2", experiment="austerity.rw_decisions", size=(6.4, 4.4))
def fig2(run, fig) -> None:
    """% of data used (left axis) and % wrong decisions (right axis) vs eps."""
    m = run.metrics()["decisions"]
    ax = fig.add_subplot()
    ax.plot(m["data_used"]["x"], m["data_used"]["y"], "o-", color="tab:blue", label="data used")
    ax.set_xlabel("ε")
    ax.set_ylabel("% of data used", color="tab:blue")
    ax.set_ylim(0, 105)
    ax2 = ax.twinx()
    ax2.plot(m["wrong"]["x"], m["wrong"]["y"], "s-", color="tab:red", label="wrong decisions")
    ax2.set_ylabel("% wrong accept/reject decisions", color="tab:red")
    ax2.set_ylim(bottom=0)
    ax.set_title("RW-MH, sequential test: " + _data_note(run), fontsize=9)


@figure("austerity.fig3", experiment="austerity.rw_risk", size=(6.4, 4.8))
def fig3(run, fig) -> None:
    """Risk of the predictive mean vs sampling time, one line per eps (log scale)."""
    res = run.results()
    ax = fig.add_subplot()
    curves = run.metrics().get("risk", {})
    for lab in series_labels(run.spec):
        c = curves.get(lab)
        if c is None:
            continue
        T = res.get(f"{lab}/samples", 0)
        name = _eps_name(float(lab[4:])) if lab.startswith("eps=") else lab
        ax.semilogy(c["x"], c["y"], label=f"{name}, T = {int(T):,}")
    floor = res.get("truth/pred_floor")
    ys = [c["y"].min() for c in run.metrics().get("risk", {}).values() if len(c["y"])]
    if floor is not None and np.isfinite(floor) and ys and floor > min(ys) / 100:
        ax.axhline(floor, color="0.5", ls=":", lw=1, label="HMC truth MC error")
    ax.set_xlabel("wall-clock seconds (sampling only)")
    ax.set_ylabel("risk of the predictive mean (log scale)")
    best = res.get("best_eps")
    extra = list(run.spec.get("samplers", {}))
    who = "RW-MH" + (f" vs {', '.join(extra)}" if extra else "")
    ttl = f"{who}, {_data_note(run)}"
    if best is not None:
        ttl += f"\nlowest final risk of RW-MH at ε = {best}"
    ax.set_title(ttl, fontsize=9)
    ax.legend(fontsize=7)


@figure("austerity.fig4", experiment="austerity.rw_marginals", size=(10.0, 6.4))
def fig4(run, fig) -> None:
    """Rows: eps; columns: wall times; each chain's samples so far vs the HMC truth."""
    spec = run.spec
    times, dims = spec["times"], spec["dims"]
    names = set(run.stream_names())
    labs = [lab for lab in series_labels(spec) if lab in names]
    truth = run.array("truth/marginal")
    axes = fig.subplots(len(labs), len(times), squeeze=False)
    mu, cov = truth.mean(0), np.cov(truth.T)
    ang = np.linspace(0, 2 * np.pi, 200)
    w, v = np.linalg.eigh(cov)
    ell = [mu + (v @ (k * np.sqrt(w)[:, None] * np.stack([np.cos(ang), np.sin(ang)]))).T
           for k in (1, 2)]
    lo = np.minimum(truth.min(0), mu - 3 * np.sqrt(np.diag(cov)))
    hi = np.maximum(truth.max(0), mu + 3 * np.sqrt(np.diag(cov)))
    for i, lab in enumerate(labs):
        x = run.stream(lab, "marginal")                          # (chain, draw, 2)
        tt = run.stream_time(lab)
        name = _eps_name(float(lab[4:])) if lab.startswith("eps=") else lab
        for j, T in enumerate(times):
            ax = axes[i, j]
            k = int(np.searchsorted(tt, T, side="right"))
            ax.scatter(truth[:, 0], truth[:, 1], s=1, color="tab:blue", alpha=0.15)
            for c in range(x.shape[0]):
                ax.plot(x[c, :k, 0], x[c, :k, 1], color="tab:red", lw=0.4, alpha=0.6)
            for e in ell:                    # on top: long runs would otherwise hide the truth
                ax.plot(e[:, 0], e[:, 1], color="tab:blue", lw=1.2, zorder=3)
            ax.set_title(f"{name}, {T:g} s, T = {k:,}", fontsize=8)
            span = np.vstack([lo, hi, x[:, :k].reshape(-1, 2).min(0) if k else lo,
                              x[:, :k].reshape(-1, 2).max(0) if k else hi])
            ax.set_xlim(span[:, 0].min(), span[:, 0].max())
            ax.set_ylim(span[:, 1].min(), span[:, 1].max())
            ax.tick_params(labelsize=6)
            ax.set_xlabel(f"θ{dims[0] + 1} (parameter value)", fontsize=7)
            ax.set_ylabel(f"θ{dims[1] + 1} (parameter value)", fontsize=7)
    fig.suptitle("Sampler paths (red, one per chain) vs HMC truth (blue: samples, 1σ/2σ "
                 "ellipses); " + _data_note(run), fontsize=9)


@figure("austerity.fig5_6", experiment="austerity.sgld_variance", size=(6.4, 4.8))
def fig5_6(run, fig) -> None:
    """L1 error in the posterior variance vs sampling time, one line per sampler."""
    res = run.results()
    ax = fig.add_subplot()
    for lab, c in run.metrics().get("variance_l1", {}).items():
        T = int(res.get(f"{lab}/samples", 0))
        acc = res.get(f"{lab}/accept", float("nan"))
        ax.semilogy(c["x"], c["y"], label=f"{lab}, T = {T:,} (acc {acc:.2f})")
    floor = res.get("truth/var_floor")
    ys = [c["y"].min() for c in run.metrics().get("variance_l1", {}).values() if len(c["y"])]
    if floor is not None and np.isfinite(floor) and ys and floor > min(ys) / 100:
        ax.axhline(floor, color="0.5", ls=":", lw=1, label="HMC truth MC error")
    total = res.get("truth/var_l1_norm")
    if total is not None and np.isfinite(total):
        # a chain that never moves estimates every variance as 0: its error is Σ var
        ax.axhline(total, color="0.3", ls="--", lw=0.8,
                   label=f"Σ var = {total:.3g} (error of a chain that never moves)")
    frozen = [lab for lab in run.metrics().get("variance_l1", {})
              if res.get(f"{lab}/accept", 1.0) < 0.01]
    if frozen:
        figure_note(fig, f"acceptance < 1%: {', '.join(frozen)}")
    ax.set_xlabel("wall-clock seconds (sampling only)")
    ax.set_ylabel("L1 error of the posterior variance (log scale)")
    ax.set_title(f"SGLD proposals, step size {run.spec['step_size']:g}; data: "
                 f"{res.get('data/name', '?')}, N = {res.get('data/N', '?')}"
                 + (" (paper: the 10% set, 494,021 rows)"
                    if str(res.get("data/name", "")).startswith("kdd") else "")
                 + _test_note(run), fontsize=9)
    ax.legend(fontsize=7)


@figure("austerity.fig7", experiment="austerity.mrf_calibration", size=(11.0, 4.8))
def fig7(run, fig) -> None:
    """Empirical vs exact conditional probability of approximate Gibbs (paper Fig 7)."""
    spec, res = run.spec, run.results()
    cal = run.metrics()["calibration"]
    errs = run.metrics().get("calibration_error", {})
    ax, ax2 = fig.subplots(1, 2)
    ax.plot([0, 1], [0, 1], color="0.6", lw=0.8, label="true probability")
    labels = [k for k in cal if k != "exact"]
    labels.sort(key=lambda s: float(s.split("=")[1]))
    colors = [f"C{i}" for i in range(len(labels))]
    for lab, c in zip(labels, colors):
        cv = cal[lab]
        me = res.get(f"max_error/{lab}", float("nan"))
        mse = res.get(f"max_error_se/{lab}", float("nan"))
        ax.plot(cv["x"], cv["y"], "o-", ms=3, color=c,
                label=f"{lab.replace('eps', 'ε')}: max err {me:.4f}±{mse:.4f}")
        ev = errs.get(lab)
        if ev is not None:
            ax2.errorbar(ev["x"], ev["y"], yerr=ev.get("yerr"), fmt="o-", ms=3, color=c,
                         capsize=2, label=lab.replace("eps", "ε"))
    if "exact" in cal:
        cv = cal["exact"]
        ax.plot(cv["x"], cv["y"], "k:", lw=1.5, label="exact Gibbs (raw frequency)")
        ev = errs.get("exact")
        if ev is not None:
            ax2.errorbar(ev["x"], ev["y"], yerr=ev.get("yerr"), fmt="k:", capsize=2,
                         label="exact Gibbs (raw)")
    ax.set_xlabel("true conditional probability")
    ax.set_ylabel("empirical conditional probability")
    ax.legend(fontsize=7, loc="upper left")
    ax2.axhline(0, color="0.6", lw=0.8)
    for y in (-0.01, 0.01):
        ax2.axhline(y, color="0.8", lw=0.6, ls="--")
    ax2.set_xlabel("true conditional probability")
    ax2.set_ylabel("empirical − true (paired estimate, ±1 SE)")
    ax2.legend(fontsize=7)
    m = spec["model"]
    b = spec["budget"]
    e01 = res.get("max_error/eps=0.01")
    claim = ""
    if e01 is not None:
        se = res.get("max_error_se/eps=0.01", float("nan"))
        verdict = "holds" if e01 + 2 * se <= 0.01 else ("consistent" if e01 - 2 * se <= 0.01
                                                         else "does NOT hold")
        claim = (f"paper: max error within 0.01 at ε=0.01; here {e01:.4f}±{se:.4f} → {verdict}")
    fig.suptitle(f"Dense MRF D={m['D']}, log ψ ~ N(0, σ²) with σ{'' if m['s_is'] == 'std' else '²'}"
                 f"={m['s']:g}, m={spec['minibatch']}, {spec['chains']} chains, "
                 f"{'%g s' % b['seconds'] if b['seconds'] else ''}"
                 f"{' / ' if b['seconds'] and b['sweeps'] else ''}"
                 f"{'%d sweeps' % b['sweeps'] if b['sweeps'] else ''} per sampler "
                 f"(scale: {spec['scale']}){_test_note(run, 'pair terms')}\n{claim}", fontsize=8)


def _paper_T(label: str, sp: dict) -> str:
    if sp["method"] == "exact_lookup":
        return f", paper T={PAPER_T['exact']}"
    if sp["method"] == "approx" and sp["eps"] in PAPER_T:
        return f", paper T={PAPER_T[sp['eps']]}"
    return ""


@figure("austerity.fig8", experiment="austerity.mrf_joint_error", size=(15.0, 5.0))
def fig8(run, fig) -> None:
    """Average L1 error of 5-variable joints vs time / sweeps / pair terms (paper Fig 8)."""
    spec, res, mets = run.spec, run.results(), run.metrics()
    axes = fig.subplots(1, 3)
    panels = (("joint_l1", "sampling wall time (s) — equal wall-clock budget"),
              ("joint_l1_vs_sweeps", "sweeps per chain"),
              ("joint_l1_vs_terms", "pair-term evaluations per chain (paper's cost model)"))
    samplers = spec["samplers"]
    for ax, (metric, xl) in zip(axes, panels):
        for i, (lab, sp) in enumerate(samplers.items()):
            c = mets.get(metric, {}).get(lab)
            if c is None or len(c["x"]) == 0:
                continue
            style = dict(color="k", lw=2) if sp["method"] == "exact" else (
                dict(color="k", lw=1.2, ls="--") if sp["method"] == "exact_lookup" else
                dict(color=f"C{i}", lw=1))
            x = np.maximum(np.asarray(c["x"]), 1e-6)
            T = res.get(f"sweeps_in_budget/{lab}", 0)
            ax.loglog(x, c["y"], label=f"{lab} T={T}{_paper_T(lab, sp)}", **style)
        noise = res.get("truth_noise_l1")
        if noise is not None:
            ax.axhline(noise, color="0.5", ls=":", lw=1, label="noise of the truth itself")
        ax.set_xlabel(xl)
        ax.set_ylabel(JointL1.y_label)
    axes[0].legend(fontsize=6)
    m, b, tr = spec["model"], spec["budget"], spec["truth"]
    budget = (f"{b['seconds']:g} s" if b["seconds"] else "") + (
        f" / {b['sweeps']} sweeps" if b["sweeps"] else "")
    fig.suptitle(
        f"Dense MRF D={m['D']}, σ{'' if m['s_is'] == 'std' else '²'}={m['s']:g}, "
        f"M={spec['subsets']['M']} subsets of {spec['subsets']['size']}, {spec['chains']} chains "
        f"(error per chain, averaged), budget {budget} per sampler (scale: {spec['scale']})"
        f"{_test_note(run, 'pair terms')}; "
        f"truth: {tr['chains']}×{tr['sweeps']} exact sweeps.  T = sweeps per chain in the budget "
        f"(paper: 1000 s on its hardware; its exact Gibbs did {PAPER_T['exact']}).\n"
        f"Our quadratic-form exact sweep is far cheaper than the paper's, so its time axis does "
        f"not transfer: compare the panels at equal time, equal sweeps and equal pair-term work.",
        fontsize=8)


@figure("austerity.big_n", experiment="austerity.big_n", size=(12.0, 4.8))
def fig_big_n(run, fig) -> None:
    """Samples per chain (left: the slope is samples/s) and the risk of the predictive mean
    (right, log scale) against wall time: one colour per test, one line style per N."""
    res = run.results()
    metrics = run.metrics()
    ax1, ax2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    colours = {"exact": "k", "per-point": "tab:blue", "blocks": "tab:orange"}
    styles = ("-", "--", ":", "-.")
    block = run.spec.get("test_block", 32)
    for i, N in enumerate(run.spec.get("ns", [])):
        for test in TESTS:
            lab = series_label(int(N), test)
            name = f"blocks of {block}" if test == "blocks" else test
            rate = res.get(f"{lab}/samples_per_second", float("nan"))
            used = res.get(f"{lab}/data_used", float("nan"))
            kw = {"color": colours[test], "ls": styles[i % len(styles)]}
            c = metrics.get("samples", {}).get(lab)
            if c is not None:
                ax1.plot(c["x"], c["y"], label=f"N={int(N):.0e} {name}: {rate:.0f}/s, "
                                               f"data {100 * used:.0f}%", **kw)
            c = metrics.get("risk", {}).get(lab)
            if c is not None and len(c["y"]):
                ax2.semilogy(c["x"], c["y"], label=f"N={int(N):.0e} {name}", **kw)
    ax1.set_xlabel("wall-clock seconds (sampling only)")
    ax1.set_ylabel("samples per chain")
    ax1.set_title(f"samples vs wall time (ε = {run.spec.get('eps')}; slope = samples/s)",
                  fontsize=9)
    ax1.legend(fontsize=7)
    ax2.set_xlabel("wall-clock seconds (sampling only)")
    ax2.set_ylabel("risk of the predictive mean (log scale)")
    ax2.set_title("risk vs wall time, synthetic logistic regression, "
                  f"d = {res.get('data/d', '?')}", fontsize=9)
    ax2.legend(fontsize=7)
