"""Compiled (numba) inner loops of the austerity samplers: logistic regression and its
sequential MH test, and exact / approximate Gibbs on the dense triplet MRF.

Why compiled: the sequential test looks at the data in minibatches of m = 500 points and decides
after every one, so a numpy implementation pays a dozen Python round trips per MH step, each far
dearer than the 500 dot products it organises (benchmarks/bench_austerity_mh.py measured the
numpy version at 0.1x the exact sampler's speed).  Here one call runs the whole test for every
chain: drawing the minibatches, the products, the log-likelihoods, the running moments and the
t test; on the MRF one call runs a whole Gibbs sweep.

Products, two arithmetics.  The full-data pass (:func:`loglik_sums`, :func:`loglik_rows`) and
the block test (:func:`seqtest_logistic_blocks`) read the data as *column tiles*
(:func:`column_tiles`: 32 rows stored column by column), so the rows are the SIMD lanes and a
product is the chain of FMAs over the columns in order: the same float32 bits in every kernel
and on any CPU with FMA whatever its vector width, and no horizontal sums (the exact
pass measured 1.3x (1 chain) to 1.6x (8 chains) faster than with row-wise dot products, and the
block test's values equal the exact pass's bit for bit).
The per-point test and :func:`loglik_gather` read rows at random, one at a time: their products
are row-wise dot products summed in a vectorised order (they may differ from the tiles' in the
last bit, which can move an MH decision only when the mean difference is within ~1e-7 relative
of the threshold).  Every log σ goes through the same float32 routine :func:`_log_sigmoid_block`.
It is a vectorisable float32 ``log σ(z)``: ``exp`` by Cody-Waite
range reduction and the Cephes ``expf`` polynomial, ``log1p(t) = 2 atanh(t / (2 + t))`` by its
odd series (t ∈ [0, 1], so the series argument is at most 1/3); within 4 ulp of the correctly
rounded value wherever |log σ(z)| > 1e-30 (tests/austerity/test_kernels.py).

Random minibatch orders come from a partial Fisher-Yates shuffle driven by SplitMix64 seeded per
call and chain, with Lemire's unbiased bounded integers: the points a test reads are a uniformly
random sample without replacement in random order, as the test assumes.  The permutation array
is put back to the identity after every call, so a call's order depends on its seed only (runs
resume to the same bytes without carrying it in the sampler state).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .. import hugepages

__all__ = [
    "TILE", "column_tiles", "gaussian_log_prior_diff", "grad_loglik_gather", "log_sigmoid",
    "loglik_gather", "loglik_rows", "loglik_sums", "minibatch_orders", "minibatch_rows",
    "mrf_sweep_approx", "mrf_sweep_approx_blocks", "mrf_sweep_lookup", "padded_rows",
    "seqtest_logistic", "seqtest_logistic_blocks", "seqtest_logistic_blocks_shared", "tile_width",
]

# error_model="numpy": float division without a Python zero check (which blocks vectorisation)
_JIT = {"cache": True, "nogil": True, "boundscheck": False, "error_model": "numpy"}
# products: reassociation lets LLVM vectorise the length-d dot product
_JIT_DOT = dict(_JIT, fastmath={"reassoc", "contract"})
# log σ: FMA contraction only (reassociation would fold the round-to-integer trick away)
_JIT_EXP = dict(_JIT, fastmath={"contract"})
# small helpers called per block: inlined by numba (no reference counting of their arrays)
_JIT_INLINE = dict(_JIT, inline="always")
# column tiles: FMA contraction only (the rows are the vector lanes; nothing to reassociate)
_JIT_TILE = _JIT_EXP

_CHUNK = 256                       # rows per block: products, then log σ vectorised over the block
TILE = 32                          # rows per column tile (a literal trip count: the loop vectorises)
_U = np.uint64                     # unsigned indices: no negative-index wraparound in the loops

_F = np.float32
_LOG2E = _F(1.44269504088896341)
_MAGIC = _F(12582912.0)            # 1.5 * 2**23: x + MAGIC - MAGIC rounds x to an integer
_LN2_HI, _LN2_LO = _F(0.693359375), _F(-2.12194440e-4)
_E0, _E1, _E2 = _F(1.9875691500e-4), _F(1.3981999507e-3), _F(8.3334519073e-3)
_E3, _E4, _E5 = _F(4.1665795894e-2), _F(1.6666665459e-1), _F(5.0000001201e-1)
_A0, _A1, _A2, _A3 = (_F(2.0 / (2 * k + 1)) for k in range(4))
_A4, _A5, _A6, _A7 = (_F(2.0 / (2 * k + 1)) for k in range(4, 8))
_XMIN = _F(-88.0)                  # exp(-88) ~ 6e-39 < FLT_MIN: below it log σ(z) = min(z, 0)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S32 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(32)
_MASK32, _TWO32 = np.uint64(0xFFFFFFFF), np.uint64(1 << 32)


def padded_rows(X: np.ndarray, lanes: int = 16, align: int = 64) -> np.ndarray:
    """(N, d) -> (N, W) float32 copy, W = d rounded up to ``lanes``, zero columns after d, the
    data ``align``-byte aligned: every row is whole SIMD vectors, so the products below vectorise
    without scalar remainders.  Parameter vectors must be zero-padded to W alike."""
    X = np.asarray(X, dtype=np.float32)
    N, d = X.shape
    W = -(-d // lanes) * lanes
    out = hugepages.empty((N, W), np.float32, align)   # read at random: fewer TLB misses
    out[:, :d] = X
    out[:, d:] = 0.0
    return out


@njit(**dict(_JIT_EXP, inline="always"))
def _exp_neg_abs_block(z, ebits, poly, n):
    """exp(-|z[i]|) = poly[i] * (ebits viewed as float32)[i] for i < n (float32, the Cephes
    ``expf`` polynomial after Cody-Waite reduction; exactly 0 scale below exp(-88))."""
    for i in range(n):                                 # exp(x), x = -|z| <= 0: x = k ln2 + r
        x = max(-abs(z[i]), _XMIN)
        k = (x * _LOG2E + _MAGIC) - _MAGIC
        r = x - k * _LN2_HI - k * _LN2_LO
        p = ((((_E0 * r + _E1) * r + _E2) * r + _E3) * r + _E4) * r + _E5
        poly[i] = p * r * r + r + _F(1.0)
        ebits[i] = (np.int32(k) + np.int32(127)) << 23  # the float 2**k, as bits


@njit(**_JIT_EXP)
def _log_sigmoid_block(z, out, ebits, poly, n):
    """out[:n] = log σ(z[:n]) = min(z, 0) - log1p(exp(-|z|)), float32; ebits (int32) and poly
    (float32) are scratch of length >= n."""
    _exp_neg_abs_block(z, ebits, poly, n)
    scale = ebits.view(np.float32)
    for i in range(n):
        t = poly[i] * scale[i]                         # exp(-|z|) in (0, 1]
        s = t / (_F(2.0) + t)                          # log1p(t) = 2 atanh(s), s <= 1/3
        s2 = s * s
        l1p = s * (_A0 + s2 * (_A1 + s2 * (_A2 + s2 * (_A3 + s2 * (_A4 + s2 * (
            _A5 + s2 * (_A6 + s2 * _A7)))))))
        zi = z[i]
        out[i] = (zi if zi < _F(0.0) else _F(0.0)) - l1p


@njit(**_JIT_DOT)
def _dots(X, rows, r0, n, th, z):
    """z[j] = X[rows[r0 + j]] · th for j < n (rows: an int64 index array)."""
    d = X.shape[1]
    for j in range(n):
        i = rows[r0 + j]
        s = _F(0.0)
        for k in range(d):
            s += X[i, k] * th[k]
        z[j] = s


@njit(**_JIT_DOT)
def _dots2(X, rows, r0, n, th1, th2, z1, z2):
    """z1[j], z2[j] = X[rows[r0 + j]] · th1, · th2 for j < n (each row read once)."""
    d = X.shape[1]
    for j in range(n):
        i = rows[r0 + j]
        s1 = _F(0.0)
        s2 = _F(0.0)
        for k in range(d):
            x = X[i, k]
            s1 += x * th1[k]
            s2 += x * th2[k]
        z1[j] = s1
        z2[j] = s2


def column_tiles(X: np.ndarray, bsize: int = TILE) -> np.ndarray:
    """The rows of X (N, d) cut into K = ceil(N / bsize) blocks of ``bsize`` consecutive rows,
    each block stored as T = ceil(bsize / TILE) tiles of TILE = 32 rows (zero rows after the
    block's last row), a tile column by column: row j of tile t, column c is at
    ``(t Dp + c) TILE + j`` with Dp = :func:`tile_width` (d) (zero columns after d).  Block k is
    tiles [k T, (k + 1) T).  -> flat (K T Dp TILE,) float32, for :func:`_tile_dots`."""
    X = np.asarray(X, dtype=np.float32)
    N, d = X.shape
    K, T, Dp = -(-N // bsize), -(-bsize // TILE), tile_width(d)
    blocks = np.zeros((K * bsize, Dp), np.float32)
    blocks[:N, :d] = X
    tiles = np.zeros((K, T * TILE, Dp), np.float32)
    tiles[:, :bsize] = blocks.reshape(K, bsize, Dp)
    out = hugepages.empty((K * T, Dp, TILE), np.float32)    # read at random: fewer TLB misses
    out[...] = tiles.reshape(K * T, TILE, Dp).transpose(0, 2, 1)
    return out.reshape(-1)


def tile_width(d: int) -> int:
    """Columns of a tile of :func:`column_tiles`: d rounded up to a multiple of 4."""
    return -(-d // 4) * 4


@njit(**_JIT_TILE)
def _tile_dots(Xt, Dp, tiles, outs, nt, th, z):
    """z[outs[q] + j] = x_j · th for the TILE rows x_j of tile tiles[q], q < nt (Xt from
    :func:`column_tiles`, th (>= Dp,) float32 zero after d).  Each product is the chain of FMAs
    over the columns in order 0, 1, ..., Dp - 1 from 0, the same float32 arithmetic on any CPU
    with FMA whatever its vector width: the rows of a tile are the vector lanes, so no
    reduction is reassociated.  Four columns per pass over the listed tiles."""
    D = _U(Dp)
    n = _U(nt)
    for q in range(n):
        o = _U(outs[q])
        for j in range(_U(TILE)):
            z[o + j] = _F(0.0)
    for k in range(_U(0), D, _U(4)):
        t0, t1, t2, t3 = th[k], th[k + _U(1)], th[k + _U(2)], th[k + _U(3)]
        for q in range(n):
            r = (_U(tiles[q]) * D + k) * _U(TILE)
            o = _U(outs[q])
            for j in range(_U(TILE)):
                a = z[o + j]
                a += Xt[r + j] * t0
                a += Xt[r + _U(TILE) + j] * t1
                a += Xt[r + _U(2 * TILE) + j] * t2
                a += Xt[r + _U(3 * TILE) + j] * t3
                z[o + j] = a


@njit(**_JIT_TILE)
def _tile_dots2(Xt, Dp, tiles, outs, outs2, nt, th, ph, z, w):
    """:func:`_tile_dots` for two parameter vectors sharing each load of the data:
    z[outs[q] + j] = x_j · th and w[outs2[q] + j] = x_j · ph, the same arithmetic."""
    D = _U(Dp)
    n = _U(nt)
    for q in range(n):
        o = _U(outs[q])
        o2 = _U(outs2[q])
        for j in range(_U(TILE)):
            z[o + j] = _F(0.0)
            w[o2 + j] = _F(0.0)
    for k in range(_U(0), D, _U(4)):
        t0, t1, t2, t3 = th[k], th[k + _U(1)], th[k + _U(2)], th[k + _U(3)]
        p0, p1, p2, p3 = ph[k], ph[k + _U(1)], ph[k + _U(2)], ph[k + _U(3)]
        for q in range(n):
            r = (_U(tiles[q]) * D + k) * _U(TILE)
            o = _U(outs[q])
            o2 = _U(outs2[q])
            for j in range(_U(TILE)):
                x0 = Xt[r + j]
                x1 = Xt[r + _U(TILE) + j]
                x2 = Xt[r + _U(2 * TILE) + j]
                x3 = Xt[r + _U(3 * TILE) + j]
                a = z[o + j]
                a += x0 * t0
                a += x1 * t1
                a += x2 * t2
                a += x3 * t3
                z[o + j] = a
                b = w[o2 + j]
                b += x0 * p0
                b += x1 * p1
                b += x2 * p2
                b += x3 * p3
                w[o2 + j] = b


@njit(**_JIT_INLINE)
def _sum64(a, i0, n):
    """Σ_{t < n} a[i0 + t] in float64 by eight interleaved accumulators (terms t mod 8),
    combined pairwise: a fixed order, and the additions vectorise."""
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    i = _U(i0)
    e = i + _U(n) // _U(8) * _U(8)
    while i < e:
        s0 += a[i]
        s1 += a[i + _U(1)]
        s2 += a[i + _U(2)]
        s3 += a[i + _U(3)]
        s4 += a[i + _U(4)]
        s5 += a[i + _U(5)]
        s6 += a[i + _U(6)]
        s7 += a[i + _U(7)]
        i += _U(8)
    while i < _U(i0) + _U(n):
        s0 += a[i]
        i += _U(1)
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@njit(**_JIT)
def gaussian_log_prior_diff(a, b, precision):
    """log N(a; 0, I/λ) - log N(b; 0, I/λ) = -λ/2 (|a|² - |b|²) per row: a, b (C, d) float64,
    λ = precision -> (C,) float64 (the squares summed in column order).  One compiled call: an
    MH step's prior term cost 4.6 µs as two numpy log-priors."""
    C, d = a.shape
    out = np.empty(C)
    for c in range(C):
        sa = 0.0
        sb = 0.0
        for k in range(d):
            sa += a[c, k] * a[c, k]
            sb += b[c, k] * b[c, k]
        out[c] = -0.5 * precision * (sa - sb)
    return out


@njit(**_JIT)
def _pad32(theta, W):
    """(C, w) float32 or float64 -> (C, W) float32: the first min(w, W) columns rounded to float32
    (as ``astype``), zeros after.  The kernels take θ as the samplers hold it and pad it here (in
    Python the copy cost ~1 µs per call, a tenth of a block test that stops early)."""
    C, w = theta.shape
    out = np.zeros((C, W), np.float32)
    for c in range(C):
        for k in range(min(w, W)):
            out[c, k] = np.float32(theta[c, k])
    return out


@njit(**_JIT)
def loglik_sums(Xt, Dp, N, theta):
    """Full-data log-likelihoods Σ_i log σ(x_i · θ_c), accumulated in float64.

    Xt the N signed rows as :func:`column_tiles` (blocks of one tile), Dp its tile width;
    theta (C, d) (float64 or float32; zero-padded widths >= d accepted) -> (C,) float64.  Each
    chunk of tiles is read from memory once for all chains; the products are
    :func:`_tile_dots` at θ rounded to float32, the arithmetic of the sequential tests' products
    row for row."""
    theta = _pad32(theta, Dp)
    C = theta.shape[0]
    nt_all = -(-N // TILE)
    ch = _CHUNK // TILE
    out = np.zeros(C)
    tiles = np.arange(nt_all)
    outs = np.arange(ch) * TILE
    z = np.empty(_CHUNK, np.float32)
    ll = np.empty(_CHUNK, np.float32)
    eb = np.empty(_CHUNK, np.int32)
    pb = np.empty(_CHUNK, np.float32)
    for t0 in range(0, nt_all, ch):
        nt = min(ch, nt_all - t0)
        rows = min(nt * TILE, N - t0 * TILE)
        chunk = tiles[t0:]
        for c in range(C):
            _tile_dots(Xt, Dp, chunk, outs, nt, theta[c], z)
            _log_sigmoid_block(z, ll, eb, pb, rows)
            out[c] += _sum64(ll, 0, rows)
    return out


@njit(**_JIT)
def loglik_rows(Xt, Dp, N, theta):
    """Per-row log σ(x_i · θ_c) of all N rows, Xt, Dp, theta as :func:`loglik_sums` ->
    (C, N) float32: bit for bit the terms :func:`loglik_sums` adds up."""
    theta = _pad32(theta, Dp)
    C = theta.shape[0]
    nt_all = -(-N // TILE)
    out = np.empty((C, nt_all * TILE), np.float32)
    tiles = np.arange(nt_all)
    outs = np.arange(nt_all) * TILE
    eb = np.empty(nt_all * TILE, np.int32)
    pb = np.empty(nt_all * TILE, np.float32)
    z = np.empty(nt_all * TILE, np.float32)
    for c in range(C):
        _tile_dots(Xt, Dp, tiles, outs, nt_all, theta[c], z)
        _log_sigmoid_block(z, out[c], eb, pb, nt_all * TILE)
    return out[:, :N]


@njit(**_JIT)
def log_sigmoid(z):
    """log σ(z) for a float32 array (any length), the routine every sampler uses."""
    n = z.size
    flat = z.ravel()
    out = np.empty(n, np.float32)
    eb = np.empty(n, np.int32)
    pb = np.empty(n, np.float32)
    _log_sigmoid_block(flat, out, eb, pb, n)
    return out.reshape(z.shape)


@njit(**_JIT)
def _check_rows(idx, N):
    """Raise IndexError unless every entry of idx (C, n) is a row index in [0, N) (the gathers
    below read without bounds checks)."""
    C, n = idx.shape
    for c in range(C):
        for j in range(n):
            if idx[c, j] < 0 or idx[c, j] >= N:
                raise IndexError("row index out of range [0, N)")


@njit(**_JIT)
def loglik_gather(Xs, theta, idx):
    """Per-datum log σ(Xs_i · θ_c) at per-chain indices: Xs (N, W) as :func:`padded_rows`,
    theta (C, d) (rounded to float32 and zero-padded to W here), idx (C, n) int64 in [0, N)
    (else IndexError) -> (C, n) float32."""
    _check_rows(idx, Xs.shape[0])
    theta = _pad32(theta, Xs.shape[1])
    C, n = idx.shape
    out = np.empty((C, n), np.float32)
    z = np.empty(_CHUNK, np.float32)
    eb = np.empty(_CHUNK, np.int32)
    pb = np.empty(_CHUNK, np.float32)
    for c in range(C):
        row = idx[c]
        for j0 in range(0, n, _CHUNK):
            b = min(_CHUNK, n - j0)
            _dots(Xs, row, j0, b, theta[c], z)
            _log_sigmoid_block(z, out[c, j0:], eb, pb, b)
    return out


@njit(**_JIT_EXP)
def _sigmoid_neg_block(z, out, ebits, poly, n):
    """out[:n] = σ(-z[:n]) = 1 / (1 + exp(z)), float32, from exp(-|z|) (no overflow):
    t / (1 + t) for z >= 0, 1 / (1 + t) for z < 0; ebits, poly scratch as
    :func:`_log_sigmoid_block`."""
    _exp_neg_abs_block(z, ebits, poly, n)
    scale = ebits.view(np.float32)
    for i in range(n):
        t = poly[i] * scale[i]                         # exp(-|z|) in [0, 1]
        out[i] = (t if z[i] >= _F(0.0) else _F(1.0)) / (_F(1.0) + t)


@njit(**_JIT_DOT)
def grad_loglik_gather(Xs, theta, idx):
    """Σ_j σ(-Xs_i·θ_c) Xs_i over the rows i = idx[c, j] of each chain c: the gradient of
    Σ_i log σ(Xs_i·θ_c) (d log σ(z)/dz = σ(-z)) on a minibatch of signed rows.

    Xs (N, W) as :func:`padded_rows`; theta (C, d) (rounded to float32, zero-padded to W);
    idx (C, n) int64 in [0, N) (else IndexError) -> (C, W) float64: float32 products
    (:func:`_dots`, the per-point test's) and weights, each weighted row added in float64.
    Columns d..W-1 are zero."""
    _check_rows(idx, Xs.shape[0])
    theta = _pad32(theta, Xs.shape[1])
    C, n = idx.shape
    W = Xs.shape[1]
    out = np.zeros((C, W))
    z = np.empty(_CHUNK, np.float32)
    w = np.empty(_CHUNK, np.float32)
    eb = np.empty(_CHUNK, np.int32)
    pb = np.empty(_CHUNK, np.float32)
    for c in range(C):
        row = idx[c]
        g = out[c]
        for j0 in range(0, n, _CHUNK):
            b = min(_CHUNK, n - j0)
            _dots(Xs, row, j0, b, theta[c], z)
            _sigmoid_neg_block(z, w, eb, pb, b)
            for j in range(b):
                wj = np.float64(w[j])
                i = row[j0 + j]
                for k in range(W):
                    g[k] += wj * np.float64(Xs[i, k])
    return out


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
    positions not fixed yet; the swap partners go to swaps[j0:j1].  Returns the RNG state."""
    N = perm.size
    for j in range(j0, j1):
        state, r = _below(state, N - j)
        r += j
        swaps[j] = r
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
        _shuffle_next(_chain_state(seed, c), perm, swaps, 0, b)
        out[c, :] = perm[:b]
        _unshuffle(perm, swaps, b)
    return out


@njit(**_JIT)
def _look(lv, b, n, total, m2, mu0, N, tcrit2):
    """Fold one minibatch lv[:b] into the running moments of a sequential test that has seen n
    values (sum ``total``, squared deviations ``m2``) and look: the rule of
    :func:`mixlab.austerity.seqtest.sequential_test_batch`, same arithmetic (pooled moments, the
    exact decision ``mean > mu0`` at n = N, stop when ``(mean - mu0)^2 > tcrit2 s^2``).

    Returns (n, total, m2, mean, decided, accept, s)."""
    bsum = 0.0
    for j in range(b):
        bsum += lv[j]
    bmean = bsum / b
    bm2 = 0.0
    for j in range(b):
        dv = lv[j] - bmean
        bm2 += dv * dv
    if n:
        dmu = bmean - total / n
        m2 += bm2 + dmu * dmu * (n * b / (n + b))
    else:
        m2 += bm2
    total += bsum
    n += b
    mean = total / n
    dd = mean - mu0
    if n == N:
        return n, total, m2, mean, True, dd > 0, 0.0
    if n >= 2:
        s2 = max(m2 / (n - 1), 0.0) / n * (1.0 - (n - 1) / (N - 1))
        if dd * dd > tcrit2 * s2:
            return n, total, m2, mean, True, dd > 0, np.sqrt(s2)
    return n, total, m2, mean, False, False, 0.0


@njit(**_JIT)
def _unshuffle(perm, swaps, n):
    """Undo the first n swaps of :func:`_shuffle_next` (perm back to what it was)."""
    for j in range(n - 1, -1, -1):
        r = swaps[j]
        t = perm[j]
        perm[j] = perm[r]
        perm[r] = t


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
        n = 0
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


@njit(**_JIT)
def _cache_version(cache_theta, version, c, th):
    """The cache version of chain c at state th: a new one (the cache emptied) unless the cache
    was filled at th (cache_theta[c] == th)."""
    for k in range(th.size):
        if cache_theta[c, k] != th[k]:
            version[c] += 1
            cache_theta[c, :] = th
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
    nh = 0
    nm = 0
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
        n = 0
        rows = 0
        k = 0
        while True:
            bb = min(mb, K - n)
            state = _shuffle_next(state, perm, swaps, n, n + bb)   # the next minibatch
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
            cache_theta[c, :] = tn
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
    n = 0
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
            cache_theta[c, :] = th_new[c]
            _cache_accepted(perm, nblk[c], bufs[c][4], cache[c], stamp[c], ver[c] + 1)
    _unshuffle(perm, swaps, n)
    return accept


# ------------------------------------------------------------------------------------------------
# dense triplet MRF (mrf.py): exact Gibbs by pair-table lookup and approximate Gibbs (paper §5)

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
            n = 0
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
            n = 0
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
