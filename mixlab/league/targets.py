"""The league's standard targets: each family's models with a truth, listable as data.

A target is a name and a *definition* (a flat dict of numbers and strings that fixes the model
completely, its random seed included), so it can be rebuilt anywhere and its truth cached by
definition (mixlab.league.truth). :func:`standard_targets` lists a family's targets;
:func:`build` turns a definition into a :class:`Instance`: what the family's sampler
factories receive, the truth, the yardstick evaluator and the per-draw summaries.

Spin glass (exact truth): 10x10 grids with fields ``θ_i ~ U[-1, 1]`` and couplings ``θ_ij ~
U[0, c]`` (attractive) or ``U[-c, c]`` (mixed), at c = 0.5, 1.5 and 3 (c = 3 is the hard end of
Fig 1 of Hazan, Maji & Jaakkola 2013); truth: exact single-site marginals by the frontier
transfer matrix (mixlab.spinglass.exact). Two targets where the sampler matters
(mixlab.league.target_spinglass): ``critical-16x64``, the 16x64 ferromagnet at its critical
coupling, and ``pmj-16x16-b3``, a ±J glass at T = 1/3, both at zero field and scored on their
site marginals and nearest-neighbour pair probabilities.

MRF (exact truth): the dense triplet MRF of Korattikara, Chen & Welling (2014, §6.3) with D = 12
variables (55 pair terms per conditional), log-potentials i.i.d. N(0, s²) with s = 0.02 (the
paper's), 0.1 and 0.3; truth: the exact joints on 10 random 5-variable subsets, from the joint
of all 2^12 states enumerated (mixlab.austerity.mrf.enumerate_joint); yardstick: the mean over
the subsets of the L1 distance between the estimated and exact joints (Fig 8's measure).

RBM (exact truth): RBMs with 16 visible units, trained by PCD on USPS digits downsampled to 4x4
(mean of each 4x4 block of pixels, binarised at 0.5), with 8 and 16 hidden units; truth: the
exact distribution of the visible units, all 2^16 states enumerated
(mixlab.rbm.partition.exact_visible_log_probs): the 16 marginals and the 120 pairwise moments
E[x_i x_j]; yardstick: the mean absolute error over those 136 statistics. The trained weights
are part of the cached truth, so the training runs once per definition.

RBM (reference truth, not exact): the USPS RBM of Breuleux, Bengio & Vincent (2011), 256
visible units trained by FPCD on the 6,291 binarised 16x16 training digits, scored as in their
Fig 2 by the indirect sampling likelihood (ISL) of the 2,007 test digits under a Bernoulli
kernel density on the draws (β chosen on the 1,000 validation digits); ``usps16x16-isl`` has
200 hidden units and 15 epochs (the quick scale of mixlab's ``rates_fpcd/fig2``),
``usps16x16-isl-h500`` 500 and 50 (its paper scale). Truth: the ISL of the training digits
themselves as the kernel centres (the paper's training-set line), cached with the trained
weights; yardstick: that reference minus the draws' ISL, in nats per test digit
(mixlab.league.target_rbm_isl). No bias flag is computed for these targets.

Logistic (reference truth, not exact): Bayesian logistic regression (prior precision 10) on
Fashion-MNIST 7 vs 9 (PCA 50, with a bias; Fig 3 of Korattikara, Chen & Welling 2014), on
KDD99 (a 50,000-row subsample, no bias; Figs 5-6) and on a synthetic data set of 10^6 rows
drawn from a seed (mixlab.austerity.synthetic; the big-N regime); truth: a long HMC run with the
Laplace mass matrix (mixlab.austerity.target_logistic.hmc_truth, cached by the data's
definition); yardstick: the posterior mean and standard deviation errors in posterior sd
units, ``mean_j (|m̂_j − m_j| + |ŝ_j − s_j|) / (2 s_j)``. The chains start from draws of the
Laplace approximation (the same starts for every sampler and seed). The HMC truth is not exact,
so no bias flag is computed for these targets.

A family a plugin registered brings its own targets and exact truth (mixlab.league.plugin_targets).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SpecError
from . import plugin_targets
from .reach import marginal_reach
from .target_spinglass import GLASS_BETA
from .truth import cached_truth

#: the seed of every standard target's random model (part of its definition)
MODEL_SEED = 29


@dataclass
class Instance:
    """A built target: ``target`` for the factories (or a function of the number of chains
    returning it, when the chains' starts are part of it), ``truth`` (flat dict of arrays),
    ``yardstick(work_marks, second_marks, series)`` -> evaluator, ``summarize`` (per-draw
    scalar summaries for ESS), ``truth_source`` (one line), ``exact`` (whether the truth is
    exact: the bias flag needs it), ``yardstick_name`` (what the error is), ``reach_error``
    (the stated error, in the yardstick's units: mixlab.league.reach)."""

    target: Any
    truth: dict
    yardstick: Callable
    summarize: Callable | None
    truth_source: str
    exact: bool
    yardstick_name: str
    reach_error: float = math.nan


#: the critical coupling of the square-lattice Ising ferromagnet in the ±1 convention of
#: mixlab.spinglass.model (p ∝ exp(J Σ x_i x_j)): sinh(2 J_c) = 1, J_c = ln(1 + √2) / 2
CRITICAL_COUPLING = 0.5 * math.log1p(math.sqrt(2.0))


def _spinglass_targets() -> dict[str, dict]:
    out = {}
    for mixed in (False, True):
        for c in (0.5, 1.5, 3.0):
            name = f"{'mixed' if mixed else 'attractive'}-c{c:g}"
            out[name] = {"rows": 10, "cols": 10, "field": 1.0, "coupling": c, "mixed": mixed,
                         "model_seed": MODEL_SEED}
    out["critical-16x64"] = {"model": "ferromagnet", "rows": 16, "cols": 64, "field": 0.0,
                             "coupling": CRITICAL_COUPLING, "yardstick": "sites_and_edges"}
    out[f"pmj-16x16-b{GLASS_BETA:g}"] = {
        "model": "pm_j", "rows": 16, "cols": 16, "field": 0.0, "coupling": GLASS_BETA,
        "model_seed": MODEL_SEED, "yardstick": "sites_and_edges"}
    return out


def _mrf_targets() -> dict[str, dict]:
    return {f"d12-s{s:g}": {"D": 12, "s": s, "s_is": "std", "subsets": 10, "subset_size": 5,
                            "model_seed": MODEL_SEED} for s in (0.02, 0.1, 0.3)}


def _rbm_targets() -> dict[str, dict]:
    from .target_rbm_isl import definition as isl_definition

    out = {f"usps4x4-h{h}": {"data": "usps", "downsample": 4, "binarize": 0.5,
                             "max_train": 2000, "hidden": h, "trainer": "pcd", "epochs": 30,
                             "lr": 0.05, "batch_size": 20, "model_seed": MODEL_SEED}
           for h in (8, 16)}
    out["usps16x16-isl"] = isl_definition(MODEL_SEED, hidden=200, epochs=15)
    out["usps16x16-isl-h500"] = isl_definition(MODEL_SEED, hidden=500, epochs=50)
    return out


_HMC = {"chains": 4, "burn_in": 200, "samples": 2000, "step_size": 0.4, "n_leapfrog": 10,
        "keep": 4000}


def _logistic_targets() -> dict[str, dict]:
    base = {"precision": 10.0, "test_max": 100, "model_seed": MODEL_SEED, "hmc": dict(_HMC)}
    return {
        "fashion-7v9": {**base, "data": "fashion-mnist", "classes": [7, 9], "pca": 50,
                        "bias": True, "subsample": None},
        "kdd99": {**base, "data": "kdd99", "classes": None, "pca": None, "bias": False,
                  "subsample": 50000,
                  "hmc": {**_HMC, "samples": 1500, "burn_in": 100, "step_size": 0.3,
                          "n_leapfrog": 12}},
        "synthetic-1e6": {**base, "data": "synthetic", "bias": False,
                          "synthetic": {"n": 1_000_000, "d": 10, "seed": MODEL_SEED,
                                        "signal": 1.0, "test": 100},
                          "hmc": {**_HMC, "chains": 2, "samples": 500, "burn_in": 100,
                                  "n_leapfrog": 5}},
    }


def standard_targets(family: str) -> dict[str, dict]:
    """``{name: definition}`` of the family's standard targets, in table order."""
    makers = {"spinglass": _spinglass_targets, "mrf": _mrf_targets, "rbm": _rbm_targets,
              "logistic": _logistic_targets}
    fam = plugin_targets.plugin_family(family)
    if fam is not None:    # a plugin's family (mixlab.league.plugin_targets)
        return plugin_targets.definitions(fam)
    if family not in makers:
        raise SpecError(f"the {family} league has no standard targets yet; families with "
                        f"targets: {', '.join(makers)}", "family")
    return makers[family]()


def build(family: str, definition: dict, init: str = "random") -> Instance:
    """The :class:`Instance` of a target definition (its truth from the cache if there)."""
    fam = plugin_targets.plugin_family(family)
    if fam is not None:
        return plugin_targets.build(fam, definition, Instance)
    if family == "spinglass":
        return _build_spinglass(definition, init)
    if family == "mrf":
        return _build_mrf(definition)
    if family == "rbm" and definition.get("yardstick") == "isl":
        from .target_rbm_isl import build_rbm_isl

        return build_rbm_isl(definition, Instance)
    if family == "rbm":
        return _build_rbm(definition)
    if family == "logistic":
        from .logistic_targets import build_logistic

        return build_logistic(definition, Instance)
    raise SpecError(f"the {family} league has no targets yet", "family")


def _build_spinglass(d: dict, init: str) -> Instance:
    from ..spinglass.exact import MAX_WIDTH
    from ..spinglass.exact import marginals as exact_marginals
    from ..spinglass.summaries import summarizer
    from ..spinglass.target import SpinGlassTarget
    from .target_spinglass import sites_and_edges, spinglass_model
    from .yardstick import MarginalYardstick

    model = spinglass_model(d)
    if min(model.shape) > MAX_WIDTH:
        raise SpecError(f"exact marginals need min(rows, cols) <= {MAX_WIDTH}", "target")
    if d.get("yardstick", "sites") == "sites_and_edges":
        return sites_and_edges(d, model, init, Instance)
    truth = cached_truth("spinglass", d, lambda: {"marginals": exact_marginals(model)})
    p = truth["marginals"]
    return Instance(
        target=SpinGlassTarget.of(model, init), truth=truth,
        yardstick=lambda work_marks=(), second_marks=(), series="sampler": MarginalYardstick(
            p, key="samples", work_marks=work_marks, second_marks=second_marks, series=series),
        summarize=summarizer(model),
        truth_source="exact single-site marginals (frontier transfer matrix)", exact=True,
        yardstick_name="mean |marginal error|",
        reach_error=marginal_reach(p))


def _build_mrf(d: dict) -> Instance:
    from ..austerity.mrf import enumerate_joint, make_mrf, random_subsets, subset_codes
    from ..austerity.summaries import mrf_summaries
    from ..numerics import state_codes
    from .yardstick import MarginalYardstick

    try:
        D, M, k = int(d["D"]), int(d["subsets"]), int(d["subset_size"])
        seq = np.random.SeedSequence(int(d["model_seed"]))
        model_rng, subset_rng = (np.random.default_rng(c) for c in seq.spawn(2))
        model = make_mrf(D, float(d["s"]), str(d["s_is"]), model_rng)
        subsets = random_subsets(D, M, k, subset_rng)
    except (KeyError, TypeError, ValueError) as exc:
        raise SpecError(f"an MRF target needs D, s, s_is, subsets, subset_size and model_seed "
                        f"({exc})", "target") from None
    if D > 20:
        raise SpecError("the exact joint needs D <= 20", "target")

    def compute() -> dict:
        states, probs = enumerate_joint(model)
        codes = subset_codes(states, subsets)                        # (2^D, M)
        joint = np.stack([np.bincount(codes[:, m], weights=probs, minlength=1 << k)
                          for m in range(M)])
        return {"subset_joints": joint}

    joint = cached_truth("mrf", d, compute)["subset_joints"]          # (M, 2^k)
    S = 1 << k

    if D <= 16:     # every state's subset codes, looked up by the state's code
        table = subset_codes((np.arange(1 << D)[:, None] >> np.arange(D)) & 1, subsets)

        def codes(x: np.ndarray) -> np.ndarray:
            return table[state_codes(x)]                               # (C, B, M) in [0, 2^k)
    else:
        def codes(x: np.ndarray) -> np.ndarray:
            return subset_codes(np.asarray(x), subsets)

    return Instance(
        target=model, truth={"subset_joints": joint},
        yardstick=lambda work_marks=(), second_marks=(), series="sampler": MarginalYardstick(
            joint, key="samples", work_marks=work_marks, second_marks=second_marks,
            series=series, codes=codes, scale=S,
            y_label=f"mean L1 of {k}-variable joints"),
        summarize=mrf_summaries(model, subsets, joint),
        truth_source=f"exact joints on {M} random {k}-variable subsets (all 2^{D} states "
                     f"enumerated)", exact=True,
        yardstick_name=f"mean L1 of the {k}-variable joints",
        reach_error=marginal_reach(joint, scale=S))


def _rbm_data(d: dict) -> np.ndarray:
    """USPS training images mean-pooled over ``downsample`` x ``downsample`` blocks and
    binarised: (N, (16 / downsample)^2) float32 in {0, 1}."""
    from ..data import load

    ds = load(str(d["data"]), max_train=int(d["max_train"]))
    X = np.asarray(ds.train.X, np.float32)
    side = int(round(np.sqrt(X.shape[1])))
    f = int(d["downsample"])
    pooled = X.reshape(-1, side // f, f, side // f, f).mean(axis=(2, 4))
    return (pooled.reshape(len(X), -1) > float(d["binarize"])).astype(np.float32)


def _build_rbm(d: dict) -> Instance:
    from ..rbm.model import RBM
    from ..rbm.partition import all_configs, exact_visible_log_probs
    from ..rbm.summaries import summarizer
    from ..rbm.target import RBMTarget
    from ..rbm.train import train
    from .yardstick import MarginalYardstick, moment_sums

    try:
        X = _rbm_data(d)
        hidden = int(d["hidden"])
    except (KeyError, TypeError, ValueError) as exc:
        raise SpecError(f"an RBM target needs data, downsample, binarize, max_train, hidden, "
                        f"trainer, epochs, lr, batch_size and model_seed ({exc})",
                        "target") from None
    V = X.shape[1]
    if V > 20:
        raise SpecError(f"exact enumeration needs at most 20 visible units, got {V}", "target")
    iu = np.triu_indices(V, 1)

    def compute() -> dict:
        rbm, _ = train(None, X, None, method=str(d["trainer"]), hidden=hidden,
                       rng=np.random.default_rng(int(d["model_seed"])), monitor=False,
                       epochs=int(d["epochs"]), lr=float(d["lr"]),
                       batch_size=int(d["batch_size"]))
        logp = exact_visible_log_probs(rbm)
        p = np.exp(logp - logp.max())
        p /= p.sum()
        S = all_configs(V).astype(np.float64)                           # (2^V, V)
        second = (S * p[:, None]).T @ S                                  # E[x_i x_j]
        return {"W": np.asarray(rbm.W, np.float64), "b": np.asarray(rbm.b, np.float64),
                "c": np.asarray(rbm.c, np.float64),
                "moments": np.concatenate([second.diagonal(), second[iu]])}

    t = cached_truth("rbm", d, compute)
    rbm = RBM(t["W"].astype(np.float32), t["b"].astype(np.float32), t["c"].astype(np.float32))
    target = RBMTarget(rbm.W, rbm.b, rbm.c, train_X=X, rates=None, init="data",
                       emit="binary", shape=(int(np.sqrt(V)),) * 2)
    return Instance(
        target=target, truth={"moments": t["moments"]},
        yardstick=lambda work_marks=(), second_marks=(), series="sampler": MarginalYardstick(
            t["moments"], key="samples", work_marks=work_marks, second_marks=second_marks,
            series=series, feature_sums=moment_sums(V),
            y_label="mean |error| of E[x_i], E[x_i x_j]"),
        summarize=summarizer(rbm),
        truth_source=f"exact visible distribution (all 2^{V} states): {V} marginals and "
                     f"{len(iu[0])} pairwise moments",
        exact=True, yardstick_name="mean |error| of the marginals and pairwise moments",
        reach_error=marginal_reach(t["moments"]))
