"""Experiment kinds of Figs 1-6 of Korattikara, Chen & Welling (2014), "Austerity in MCMC
land": Bayesian logistic regression (one spec per figure under experiments/austerity/; figures in
figures.py).

* ``austerity.tstat``         Fig 1: t statistic under resampling without replacement vs Student-t
* ``austerity.rw_decisions``  Fig 2: % data used and % wrong decisions vs eps (RW-MH)
* ``austerity.rw_risk``       Fig 3: risk of the predictive mean vs wall time (RW-MH, 8 chains)
* ``austerity.rw_marginals``  Fig 4: (θ1, θ2) marginals at three wall times vs the HMC truth
* ``austerity.sgld_variance`` Figs 5-6: L1 error of the posterior variance vs wall time (SGLD)

Target: target_logistic.py; evaluators: evaluators.py; series of samplers: series.py.
"""

from __future__ import annotations

import numpy as np

from ..plugins.registry import experiment
from ..spec.schema import Param
from . import checks
from .blas import one_blas_thread
from .evaluators import PosteriorMean, PredictiveRisk, VarianceL1
from .limits import BLOCK_MAX, CHAINS_MAX, MINIBATCH_MAX, STEPS_MAX
from .logistic import add_bias, map_estimate
from .series import (
    SUMMARY_DIMS,
    TEST_BLOCK_ROWS,
    WithMarginal,
    build_sampler,
    extra_samplers,
    posterior_summaries,
    sampler_series,
)
from .target_logistic import (
    HMC_KEYS,
    INIT_CHOICES,
    MODEL,
    LogisticTarget,
    data_keys,
    init_theta,
    laplace_approx,
    load_problem,
    record_truth,
    start_target,
    truth_once,
)

# ----------------------------------------------------------------------------------------------
# Fig 1


SCHEMA_TSTAT = {
    "data": data_keys(),
    "model": MODEL,
    "n": Param([500, 5000, 10000], list, item=int, lo=2, hi=STEPS_MAX, min_len=1,
               help="subsample sizes (for N = reference_N; rescaled by N/reference_N if N is "
                    "smaller than reference_N)"),
    "reference_N": Param(12214, int, lo=2, hi=STEPS_MAX, help="N of the paper's data (MNIST 7 vs 9)"),
    "resamples": Param(2000, int, lo=10, hi=10_000_000, help="subsamples drawn per n"),
    "sigma": Param(0.01, float, lo=0, lo_open=True,
                   help="θ' = mode + sigma ξ defines the population l_i"),
}


@experiment("austerity.tstat", schema=SCHEMA_TSTAT, check=checks.logistic(),
            adapt=checks.adapt_logistic,
            help="Fig 1: t statistic under resampling without replacement vs Student-t")
@one_blas_thread
def run_tstat(ctx) -> None:
    from scipy import stats as sst

    from .seqtest import t_statistic
    p = ctx.params
    post, _xt, _yt, _name = load_problem(ctx, p["data"], p["model"])
    N = post.N
    rng = ctx.rng("tstat")
    mode = map_estimate(post)
    prop = mode + p["sigma"] * rng.standard_normal(post.d)
    L = (post.loglik_terms(prop[None]) - post.loglik_terms(mode[None]))[0].astype(np.float64)
    mu = L.mean()
    ctx.store.write_array("tstat/population", L.astype(np.float32), mean=mu)
    scale = N / p["reference_N"] if N < p["reference_N"] else 1.0
    for n in p["n"]:
        n_eff = int(np.clip(round(n * scale), 2, N - 1))
        if n_eff != n:
            ctx.log(f"n = {n} rescaled to {n_eff} (N = {N} < {p['reference_N']})")
        R = p["resamples"]
        t = np.empty(R)
        for s in range(0, R, 100):
            r = min(100, R - s)
            idx = np.argsort(rng.random((r, N)), axis=1)[:, :n_eff]
            t[s:s + r] = t_statistic(L[idx], mu, N)
        ks = sst.kstest(t, sst.t(df=n_eff - 1).cdf)
        ctx.store.write_array(f"tstat/n{n}", t, n=n, n_eff=n_eff, N=N)
        ctx.store.set_result(f"tstat/n{n}/n_eff", n_eff)
        ctx.store.set_result(f"tstat/n{n}/ks_stat", float(ks.statistic))
        ctx.store.set_result(f"tstat/n{n}/ks_pvalue", float(ks.pvalue))
        ctx.log(f"n = {n_eff}: KS distance to t_{n_eff - 1} = {ks.statistic:.4f} "
                f"(p = {ks.pvalue:.3g})")


