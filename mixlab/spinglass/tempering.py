"""Replica exchange (parallel tempering) for grid spin glasses.

Each chain runs ``K`` replicas of the model at inverse temperatures ``β_0 < … < β_{K-1} = 1``
on a geometric ladder from ``beta_min`` to 1 (``β_k = beta_min^{(K-1-k)/(K-1)}``); replica
``k`` targets ``p_k(x) ∝ exp(β_k θ(x))`` (the whole potential, field included, is tempered).
One step is

1. one checkerboard sweep of every replica of every chain at its own temperature
   (mixlab.spinglass.mcmc: heat bath, ``P(x = +1 | rest) = sigmoid(2 β h)``, or Metropolis),
   all ``chains x K`` replicas in one vectorised sweep;
2. swap moves between adjacent temperatures, first the pairs ``(0,1), (2,3), …`` ("even"),
   then ``(1,2), (3,4), …`` ("odd"): the configurations ``x_a`` at ``β_i`` and ``x_b`` at
   ``β_{i+1}`` exchange temperatures with probability ``min(1, exp((β_i − β_{i+1})(θ(x_b) −
   θ(x_a))))`` (the Metropolis rule on the product ``Π_k p_k``; Swendsen & Wang 1986, Geyer
   1991, Hukushima & Nemoto 1996). Each phase leaves the product invariant, so the step does.

The β = 1 replica's spins are the step's draw. The temperatures move, not the spins: the state
keeps ``perm (chains, K)``, the replica slot at each rung of each chain's ladder, so a swap
exchanges two integers. ``site_updates`` is ``K · R · C`` per chain (every replica's sweep: equal
work is fair against the one-replica samplers); ``swap_accept`` is the fraction of the step's
``K − 1`` swaps accepted per chain, ``swap_accept_<i>`` whether the swap of rungs ``i`` and
``i + 1`` was (its mean over steps is that pair's acceptance rate). With ``K = 1`` there are no
swaps and no swap uniforms are drawn: the sampler is its base sweep, draw for draw.
"""

from __future__ import annotations

import numpy as np

from .mcmc import Gibbs, Metropolis
from .model import SpinGlass

__all__ = ["ParallelTempering", "geometric_ladder", "SWEEPS"]

SWEEPS = {"gibbs": Gibbs, "metropolis": Metropolis}


def geometric_ladder(replicas: int, beta_min: float) -> np.ndarray:
    """``(replicas,)`` float64 inverse temperatures from ``beta_min`` to exactly 1, geometric
    (equal ratios); ``[1.0]`` for one replica."""
    if replicas < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    if replicas == 1:
        return np.ones(1)
    if not 0.0 < beta_min < 1.0:
        raise ValueError(f"beta_min must be in (0, 1), got {beta_min}")
    k = np.arange(replicas)
    ladder = beta_min ** ((replicas - 1 - k) / (replicas - 1))
    ladder[-1] = 1.0
    return ladder


