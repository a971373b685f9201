"""Random minibatch orders: a partial Fisher-Yates shuffle driven by SplitMix64 seeded per call
and chain, with Lemire's unbiased bounded integers.  The points a test reads are a uniformly
random sample without replacement in random order, as the test assumes.  The permutation array
is put back to the identity after every call, so a call's order depends on its seed only (runs
resume to the same bytes without carrying it in the sampler state)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .jit import _JIT, _ZERO
from .prefetch import prefetch

__all__ = ["fresh_in_draw_order", "minibatch_orders", "minibatch_rows", "unused_indices"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S32 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(32)
_MASK32, _TWO32 = np.uint64(0xFFFFFFFF), np.uint64(1 << 32)
_AHEAD = 16                    # swaps between a partner's prefetch and its use


@njit(**_JIT)
def _splitmix(state):
    """SplitMix64: (new state, 64 random bits)."""
    state = state + _GOLDEN
    x = state
    x = (x ^ (x >> _S30)) * _MIX1
    x = (x ^ (x >> _S27)) * _MIX2
    return state, x ^ (x >> _S31)


@njit(**_JIT)
def _below(state, k):
    """Uniform integer in [0, k), 1 <= k < 2**32, without bias (Lemire 2019)."""
    ku = np.uint64(k)
    while True:
        state, r = _splitmix(state)
        prod = (r >> _S32) * ku
        low = prod & _MASK32
        if low >= ku or low >= (_TWO32 - ku) % ku:
            return state, np.int64(prod >> _S32)


@njit(**_JIT)
def _chain_state(seed, c):
    """The RNG state of chain c for a call seeded with ``seed``."""
    state, _ = _splitmix(np.uint64(seed) ^ (np.uint64(c + 1) * _MIX1))
    return state


@njit(**_JIT)
def _shuffle_next(state, perm, swaps, j0, j1):
    """Partial Fisher-Yates: positions j0..j1-1 of perm receive uniformly random picks among the
    positions not fixed yet; the swap partners go to swaps[j0:j1].  Returns the RNG state.

    The partners are drawn first (the random numbers do not depend on perm), then the swaps run
    with the partner ``_AHEAD`` swaps on prefetched: at large N each partner is a cache miss,
    and several are then in flight at once.  The same perm, swaps and state as swapping as each
    partner is drawn: only the order of the memory requests changes."""
    N = perm.size
    for j in range(j0, j1):                        # the draws: RNG only, no memory traffic
        state, r = _below(state, N - j)
        swaps[j] = r + j
    for j in range(j0, min(j0 + _AHEAD, j1)):
        prefetch(perm, swaps[j])
    for j in range(j0, j1):
        if j + _AHEAD < j1:
            prefetch(perm, swaps[j + _AHEAD])
        r = swaps[j]
        t = perm[j]
        perm[j] = perm[r]
        perm[r] = t
    return state


@njit(**_JIT)
def minibatch_orders(seed, C, N):
    """(C, N) int64: the orders in which :func:`seqtest_logistic` called with ``seed`` reads the
    data of each chain (it stops somewhere along them).  For tests and diagnostics."""
    return minibatch_rows(seed, C, N, N, np.arange(N), np.empty(N, np.int64))


@njit(**_JIT)
def minibatch_rows(seed, C, N, b, perm, swaps):
    """(C, b) int64: row c holds the first b entries of :func:`minibatch_orders` (seed, C, N)
    [c] (b = N: the whole order), a simple random sample of b of the N indices without replacement, in random order
    (independent across chains and seeds).  O(C b): only b steps of each chain's shuffle run.
    Scratch: perm (N,) int64 = arange(N) (left so), swaps (N,) int64."""
    out = np.empty((C, b), np.int64)
    for c in range(C):
        _shuffle_next(_chain_state(seed, c), perm, swaps, _ZERO, b)
        for j in range(b):             # a loop, not a slice copy: no shape-check code
            out[c, j] = perm[j]
        _unshuffle(perm, swaps, b)
    return out


@njit(**_JIT)
def _unshuffle(perm, swaps, n):
    """Undo the first n swaps of :func:`_shuffle_next` (perm back to what it was), the partner
    ``_AHEAD`` swaps on prefetched."""
    for j in range(n - 1, max(n - 1 - _AHEAD, -1), -1):
        prefetch(perm, swaps[j])
    for j in range(n - 1, -1, -1):
        if j >= _AHEAD:
            prefetch(perm, swaps[j - _AHEAD])
        r = swaps[j]
        t = perm[j]
        perm[j] = perm[r]
        perm[r] = t


@njit(**_JIT)
def fresh_in_draw_order(used, rows, cand, need, new, filled):
    """The bookkeeping of :class:`mixlab.austerity.seqtest.UniformOrder` (sequential sampling
    without replacement), one row at a time: walk row i's candidates cand[i] (t, c) in draw
    order, keep those not in ``used[rows[i]]`` (marking them used) and write them to
    ``new[rows[i], filled[i]:]`` until need[i] are kept; a duplicate within the chunk is refused
    because its first occurrence marked the index used.  Returns (t,) int64, the number kept
    per row."""
    t, c = cand.shape
    kept = np.zeros(t, np.int64)
    for i in range(t):
        r, f, q = rows[i], filled[i], 0
        for j in range(c):
            if q == need[i]:
                break
            v = cand[i, j]
            if not used[r, v]:
                used[r, v] = True
                new[r, f + q] = v
                q += 1
        kept[i] = q
    return kept


@njit(**_JIT)
def unused_indices(used, rows, rem):
    """(len(rows), rem) int64: the indices not in ``used[rows[i]]``, increasing, for each row
    (each row has exactly rem of them)."""
    out = np.empty((rows.size, rem), np.int64)
    for i in range(rows.size):
        r, q = rows[i], 0
        for v in range(used.shape[1]):
            if not used[r, v]:
                if q == rem:
                    raise ValueError("a row has more unused indices than the others")
                out[i, q] = v
                q += 1
        if q != rem:
            raise ValueError("a row has fewer unused indices than the others")
    return out