# ----------------------------------------------------------------------------------------------
# Fig 2


SCHEMA_DECISIONS = {
    "data": data_keys(),
    "model": MODEL,
    "sigma": Param(0.01, float, lo=0, lo_open=True, help="random-walk proposal std"),
    "m": Param(500, int, lo=2, hi=MINIBATCH_MAX, help="minibatch size of the sequential test"),
    "test_block": TEST_BLOCK_ROWS,
    "eps": Param([0.0, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2], list, item=float, lo=0, hi=0.5,
                 min_len=1, help="tolerances"),
    "chains": Param(4, int, lo=1, hi=CHAINS_MAX),
    "burn_in": Param(200, int, lo=0, hi=STEPS_MAX, help="steps per chain before measuring"),
    "steps": Param(2000, int, lo=1, hi=STEPS_MAX, help="measured steps per chain"),
    "init": Param("laplace", str, choices=INIT_CHOICES,
                  help="start: zero, the mode, or a draw from the Laplace approximation"),
}


@experiment("austerity.rw_decisions", schema=SCHEMA_DECISIONS, check=checks.logistic(),
            adapt=checks.adapt_logistic,
            help="Fig 2: fraction of data used and of wrong decisions vs eps (RW-MH)")
@one_blas_thread
def run_decisions(ctx) -> None:
    p = ctx.params
    post, _xt, _yt, _name = load_problem(ctx, p["data"], p["model"])
    lap = laplace_approx(post)
    used, wrong, acc = [], [], []
    shared = {"sigma": p["sigma"], "m": p["m"], "test_block": p["test_block"]}
    series = sampler_series("logistic", {
        f"eps={eps:g}": {"method": "rw_mh", "eps": eps, "track_errors": True}
        for eps in p["eps"]}, {})
    starts = {}
    with ctx.parallel():                        # the burn-ins are independent (mixlab run -j)
        for lab, (entry, where) in series.items():
            starts[lab] = init_theta(p["init"], post, ctx.rng("init", lab), p["chains"], lap)
            if p["burn_in"]:
                s0 = build_sampler("logistic", entry, where,
                                   LogisticTarget(post, starts[lab], lap), p["chains"], shared)
                starts[lab] = ctx.stream(f"burnin/{lab}", s0, draws=p["burn_in"], record=False,
                                         rng=ctx.rng("burnin", lab))
    streams = {}
    with ctx.parallel():                        # each series starts where its burn-in ended
        for lab, (entry, where) in series.items():
            init = starts[lab].state["theta"] if p["burn_in"] else starts[lab]
            s = build_sampler("logistic", entry, where, LogisticTarget(post, init, lap),
                              p["chains"], shared)
            streams[lab] = ctx.stream(lab, s, draws=p["steps"], record=False,
                                      rng=ctx.rng("sample", lab))
    for lab, r in streams.items():
        used.append(r.stats_mean["data_used"])
        wrong.append(r.stats_mean["wrong"])
        acc.append(r.stats_mean["accept"])
        ctx.store.set_result(f"{lab}/data_used", used[-1])
        ctx.store.set_result(f"{lab}/wrong", wrong[-1])
        ctx.store.set_result(f"{lab}/accept", acc[-1])
        ctx.log(f"{lab}: data used {100 * used[-1]:.1f}%, wrong decisions "
                f"{100 * wrong[-1]:.2f}%, acceptance {acc[-1]:.3f}")
    eps = np.array(p["eps"])
    ctx.store.write_metric("decisions", "data_used", eps, 100 * np.array(used),
                           x_label="eps", y_label="% of data used")
    ctx.store.write_metric("decisions", "wrong", eps, 100 * np.array(wrong),
                           x_label="eps", y_label="% wrong decisions")
    ctx.store.write_metric("decisions", "accept", eps, np.array(acc),
                           x_label="eps", y_label="acceptance rate")


