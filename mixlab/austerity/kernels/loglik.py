"""Log-likelihoods of logistic regression and their gradients: the full-data pass over column
tiles (:func:`loglik_sums`, :func:`loglik_rows`), gathers at given rows (:func:`loglik_gather`,
:func:`grad_loglik_gather`) and the Gaussian prior term of an MH ratio."""

from __future__ import annotations

import numpy as np
from numba import njit

from .jit import _CHUNK, _JIT, _JIT_DOT, TILE
from .products import _dots, _pad32, _sum64, _tile_dots
from .sigmoid import _log_sigmoid_block, _sigmoid_neg_block

__all__ = ["gaussian_log_prior_diff", "grad_loglik_gather", "loglik_gather", "loglik_rows",
           "loglik_sums"]


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
