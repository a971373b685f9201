"""Data layouts and products x_i · θ: row-major padded rows read at random
(:func:`padded_rows`, :func:`_dots`) and column tiles whose rows are the SIMD lanes
(:func:`column_tiles`, :func:`_tile_dots`: the same float32 FMA chain over the columns on any CPU
with FMA whatever its vector width).  Also the fixed-order float64 sum :func:`_sum64` and the
θ padding :func:`_pad32` every kernel applies."""

from __future__ import annotations

import numpy as np
from numba import njit

from . import hugepages
from .jit import _F, _JIT, _JIT_DOT, _JIT_INLINE, _JIT_TILE, _U, TILE
from .prefetch import prefetch

_AHEAD_ROWS = 8        # rows between a row's prefetch and its use (x 4 lines of 64 columns)

__all__ = ["column_tiles", "padded_rows", "tile_width"]


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
    """z1[j], z2[j] = X[rows[r0 + j]] · th1, · th2 for j < n (each row read once).  The row
    ``_AHEAD_ROWS`` rows on is prefetched while this one is computed (rows read at random are
    cache misses: several in flight instead of one after the other); the products are the same."""
    d = X.shape[1]
    flat = X.reshape(X.size)
    for j in range(min(_AHEAD_ROWS, n)):
        _prefetch_row(flat, rows[r0 + j] * d, d)
    for j in range(n):
        if j + _AHEAD_ROWS < n:
            _prefetch_row(flat, rows[r0 + j + _AHEAD_ROWS] * d, d)
        i = rows[r0 + j]
        s1 = _F(0.0)
        s2 = _F(0.0)
        for k in range(d):
            x = X[i, k]
            s1 += x * th1[k]
            s2 += x * th2[k]
        z1[j] = s1
        z2[j] = s2


@njit(**_JIT_INLINE)
def _prefetch_row(flat, start, d):
    """Prefetch the d float32 at flat[start:start + d], one request per 64-byte line."""
    for o in range(0, d, 16):
        prefetch(flat, start + o)


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
    reduction is reassociated.  Tile by tile (a tile's Dp TILE floats are contiguous: one
    linear read), four columns per pass over the tile's lanes."""
    D = _U(Dp)
    n = _U(nt)
    for q in range(n):
        o = _U(outs[q])
        base = _U(tiles[q]) * D
        for j in range(_U(TILE)):
            z[o + j] = _F(0.0)
        for k in range(_U(0), D, _U(4)):
            t0, t1, t2, t3 = th[k], th[k + _U(1)], th[k + _U(2)], th[k + _U(3)]
            r = (base + k) * _U(TILE)
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
        base = _U(tiles[q]) * D
        for j in range(_U(TILE)):
            z[o + j] = _F(0.0)
            w[o2 + j] = _F(0.0)
        for k in range(_U(0), D, _U(4)):
            t0, t1, t2, t3 = th[k], th[k + _U(1)], th[k + _U(2)], th[k + _U(3)]
            p0, p1, p2, p3 = ph[k], ph[k + _U(1)], ph[k + _U(2)], ph[k + _U(3)]
            r = (base + k) * _U(TILE)
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