# ----------------------------------------------------------------------------------------------
# Figs 3 and 4


SCHEMA_RISK = {
    "data": data_keys(),
    "model": MODEL,
    "hmc": HMC_KEYS,
    "sigma": Param(0.01, float, lo=0, lo_open=True, help="random-walk proposal std"),
    "m": Param(500, int, lo=2, hi=MINIBATCH_MAX, help="minibatch size of the sequential test"),
    "test_block": TEST_BLOCK_ROWS,
    "eps": Param([0.0, 0.01, 0.05, 0.1, 0.2], list, item=float, lo=0, hi=0.5,
                 help="tolerances of the RW-MH series (sampler rw_mh; 0 = exact MH)"),
    "samplers": extra_samplers("logistic"),
    "chains": Param(8, int, lo=1, hi=CHAINS_MAX, help="independent chains (risk = MSE over them)"),
    "seconds": Param(20.0, float, lo=0, lo_open=True, help="sampling wall time per eps"),
    "init": Param("zero", str, choices=INIT_CHOICES, help="start of every chain"),
    "block": Param(100, int, lo=1, hi=BLOCK_MAX, help="draws per block (one curve point per block)"),
    "summary_dims": SUMMARY_DIMS,
}


@experiment("austerity.rw_risk", schema=SCHEMA_RISK,
            check=checks.logistic(lambda p: list(rw_labels(p))), adapt=checks.adapt_logistic,
            help="Fig 3: risk of the predictive mean vs wall-clock time, RW-MH, several eps")
@one_blas_thread
def run_risk(ctx) -> None:
    p = ctx.params
    series = rw_series(p)
    post, Xt, _yt, _name = load_problem(ctx, p["data"], p["model"])
    truth = truth_once(ctx, post, Xt, p["hmc"])
    record_truth(ctx, truth)
    ctx.store.set_result("truth/pred_floor", float(truth["pred_floor"]))
    target = start_target(ctx, p, post)
    Xtb = add_bias(Xt) if post.bias else Xt
    shared = {"sigma": p["sigma"], "m": p["m"], "test_block": p["test_block"]}
    finals = {}
    streams = {}
    with ctx.parallel():                        # the series are independent (mixlab run -j)
        for lab, (entry, where) in series.items():
            s = build_sampler("logistic", entry, where, target, p["chains"], shared)
            ev = PredictiveRisk(lab, Xtb, truth["pred"], p["chains"])
            pm = PosteriorMean(lab, truth["mean"])
            r = ctx.stream(lab, s, seconds=p["seconds"], evaluators=[ev, pm], record=False,
                           rng=ctx.rng("sample", lab), block=p["block"],
                           summarize=posterior_summaries(p, post.d))
            streams[lab] = (entry, where, ev, pm, r)
    for lab, (entry, where, ev, pm, r) in streams.items():
        final = ev.y[-1]
        ctx.store.set_result(f"mean/{lab}", [float(v) for v in pm.mean()])
        if where is None:                       # RW-MH at one of the spec's eps
            finals[entry["eps"]] = final
        ctx.store.write_metric("samples", lab, np.array(ev.x), np.array(ev.count),
                               x_label="wall-clock seconds", y_label="samples per chain")
        for k, v in (("samples", r.draws), ("seconds", r.seconds),
                     ("data_used", r.stats_mean.get("data_used", float("nan"))),
                     ("accept", r.stats_mean.get("accept", float("nan"))),
                     ("final_risk", final)):
            ctx.store.set_result(f"{lab}/{k}", v)
        ctx.log(f"{lab}: T = {r.draws} samples/chain in {r.seconds:.1f} s, data used "
                f"{100 * r.stats_mean.get('data_used', float('nan')):.1f}%, final risk "
                f"{final:.3g}")
    if finals:
        best = min(finals, key=finals.get)
        ctx.store.set_result("best_eps", best)
        ctx.store.set_result("min_risk_at_eps_gt_0", bool(best > 0))


