"""The sequential MH test over blocks of rows for logistic regression, with the per-chain cache
of block sums at the current state."""

from __future__ import annotations

import numpy as np
from numba import njit

from .jit import _JIT, _ZERO, TILE
from .look import _look
from .orders import _chain_state, _shuffle_next, _unshuffle
from .products import _pad32, _sum64, _tile_dots, _tile_dots2
from .sigmoid import _log_sigmoid_block

__all__ = ["seqtest_logistic_blocks", "seqtest_logistic_blocks_shared"]


@njit(**_JIT)
def _copy_row(a, c, x):
    """a[c, :] = x, as a loop (a slice copy compiles numba's shape-mismatch message code)."""
    for k in range(x.size):
        a[c, k] = x[k]


@njit(**_JIT)
def _cache_version(cache_theta, version, c, th):
    """The cache version of chain c at state th: a new one (the cache emptied) unless the cache
    was filled at th (cache_theta[c] == th)."""
    for k in range(th.size):
        if cache_theta[c, k] != th[k]:
            version[c] += 1
            _copy_row(cache_theta, c, th)
            break
    return version[c]


@njit(**_JIT)
def _read_minibatch(Xt, Dp, N, bsize, perm, n, bb, tn, to, stamp, ver, cache, scale, bufs, lv):
    """Read the blocks perm[n:n+bb] for one chain of a block test: lv[:bb] receives their test
    values (K/N) (S'_k - S_k) in read order, S'_k and S_k the block's sums of log σ(x_i·θ') and
    log σ(x_i·θ) over its rows (float32 terms added in float64 by :func:`_sum64`).

    Products at θ' (tn) always; at θ (to) only for the blocks whose sum at θ is not cached
    (stamp[blk] != ver), those two products sharing each load of the data; the sums at θ
    computed here fill the cache (cache (K,) float64, stamp (K,) int64).  The sums at θ' go to
    bufs.sn[n + j] for block read j (kept for the whole call, so that an accepted move can
    refill the cache).  Returns (Σ of the unscaled block values, rows read).  A block's value is
    the same arithmetic whether its sum at θ comes from the cache or not."""
    zn, ln, zo, lo, sn, eb, pb, ht, ho, mt, mo, mo2 = bufs
    T = -(-bsize // TILE)
    Bp = T * TILE
    nh = _ZERO
    nm = _ZERO
    for j in range(bb):              # tiles of the cached / uncached blocks (branch-free: the
        blk = perm[n + j]            # hit or miss of a block is a coin flip to the predictor)
        hit = np.int64(stamp[blk] == ver)
        for s in range(T):
            ht[nh] = blk * T + s
            ho[nh] = j * Bp + s * TILE
            mt[nm] = blk * T + s
            mo[nm] = j * Bp + s * TILE
            mo2[nm] = nm * TILE
            nh += hit
            nm += 1 - hit
    _tile_dots(Xt, Dp, ht, ho, nh, tn, zn)
    _tile_dots2(Xt, Dp, mt, mo, mo2, nm, tn, to, zn, zo)
    _log_sigmoid_block(zn, ln, eb, pb, bb * Bp)
    _log_sigmoid_block(zo, lo, eb, pb, nm * TILE)
    raw = 0.0
    rows = 0
    q = 0                            # uncached blocks so far: their values at θ are at q Bp
    for j in range(bb):
        blk = perm[n + j]
        nr = min(bsize, N - blk * bsize)
        s_new = _sum64(ln, j * Bp, nr)
        if stamp[blk] == ver:
            s_old = cache[blk]
        else:
            s_old = _sum64(lo, q * Bp, nr)
            cache[blk] = s_old
            stamp[blk] = ver
            q += 1
        sn[n + j] = s_new
        v = s_new - s_old
        raw += v
        rows += nr
        lv[j] = scale * v
    return raw, rows


@njit(**_JIT)
def _cache_accepted(perm, nread, sn, cache, stamp, ver):
    """After an accepted move: the sums at θ' of the nread blocks read (sn, read order, as
    :func:`_read_minibatch` left them) become the cache, stamped ver."""
    for j in range(nread):
        blk = perm[j]
        cache[blk] = sn[j]
        stamp[blk] = ver


@njit(**_JIT)
def _block_buffers(K, mb, bsize):
    """Scratch of :func:`_read_minibatch` for one chain (the tuple it unpacks)."""
    T = -(-bsize // TILE)
    R = mb * T * TILE
    return (np.empty(R, np.float32), np.empty(R, np.float32),
            np.empty(R, np.float32), np.empty(R, np.float32),
            np.empty(K, np.float64), np.empty(R, np.int32), np.empty(R, np.float32),
            np.empty(mb * T, np.int64), np.empty(mb * T, np.int64),
            np.empty(mb * T, np.int64), np.empty(mb * T, np.int64), np.empty(mb * T, np.int64))


@njit(**_JIT)
def seqtest_logistic_blocks(Xt, Dp, N, bsize, th_new, th_old, mu0, mb, tcrit2, seed, accept,
                           n_used, mean_out, se_out, perm, swaps, cache, stamp, version,
                           cache_theta):
    """The sequential MH test over *blocks* of rows for C logistic-regression chains.

    Xt the N signed rows in a once-shuffled order as :func:`column_tiles` (Xt, bsize), Dp its
    tile width; th_new, th_old (C, d) proposal and current state (rounded to float32, padded);
    block k is rows [k bsize, min((k+1) bsize, N)), K = ceil(N / bsize) blocks (= perm.size).
    The test's population is the K block values v_k = (K / N) Σ_{i in block k} l_i, whose mean
    is exactly the mean of the N values l_i = log σ(x_i·θ') - log σ(x_i·θ); it reads minibatches
    of ``mb`` blocks drawn without replacement (a uniformly random order of the blocks per call
    and chain, :func:`minibatch_orders` with K), and :func:`_look` is the t test over block
    values with the finite-population correction for K.  At n = K the decision is the exact
    one, Σ l_i / N > mu0.  tcrit2 (ceil(K/mb),) as :func:`mixlab.austerity.seqtest.tcrit2_table`
    (K, mb, eps).  Outputs as :func:`seqtest_logistic`; n_used counts rows read.

    Cache: cache (C, K) float64 holds the block sums S_k = Σ_{i in block k} log σ(x_i·θ_c) at
    θ_c = cache_theta[c] (C, Dp) float32 for the blocks with stamp[c, k] == version[c] (stamp
    (C, K), version (C,) int64); a block value is (K / N) (S'_k - S_k), S'_k the sum at θ'.  A
    block read whose sum at the current state is cached costs one product, not two.  The cache
    is checked against th_old (a chain whose state differs starts a new version), and on
    acceptance it is refilled with the sums at θ' just computed.  Every sum is the same
    arithmetic (:func:`_tile_dots`, :func:`_log_sigmoid_block`, :func:`_sum64` over the block's
    rows) whether it is computed now or was cached, so the decisions do not depend on the
    cache: an empty cache (a resumed run) gives the same chain (tests/austerity/test_samplers.py).
    Block sums rather than per-row values: per-row values would take 16x the memory ((C, N)
    float32, 400 MB for 100 chains on a million rows) for the same decisions, and the sums
    measured 1.00-1.01x their time with one order per chain, 0.96x with shared_order.
    Scratch: perm (K,) = arange(K) (left so), swaps (K,)."""
    K = perm.size
    th_new = _pad32(th_new, Dp)
    th_old = _pad32(th_old, Dp)
    C = th_new.shape[0]
    scale = K / N
    bufs = _block_buffers(K, mb, bsize)
    lv = np.empty(mb, np.float64)
    for c in range(C):
        tn, to = th_new[c], th_old[c]
        ver = _cache_version(cache_theta, version, c, to)
        state = _chain_state(seed, c)
        total = 0.0
        m2 = 0.0
        raw = 0.0                                      # Σ l_i over the rows read
        n = _ZERO
        rows = 0
        k = 0
        while True:
            bb = min(mb, K - n)
            state = _shuffle_next(state, perm, swaps, n, n + bb)
            r, nr = _read_minibatch(Xt, Dp, N, bsize, perm, n, bb, tn, to, stamp[c], ver,
                                    cache[c], scale, bufs, lv)
            raw += r
            rows += nr
            n, total, m2, mean, done, acc, se = _look(lv, bb, n, total, m2, mu0[c], K,
                                                      tcrit2[k])
            if done:
                if n == K:                             # the exact decision on the raw sum
                    acc = raw / N > mu0[c]
                break
            k += 1
        if acc:                                        # the cache moves to θ'
            version[c] = ver + 1
            _copy_row(cache_theta, c, tn)
            _cache_accepted(perm, n, bufs[4], cache[c], stamp[c], ver + 1)
        accept[c] = acc
        n_used[c] = rows
        mean_out[c] = mean
        se_out[c] = se
        _unshuffle(perm, swaps, n)                     # perm is arange(K) again
    return accept


@njit(**_JIT)
def seqtest_logistic_blocks_shared(Xt, Dp, N, bsize, th_new, th_old, mu0, mb, tcrit2, seed,
                                  accept, n_used, mean_out, se_out, perm, swaps, cache, stamp,
                                  version, cache_theta):
    """:func:`seqtest_logistic_blocks` with ONE random block order for all C chains of a call
    (the order :func:`minibatch_orders` gives index 0): each minibatch is read by every chain
    still undecided while it is in cache, so the data comes from memory once per call, not once
    per chain.  Each chain's test is the same test as with its own order (a uniformly random
    order of the blocks), but the chains' decisions within a step are no longer independent:
    they read the same blocks.  Arguments as :func:`seqtest_logistic_blocks`."""
    K = perm.size
    th_new = _pad32(th_new, Dp)
    th_old = _pad32(th_old, Dp)
    C = th_new.shape[0]
    scale = K / N
    bufs = [_block_buffers(K, mb, bsize) for _ in range(C)]
    lv = np.empty(mb, np.float64)
    total = np.zeros(C)
    m2 = np.zeros(C)
    raw = np.zeros(C)
    rows = np.zeros(C, np.int64)
    nblk = np.zeros(C, np.int64)
    ver = np.empty(C, np.int64)
    act = np.arange(C)
    for c in range(C):
        ver[c] = _cache_version(cache_theta, version, c, th_old[c])
    state = _chain_state(seed, 0)
    na = C
    n = _ZERO
    k = 0
    while na > 0:
        bb = min(mb, K - n)
        state = _shuffle_next(state, perm, swaps, n, n + bb)
        keep = 0
        for a in range(na):                            # the same minibatch, every undecided chain
            c = act[a]
            r, nr = _read_minibatch(Xt, Dp, N, bsize, perm, n, bb, th_new[c], th_old[c],
                                    stamp[c], ver[c], cache[c], scale, bufs[c], lv)
            raw[c] += r
            rows[c] += nr
            n1, tot, mm, mean, done, acc, se = _look(lv, bb, n, total[c], m2[c], mu0[c], K,
                                                     tcrit2[k])
            total[c] = tot
            m2[c] = mm
            if done:
                if n1 == K:
                    acc = raw[c] / N > mu0[c]
                accept[c] = acc
                n_used[c] = rows[c]
                mean_out[c] = mean
                se_out[c] = se
                nblk[c] = n1
            else:
                act[keep] = c
                keep += 1
        na = keep
        n += bb
        k += 1
    for c in range(C):                                 # accepted chains: the cache moves to θ'
        if accept[c]:
            version[c] = ver[c] + 1
            _copy_row(cache_theta, c, th_new[c])
            _cache_accepted(perm, nblk[c], bufs[c][4], cache[c], stamp[c], ver[c] + 1)
    _unshuffle(perm, swaps, n)
    return accept
