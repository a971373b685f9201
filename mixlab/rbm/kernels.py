"""Compiled (numba) histogram loops of the streaming ISL evaluator's binary path (mixlab.rbm.isl).

Why compiled: for binary centres every block of B samples gives an (n_eval, B) GEMM output of
flat histogram indices ``t (D+1) + d`` (evaluation point t, Hamming distance d), and counting
them was as dear as a third of the GEMM in numpy (a cast to intp, then a whole-histogram
``bincount`` and add, or one fancy-index increment per centre for small pieces).
:func:`hist_count` counts them row by row instead: an evaluation point's D+1 bins stay in L1
while its B indices are read once, straight from the float GEMM output (no int copy, no
histogram-sized temporary), and the loop is the same for a piece of 3 centres as for 2048.

The read-out needs, per evaluation point, its histogram from the smallest distance seen on
(:func:`hist_window`); numpy found the first and last non-empty bins by two ``argmax`` passes over
a boolean copy of the whole histogram, here a scan from either end of each row stops at the first
count.

Both are exact integer work: the counts and the gathered window are the same numbers the numpy
code produced (tests/rbm/test_kernels.py), so every ISL value is bit-for-bit unchanged.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["hist_count", "hist_window"]

# error_model="numpy": no Python zero-division checks in the loops
_JIT = {"cache": True, "nogil": True, "boundscheck": False, "error_model": "numpy"}


@njit(**_JIT)
def hist_count(G, a, b, hist):
    """Count the flat indices in the columns a:b of G into hist, in place; return how many
    indices lay outside their row's bins (those are not counted: 0 unless G is not exact).

    G (n_eval, B) float32 or float64, C-contiguous, holding exact integers ``t (D+1) + d`` with
    0 <= d <= D in row t (:meth:`ISLEvaluator._hist_gemm`); each is converted to an integer by
    truncation, as ``G.astype(np.intp)`` does.  hist (n_eval, D+1) int64, C-contiguous.

    Plain increments, row by row: the row's bins are in L1 and the loop is bound by reading G.
    (Four interleaved sub-histograms summed at each row's end, against runs of increments of one
    bin, measured no faster on full 1000-centre blocks and 2-5x slower on short pieces; the range
    check costs about 10%.)"""
    n_eval, nb = hist.shape
    bad = 0
    for t in range(n_eval):
        base = t * nb
        for j in range(a, b):
            d = np.intp(G[t, j]) - base
            if d < 0 or d >= nb:
                bad += 1
            else:
                hist[t, d] += 1
    return bad


@njit(**_JIT)
def _row_extent(hist, t):
    """(first, last) non-empty bin of row t of hist, (n_bins, -1) for an empty row; empty runs
    are skipped 8 bins at a time (one OR, one branch)."""
    nb = hist.shape[1]
    lo = 0
    while lo + 8 <= nb and (hist[t, lo] | hist[t, lo + 1] | hist[t, lo + 2] | hist[t, lo + 3]
                            | hist[t, lo + 4] | hist[t, lo + 5] | hist[t, lo + 6]
                            | hist[t, lo + 7]) == 0:
        lo += 8
    while lo < nb and hist[t, lo] == 0:
        lo += 1
    hi = nb - 1
    while hi >= 7 and (hist[t, hi] | hist[t, hi - 1] | hist[t, hi - 2] | hist[t, hi - 3]
                       | hist[t, hi - 4] | hist[t, hi - 5] | hist[t, hi - 6]
                       | hist[t, hi - 7]) == 0:
        hi -= 8
    while hi >= 0 and hist[t, hi] == 0:
        hi -= 1
    return lo, hi


@njit(**_JIT)
def hist_window(hist):
    """Each row of hist from its first non-empty bin on, as float64.

    hist (n_eval, n_bins) int64 -> (d0 (n_eval,) int64 the first non-empty bin of each row,
    shifted (n_eval, span) float64 C-contiguous with ``shifted[t, j] = hist[t, d0[t] + j]`` and
    0 past the row's end), span = 1 + the largest (last non-empty bin - d0) over the rows.  An
    empty row counts as d0 = 0, last bin n_bins - 1 (what ``argmax`` over its all-False mask
    gives)."""
    n_eval, nb = hist.shape
    d0 = np.zeros(n_eval, np.int64)
    span = 1
    for t in range(n_eval):
        lo, hi = _row_extent(hist, t)
        if lo == nb:  # empty row
            lo, hi = 0, nb - 1
        d0[t] = lo
        span = max(span, hi - lo + 1)
    shifted = np.empty((n_eval, span), np.float64)
    for t in range(n_eval):
        lo = d0[t]
        m = min(span, nb - lo)
        for j in range(m):
            shifted[t, j] = hist[t, lo + j]
        for j in range(m, span):
            shifted[t, j] = 0.0
    return d0, shifted
