"""Blocked Gibbs for the dense triplet MRF (the ``mrf`` family's ``blocked-gibbs``): each block
of ``block`` consecutive variables is drawn jointly from its exact conditional.

The model's log-probability is a multilinear polynomial in ``x ∈ {0,1}^D`` (mixlab.austerity.mrf):
``f(x) = Σ h_i x_i + Σ_{i<j} W_ij x_i x_j + Σ_{i<j<k} J_ijk x_i x_j x_k``, given through its
log-odds form ``L_i(x) = h_i + xᵀ Q_i x`` (``Q (D, D, D)``: ``Q[i, j, j] = W_ij``,
``Q[i, j, k] = J_ijk / 2`` for distinct i, j, k).  For a block B, with ``x⁰`` = x with ``x_B = 0``,

    f(x) - f(x⁰) = Σ_{i∈B} x_i L_i(x⁰) + Σ_{i<j∈B} x_i x_j (Q[i,j,j] + 2 (Q_i x⁰)_j)
                   + Σ_{i<j<k∈B} x_i x_j x_k 2 Q[i,j,k]

(the multilinear coefficients of the block given the rest), evaluated for the ``2^block``
configurations of the block and sampled from their softmax.  The ``L_i(x⁰)`` of a block cost
one ``(chains, D) @ (D, block·D)`` product, as many operations as the exact single-site sweep
spends on the same variables.  A step is one systematic sweep over the blocks.

State ``x (chains, D)`` uint8.  Draws ``samples (chains, D)`` bool.  Stats ``data_used
(chains,)`` = 1 (every term is read, like exact Gibbs) and ``pair_terms_read (chains,)`` = D·N
(the mrf family's cost statistic, charged as for exact Gibbs).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from mixlab.api import MRF, Param, sampler


class BlockedGibbs:
    """Blocked Gibbs on a dense triplet MRF given by ``h (D,)`` and ``Q (D, D, D)``."""

    def __init__(self, h: np.ndarray, Q: np.ndarray, chains: int, block: int = 2,
                 pair_terms: int = 0):
        self.h, self.Q = np.asarray(h, np.float64), np.asarray(Q, np.float64)
        self.D, self.chains, self.b = self.h.shape[0], int(chains), int(block)
        self.blocks = [np.arange(s, min(s + self.b, self.D)) for s in range(0, self.D, self.b)]
        self.tables = {}
        self.pair_terms = np.full(self.chains, float(self.D * pair_terms))   # per sweep
        for B in self.blocks:
            nb = len(B)
            # the 2^nb configurations (rows) and their products for every pair / triple
            E = ((np.arange(2 ** nb)[:, None] >> np.arange(nb)[None, :]) & 1).astype(np.float64)
            pairs = list(combinations(range(nb), 2))
            triples = list(combinations(range(nb), 3))
            EP = np.stack([E[:, a] * E[:, c] for a, c in pairs], 1) if pairs else None
            ET = np.stack([E[:, a] * E[:, c] * E[:, e] for a, c, e in triples], 1) \
                if triples else None
            QB = np.ascontiguousarray(self.Q[B].transpose(1, 0, 2).reshape(self.D, nb * self.D))
            J3 = np.array([2 * self.Q[B[a], B[c], B[e]] for a, c, e in triples])
            self.tables[int(B[0])] = (E, pairs, EP, ET, QB, J3)

    def init(self, rng: np.random.Generator) -> dict:
        return {"x": (rng.random((self.chains, self.D)) < 0.5).astype(np.uint8)}

    def _block_logits(self, X0: np.ndarray, B: np.ndarray) -> np.ndarray:
        """``f(x) - f(x⁰)`` for every configuration of block B, (chains, 2^|B|)."""
        E, pairs, EP, ET, QB, J3 = self.tables[int(B[0])]
        nb = len(B)
        Y = (X0 @ QB).reshape(self.chains, nb, self.D)                       # (Q_i x⁰) for i∈B
        L = self.h[B] + np.einsum("cbk,ck->cb", Y, X0)                       # L_i(x⁰)
        out = L @ E.T
        if pairs:
            a = np.array([p[0] for p in pairs])
            c = np.array([p[1] for p in pairs])
            W = self.Q[B[a], B[c], B[c]] + 2 * Y[:, a, B[c]]                 # (chains, pairs)
            out += W @ EP.T
        if ET is not None:
            out += ET @ J3
        return out

    def step(self, state: dict, rng: np.random.Generator):
        X = np.array(state["x"], dtype=np.float64)
        U = rng.random((self.chains, len(self.blocks)))
        for n, B in enumerate(self.blocks):
            X[:, B] = 0.0
            logits = self._block_logits(X, B)
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            cdf = np.cumsum(p, axis=1)
            pick = (U[:, n:n + 1] * cdf[:, -1:] >= cdf).sum(axis=1)          # inverse cdf
            X[:, B] = self.tables[int(B[0])][0][pick]
        x = X.astype(np.uint8)
        return {"x": x}, {"samples": x.astype(bool)}, {"data_used": np.ones(self.chains),
                                                 "pair_terms_read": self.pair_terms}


@sampler(MRF, "blocked-gibbs", params={
    "block": Param(2, int, lo=1, hi=8, help="variables drawn jointly per update (2^block "
                                            "configurations are enumerated)")},
    help="blocked Gibbs: consecutive blocks of variables drawn jointly from their exact "
         "conditional (example plugin)")
def make_blocked_gibbs(target: Any, params: dict, chains: int) -> BlockedGibbs:
    """``target``: a dense triplet MRF with ``h (D,)`` and ``Q (D, D, D)`` (the log-odds form
    ``L_i(x) = h_i + xᵀ Q[i] x``), e.g. mixlab.austerity.mrf.DenseMRF."""
    return BlockedGibbs(target.h, target.Q, chains, block=params["block"],
                        pair_terms=getattr(target, "N", (target.h.shape[0] - 1)
                                           * (target.h.shape[0] - 2) // 2))
