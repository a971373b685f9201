"""Exact Gibbs by pair-table lookup and approximate Gibbs (paper §5) on the dense triplet MRF
(:mod:`mixlab.austerity.mrf`)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .jit import _JIT, _JIT_DOT, _ZERO
from .look import _look
from .orders import _chain_state, _shuffle_next, _unshuffle

__all__ = ["mrf_sweep_approx", "mrf_sweep_approx_blocks", "mrf_sweep_lookup"]


@njit(**_JIT)
def _mrf_term(delta, pj, pk, x, i, q):
    """Term q of variable i's log-odds in state x (D,): delta[i, q, 2 x[pj] + x[pk]]."""
    return delta[i, q, 2 * x[pj[i, q]] + x[pk[i, q]]]


@njit(**_JIT_DOT)
def _mrf_term_sum(delta, pj, pk, x, i, q0, q1):
    """Σ_{q0 <= q < q1} delta[i, q, 2 x[pj[i, q]] + x[pk[i, q]]], float64, summed in any order
    (reassociation: several accumulators instead of one chain of dependent additions)."""
    s = 0.0
    for q in range(q0, q1):
        s += delta[i, q, 2 * x[pj[i, q]] + x[pk[i, q]]]
    return s


@njit(**_JIT)
def _mrf_quadratic(Q, h, x, i):
    """Exact log-odds of x_i by the quadratic form: h_i + x^T Q_i x, x (D,) uint8."""
    D = x.size
    acc = 0.0
    for j in range(D):
        if x[j]:
            row = 0.0
            for k in range(D):
                if x[k]:
                    row += Q[i, j, k]
            acc += row
    return h[i] + acc


@njit(**_JIT)
def mrf_sweep_lookup(delta, pj, pk, X, LU):
    """Exact systematic-scan Gibbs sweep summing the N pair-table terms per update (the paper's
    cost model), in place.  delta (D, N, 4) float64, pj, pk (D, N) int64; X (B, D) uint8;
    LU (B, D) logit(u): x_i = 1 iff LU < L_i(x)."""
    B, D = X.shape
    N = delta.shape[1]
    for i in range(D):
        for b in range(B):
            x = X[b]
            x[i] = LU[b, i] < _mrf_term_sum(delta, pj, pk, x, i, 0, N)


@njit(**_JIT)
def mrf_sweep_approx(delta, pj, pk, Q, h, X, mu0, m, tcrit2, seed, n_out, p_out, perm, swaps):
    """Approximate systematic-scan Gibbs sweep (paper §5), in place: for chain b and variable i
    the sequential test (:func:`_look`, minibatches of m pairs drawn without replacement) decides
    whether the mean of the N terms exceeds mu0[b, i] = logit(u) / N; x_i = 1 iff it does.

    delta, pj, pk as :func:`mrf_sweep_lookup`; Q (D, D, D), h (D,) the quadratic form, used only
    when p_out is (B, D) (it then receives the exact conditional log-odds at each update; pass a
    (0, 0) array otherwise).  X (B, D) uint8; mu0 (B, D); tcrit2 (ceil(N/m),); seed uint64: the
    test of (b, i) reads the order :func:`minibatch_orders` gives index b * D + i.  n_out (B, D)
    int64 receives the terms each test read.  Scratch: perm = arange(N) (left so), swaps (N,)."""
    B, D = X.shape
    N = delta.shape[1]
    lv = np.empty(m, np.float64)
    track = p_out.shape[0] > 0
    # variable-major: the B chains' tests of variable i share its tables (D = 100: 230 kB per
    # variable, 23 MB in all), read in random order, so the chains after the first find them
    # in cache (chain-major measured 10x slower per term)
    for i in range(D):
        for b in range(B):
            x = X[b]
            if track:
                p_out[b, i] = _mrf_quadratic(Q, h, x, i)
            state = _chain_state(seed, b * D + i)
            total = 0.0
            m2 = 0.0
            n = _ZERO
            k = 0
            while True:
                bb = min(m, N - n)
                state = _shuffle_next(state, perm, swaps, n, n + bb)
                for j in range(bb):
                    lv[j] = _mrf_term(delta, pj, pk, x, i, perm[n + j])
                n, total, m2, mean, done, acc, se = _look(lv, bb, n, total, m2, mu0[b, i], N,
                                                          tcrit2[k])
                if done:
                    break
                k += 1
            x[i] = acc
            n_out[b, i] = n
            _unshuffle(perm, swaps, n)


