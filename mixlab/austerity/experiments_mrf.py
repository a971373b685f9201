"""Experiment kinds of Figs 7-8 of Korattikara, Chen & Welling (2014), "Austerity in MCMC
land": approximate Gibbs on a dense binary MRF (one spec per figure under experiments/austerity/;
figures in figures.py).

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
"""

from __future__ import annotations

import numpy as np

from ..plugins.registry import experiment
from ..spec.schema import MapOf, Param, SamplerEntry
from ..toy.generic import log_spaced
from . import checks
from .blas import one_blas_thread
from .evaluators import Calibration, JointL1
from .limits import BLOCK_MAX, CHAINS_MAX, MINIBATCH_MAX, STEPS_MAX, SUBSETS_MAX
from .mrf import random_subsets
from .series import PAPER_EPS, TEST_BLOCK_TERMS, WithTerms, build_sampler, eps_label, sampler_series
from .summaries import mrf_summaries, subset_configs
from .target_mrf import MODEL_SCHEMA, build_model, model_attrs, model_seed, truth_cached

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
    b = p["budget"]   # one of them is set (checked at start)
    return b["sweeps"], b["seconds"]


@experiment("austerity.mrf_calibration", schema=CAL_SCHEMA, check=checks.mrf_calibration,
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
    streams = {}
    with ctx.parallel():                        # the series are independent (mixlab run -j)
        for label, (entry, where) in sampler_series("mrf", runs, {}).items():
            sampler = build_sampler("mrf", entry, where, model, p["chains"],
                                    {"minibatch": p["minibatch"], "test_block": p["test_block"]})
            eps = entry.get("eps")
            ev = Calibration(label, p["bins"], p["burn_in"], paired=eps is not None)
            streams[label] = eps, ev, ctx.stream(label, sampler, draws=sweeps, seconds=seconds,
                                                 evaluators=[ev], record=False,
                                                 block=p["block"], rng=ctx.rng("sample", label))
    for label, (eps, ev, res) in streams.items():
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


@experiment("austerity.mrf_joint_error", schema=JOINT_SCHEMA, check=checks.mrf_joint_error,
            help="Fig 8: L1 error of 5-variable joints vs time, exact vs approximate Gibbs")
@one_blas_thread
def run_joint_error(ctx) -> None:
    p = ctx.params
    sweeps, seconds = mrf_budget(p)
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
    streams = {}
    with ctx.parallel():                        # the series are independent (mixlab run -j)
        for label, sp in p["samplers"].items():
            base = build_sampler("mrf", sp, f"samplers.{label}", model, p["chains"],
                                 {"minibatch": p["minibatch"], "test_block": p["test_block"]})
            ev = JointL1(label, subsets, probs, at, model.D)
            streams[label] = ev, ctx.stream(
                label, WithTerms(base, per_sweep), draws=sweeps, seconds=seconds,
                evaluators=[ev], record=("samples",) if p["record"] else False,
                block=p["block"], rng=ctx.rng("sample", label), summarize=summarize)
    for label, (ev, res) in streams.items():
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
