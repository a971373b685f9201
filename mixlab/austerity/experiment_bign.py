"""``austerity.big_n``: exact MH, the per-point sequential test and the block test on the synthetic
logistic target (mixlab.austerity.synthetic) at several data sizes N, each series given the same
wall-clock seconds: samples per chain and the risk of the predictive mean against wall time.

The paper's claim is about big data: the fraction of the data the sequential test reads shrinks as
N grows, so approximate MH gains more over exact MH as N grows.  For every N in ``ns`` the rows
are the first N of the one synthetic data set (``data.synthetic`` with n replaced by N); the
random walk's σ = ``sigma_sqrt_n`` / √N follows the posterior's width, which shrinks as 1/√N;
the truth is an HMC run on each posterior (cached by the data's definition,
target_logistic.hmc_truth).
"""

from __future__ import annotations

import numpy as np

from ..plugins.registry import experiment
from ..spec.schema import Param
from . import checks
from .blas import one_blas_thread
from .evaluators import PosteriorMean, PredictiveRisk
from .limits import BLOCK_MAX, CHAINS_MAX, MINIBATCH_MAX
from .logistic import add_bias
from .series import build_sampler, sampler_series
from .synthetic import N_MAX, theta_star
from .target_logistic import (
    HMC_KEYS,
    INIT_CHOICES,
    MODEL,
    data_keys,
    hmc_truth,
    load_problem,
    start_target,
)

SCHEMA_BIGN = {
    "data": data_keys(),
    "model": MODEL,
    "hmc": HMC_KEYS,
    "ns": Param([100_000, 1_000_000], list, item=int, lo=2, hi=N_MAX, min_len=1,
                help="data sizes N: each replaces data.synthetic.n (the first N rows)"),
    "sigma_sqrt_n": Param(0.7, float, lo=0, lo_open=True,
                          help="random-walk proposal std times sqrt(N): sigma = this / sqrt(N)"),
    "eps": Param(0.05, float, lo=0, hi=0.5, lo_open=True,
                 help="tolerance of the two sequential tests"),
    "m": Param(500, int, lo=2, hi=MINIBATCH_MAX, help="minibatch size (rows) of both tests"),
    "test_block": Param(32, int, lo=2, hi=MINIBATCH_MAX,
                        help="rows per block of the block test (the per-point test reads 1)"),
    "chains": Param(1, int, lo=1, hi=CHAINS_MAX, help="independent chains per series"),
    "seconds": Param(20.0, float, lo=0, lo_open=True, help="sampling wall time per series"),
    "init": Param("laplace", str, choices=INIT_CHOICES, help="start of every chain"),
    "block": Param(20, int, lo=1, hi=BLOCK_MAX, help="draws per block (one curve point per block)"),
}

TESTS = ("exact", "per-point", "blocks")


def series_label(N: int, test: str) -> str:
    """'N=1e+06 blocks': the stream and metric name of one test at one N."""
    return f"N={N:.0e} {test}"


@experiment("austerity.big_n", schema=SCHEMA_BIGN, check=checks.big_n,
            adapt=checks.adapt_logistic,
            help="exact MH vs the per-point and block sequential tests at several N: samples/s "
                 "and risk vs wall time (synthetic logistic target)")
@one_blas_thread
def run_big_n(ctx) -> None:
    p = ctx.params   # data.synthetic is set (checked at start)
    builtin = {"exact": {"method": "rw_mh", "eps": 0.0},
               "per-point": {"method": "rw_mh", "eps": p["eps"], "test_block": 1},
               "blocks": {"method": "rw_mh", "eps": p["eps"], "test_block": p["test_block"]}}
    series = sampler_series("logistic", builtin, {})
    for N in p["ns"]:
        dspec = dict(p["data"], synthetic=dict(p["data"]["synthetic"], n=int(N)))
        post, Xt, _yt, _name = load_problem(ctx, dspec, p["model"])
        truth = ctx.once(f"hmc_truth_N{N}",
                         lambda post=post, Xt=Xt: hmc_truth(post, Xt, p["hmc"], log=ctx.log))
        ctx.store.set_result(f"N={N:.0e}/truth_pred_floor", float(truth["pred_floor"]))
        syn = dspec["synthetic"]
        star = theta_star(syn["d"], syn["seed"], syn.get("signal", 1.0))
        if post.bias:
            star = np.append(star, 0.0)
        Xtb = add_bias(Xt) if post.bias else Xt
        target = start_target(ctx, p, post)
        shared = {"sigma": p["sigma_sqrt_n"] / np.sqrt(N), "m": p["m"], "test_block": 1}
        streams = {}
        with ctx.parallel():                    # the series are independent (mixlab run -j)
            for test, (entry, where) in series.items():
                lab = series_label(N, test)
                s = build_sampler("logistic", entry, where, target, p["chains"], shared)
                ev = PredictiveRisk(lab, Xtb, truth["pred"], p["chains"])
                pm = PosteriorMean(lab, truth["mean"])
                r = ctx.stream(lab, s, seconds=p["seconds"], evaluators=[ev, pm], record=False,
                               rng=ctx.rng("sample", lab), block=p["block"])
                streams[lab] = (ev, pm, r)
        for lab, (ev, pm, r) in streams.items():
            ctx.store.write_metric("samples", lab, np.array(ev.x), np.array(ev.count),
                                   x_label="wall-clock seconds", y_label="samples per chain")
            used = r.stats_mean.get("data_used", float("nan"))
            for k, v in (("samples", r.draws), ("seconds", r.seconds),
                         ("samples_per_second", r.draws / max(r.seconds, 1e-12)),
                         ("data_used", used), ("accept", r.stats_mean.get("accept", np.nan)),
                         ("final_risk", ev.y[-1])):
                ctx.store.set_result(f"{lab}/{k}", float(v))
            err = np.abs(pm.mean() - truth["mean"]) / np.sqrt(truth["var"])
            ctx.store.set_result(f"{lab}/mean_error_sd", float(np.max(err)))
            ctx.log(f"{lab}: {r.draws} samples/chain in {r.seconds:.1f} s "
                    f"({r.draws / max(r.seconds, 1e-12):.1f}/s), data used {100 * used:.1f}%, "
                    f"final risk {ev.y[-1]:.3g}")
        # the truth against the parameters that generated the data (N(0, 1) z's if both hold)
        z = (truth["mean"] - star) / np.sqrt(truth["var"])
        ctx.store.set_result(f"N={N:.0e}/truth_vs_theta_star_max_z", float(np.max(np.abs(z))))
        post = target = streams = None          # this N's data freed before the next's
