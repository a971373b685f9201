"""Perturb-and-MAP samplers for grid spin glasses (Hazan, Maji & Jaakkola 2013).

Samplers follow the mixlab stream contract (``init(rng) -> state``, ``step(state, rng) ->
(state, draws, stats)``, chains as a batch axis); draws are ``{"samples": bool (chains, R, C)}``
with True = spin +1.

- :class:`PerturbMAPSampler` ``perturbation="local"``: ``x = argmax θ(x) + Σ_i γ_i(x_i)`` with
  fresh zero-mean Gumbels per chain and step (graph cut when attractive). Approximate.
- :class:`PerturbMAPSampler` ``perturbation="pairwise"``: ``x = argmax θ(x) + Σ_ij γ_ij(x_i, x_j)``,
  a Gumbel added to each entry of every edge's 2x2 table (Theorem 2 without graph expansion, as
  in the paper's experiments); solved by exact max-product (narrow grids). Approximate.
- :func:`unbiased_sample` / :class:`UnbiasedSampler`: Algorithm 1 (Theorem 3). Sites are fixed
  in raster order; site j takes value ``s`` with probability ``exp(V_{j+1}(s) - V_j)`` and the
  rest of the mass rejects (restart from the first site). With exact expectations
  ``V_j = E_γ[max_{x_j..x_n} θ(x) + Σ_{i>=j} γ_i(x_i)]`` an accepted sample is exact and the
  expected number of passes is ``exp(U - log Z)``. ``V`` is estimated by the mean of
  ``perturbations`` clamped perturbed MAPs; with one free site left it is computed exactly
  (``log Σ_s exp θ``), and with no free site it is θ(x). Because V is self-reducible the
  estimate used as denominator at site j is the numerator drawn at site j-1, so the product of
  the acceptance probabilities telescopes to ``exp(θ(x) - V̂_1)`` whatever the Monte Carlo
  error -- provided every step's probabilities sum to at most 1. When the estimates violate
  that (``Σ_s exp(V̂_{j+1}(s) - V̂_j) > 1``) the step is renormalised and counted in the
  ``violations`` statistic: those are the only source of bias. ``slack`` adds ``δ (n - j + 1)``
  to ``V_j``, which makes violations rarer at the cost of ``exp(n δ)`` more restarts.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import MixlabError
from .bounds import gumbel
from .exact import log_partition
from .map import map_solve, perturbed_value
from .model import SpinGlass

__all__ = ["PerturbMAPSampler", "UnbiasedSampler", "unbiased_sample", "clamped_unary",
           "mc_value", "exact_conditional_value"]


class PerturbMAPSampler:
    """Approximate perturb-and-MAP sampler; every step draws independent perturbations for
    each chain and solves one MAP per chain (batched in one max-product sweep, or one graph cut
    per chain). The state only counts steps (draws are independent)."""

    def __init__(self, model: SpinGlass, chains: int = 1, perturbation: str = "local",
                 method: str = "auto"):
        if perturbation not in ("local", "pairwise"):
            raise ValueError(f"perturbation must be 'local' or 'pairwise', got '{perturbation}'")
        self.model, self.chains, self.perturbation, self.method = model, int(chains), perturbation, method
        if perturbation == "pairwise" and method == "graphcut":
            raise MixlabError("pairwise perturbations are not submodular in general: graph cuts "
                              "do not apply; use method 'auto' or 'max_product'")

    def init(self, rng: np.random.Generator) -> dict:
        return {"steps": np.zeros(self.chains, dtype=np.int64)}

    def draw(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """One MAP per chain: ``(spins int8 ±1 (chains, R, C), perturbed MAP values (chains,))``."""
        R, C = self.model.shape
        B = self.chains
        if self.perturbation == "local":
            u = gumbel(rng, (B, R, C, 2))
            x = map_solve(self.model, u, method=self.method)
            return x, perturbed_value(self.model, x, u)
        pw = (gumbel(rng, (B, R, C - 1, 2, 2)), gumbel(rng, (B, R - 1, C, 2, 2)))
        x = map_solve(self.model, None, pw, method=self.method)
        return x, perturbed_value(self.model, x, None, pw)

    def step(self, state: dict, rng: np.random.Generator):
        x, v = self.draw(rng)
        # cost statistic of the family (mixlab.plugins.families): each MAP solution assigns every site
        site_updates = np.full(self.chains, float(x[0].size))
        return ({"steps": state["steps"] + 1}, {"samples": x > 0},
                {"map_value": v, "site_updates": site_updates})


# --------------------------------------------------------------------------------------------
# Algorithm 1
# --------------------------------------------------------------------------------------------

def clamped_unary(model: SpinGlass, fixed: np.ndarray, values: np.ndarray,
                  free_unary: np.ndarray | None = None, penalty: float = -np.inf) -> np.ndarray:
    """Unary table ``(..., R, C, 2)`` that clamps the sites in ``fixed (R, C) bool`` to
    ``values (R, C) ±1``: ``penalty`` on the forbidden value, 0 on the allowed one; free sites
    get ``free_unary`` (``(..., R, C, 2)``, e.g. Gumbels) or 0."""
    R, C = model.shape
    allowed = np.stack([values < 0, values > 0], axis=-1)             # (R, C, 2)
    clamp = np.where(fixed[..., None] & ~allowed, penalty, 0.0)
    if free_unary is None:
        return clamp
    return np.where(fixed[..., None], clamp, free_unary)


def exact_conditional_value(model: SpinGlass) -> Callable:
    """``V(fixed, values) = log Σ_{free x} exp θ(x)`` -- the exact conditional log partition.

    Not Algorithm 1's Gumbel expectation, but a valid self-reducible choice (it satisfies
    Lemma 2 with equality): Algorithm 1 with it never rejects. Used with ``slack`` in tests."""
    def V(fixed, values, rng=None):
        return float(log_partition(model, clamped_unary(model, fixed, values)))
    return V


def mc_value(model: SpinGlass, perturbations: int, method: str = "auto") -> Callable:
    """Monte Carlo ``V(fixed, values) = mean over M draws of max_{free x} θ(x) + Σ_free γ_i(x_i)``.

    Exact special cases: no free site -> θ(x); one free site s -> log Σ_{x_s} exp θ."""
    R, C = model.shape

    def V(fixed, values, rng):
        free = ~fixed
        nfree = int(free.sum())
        if nfree == 0:
            return float(model.score(values))
        if nfree == 1:
            x = np.array([values, values], dtype=np.float64)
            i = np.unravel_index(np.flatnonzero(free)[0], (R, C))
            x[0][i], x[1][i] = -1.0, 1.0
            return float(np.logaddexp(*model.score(x)))
        g = gumbel(rng, (perturbations, R, C, 2))
        scale = 2.0 * (np.abs(model.field).sum() + np.abs(model.right).sum()
                       + np.abs(model.down).sum()) + 2.0 * np.abs(g).sum(axis=(1, 2, 3)).max() + 1.0
        u = clamped_unary(model, fixed, values, g * free[..., None], penalty=-scale)
        x = map_solve(model, u, method=method)
        g_free = g * free[..., None]
        return float(np.mean(perturbed_value(model, x, g_free)))
    return V


def unbiased_sample(model: SpinGlass, rng: np.random.Generator, value_fn: Callable,
                    v1: float | None = None, slack: float = 0.0, max_restarts: int = 10 ** 6):
    """Algorithm 1: one accepted configuration.

    ``value_fn(fixed (R,C) bool, values (R,C) ±1, rng) -> float`` estimates ``V``; ``v1`` is a
    precomputed ``V_1`` (all free), reused across restarts. Returns ``(x int8 (R, C), restarts,
    violations)``; restarts = rejected passes before the accepted one."""
    R, C = model.shape
    n = R * C
    if v1 is None:
        v1 = value_fn(np.zeros((R, C), bool), np.ones((R, C)), rng)
    restarts = 0
    violations = 0
    while True:
        fixed = np.zeros((R, C), dtype=bool)
        values = np.ones((R, C))
        v_prev = v1 + slack * n
        accepted = True
        for j in range(n):
            r, c = divmod(j, C)
            fixed[r, c] = True
            vs = np.empty(2)
            for s, val in enumerate((-1.0, 1.0)):
                values[r, c] = val
                vs[s] = value_fn(fixed, values, rng) + slack * (n - j - 1)
            p = np.exp(vs - v_prev)
            tot = p.sum()
            if tot > 1.0:
                violations += 1
                p = p / tot
            u = rng.random()
            if u < p[0]:
                values[r, c], v_prev = -1.0, vs[0]
            elif u < p[0] + p[1]:
                values[r, c], v_prev = 1.0, vs[1]
            else:
                accepted = False
                break
        if accepted:
            return values.astype(np.int8), restarts, violations
        restarts += 1
        if restarts > max_restarts:
            raise MixlabError(f"unbiased sampler: no acceptance in {max_restarts} restarts "
                              f"(expected restarts exp(U - log Z) is too large for this model)")


class UnbiasedSampler:
    """Algorithm 1 as a stream: one accepted exact sample per chain per step.

    ``perturbations`` = M, the Monte Carlo size of every V estimate. Stats per draw:
    ``restarts`` (rejected passes) and ``violations`` (renormalised steps, see module doc).
    Chains run one after another (each is a sequence of data-dependent restarts); every V
    estimate is one batched MAP over M perturbations."""

    def __init__(self, model: SpinGlass, chains: int = 1, perturbations: int = 100,
                 slack: float = 0.0, method: str = "auto", max_restarts: int = 10 ** 6,
                 value_fn: Callable | None = None):
        self.model, self.chains = model, int(chains)
        self.slack, self.max_restarts = float(slack), int(max_restarts)
        self.value_fn = value_fn or mc_value(model, int(perturbations), method)

    def init(self, rng: np.random.Generator) -> dict:
        R, C = self.model.shape
        v1 = self.value_fn(np.zeros((R, C), bool), np.ones((R, C)), rng)
        return {"v1": np.array(v1)}

    def step(self, state: dict, rng: np.random.Generator):
        R, C = self.model.shape
        xs = np.empty((self.chains, R, C), dtype=np.int8)
        rs = np.empty(self.chains)
        vs = np.empty(self.chains)
        for b in range(self.chains):
            xs[b], rs[b], vs[b] = unbiased_sample(self.model, rng, self.value_fn,
                                                  float(state["v1"]), self.slack,
                                                  self.max_restarts)
        return state, {"samples": xs > 0}, {"restarts": rs, "violations": vs}
