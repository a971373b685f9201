"""Compiled (numba) fast-weight loops of rates-FPCD, rates-herding and sample penalization
(mixlab.rbm.samplers, ALGORITHMS.md §A.4 step 3).

Why compiled: the fast-weight update ``θ_F ← α θ_F + ε_F (R − s(x, ĥ))`` touches every weight
every step, and in numpy it was up to five passes over the (V, H) matrix (decay, add the rates,
subtract the statistics, and for α < 1 rebuild ``θ⁻ = θ + θ_F``): with one chain those passes
cost more than the two Gibbs GEMVs themselves.  :func:`update_weights` does it in one pass, row
by row, with the same floating-point operations in the same order as the numpy code
(``((α T) + E) − s x_i h_j``), so the results are unchanged bit for bit.

:func:`sparse_vis_to_hid` gives ``x W`` for a single binary chain by adding the rows where
``x_i ≠ 0`` (about a fifth of a digit's pixels are on): it is used for ``ĥ = E[h | x; θ⁻]``,
which only feeds the update — the Gibbs half-steps keep the BLAS products Gibbs uses, so rates-FPCD
with ``ε_F = 0`` still reproduces Gibbs' stream bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..compiled.numba_cache import CACHE

__all__ = ["mean_abs_diff", "sparse_vis_to_hid", "update_weights"]

# error_model="numpy": no Python zero-division checks in the loops
_JIT = {"cache": CACHE, "nogil": True, "boundscheck": False, "error_model": "numpy"}


@njit(**_JIT)
def sparse_vis_to_hid(x, W, out):
    """out ← x W for one chain, adding only the rows with x_i ≠ 0 (weighted by x_i).

    x (V,) float32, W (V, H) float32 C-contiguous, out (H,) float32 (overwritten)."""
    V, H = W.shape
    out[:] = 0.0
    for i in range(V):
        xi = x[i]
        if xi != 0.0:
            for j in range(H):
                out[j] += xi * W[i, j]


@njit(**_JIT)
def update_weights(T, alpha, E, s, x, h, G, Wb, Weff):
    """The fast-weight step on a (V, H) weight matrix, in place, in one pass:

        T ← α T + E − s x hᵀ      (G empty: the statistics of one chain, x (V,), h (H,))
        T ← α T + E − s G         (G (V, H): e.g. Σ_chains xᵀ ĥ from one GEMM)

    then, when Weff is not empty, ``Weff ← Wb + T`` (θ⁻ rebuilt from the decayed fast weights).
    T, E, G, Wb, Weff are float32 C-contiguous; an empty (0, 0) E means no rates (sample
    penalization), an empty G selects the rank-one form, an empty Weff skips the rebuild.
    α = 1 multiplies by one (exact); rows with x_i = 0 subtract s·0 = 0 (exact), so the result is
    the numpy sequence ``T *= α; T += E; T[x == 1] -= s h`` bit for bit."""
    V, H = T.shape
    has_E = E.shape[0] > 0
    dense = G.shape[0] > 0
    rebuild = Weff.shape[0] > 0
    decay = alpha != 1.0
    for i in range(V):
        sx = s * x[i] if not dense else s
        for j in range(H):
            t = T[i, j]
            if decay:
                t = alpha * t
            if has_E:
                t = t + E[i, j]
            if dense:
                t = t - s * G[i, j]
            elif sx != 0.0:
                t = t - sx * h[j]
            T[i, j] = t
            if rebuild:
                Weff[i, j] = Wb[i, j] + t


@njit(**_JIT)
def mean_abs_diff(A, b):
    """(F,) float32 mean_j |A[f, j] − b[j]| (the fast biases' magnitude, a per-step statistic;
    numpy spent ~6 µs per call on this, a tenth of a one-chain step).  A (F, n), b (n,)."""
    F, n = A.shape
    out = np.empty(F, np.float32)
    for f in range(F):
        acc = 0.0
        for j in range(n):
            acc += abs(np.float64(A[f, j]) - np.float64(b[j]))
        out[f] = acc / max(n, 1)
    return out