def rw_labels(p: dict) -> dict:
    """The experiment's own series of Figs 3-4: RW-MH at each of the spec's ``eps``."""
    return {f"eps={eps:g}": {"method": "rw_mh", "eps": eps} for eps in p["eps"]}


def rw_series(p: dict) -> dict:
    """The series of Figs 3-4: RW-MH at each of the spec's ``eps``, then its ``samplers``."""
    return sampler_series("logistic", rw_labels(p), p["samplers"])


def series_labels(spec: dict) -> list[str]:
    """Labels of the series of a Fig 3-6 spec, in run order (for figures, from the spec)."""
    if "include_sgld" in spec:
        return list(sgld_builtin(spec)) + list(spec.get("samplers", {}))
    return [f"eps={eps:g}" for eps in spec["eps"]] + list(spec.get("samplers", {}))


SCHEMA_MARGINALS = dict(SCHEMA_RISK)
SCHEMA_MARGINALS.update({
    "eps": Param([0.0, 0.01], list, item=float, lo=0, hi=0.5,
                 help="tolerances of the RW-MH series (sampler rw_mh; 0 = exact MH)"),
    "chains": Param(3, int, lo=1, hi=CHAINS_MAX, help="independent runs drawn per panel"),
    "times": Param([5.0, 10.0, 20.0], list, item=float, lo=0, lo_open=True, min_len=1,
                   help="wall times of the panels (the budget is the largest)"),
    "dims": Param([0, 1], list, item=int, lo=0, hi=100_000, min_len=2, help="the two coordinates shown"),
})
del SCHEMA_MARGINALS["seconds"]


@experiment("austerity.rw_marginals", schema=SCHEMA_MARGINALS,
            check=checks.logistic(lambda p: list(rw_labels(p)), dims=True),
            adapt=checks.adapt_logistic,
            help="Fig 4: (θ1, θ2) marginals of RW-MH at three wall times vs the HMC truth")
@one_blas_thread
def run_marginals(ctx) -> None:
    p = ctx.params
    series = rw_series(p)
    post, Xt, _yt, _name = load_problem(ctx, p["data"], p["model"])
    truth = truth_once(ctx, post, Xt, p["hmc"])
    record_truth(ctx, truth)
    ctx.store.write_array("truth/marginal", truth["samples"][:, p["dims"]].astype(np.float32))
    target = start_target(ctx, p, post)
    shared = {"sigma": p["sigma"], "m": p["m"], "test_block": p["test_block"]}
    budget = max(p["times"])
    streams = {}
    with ctx.parallel():                        # the series are independent (mixlab run -j)
        for lab, (entry, where) in series.items():
            s = WithMarginal(build_sampler("logistic", entry, where, target, p["chains"],
                                           shared), p["dims"])
            pm = PosteriorMean(lab, truth["mean"])
            streams[lab] = pm, ctx.stream(lab, s, seconds=budget, record=("marginal",),
                                          rng=ctx.rng("sample", lab), block=p["block"],
                                          evaluators=[pm],
                                          summarize=posterior_summaries(p, post.d))
    for lab, (pm, r) in streams.items():
        ctx.store.set_result(f"mean/{lab}", [float(v) for v in pm.mean()])
        ctx.store.set_result(f"{lab}/samples", r.draws)
        ctx.store.set_result(f"{lab}/data_used", r.stats_mean.get("data_used", float("nan")))
        ctx.log(f"{lab}: T = {r.draws} samples/chain in {r.seconds:.1f} s")


# ----------------------------------------------------------------------------------------------
# Figs 5 and 6


