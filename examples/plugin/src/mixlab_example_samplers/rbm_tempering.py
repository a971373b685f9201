"""Parallel-tempering block Gibbs for a binary RBM (the ``rbm`` family's ``pt-gibbs``).

The RBM ``p(x, h) ∝ exp(xᵀWh + bᵀx + cᵀh)`` (``W (V, H)``, ``b (V,)``, ``c (H,)``) is tempered
to ``p_β(x, h) ∝ exp(β (xᵀWh + bᵀx + cᵀh))`` at K inverse temperatures ``1 = β_0 > β_1 > ... >
β_{K-1} = beta_min`` (geometric).  Each replica runs block Gibbs at its β; before the sweeps of a
step, neighbouring replicas (r, r+1) propose to exchange their visible states, the even pairs
on even steps and the odd pairs on odd steps, accepted with

    min(1, exp(log p*_{β_r}(x_{r+1}) + log p*_{β_{r+1}}(x_r) - log p*_{β_r}(x_r)
                - log p*_{β_{r+1}}(x_{r+1})))

where ``log p*_β(x) = β bᵀx + Σ_j softplus(β (c_j + (xᵀW)_j))`` is the unnormalised marginal of x
at β (hidden units summed out).  Each move leaves the product of the tempered marginals
invariant, so replica 0 samples the RBM.  Only replica 0 is emitted.

State: ``x (K, chains, V)`` float32 0/1, ``t ()`` int64 (steps so far, picks the swap parity).
Draws: ``samples (chains, V)`` bool and/or ``means (chains, V)`` float32 = E[x | h] of replica 0
(as the target's ``emit`` asks).  Stats: ``swap_accept (chains,)`` fraction of this step's swap
proposals accepted, ``flip (chains,)`` fraction of replica 0's visible units that changed,
``site_updates (chains,)`` = K·k·(V + H) (the rbm family's cost statistic).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mixlab.api import RBM, Param, sampler

_F32 = np.float32


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


class ParallelTemperingGibbs:
    """PT block Gibbs on an RBM (see the module docstring). ``replicas`` K >= 2."""

    def __init__(self, W: np.ndarray, b: np.ndarray, c: np.ndarray, chains: int, *,
                 replicas: int = 5, beta_min: float = 0.5, k: int = 1, init: str = "noise",
                 init_data: np.ndarray | None = None, emit: str = "both"):
        self.W = np.asarray(W, _F32)
        self.b = np.asarray(b, _F32)
        self.c = np.asarray(c, _F32)
        self.V, self.H = self.W.shape
        self.chains, self.K, self.k = int(chains), int(replicas), int(k)
        # the rbm family's cost statistic: k sweeps of V + H units in each of the K replicas
        self.site_updates = np.full(self.chains, float(self.K * self.k * (self.V + self.H)))
        self.betas = np.geomspace(1.0, beta_min, self.K).astype(_F32)        # (K,)
        self.init_mode = init if init_data is not None else "noise"
        self.init_data, self.emit = init_data, emit

    def init(self, rng: np.random.Generator) -> dict:
        shape = (self.K, self.chains, self.V)
        if self.init_mode == "data":
            idx = rng.integers(0, self.init_data.shape[0], size=shape[:2])
            x = (np.asarray(self.init_data)[idx] > 0.5).astype(_F32)
        else:
            x = (rng.random(shape) < 0.5).astype(_F32)
        return {"x": x, "t": np.int64(0)}

    def _log_marginal(self, x: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """``log p*_β(x)`` for x (..., V) and β broadcastable to x's leading shape."""
        act = x @ self.W + self.c                                            # (..., H)
        return beta * (x @ self.b) + np.logaddexp(0.0, beta[..., None] * act).sum(-1)

    def _swap(self, x: np.ndarray, parity: int, rng: np.random.Generator) -> np.ndarray:
        lo = np.arange(parity, self.K - 1, 2)                                # pairs (r, r+1)
        if len(lo) == 0:
            return np.zeros(self.chains)
        hi = lo + 1
        bl, bh = self.betas[lo][:, None], self.betas[hi][:, None]            # (P, 1)
        xl, xh = x[lo], x[hi]                                                # (P, C, V)
        log_a = (self._log_marginal(xh, bl) + self._log_marginal(xl, bh)
                 - self._log_marginal(xl, bl) - self._log_marginal(xh, bh))  # (P, C)
        acc = np.log(rng.random(log_a.shape)) < log_a
        x[lo] = np.where(acc[..., None], xh, xl)
        x[hi] = np.where(acc[..., None], xl, xh)
        return acc.mean(axis=0)

    def step(self, state: dict, rng: np.random.Generator):
        x = np.array(state["x"], copy=True)                                  # (K, C, V)
        t = int(state["t"])
        x0 = x[0].copy()
        swap_accept = self._swap(x, t % 2, rng)
        beta = self.betas[:, None, None]
        for _ in range(self.k):                                              # block Gibbs at β_r
            h = (rng.random((self.K, self.chains, self.H)) <
                 _sigmoid(beta * (x @ self.W + self.c))).astype(_F32)
            px = _sigmoid(beta * (h @ self.W.T + self.b))
            x = (rng.random(px.shape) < px).astype(_F32)
        draws = {}
        if self.emit in ("binary", "both"):
            draws["samples"] = x[0].astype(bool)
        if self.emit in ("means", "both"):
            draws["means"] = px[0].astype(_F32)
        stats = {"swap_accept": swap_accept,
                 "flip": np.mean(x[0] != x0, axis=1, dtype=_F32),
                 "site_updates": self.site_updates}
        return {"x": x, "t": np.int64(t + 1)}, draws, stats


@sampler(RBM, "pt-gibbs", params={
    "replicas": Param(5, int, lo=2, hi=64, help="tempered replicas K (β_0 = 1 is emitted)"),
    "beta_min": Param(0.5, float, lo=0, hi=1, lo_open=True, hi_open=True,
                      help="inverse temperature of the hottest replica (geometric ladder)"),
    "k": Param(1, int, lo=1, help="block-Gibbs sweeps per replica between emitted samples")},
    help="parallel-tempering block Gibbs: K tempered replicas, neighbour swaps (example plugin)")
def make_pt_gibbs(target: Any, params: dict, chains: int) -> ParallelTemperingGibbs:
    """``target``: an RBM (``W (V, H)``, ``b (V,)``, ``c (H,)``); optional ``train_X`` (N, V)
    and ``init`` ("data" starts every replica from a random training row) and ``emit``."""
    return ParallelTemperingGibbs(
        target.W, target.b, target.c, chains, replicas=params["replicas"],
        beta_min=params["beta_min"], k=params["k"], init=getattr(target, "init", "noise"),
        init_data=getattr(target, "train_X", None), emit=getattr(target, "emit", "both"))
