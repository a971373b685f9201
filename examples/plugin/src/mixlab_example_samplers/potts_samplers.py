"""Samplers of the plugin's ``potts`` family (:mod:`.potts_family`).

- ``gibbs``: systematic-scan single-site Gibbs, every site drawn from ``p(x_i | x_-i) ∝
  exp(h_i(k) + Σ_j A_ij [x_j = k])`` in turn; exact.
- ``swendsen-wang``: the Swendsen-Wang cluster move (Swendsen & Wang 1987) with fields (J ≥ 0):
  given x, each edge whose ends agree is bonded with probability ``1 − exp(−J_ij)``; given the
  bonds, each cluster takes state k with probability ``∝ exp(Σ_{i ∈ cluster} h_i(k))`` (the
  Edwards-Sokal joint, whose x-marginal is the model); exact.
- ``biased-gibbs``: Gibbs at couplings scaled by ``beta`` (default 0.5): wrong on purpose, to
  show the league's bias flag.

Every sampler: state ``x (C, n)`` int8; draws ``samples (C, n)`` int8; stats
``site_updates (C,)`` = n.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from mixlab.api import Param, SpecError, sampler

from .potts_family import POTTS, PottsTarget


def categorical(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per row of ``logits (m, q)``: ``(m,)`` int."""
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    cum = np.cumsum(p, axis=1)
    u = rng.random(len(p)) * cum[:, -1]
    return np.minimum((u[:, None] >= cum).sum(axis=1), p.shape[1] - 1)


class _Base:
    def __init__(self, t: PottsTarget, chains: int):
        self.t, self.chains = t, int(chains)
        self.cost = np.full(self.chains, float(t.n))

    def init(self, rng: np.random.Generator) -> dict:
        if self.t.init == "zero":
            return {"x": np.zeros((self.chains, self.t.n), np.int8)}
        return {"x": rng.integers(0, self.t.q, (self.chains, self.t.n)).astype(np.int8)}

    def _out(self, x: np.ndarray):
        return {"x": x}, {"samples": x.copy()}, {"site_updates": self.cost}


class Gibbs(_Base):
    """Systematic-scan Gibbs with the couplings scaled by ``beta`` (1: exact)."""

    def __init__(self, t: PottsTarget, chains: int, beta: float = 1.0):
        super().__init__(t, chains)
        self.A = beta * t.couplings()                                     # (n, n)

    def step(self, state: dict, rng: np.random.Generator):
        x = state["x"].copy()
        oh = (x[..., None] == np.arange(self.t.q)).astype(np.float64)     # (C, n, q)
        for i in range(self.t.n):
            logits = self.t.h[i] + np.einsum("j,cjk->ck", self.A[i], oh)
            new = categorical(logits, rng)
            x[:, i] = new
            oh[:, i] = new[:, None] == np.arange(self.t.q)
        return self._out(x)


class SwendsenWang(_Base):
    """Swendsen-Wang cluster moves with fields (see the module docstring)."""

    def __init__(self, t: PottsTarget, chains: int):
        super().__init__(t, chains)
        if np.any(t.J < 0):
            raise SpecError("Swendsen-Wang needs couplings J >= 0 (a ferromagnetic model)",
                            "method")
        self.p_bond = 1.0 - np.exp(-t.J)                                  # (E,)
        off = (np.arange(self.chains) * t.n)[:, None]
        self.rows, self.cols = t.edges[:, 0] + off, t.edges[:, 1] + off   # (C, E)

    def step(self, state: dict, rng: np.random.Generator):
        t, x = self.t, state["x"]
        C, n = x.shape
        agree = x[:, t.edges[:, 0]] == x[:, t.edges[:, 1]]                # (C, E)
        bond = agree & (rng.random(agree.shape) < self.p_bond)
        g = coo_matrix((np.ones(int(bond.sum())), (self.rows[bond], self.cols[bond])),
                       shape=(C * n, C * n))
        m, label = connected_components(g, directed=False)                # (C n,)
        field = np.zeros((m, t.q))
        np.add.at(field, label, np.tile(t.h, (C, 1)))                     # Σ h over a cluster
        colour = categorical(field, rng)                                  # (m,)
        return self._out(colour[label].reshape(C, n).astype(np.int8))


@sampler(POTTS, "gibbs", help="systematic-scan single-site Gibbs (exact)")
def make_gibbs(target, params, chains):
    return Gibbs(target, chains)


@sampler(POTTS, "swendsen-wang", help="Swendsen-Wang cluster moves with fields, J >= 0 (exact)")
def make_sw(target, params, chains):
    return SwendsenWang(target, chains)


@sampler(POTTS, "biased-gibbs",
         params={"beta": Param(0.5, float, lo=0, help="the couplings' scale (1: exact Gibbs)")},
         help="Gibbs at couplings scaled by beta: wrong on purpose (the league flags it)")
def make_biased(target, params, chains):
    return Gibbs(target, chains, beta=params["beta"])
