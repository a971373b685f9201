"""What each target family promises a plugin author: its target, draws, step, cost and truths.

One :class:`Family` per family of :data:`mixlab.plugins.registry.FAMILIES`.  The runner checks a
sampler's first step against the family's declared draws (:func:`mixlab.plugins.contract.check_family`)
and every block of draws for NaN/inf where the family forbids them; the league and ESS-per-work
read the family's cost statistic ``cost`` from each step's stats; ``mixlab plugins --markdown``
prints these tables into docs/plugins/ (a test keeps the committed pages equal to them).

A draw's trailing shape comes from the target the sampler was built for (``dims(target)``);
when a plugin's factory receives something without the attributes used here, the shape check
falls back to the leading (chains) axis.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DrawKey:
    """One draw key a family's experiments read.

    ``shape``: the shape as documented, ``(C, ...)``; ``dims(target)``: the trailing shape for
    a target (None: not known for this target); ``kinds``: the allowed numpy dtype kinds
    (``"b"`` bool, ``"f"`` float); ``finite``: NaN/inf are refused."""

    key: str
    shape: str
    dims: Callable[[Any], tuple[int, ...]]
    kinds: str
    finite: bool
    help: str


@dataclass(frozen=True)
class Family:
    """A target family: see the module docstring.  ``required``: every step must emit at least
    one of these draw keys; ``cost``: the name of the per-chain stat ``(C,)`` counting the
    step's work, ``cost_help`` what it counts."""

    name: str
    constant: str
    target: str
    draws: tuple[DrawKey, ...]
    required: tuple[str, ...]
    step: str
    cost: str
    cost_help: str
    summaries: str
    exact: str
    benchmarks: str

    def draw(self, key: str) -> DrawKey | None:
        return next((d for d in self.draws if d.key == key), None)


def _attr_dims(*path: str, index: int | None = None, full: bool = False):
    """``dims(target)`` reading ``target.<path>`` (its ``.shape[index]`` or its whole shape)."""

    def dims(target: Any) -> tuple[int, ...]:
        obj = target
        for name in path:
            obj = getattr(obj, name)
        if full:
            return tuple(int(n) for n in obj.shape)
        return (int(obj.shape[index]) if index is not None else int(obj),)

    return dims


