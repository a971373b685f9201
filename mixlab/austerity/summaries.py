"""Scalar summaries per draw, for mixing diagnostics (``ctx.stream(..., summarize=fn)``).

Each function here builds ``fn(block) -> {stat: (chain, n)}`` (float64, indicators bool) from
a block of draws ``{key: (chain, n, ...)}``, vectorised over chains and draws.

* Posterior samplers (logistic family): every coordinate of θ, ``theta_<j>`` = ``samples[..., j]``
  (or the coordinates a spec's ``summary_dims`` lists: at thousands of draws per second, 51
  coordinates x 8 chains x 8 bytes is megabytes per second of sampling).
* Dense triplet MRF (mrf family), cheap scalars whose means are what Fig 8 estimates:
  ``energy`` = -log of the unnormalised probability of the draw (the sum of the 161,700 triplet
  log-potentials for D = 100, computed from the model's quadratic form, one (B, D) @ (D, D²)
  product per block); ``ones`` = the fraction of variables set to 1; ``subset_<k>`` for the first
  few 5-variable subsets of Fig 8 = the indicator that the subset takes its most probable
  configuration under the truth (its mean is that joint probability: one of the numbers whose
  L1 error Fig 8 plots).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import SpecError
from ..numerics import state_codes
from .mrf import DenseMRF, subset_codes


def theta_dims(dims: list[int] | None, d: int, key: str = "summary_dims") -> list[int]:
    """The coordinates ``dims`` (null: all ``d``; negative counts from the end) as 0..d-1."""
    if dims is None:
        return list(range(d))
    out = []
    for j in dims:
        if not -d <= j < d:
            raise SpecError(f"coordinate {j} is out of range for d = {d} (use 0..{d - 1}, or "
                            f"negative from the end)", key)
        out.append(j % d)
    return list(dict.fromkeys(out))


def theta_summaries(dims: list[int]) -> Callable[[dict], dict]:
    """``fn(block)`` -> ``{theta_<j>: samples[:, :, j] (chain, n)}`` for j in ``dims``."""
    dims = list(dims)

    def summarize(block: dict) -> dict:
        th = np.asarray(block["samples"])                         # (chain, n, d)
        sel = th[:, :, dims].astype(np.float64)                    # (chain, n, len(dims))
        return {f"theta_{j}": sel[:, :, i] for i, j in enumerate(dims)}

    return summarize


class MRFEnergy:
    """``energy(X (B, D) {0,1}) -> (B,)`` = -log P~(x) = -sum_t log psi_t(x_t), exactly the
    negative of :meth:`DenseMRF.log_potential`, through the multilinear form of mrf.py:
    log P~(x) = c + h·x + sum_{i<j} W_ij x_i x_j + sum_{i<j<k} J_ijk x_i x_j x_k with
    ``Q[i, j, j] = W_ij`` and ``Q[i, j, k] = J_ijk / 2`` (j != k), so that
    ``s3 = sum_i x_i x^T Q_i x = x^T W x + 3 * cubic`` and
    ``log P~(x) = c + h·x + x^T W x / 6 + s3 / 3``."""

    #: at most this many variables: every state's energy is computed once, and bits are looked up
    TABLE_MAX_D = 14

    def __init__(self, model: DenseMRF, rows: int = 256):
        D = model.D
        self.D, self.rows = D, rows
        self.c = float(model.logpsi[:, 0, 0, 0].sum())
        self.h = np.asarray(model.h, dtype=np.float64)
        idx = np.arange(D)
        self.W = np.asarray(model.Q[:, idx, idx], dtype=np.float64)   # W[i, j] = Q[i, j, j]
        self.Qflat = np.ascontiguousarray(model.Q.reshape(D, D * D), dtype=np.float64)
        self.table = None
        if D <= self.TABLE_MAX_D:        # state s has bit b = variable b: all 2^D energies
            states = (np.arange(1 << D)[:, None] >> idx) & 1
            self.table = self._energies(states)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X)
        if self.table is not None and X.dtype in (np.bool_, np.uint8):   # bits: look them up
            return self.table[state_codes(X)]
        return self._energies(X)

    def _energies(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        out = np.empty(X.shape[0])
        for s in range(0, X.shape[0], self.rows):                # bounded (rows, D²) buffer
            x = X[s:s + self.rows]
            Y = (x @ self.Qflat).reshape(-1, self.D, self.D)       # Y[b, j, k] = sum_i x_i Q_ijk
            s3 = np.einsum("bjk,bj,bk->b", Y, x, x)
            pair = np.einsum("bi,ij,bj->b", x, self.W, x)
            out[s:s + self.rows] = -(self.c + x @ self.h + pair / 6 + s3 / 3)
        return out


def mrf_summaries(model: DenseMRF, subsets: np.ndarray | None = None,
                  truth_probs: np.ndarray | None = None, k: int = 4) -> Callable[[dict], dict]:
    """``fn(block)`` -> ``{energy, ones, subset_0 .. subset_<k-1>}`` each (chain, n), from
    ``block["samples"] (chain, n, D)`` bool: energy and ones (the fraction of variables equal to
    1) float64, the indicators bool.  ``subsets (M, s)`` and ``truth_probs (M, 2^s)`` (Fig 8's,
    configurations coded with bit b = variable subsets[:, b]) give the indicators; with
    ``subsets`` None only energy and ones."""
    energy = MRFEnergy(model)
    picks = []
    if subsets is not None and truth_probs is not None:
        for m in range(min(k, subsets.shape[0])):
            picks.append((m, np.asarray(subsets[m]), int(np.argmax(truth_probs[m]))))
    if energy.table is not None:           # every state's summaries, looked up by its code
        states = (np.arange(1 << model.D)[:, None] >> np.arange(model.D)) & 1     # (2^D, D)
        tables = {"energy": energy.table, "ones": states.mean(axis=1, dtype=np.float64)}
        for m, sub, code in picks:
            tables[f"subset_{m}"] = subset_codes(states, sub[None, :])[:, 0] == code

        def summarize(block: dict) -> dict:
            c = state_codes(block["samples"])                        # (chain, n)
            return {name: t[c] for name, t in tables.items()}
        return summarize

    def summarize(block: dict) -> dict:
        X = np.asarray(block["samples"])                            # (chain, n, D)
        C, n, D = X.shape
        flat = X.reshape(C * n, D)
        out = {"energy": energy(flat).reshape(C, n), "ones": X.mean(axis=2, dtype=np.float64)}
        for m, sub, code in picks:
            bits = (code >> np.arange(len(sub))) & 1                # the configuration's bits
            out[f"subset_{m}"] = np.all(X[:, :, sub] == bits.astype(bool), axis=2)
        return out

    return summarize


def subset_configs(subsets: np.ndarray, truth_probs: np.ndarray, k: int = 4) -> list[int]:
    """The configuration code each ``subset_<m>`` summary indicates (m < k), for the results."""
    return [int(np.argmax(truth_probs[m])) for m in range(min(k, subsets.shape[0]))]