SCHEMA_SGLD = {
    "data": data_keys("kdd99", classes=None, pca=None),
    "model": {"precision": Param(10.0, float, lo=0, lo_open=True),
              "bias": Param(False, bool, help="the paper has 41 parameters: no intercept")},
    "hmc": HMC_KEYS,
    "step_size": Param(5e-4, float, lo=0, lo_open=True, help="SGLD step α"),
    "batch": Param(500, int, lo=1, hi=MINIBATCH_MAX, help="SGLD gradient minibatch"),
    "m": Param(500, int, lo=2, hi=MINIBATCH_MAX, help="minibatch size of the sequential test"),
    "test_block": TEST_BLOCK_ROWS,
    "eps": Param([0.01, 0.05, 0.1], list, item=float, lo=0, hi=0.5,
                 help="tolerances of the corrected samplers"),
    "include_sgld": Param(True, bool, help="run uncorrected SGLD"),
    "include_mh": Param(True, bool, help="run SGLD corrected by the exact MH test"),
    "samplers": extra_samplers("logistic"),
    "chains": Param(8, int, lo=1, hi=CHAINS_MAX),
    "seconds": Param(20.0, float, lo=0, lo_open=True, help="sampling wall time per sampler"),
    "init": Param("map", str, choices=INIT_CHOICES, help="start of every chain"),
    "block": Param(200, int, lo=1, hi=BLOCK_MAX, help="draws per block (one curve point per block)"),
    "summary_dims": SUMMARY_DIMS,
}


@experiment("austerity.sgld_variance", schema=SCHEMA_SGLD,
            check=checks.logistic(lambda p: list(sgld_builtin(p))), adapt=checks.adapt_logistic,
            help="Figs 5-6: L1 error of the posterior variance vs wall time, SGLD proposals")
@one_blas_thread
def run_sgld(ctx) -> None:
    p = ctx.params
    series = sampler_series("logistic", sgld_builtin(p), p["samplers"])
    post, Xt, _yt, _name = load_problem(ctx, p["data"], p["model"])
    truth = truth_once(ctx, post, Xt[:10], p["hmc"])
    record_truth(ctx, truth)
    ctx.store.set_result("truth/var_floor", float(truth["var_floor"]))
    ctx.store.set_result("truth/var_l1_norm", float(np.abs(truth["var"]).sum()))
    target = start_target(ctx, p, post)
    shared = {"step_size": p["step_size"], "batch": p["batch"], "m": p["m"],
              "test_block": p["test_block"]}
    streams = {}
    with ctx.parallel():                        # the series are independent (mixlab run -j)
        for lab, (entry, where) in series.items():
            s = build_sampler("logistic", entry, where, target, p["chains"], shared)
            ev = VarianceL1(lab, truth["var"], p["chains"])
            pm = PosteriorMean(lab, truth["mean"])
            streams[lab] = ev, pm, ctx.stream(lab, s, seconds=p["seconds"], evaluators=[ev, pm],
                                              record=False, rng=ctx.rng("sample", lab),
                                              block=p["block"],
                                              summarize=posterior_summaries(p, post.d))
    for lab, (ev, pm, r) in streams.items():
        acc = r.stats_mean.get("accept", float("nan"))
        used = r.stats_mean.get("data_used", float("nan"))
        for k, v in (("samples", r.draws), ("seconds", r.seconds), ("data_used", used),
                     ("accept", acc), ("final_l1", ev.y[-1])):
            ctx.store.set_result(f"{lab}/{k}", v)
        ctx.store.set_result(f"mean/{lab}", [float(v) for v in pm.mean()])
        ctx.log(f"{lab}: T = {r.draws} in {r.seconds:.1f} s, acceptance {acc:.3f}, test data "
                f"{100 * used:.1f}%, final L1 {ev.y[-1]:.3g}")


def sgld_builtin(p: dict) -> dict:
    """Figs 5-6's own series: SGLD, SGLD + exact MH, SGLD + the sequential test at each eps."""
    out = {}
    if p["include_sgld"]:
        out["SGLD"] = {"method": "sgld"}
    if p["include_mh"]:
        out["MH"] = {"method": "sgld_mh", "eps": 0.0}
    out.update({f"eps={e:g}": {"method": "sgld_mh", "eps": e} for e in p["eps"]})
    return out