@njit(**_JIT)
def _mrf_block_sums(ds, pjs, pks, x, i, perm, n, bb, bsize, out):
    """out[j] = Σ of the terms of block perm[n + j] of variable i (terms [q0, q0 + bsize) of the
    shuffled tables, the last block shorter), j < bb.  Four full blocks are summed in one loop
    (four independent additions per term instead of one dependent chain)."""
    N = ds.shape[1]
    j = 0
    while j + 4 <= bb:
        q0 = perm[n + j] * bsize
        q1 = perm[n + j + 1] * bsize
        q2 = perm[n + j + 2] * bsize
        q3 = perm[n + j + 3] * bsize
        if max(max(q0, q1), max(q2, q3)) + bsize <= N:
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            for t in range(bsize):
                s0 += ds[i, q0 + t, 2 * x[pjs[i, q0 + t]] + x[pks[i, q0 + t]]]
                s1 += ds[i, q1 + t, 2 * x[pjs[i, q1 + t]] + x[pks[i, q1 + t]]]
                s2 += ds[i, q2 + t, 2 * x[pjs[i, q2 + t]] + x[pks[i, q2 + t]]]
                s3 += ds[i, q3 + t, 2 * x[pjs[i, q3 + t]] + x[pks[i, q3 + t]]]
            out[j] = s0
            out[j + 1] = s1
            out[j + 2] = s2
            out[j + 3] = s3
            j += 4
        else:
            break
    while j < bb:
        q0 = perm[n + j] * bsize
        out[j] = _mrf_term_sum(ds, pjs, pks, x, i, q0, min(q0 + bsize, N))
        j += 1


@njit(**_JIT)
def mrf_sweep_approx_blocks(ds, pjs, pks, bsize, Q, h, X, mu0, mb, tcrit2, seed, n_out, p_out,
                            perm, swaps):
    """Approximate Gibbs sweep over *blocks* of pair terms, in place: as
    :func:`mrf_sweep_approx`, but variable i's N terms are stored in a once-shuffled order
    (ds (D, N, 4) float64, pjs, pks (D, N) int32: ``delta``, ``pj``, ``pk`` with each row
    permuted) and cut into K = ceil(N / bsize) blocks of bsize consecutive terms (= perm.size).
    The test's population is the K block values (K / N) Σ_block terms (mean = the mean of the N
    terms exactly), minibatches of mb blocks without replacement, the t test over block values
    with the finite-population correction for K; at n = K the exact decision Σ terms / N > mu0.
    A block is an in-order sum (no random access, one random number per block).  tcrit2
    (ceil(K/mb),); n_out (B, D) int64 receives the terms read; other arguments as
    :func:`mrf_sweep_approx` (the test of (b, i) reads the block order :func:`minibatch_orders`
    gives index b * D + i for K)."""
    B, D = X.shape
    N = ds.shape[1]
    K = perm.size
    scale = K / N
    lv = np.empty(mb, np.float64)
    track = p_out.shape[0] > 0
    for i in range(D):
        for b in range(B):
            x = X[b]
            if track:
                p_out[b, i] = _mrf_quadratic(Q, h, x, i)
            state = _chain_state(seed, b * D + i)
            total = 0.0
            m2 = 0.0
            raw = 0.0
            n = _ZERO
            rows = 0
            k = 0
            while True:
                bb = min(mb, K - n)
                state = _shuffle_next(state, perm, swaps, n, n + bb)
                _mrf_block_sums(ds, pjs, pks, x, i, perm, n, bb, bsize, lv)
                for j in range(bb):
                    raw += lv[j]
                    rows += min(bsize, N - perm[n + j] * bsize)
                    lv[j] *= scale
                n, total, m2, mean, done, acc, se = _look(lv, bb, n, total, m2, mu0[b, i], K,
                                                          tcrit2[k])
                if done:
                    if n == K:                         # the exact decision on the raw sum
                        acc = raw / N > mu0[b, i]
                    break
                k += 1
            x[i] = acc
            n_out[b, i] = rows
            _unshuffle(perm, swaps, n)
