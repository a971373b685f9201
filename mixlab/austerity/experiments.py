"""Experiment kinds of Korattikara, Chen & Welling (2014), "Austerity in MCMC land".

Experiment kinds (one spec per figure under experiments/austerity/; figures in figures.py):

* ``austerity.tstat``         Fig 1: t statistic under resampling without replacement vs Student-t
* ``austerity.rw_decisions``  Fig 2: % data used and % wrong decisions vs eps (RW-MH)
* ``austerity.rw_risk``       Fig 3: risk of the predictive mean vs wall time (RW-MH, 8 chains)
* ``austerity.rw_marginals``  Fig 4: (θ1, θ2) marginals at three wall times vs the HMC truth
* ``austerity.sgld_variance`` Figs 5-6: L1 error of the posterior variance vs wall time (SGLD)
* ``austerity.mrf_calibration`` Fig 7: for each eps, approximate Gibbs runs under a wall-clock
  budget and records, for every update, the exact conditional ``p = P(x_i=1|x_-i)`` of the state
  it saw, the approximate decision, and the exact decision with the same u.  Binned by p, the
  probability that approximate Gibbs sets x_i = 1 is estimated by the *paired* estimator
  ``mean(p) + mean(approx - exact_same_u)`` (unbiased, because ``E[exact_same_u | p] = p``; its
  variance is that of the rare disagreements, not p(1-p)).  Exact Gibbs is shown with the raw
  frequency (the check that the sampler itself is calibrated).
* ``austerity.mrf_joint_error`` Fig 8: average L1 error of the joint on M random 5-variable
  subsets vs sampling time, sweeps and pair-term evaluations, exact Gibbs (fast quadratic form,
  and the table-lookup implementation that has the paper's cost model) vs approximate Gibbs at
  each eps, all under the same wall-clock budget; the truth from long exact-Gibbs runs
  (``ctx.once("truth")``, cached across runs, see target_mrf.py).

Every sampler is looked up in the registry (``logistic`` family for Figs 2-6, ``mrf`` for 7-8;
built-ins registered at the end of samplers.py); the ``samplers`` key of Figs 3-6 and 8 adds any
registered sampler (a plugin's) as one more series under the same budget.  Targets: see
target_logistic.py and target_mrf.py; evaluators: evaluators.py.
"""

from __future__ import annotations

import numpy as np

from .. import registry
from ..errors import SpecError
from ..generic import log_spaced
from ..registry import experiment
from ..schema import MapOf, Param, SamplerEntry, validate
from .blas import one_blas_thread
from .evaluators import Calibration, JointL1, PosteriorMean, PredictiveRisk, VarianceL1
from .limits import BLOCK_MAX, CHAINS_MAX, MINIBATCH_MAX, STEPS_MAX, SUBSETS_MAX
from .logistic import add_bias, map_estimate
from .mrf import random_subsets
from .summaries import mrf_summaries, subset_configs, theta_dims, theta_summaries
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
from .target_mrf import MODEL_SCHEMA, build_model, model_attrs, model_seed, truth_cached

PAPER_EPS = (0.01, 0.05, 0.1, 0.15, 0.2, 0.25)

# ----------------------------------------------------------------------------------------------
# series: every sampler through the registry


def extra_samplers(family: str) -> MapOf:
    """The ``samplers`` key: more samplers, each one more series under the same budget."""
    return MapOf(SamplerEntry(family), default={},
                 help=f"more samplers to run beside the paper's, by label: {{method: NAME, ...}} "
                      f"with NAME a registered {family} sampler (see 'mixlab plugins'); each "
                      f"gets the same budget and appears as one more series")


def sampler_series(family: str, builtin: dict, extra: dict, path: str = "samplers") -> dict:
    """``{label: (entry, spec path or None)}``: the experiment's own series ``builtin``
    ({label: entry} made from its top-level keys, validated like spec entries; path None) then
    the spec's ``extra`` entries (already validated; path ``samplers.<label>``)."""
    out = {}
    for label, entry in builtin.items():
        out[label] = (validate(entry, SamplerEntry(family), path), None)
    for label, entry in extra.items():
        if label in out:
            raise SpecError(f"'{label}' is a series the experiment already runs; give this "
                            f"sampler another label", f"{path}.{label}")
        out[label] = (entry, f"{path}.{label}")
    if not out:
        raise SpecError("nothing to run: give eps values or samplers", path)
    return out