FAMILY_INFO: dict[str, Family] = {f.name: f for f in (
    Family(
        name="rbm", constant="RBM",
        target="`RBMTarget`, a binary RBM: `W (V, H)`, `b (V,)`, `c (H,)` float64, "
               "p(x) ∝ Σ_h exp(bᵀx + cᵀh + xᵀWh) over x ∈ {0,1}^V; `train_X (N, V)` 0/1 "
               "training images; `rates` (`{W, b, c}` or None); `init` (\"data\" or "
               "\"noise\"); `emit` (\"both\", \"binary\", \"means\"); `shape` (image rows, "
               "cols) or None",
        draws=(
            DrawKey("samples", "(C, V)", _attr_dims("W", index=0), "b", False,
                    "the binary visible state x of each chain"),
            DrawKey("means", "(C, V)", _attr_dims("W", index=0), "f", True,
                    "E[x | h] of the last half-step (the ISL centres), in [0, 1]"),
        ),
        required=("samples", "means"),
        step="one emitted visible state per chain; inside it the sampler's own k block-Gibbs "
             "sweeps x → h → x (k is a sampler parameter)",
        cost="site_updates",
        cost_help="units updated: each visible or hidden unit drawn (or set, for herding) "
                  "counts one; k block-Gibbs sweeps = k·(V + H)",
        summaries="`free_energy` F(x) = -bᵀx - Σ_j softplus(c_j + (xW)_j), `active_pixels` "
                  "(units equal to 1), three fixed pixels `pixel_r<i>c<j>` (0/1) "
                  "(mixlab.rbm.summaries; from `samples`)",
        exact="an RBM with V ≤ 20 visible units: "
              "`mixlab.rbm.partition.exact_visible_log_probs(rbm)` (log p(x) of all 2^V "
              "states); `log_partition_exact(rbm)` when min(V, H) ≤ 25",
        benchmarks="`rates_fpcd.isl` (Figs 2, 3), `rates_fpcd.sequences` (Fig 1), "
                   "`rates_fpcd.sample`"),
    Family(
        name="spinglass", constant="SPINGLASS",
        target="`SpinGlassTarget`: `field (R, C)`, `right (R, C-1)`, `down (R-1, C)` float64, "
               "p(x) ∝ exp(Σ field·x + Σ right·x x + Σ down·x x) over ±1 spins; `init` "
               "(\"random\", \"plus\", \"minus\"); `score(x)`, `attractive`",
        draws=(
            DrawKey("samples", "(C, rows, cols)", _attr_dims("field", full=True), "b", False,
                    "the spins of each chain on the R x C grid, True = +1"),
        ),
        required=("samples",),
        step="MCMC samplers: one sweep (every site updated once, R·C site updates), replica "
             "exchange one sweep of each of its K replicas and the swaps; "
             "perturb-and-MAP samplers (`local`, `pairwise`): one independent perturbed MAP "
             "solution per chain",
        cost="site_updates",
        cost_help="single-site updates: a sweep counts R·C (replica exchange: K·R·C, every "
                  "replica's sweep); a perturb-and-MAP solution is "
                  "charged R·C (each site assigned once; the MAP solver's own work is not "
                  "counted, compare those samplers by time)",
        summaries="`magnetisation` (mean spin), `energy` (-θ(x), Eq. 1), the spins of four "
                  "fixed sites `spin_r<i>c<j>` (mixlab.spinglass.summaries)",
        exact="`mixlab.spinglass.exact.marginals(model)`, `site_and_edge_marginals(model)` "
              "(with each edge's P(x_i = x_j)) and `log_partition(model)` (frontier "
              "transfer matrix, exact for grids whose narrow side is at most 22); "
              "`all_configurations(n)` to enumerate a grid of n ≤ 24 sites",
        benchmarks="`perturb_map.marginal_vs_time`, `perturb_map.marginals_vs_coupling`"),
    Family(
        name="logistic", constant="LOGISTIC",
        target="`LogisticTarget`: `posterior` (`log_posterior(theta (C, d)) -> (C,)`, "
               "`grad_log_posterior(theta, idx=None)`, `loglik_terms`, `N`, `d`), `theta0 "
               "(C, d)` the chains' start, `laplace() -> (mode (d,), negative Hessian (d, d))`",
        draws=(
            DrawKey("samples", "(C, d)", _attr_dims("posterior", "d"), "f", True,
                    "the parameter θ of each chain"),
        ),
        required=("samples",),
        step="one proposal and its accept/reject decision per chain (SGLD: one update)",
        cost="points_read",
        cost_help="data points whose log-likelihood or gradient term the step evaluated (a "
                  "point read twice counts twice): N for an exact MH test, the points the "
                  "sequential test read, the minibatch of each stochastic gradient, N per "
                  "full-data gradient",
        summaries="`theta_<j>` for the coordinates j of the spec's `summary_dims` (default: "
                  "every coordinate) (mixlab.austerity.summaries)",
        exact="a one- or two-dimensional posterior (`LogisticPosterior` on a few points) by "
              "quadrature on a fine grid; the Laplace approximation `laplace()` is not exact",
        benchmarks="`austerity.rw_risk` (Fig 3), `austerity.rw_marginals` (Fig 4), "
                   "`austerity.sgld_variance` (Figs 5, 6)"),
    Family(
        name="mrf", constant="MRF",
        target="`DenseMRF`: `D`, `h (D,)`, `Q (D, D, D)` (log-odds `h_i + xᵀ Q[i] x`), "
               "`tri`, `logpsi (T, 2, 2, 2)`, `N` = (D-1)(D-2)/2 pair terms per conditional",
        draws=(
            DrawKey("samples", "(C, D)", _attr_dims("D"), "b", False,
                    "the binary variables of each chain"),
        ),
        required=("samples",),
        step="one systematic sweep: each of the D variables updated once",
        cost="pair_terms_read",
        cost_help="pair-table terms read by the step's conditionals: an exact update is "
                  "charged its N terms (D·N a sweep), an approximate one the terms its "
                  "sequential test read",
        summaries="`energy` (-log of the unnormalised probability), `ones` (fraction of "
                  "variables equal to 1), `subset_<k>` indicators of Fig 8's subsets "
                  "(mixlab.austerity.summaries)",
        exact="`mixlab.austerity.mrf.enumerate_joint(model)`: the joint of a model with "
              "D ≤ 20 by enumeration (`make_mrf(D=6, ...)` for a test)",
        benchmarks="`austerity.mrf_joint_error` (Fig 8)"),
)}


def family(name: str) -> Family:
    """The :class:`Family` named ``name`` (a KeyError for an unknown one)."""
    return FAMILY_INFO[name]


def cost_statistic(name: str) -> str:
    """The name of family ``name``'s per-step cost statistic (e.g. ``site_updates``)."""
    return FAMILY_INFO[name].cost
