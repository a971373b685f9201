"""The per-point sequential MH test for logistic regression (paper §4): minibatches of rows drawn
without replacement, one at a time."""

from __future__ import annotations

import numpy as np
from numba import njit

from .jit import _CHUNK, _JIT, _ZERO
from .look import _look
from .orders import _chain_state, _shuffle_next, _unshuffle
from .products import _dots2, _pad32
from .sigmoid import _log_sigmoid_block

__all__ = ["seqtest_logistic"]


@njit(**_JIT)
def seqtest_logistic(Xs, th_new, th_old, mu0, m, tcrit2, seed, accept, n_used, mean_out, se_out,
                     perm, swaps):
    """The sequential MH test (seqtest.py, paper §4) for C logistic-regression chains.

    Xs (N, W) float32 signed rows (:func:`padded_rows`); th_new, th_old (C, d) proposal and
    current state (float64 or float32; rounded to float32 and zero-padded to W here);
    mu0 (C,) thresholds; m minibatch size; tcrit2 (ceil(N/m),) squared Student-t critical values
    for the test after k+1 minibatches (n = (k+1) m, df = n - 1; +inf where the test must not
    stop); seed: integer in [0, 2**63) (or uint64) seeding this call's minibatch orders.
    Outputs (C,): accept (bool), n_used (int64), mean_out (running mean of the l_i at the
    decision), se_out (its standard error s; 0 at n = N).  Scratch: perm (N,) int64, which must
    hold arange(N) and is left so; swaps (N,) int64.

    Each point read costs one pass over its row for both parameter vectors (the products with θ
    and θ' share the load; caching the values at θ across steps measured no faster).  The test
    itself is :func:`_look` after every minibatch."""
    N = Xs.shape[0]
    th_new = _pad32(th_new, Xs.shape[1])
    th_old = _pad32(th_old, Xs.shape[1])
    C = th_new.shape[0]
    zn = np.empty(_CHUNK, np.float32)
    zo = np.empty(_CHUNK, np.float32)
    ln = np.empty(_CHUNK, np.float32)
    lo = np.empty(_CHUNK, np.float32)
    eb = np.empty(_CHUNK, np.int32)
    pb = np.empty(_CHUNK, np.float32)
    lv = np.empty(m, np.float64)
    for c in range(C):
        state = _chain_state(seed, c)
        tn, to = th_new[c], th_old[c]
        total = 0.0
        m2 = 0.0
        n = _ZERO
        k = 0
        while True:
            b = min(m, N - n)
            state = _shuffle_next(state, perm, swaps, n, n + b)   # the next minibatch
            for j0 in range(0, b, _CHUNK):
                bb = min(_CHUNK, b - j0)
                _dots2(Xs, perm, n + j0, bb, tn, to, zn, zo)
                _log_sigmoid_block(zn, ln, eb, pb, bb)
                _log_sigmoid_block(zo, lo, eb, pb, bb)
                for j in range(bb):
                    lv[j0 + j] = np.float64(ln[j]) - np.float64(lo[j])
            n, total, m2, mean, done, acc, se = _look(lv, b, n, total, m2, mu0[c], N,
                                                      tcrit2[k])
            if done:
                break
            k += 1
        accept[c] = acc
        n_used[c] = n
        mean_out[c] = mean
        se_out[c] = se
        _unshuffle(perm, swaps, n)                     # perm is arange(N) again
    return accept