def build_sampler(family: str, entry: dict, where: str | None, target, chains: int,
                  shared: dict):
    """The registered sampler ``entry['method']`` of ``family`` built on ``target``.

    A parameter left null (``None``) takes the value of the same-named key of ``shared`` (the
    experiment's top-level settings, e.g. ``sigma`` or ``m``).  A SpecError of the factory is
    re-keyed under ``where`` (the entry's spec path; None for the experiment's own series, whose
    parameters are the top-level keys of the same names)."""
    params = dict(entry)
    for key, value in shared.items():
        if key in params and params[key] is None:
            params[key] = value
    kind = registry.get_sampler(family, params["method"], f"{where or 'samplers'}.method")
    try:
        return kind.factory(target, params, chains)
    except SpecError as exc:
        if where is None or exc.key is None or exc.key.startswith(where):
            raise
        msg = str(exc).split(": ", 1)[-1]
        raise SpecError(msg, f"{where}.{exc.key}") from None


class WithMarginal:
    """Adds the draw key ``marginal`` = samples[:, dims] (float32) to a sampler's draws."""

    def __init__(self, sampler, dims):
        self.sampler, self.dims = sampler, list(dims)
        self.chains = sampler.chains

    def init(self, rng):
        return self.sampler.init(rng)

    def step(self, state, rng):
        state, draws, stats = self.sampler.step(state, rng)
        draws = dict(draws, marginal=draws["samples"][:, self.dims].astype(np.float32))
        return state, draws, stats


class WithTerms:
    """Adds ``terms (chain,)`` = pair-term evaluations of the sweep to a sampler's draws (exact:
    D·N per sweep; approximate: the terms its tests read), for the work axis of Fig 8."""

    def __init__(self, sampler, per_sweep: int):
        self.sampler, self.per_sweep = sampler, per_sweep
        self.chains = sampler.chains

    def init(self, rng):
        return self.sampler.init(rng)

    def step(self, state, rng):
        state, draws, stats = self.sampler.step(state, rng)
        # a sampler without a data_used statistic is charged a full sweep (D·N terms)
        used = np.broadcast_to(stats.get("data_used", 1.0), (self.chains,))
        draws["terms"] = (used * self.per_sweep).astype(np.float32)
        return state, draws, stats


SUMMARY_DIMS = Param(None, list, item=int, lo=-100_000, hi=100_000, nullable=True,
                     help="coordinates of θ stored per draw as summaries for 'mixlab diagnose' "
                          "(null: every coordinate, d x 8 bytes per chain per draw; negative "
                          "counts from the end; [] none)")


def posterior_summaries(p: dict, d: int):
    """The stream's ``summarize`` for the spec's ``summary_dims`` (None when it lists none)."""
    dims = theta_dims(p["summary_dims"], d)
    return theta_summaries(dims) if dims else None


def eps_label(e: float) -> str:
    """Series label of a tolerance."""
    return f"eps={e:g}"


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


