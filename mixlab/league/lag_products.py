"""Compiled lagged products of a block of series, for the streaming ESS (mixlab.league.ess_stream).

The streaming ESS adds, per block, ``Σ_u e[L+u] e[L+u−t]`` for every lag ``t = 0..L`` of every
chain's summary. One ``einsum`` per lag (a dot product of the block with itself shifted) runs
at about 0.23 ns a value and lag; eight lags at a time over the same pass, each a separate sum
the compiler vectorises over the draws, take about 0.03 ns (``make bench`` measures the
league that calls it). The sums are reassociated (SIMD lanes), so a result differs from the
per-lag dot products by float rounding alone (about 1e-15 of the largest product).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..compiled.numba_cache import CACHE

__all__ = ["lag_products"]

_FAST = {"reassoc", "contract"}   # vectorised sums; NaN and infinity keep their meaning


@njit(cache=CACHE, nogil=True, boundscheck=False, fastmath=_FAST)
def _add_products(e, L, out):
    """``out[r, t] += Σ_u e[r, L+u] e[r, L+u−t]``, ``e (R, L + B)``, ``out (R, L + 1)``."""
    R, W = e.shape
    B = W - L
    for r in range(R):
        row = e[r]
        a = row[L:]
        t = 0
        while t + 7 <= L:        # eight lags per pass over the block
            y0, y1 = row[L - t:W - t], row[L - t - 1:W - t - 1]
            y2, y3 = row[L - t - 2:W - t - 2], row[L - t - 3:W - t - 3]
            y4, y5 = row[L - t - 4:W - t - 4], row[L - t - 5:W - t - 5]
            y6, y7 = row[L - t - 6:W - t - 6], row[L - t - 7:W - t - 7]
            s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
            for u in range(B):
                x = a[u]
                s0 += x * y0[u]
                s1 += x * y1[u]
                s2 += x * y2[u]
                s3 += x * y3[u]
                s4 += x * y4[u]
                s5 += x * y5[u]
                s6 += x * y6[u]
                s7 += x * y7[u]
            out[r, t] += s0
            out[r, t + 1] += s1
            out[r, t + 2] += s2
            out[r, t + 3] += s3
            out[r, t + 4] += s4
            out[r, t + 5] += s5
            out[r, t + 6] += s6
            out[r, t + 7] += s7
            t += 8
        while t <= L:            # the lags left over
            y0 = row[L - t:W - t]
            s0 = 0.0
            for u in range(B):
                s0 += a[u] * y0[u]
            out[r, t] += s0
            t += 1


def lag_products(e: np.ndarray, L: int) -> np.ndarray:
    """``Σ_u e[..., L+u] e[..., L+u−t]`` over a block's draws ``u`` for ``t = 0..L`` of every
    series of ``e (C, S, L + B)`` (the block after its ``L`` predecessors): ``(C, S, L + 1)``."""
    C, S, W = e.shape
    if W < L:
        raise ValueError(f"a block of {W} values cannot hold {L} predecessors")
    out = np.zeros((C * S, L + 1))
    _add_products(np.ascontiguousarray(e, np.float64).reshape(C * S, W), int(L), out)
    return out.reshape(C, S, L + 1)