class ParallelTempering:
    """Replica exchange on a :class:`SpinGlass` (see module doc). ``chains``; ``init``
    ('random' | 'plus' | 'minus', every replica; 'plus_minus': every replica of an
    even-numbered chain +1, of an odd-numbered one −1); ``replicas`` K; ``beta_min``;
    ``sweep`` ('gibbs' | 'metropolis'). State: ``x (R+2, C+2, K·chains)`` padded spins (slot ``k·chains +
    c`` starts as replica ``k`` of chain ``c``), ``perm (chains, K)`` int64 slots per rung."""

    def __init__(self, model: SpinGlass, chains: int = 1, init: str = "random",
                 replicas: int = 8, beta_min: float = 0.25, sweep: str = "gibbs"):
        if sweep not in SWEEPS:
            raise ValueError(f"sweep must be one of {', '.join(SWEEPS)}, got {sweep!r}")
        self.ladder = geometric_ladder(int(replicas), float(beta_min))
        self.replicas = K = len(self.ladder)
        self.base = SWEEPS[sweep](model, chains=int(chains) * K, init=init)
        self.model, self.chains, self.n = model, int(chains), self.base.n
        self.site_updates_per_step = K * self.n    # every replica's sweep (its site_updates)
        self._rows = np.arange(self.chains)[:, None]
        self._ones = np.ones(self.chains)
        self._beta32 = self.ladder.astype(np.float32)
        f, r, d = (np.asarray(a, np.float64) for a in (model.field, model.right, model.down))
        self._theta_terms = (f[:, :, None], r[:, :, None], d[:, :, None])

    def init(self, rng: np.random.Generator) -> dict:
        state = self.base.init(rng)
        K, C = self.replicas, self.chains
        if self.base.init_mode == "plus_minus":
            # the base sweep alternates signs over its K·C slots, so with C odd a chain's
            # replicas would start at both signs and swaps would hand its β = 1 rung the other
            # one: the start follows the chain (slot k·C + c belongs to chain c)
            sign = np.where(np.arange(K * C) % C % 2 == 0, 1.0, -1.0)
            state["x"][1:-1, 1:-1] = sign.astype(state["x"].dtype)[None, None, :]
        state["perm"] = (np.arange(K)[None, :] * C + np.arange(C)[:, None]).astype(np.int64)
        return state

    def theta(self, X: np.ndarray) -> np.ndarray:
        """``θ(x)`` of every slot of the padded spins ``X (R+2, C+2, slots)``: ``(slots,)``
        float64."""
        f, r, d = self._theta_terms
        x = X[1:-1, 1:-1].astype(np.float64)                              # (R, C, slots)
        return ((f * x).sum(axis=(0, 1)) + (r * x[:, :-1] * x[:, 1:]).sum(axis=(0, 1))
                + (d * x[:-1] * x[1:]).sum(axis=(0, 1)))

    def slot_betas(self, perm: np.ndarray) -> np.ndarray:
        """``(slots,)`` float32: the inverse temperature each slot is at under ``perm``."""
        beta = np.empty(self.chains * self.replicas, np.float32)
        beta[perm] = self._beta32[None, :]
        return beta

    def _swap(self, perm: np.ndarray, theta: np.ndarray, first: int,
              rng: np.random.Generator) -> np.ndarray:
        """Swap moves of rungs ``(i, i+1)`` for ``i = first, first + 2, …`` in every chain,
        ``perm`` updated in place; returns ``(chains, pairs)`` bool accepted."""
        i = np.arange(first, self.replicas - 1, 2)
        if not len(i):
            return np.zeros((self.chains, 0), bool)
        a, b = perm[:, i], perm[:, i + 1]                                 # (chains, pairs)
        log_ratio = (self.ladder[i] - self.ladder[i + 1])[None, :] * (theta[b] - theta[a])
        u = rng.random(a.shape)
        acc = u < np.exp(np.minimum(log_ratio, 0.0))
        perm[:, i] = np.where(acc, b, a)
        perm[:, i + 1] = np.where(acc, a, b)
        return acc

    def step(self, state: dict, rng: np.random.Generator):
        X, perm = state["x"], state["perm"]
        K, C = self.replicas, self.chains
        beta = None if K == 1 else self.slot_betas(perm)
        changed = self.base.sweep(X, rng, beta)                           # (slots,)
        stats = {"accept": changed[perm].sum(axis=1) / (K * self.n),
                 "site_updates": self._ones * (K * self.n)}
        if K > 1:
            theta = self.theta(X)
            acc = np.empty((C, K - 1), bool)
            acc[:, 0::2] = self._swap(perm, theta, 0, rng)
            acc[:, 1::2] = self._swap(perm, theta, 1, rng)
            stats["swap_accept"] = acc.mean(axis=1)
            for j in range(K - 1):
                stats[f"swap_accept_{j}"] = acc[:, j].astype(np.float64)
        top = perm[:, K - 1]                                              # the β = 1 slots
        samples = np.ascontiguousarray(X[1:-1, 1:-1, top].transpose(2, 0, 1) > 0)
        return state, {"samples": samples}, stats

    def rung_samples(self, state: dict) -> np.ndarray:
        """The spins at every rung: ``(chains, K, R, C)`` bool (rung ``K - 1`` is β = 1)."""
        x = state["x"][1:-1, 1:-1][:, :, state["perm"]]                   # (R, C, chains, K)
        return np.ascontiguousarray(x.transpose(2, 3, 0, 1) > 0)