@experiment("austerity.tstat", schema=SCHEMA_TSTAT,
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


# The sequential test's population may be blocks of consecutive rows (pair terms) of a
# once-shuffled order instead of single points; 1 keeps the paper's per-point test (the figures'
# default), larger blocks make a point read cost what it costs in the exact pass.
TEST_BLOCK_ROWS = Param(1, int, lo=1, hi=MINIBATCH_MAX,
                        help="rows per block of the sequential test's population (1: the "
                             "paper's per-point test; e.g. 32: blocks, faster per point read)")
TEST_BLOCK_TERMS = Param(1, int, lo=1, hi=MINIBATCH_MAX,
                         help="pair terms per block of the approximate Gibbs test's population "
                              "(1: the paper's per-term test; e.g. 64: blocks)")


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


@experiment("austerity.rw_decisions", schema=SCHEMA_DECISIONS,
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
    for lab, (entry, where) in series.items():
        init = init_theta(p["init"], post, ctx.rng("init", lab), p["chains"], lap)
        if p["burn_in"]:
            s0 = build_sampler("logistic", entry, where, LogisticTarget(post, init, lap),
                               p["chains"], shared)
            r0 = ctx.stream(f"burnin/{lab}", s0, draws=p["burn_in"], record=False,
                            rng=ctx.rng("burnin", lab))
            init = r0.state["theta"]
        s = build_sampler("logistic", entry, where, LogisticTarget(post, init, lap), p["chains"],
                          shared)
        r = ctx.stream(lab, s, draws=p["steps"], record=False, rng=ctx.rng("sample", lab))
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
    for lab, (entry, where) in series.items():
        s = build_sampler("logistic", entry, where, target, p["chains"], shared)
        ev = PredictiveRisk(lab, Xtb, truth["pred"], p["chains"])
        pm = PosteriorMean(lab, truth["mean"])
        r = ctx.stream(lab, s, seconds=p["seconds"], evaluators=[ev, pm], record=False,
                       rng=ctx.rng("sample", lab), block=p["block"],
                       summarize=posterior_summaries(p, post.d))
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


def rw_series(p: dict) -> dict:
    """The series of Figs 3-4: RW-MH at each of the spec's ``eps``, then its ``samplers``."""
    return sampler_series("logistic", {f"eps={eps:g}": {"method": "rw_mh", "eps": eps}
                                       for eps in p["eps"]}, p["samplers"])


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
            help="Fig 4: (θ1, θ2) marginals of RW-MH at three wall times vs the HMC truth")
@one_blas_thread
def run_marginals(ctx) -> None:
    p = ctx.params
    if len(p["dims"]) != 2:
        raise SpecError("give exactly two coordinates", "dims")
    series = rw_series(p)
    post, Xt, _yt, _name = load_problem(ctx, p["data"], p["model"])
    if max(p["dims"]) >= post.d:
        raise SpecError(f"coordinates must be < d = {post.d}", "dims")
    truth = truth_once(ctx, post, Xt, p["hmc"])
    record_truth(ctx, truth)
    ctx.store.write_array("truth/marginal", truth["samples"][:, p["dims"]].astype(np.float32))
    target = start_target(ctx, p, post)
    shared = {"sigma": p["sigma"], "m": p["m"], "test_block": p["test_block"]}
    budget = max(p["times"])
    for lab, (entry, where) in series.items():
        s = WithMarginal(build_sampler("logistic", entry, where, target, p["chains"], shared),
                         p["dims"])
        pm = PosteriorMean(lab, truth["mean"])
        r = ctx.stream(lab, s, seconds=budget, record=("marginal",), rng=ctx.rng("sample", lab),
                       block=p["block"], evaluators=[pm], summarize=posterior_summaries(p, post.d))
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
    for lab, (entry, where) in series.items():
        s = build_sampler("logistic", entry, where, target, p["chains"], shared)
        ev = VarianceL1(lab, truth["var"], p["chains"])
        pm = PosteriorMean(lab, truth["mean"])
        r = ctx.stream(lab, s, seconds=p["seconds"], evaluators=[ev, pm], record=False,
                       rng=ctx.rng("sample", lab), block=p["block"],
                       summarize=posterior_summaries(p, post.d))
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


# ----------------------------------------------------------------------------------------------
# Fig 7


CAL_SCHEMA = {
    "model": MODEL_SCHEMA,
    "minibatch": Param(500, int, lo=1, hi=MINIBATCH_MAX, help="pairs of potentials per minibatch (paper: 500)"),
    "test_block": TEST_BLOCK_TERMS,
    "eps": Param(list(PAPER_EPS), list, item=float, lo=0, hi=1, hi_open=True, min_len=1,
                 help="tolerances of the approximate sampler"),
    "include_exact": Param(True, bool, help="also run exact Gibbs (the dotted line)"),
    "chains": Param(16, int, lo=1, hi=CHAINS_MAX, help="chains per sampler (a batch axis)"),
    "burn_in": Param(20, int, lo=0, hi=STEPS_MAX, help="sweeps skipped before counting"),
    "budget": {
        "seconds": Param(30.0, float, lo=0, lo_open=True, nullable=True,
                         help="sampling wall time per sampler"),
        "sweeps": Param(None, int, lo=1, hi=STEPS_MAX, nullable=True, help="sweeps per chain per sampler"),
    },
    "bins": Param(20, int, lo=2, hi=1000, help="bins of the exact conditional probability"),
    "min_count": Param(2000, int, lo=1, hi=STEPS_MAX,
                       help="bins with fewer updates are left out of the max error"),
    "block": Param(10, int, lo=1, hi=BLOCK_MAX, help="sweeps per block (checkpoint granularity)"),
}


def mrf_budget(p: dict) -> tuple[int | None, float | None]:
    b = p["budget"]
    if b["sweeps"] is None and b["seconds"] is None:
        raise SpecError("give budget.seconds or budget.sweeps", "budget")
    return b["sweeps"], b["seconds"]


@experiment("austerity.mrf_calibration", schema=CAL_SCHEMA,
            help="Fig 7: approximate-Gibbs conditional probability vs the exact one (dense MRF)")
@one_blas_thread
def run_calibration(ctx) -> None:
    p = ctx.params
    sweeps, seconds = mrf_budget(p)
    model = build_model(p["model"])
    for k, v in model_attrs(model, p["model"]).items():
        ctx.store.set_result(f"model/{k}", v)
    runs = {"exact": {"method": "exact", "track": True}} if p["include_exact"] else {}
    runs.update({eps_label(e): {"method": "approx", "eps": e, "track": True} for e in p["eps"]})
    for label, (entry, where) in sampler_series("mrf", runs, {}).items():
        sampler = build_sampler("mrf", entry, where, model, p["chains"],
                                {"minibatch": p["minibatch"], "test_block": p["test_block"]})
        eps = entry.get("eps")
        ev = Calibration(label, p["bins"], p["burn_in"], paired=eps is not None)
        res = ctx.stream(label, sampler, draws=sweeps, seconds=seconds, evaluators=[ev],
                         record=False, block=p["block"], rng=ctx.rng("sample", label))
        t = ev.table()
        ok = t["n"] >= p["min_count"]
        err = t["est"] - t["p"]
        if ok.any():
            j = int(np.argmax(np.where(ok, np.abs(err), -1)))
            ctx.store.set_result(f"max_error/{label}", float(abs(err[j])))
            ctx.store.set_result(f"max_error_se/{label}", float(t["est_se"][j]))
            ctx.store.set_result(f"max_error_at_p/{label}", float(t["p"][j]))
        else:
            ctx.store.set_result(f"max_error/{label}", float("nan"))
        ctx.store.write_metric("calibration_error", label, t["p"], err, t["est_se"],
                               x_label=Calibration.x_label,
                               y_label="estimated P(set to 1) - exact conditional",
                               counts=t["n"])
        ctx.store.write_metric("calibration_raw", label, t["p"], t["freq"], t["freq_se"],
                               x_label=Calibration.x_label, y_label="raw frequency of x_i = 1",
                               counts=t["n"])
        n_dec = float(t["n"].sum())
        ctx.store.set_result(f"decisions/{label}", n_dec)
        ctx.store.set_result(f"sweeps/{label}", res.draws)
        ctx.store.set_result(f"seconds/{label}", res.seconds)
        ctx.store.set_result(f"data_used/{label}", res.stats_mean.get("data_used", 1.0))
        if eps is not None:
            ctx.store.set_result(f"wrong_decisions/{label}", ev.wrong / max(n_dec, 1.0))
        ctx.log(f"{label}: {n_dec:.0f} updates, data used "
                f"{res.stats_mean.get('data_used', 1.0):.3f}, max error "
                f"{ctx.store.results().get(f'max_error/{label}')}")


# ----------------------------------------------------------------------------------------------
# Fig 8


DEFAULT_SAMPLERS = {"exact": {"method": "exact"}, "exact-lookup": {"method": "exact_lookup"}}
DEFAULT_SAMPLERS.update({eps_label(e): {"method": "approx", "eps": e} for e in PAPER_EPS})

JOINT_SCHEMA = {
    "model": MODEL_SCHEMA,
    "minibatch": Param(500, int, lo=1, hi=MINIBATCH_MAX, help="pairs of potentials per minibatch (paper: 500)"),
    "test_block": TEST_BLOCK_TERMS,
    "chains": Param(4, int, lo=1, hi=CHAINS_MAX, help="chains per sampler; the error is per chain, averaged"),
    "subsets": {"M": Param(1600, int, lo=1, hi=SUBSETS_MAX, help="random subsets (paper: 1600)"),
                "size": Param(5, int, lo=1, hi=10, help="variables per subset (paper: 5)")},
    "truth": {
        "chains": Param(32, int, lo=2, hi=CHAINS_MAX, help="exact-Gibbs chains for the truth"),
        "sweeps": Param(20000, int, lo=1, hi=STEPS_MAX, help="sweeps per truth chain after burn-in"),
        "burn_in": Param(200, int, lo=0, hi=STEPS_MAX, help="truth burn-in sweeps"),
        "cache_dir": Param("runs/_cache", str, nullable=True,
                           help="cache of truths across runs (null: no cache)"),
    },
    "samplers": MapOf(SamplerEntry("mrf"), default=DEFAULT_SAMPLERS, min_len=1,
                      help="samplers by label: {method: NAME, ...}, NAME a registered mrf sampler "
                           "(exact: Gibbs with the quadratic-form conditional; exact_lookup: "
                           "Gibbs summing the N pair-table terms, the paper's cost model; approx: "
                           "§5; or a plugin's, see 'mixlab plugins'), all under the same budget"),
    "budget": {
        "seconds": Param(30.0, float, lo=0, lo_open=True, nullable=True,
                         help="sampling wall time per sampler (equal for all)"),
        "sweeps": Param(None, int, lo=1, hi=STEPS_MAX, nullable=True, help="sweeps per chain per sampler"),
    },
    "points": Param(40, int, lo=2, hi=10_000, help="log-spaced sweep counts where the error is recorded"),
    "block": Param(20, int, lo=1, hi=BLOCK_MAX, help="sweeps per block"),
    "record": Param(False, bool, help="store the samples (100 bits per chain per sweep)"),
    "summaries": Param(True, bool,
                       help="store per-draw energy, fraction of ones and the indicators of the "
                            "first 4 subsets' most probable configurations, for 'mixlab "
                            "diagnose' (untimed; the energy costs about one exact sweep)"),
}


@experiment("austerity.mrf_joint_error", schema=JOINT_SCHEMA,
            help="Fig 8: L1 error of 5-variable joints vs time, exact vs approximate Gibbs")
@one_blas_thread
def run_joint_error(ctx) -> None:
    p = ctx.params
    sweeps, seconds = mrf_budget(p)
    if p["subsets"]["size"] > p["model"]["D"]:
        raise SpecError(f"must be <= model.D ({p['model']['D']})", "subsets.size")
    model = build_model(p["model"])
    for k, v in model_attrs(model, p["model"]).items():
        ctx.store.set_result(f"model/{k}", v)
    srng = np.random.Generator(np.random.PCG64(model_seed(p["model"], "subsets")))
    subsets = random_subsets(model.D, p["subsets"]["M"], p["subsets"]["size"], srng)
    truth = ctx.once("truth", lambda: truth_cached(model, p["model"], subsets, p["truth"],
                                                    ctx.log))
    ctx.store.set_result("truth_noise_l1", float(truth["noise_l1"]))
    ctx.store.set_result("truth_samples", int(truth["chains"]) * int(truth["sweeps"]))
    probs = np.asarray(truth["probs"])
    at = log_spaced(sweeps if sweeps is not None else 10 ** 8, p["points"] if sweeps else
                    8 * p["points"])
    per_sweep = model.D * model.N
    summarize = mrf_summaries(model, subsets, probs) if p["summaries"] else None
    if summarize is not None:
        for m, code in enumerate(subset_configs(subsets, probs)):
            ctx.store.set_result(f"summary_config/subset_{m}", code)
    for label, sp in p["samplers"].items():
        base = build_sampler("mrf", sp, f"samplers.{label}", model, p["chains"],
                             {"minibatch": p["minibatch"], "test_block": p["test_block"]})
        ev = JointL1(label, subsets, probs, at, model.D)
        res = ctx.stream(label, WithTerms(base, per_sweep), draws=sweeps, seconds=seconds,
                         evaluators=[ev], record=("samples",) if p["record"] else False,
                         block=p["block"], rng=ctx.rng("sample", label), summarize=summarize)
        y, yerr = np.asarray(ev.ys), np.asarray(ev.yerr)
        ctx.store.write_metric("joint_l1_vs_sweeps", label, ev.xs_sweeps, y, yerr,
                               x_label="sweeps per chain", y_label=JointL1.y_label)
        ctx.store.write_metric("joint_l1_vs_terms", label, ev.xs_terms, y, yerr,
                               x_label="pair-term evaluations per chain",
                               y_label=JointL1.y_label)
        ctx.store.set_result(f"sweeps_in_budget/{label}", res.draws)
        ctx.store.set_result(f"seconds/{label}", res.seconds)
        ctx.store.set_result(f"sweeps_per_second/{label}", res.draws / max(res.seconds, 1e-12))
        ctx.store.set_result(f"data_used/{label}", res.stats_mean.get("data_used", 1.0))
        ctx.store.set_result(f"final_l1/{label}", float(y[-1]) if len(y) else float("nan"))
        ctx.store.set_result(f"final_l1_se/{label}", float(yerr[-1]) if len(y) else float("nan"))
        ctx.log(f"{label}: {res.draws} sweeps in {res.seconds:.1f} s, final L1 "
                f"{y[-1] if len(y) else float('nan'):.4f}")
    # equal numbers of sweeps: every sampler's error at the largest common recorded count
    # (a count of the shared log-spaced grid, so every sampler has a record exactly there)
    results = ctx.store.results()
    common = min(int(results[f"sweeps_in_budget/{lab}"]) for lab in p["samplers"])
    grid = at[at <= common]
    if len(grid):
        common = int(grid[-1])
        ctx.store.set_result("equal_sweeps", common)
        for lab in p["samplers"]:
            xs, ys, _ = ctx.store.metric("joint_l1_vs_sweeps", lab)
            j = np.flatnonzero(xs == common)
            if len(j):
                ctx.store.set_result(f"l1_at_equal_sweeps/{lab}", float(ys[j[0]]))
