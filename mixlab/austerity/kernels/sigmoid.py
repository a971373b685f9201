"""Vectorisable float32 log σ(z) and σ(-z): ``exp`` by Cody-Waite range reduction and the
Cephes ``expf`` polynomial, ``log1p(t) = 2 atanh(t / (2 + t))`` by its odd series (t ∈ [0, 1], so
the series argument is at most 1/3); within 4 ulp of the correctly rounded value wherever
|log σ(z)| > 1e-30 (tests/austerity/test_kernels.py).  Every sampler's log σ goes through
:func:`_log_sigmoid_block`."""

from __future__ import annotations

import numpy as np
from numba import njit

from .jit import _F, _JIT, _JIT_EXP

__all__ = ["log_sigmoid"]

_LOG2E = _F(1.44269504088896341)
_MAGIC = _F(12582912.0)            # 1.5 * 2**23: x + MAGIC - MAGIC rounds x to an integer
_LN2_HI, _LN2_LO = _F(0.693359375), _F(-2.12194440e-4)
_E0, _E1, _E2 = _F(1.9875691500e-4), _F(1.3981999507e-3), _F(8.3334519073e-3)
_E3, _E4, _E5 = _F(4.1665795894e-2), _F(1.6666665459e-1), _F(5.0000001201e-1)
_A0, _A1, _A2, _A3 = (_F(2.0 / (2 * k + 1)) for k in range(4))
_A4, _A5, _A6, _A7 = (_F(2.0 / (2 * k + 1)) for k in range(4, 8))
_XMIN = _F(-88.0)                  # exp(-88) ~ 6e-39 < FLT_MIN: below it log σ(z) = min(z, 0)


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


@njit(**_JIT_EXP)
def sigmoid_row_sums(z, B, out):
    """out[c] += Σ_{b < B} σ(z[c B + b]) for each c: z (C B, M) float32 C-contiguous, the B rows
    of group c consecutive (draws of chain c); out (C, M) float64, each σ (float32, from
    exp(-|z|) as :func:`_sigmoid_neg_block`) added in float64 in row order.  One pass over z,
    no temporaries: the predictive mean's running sums (mixlab.austerity.evaluators)."""
    R, M = z.shape
    eb = np.empty(M, np.int32)
    pb = np.empty(M, np.float32)
    for r in range(R):
        row = z[r]
        acc = out[r // B]
        _exp_neg_abs_block(row, eb, pb, M)
        scale = eb.view(np.float32)
        for i in range(M):
            t = pb[i] * scale[i]                       # exp(-|z|) in [0, 1]
            acc[i] += np.float64((_F(1.0) if row[i] >= _F(0.0) else t) / (_F(1.0) + t))
