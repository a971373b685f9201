"""Compiled (numba) inner loop of the exact log Z (mixlab.rbm.partition): for a block of
configurations of the summed layer, ``Σ_j log(1 + e^(low_rj + high_j))`` for every row r,
computed as ``Σ_groups log Π_(j in group) (1 + e^low_rj · e^high_j)`` with the table of
``e^low`` precomputed once per log Z and one vector ``e^high`` per block.

Rows are the vector lanes: the table is stored transposed, ``(V, R)``, and a tile of ``_TILE``
rows keeps its running products and sums in L1 while it walks the V factors, so one pass over
the table does the whole block with one log per GROUP factors.  numpy's version of the same
products made several passes over (R, V) temporaries of 32 MB and was memory-bound: a 256 x 20
RBM's log Z took 3.2 s with it and 0.7-0.8 s with this loop.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..compiled.numba_cache import CACHE
from ..numerics import softplus

__all__ = ["GROUP", "PRODUCT_MAX_ACT", "log_product_sums", "softplus_row_sums"]

GROUP = 16           # factors per product: (1 + e^40)^16 < e^641, below float64's e^709
_TILE = 256          # rows whose products and sums stay in L1 while the factors are walked
#: pre-activations up to this size take the product form (a product of GROUP factors 1 + e^40
#: stays below float64's largest number, e^709)
PRODUCT_MAX_ACT = 40.0


@njit(cache=CACHE, nogil=True, boundscheck=False, error_model="numpy")
def log_product_sums(low_exp_t, high_exp, out):
    """out[r] = Σ_g log Π_(j in group g) (1 + low_exp_t[j, r] · high_exp[j]) for r < R.

    low_exp_t (V, R) float64 C-contiguous: e^low, one column per row of the block; high_exp
    (V,) float64: e^high; out (R,) float64.  Groups are GROUP consecutive j (the last may be
    shorter); each factor is rounded as numpy's ``1.0 + low · high``.  The caller keeps every
    pre-activation low + high at most 40 so that no product overflows."""
    V, R = low_exp_t.shape
    prod = np.empty(_TILE)
    acc = np.empty(_TILE)
    for r0 in range(0, R, _TILE):
        n = min(_TILE, R - r0)
        for i in range(n):
            acc[i] = 0.0
        for g0 in range(0, V, GROUP):
            for i in range(n):
                prod[i] = 1.0
            for j in range(g0, min(g0 + GROUP, V)):
                h = high_exp[j]
                row = low_exp_t[j]
                for i in range(n):
                    prod[i] *= 1.0 + row[r0 + i] * h
            for i in range(n):
                acc[i] += np.log(prod[i])
        for i in range(n):
            out[r0 + i] = acc[i]


def softplus_row_sums(a: np.ndarray) -> np.ndarray:
    """``Σ_j softplus(a_ij)`` for ``a (rows, V)`` float64 C-contiguous, which it overwrites:
    ``(rows,)``.

    As ``Σ_j log(1 + e^a_ij) = Σ_groups log Π_j (1 + e^a_ij)`` (:func:`log_product_sums`):
    one exp per entry and one log per GROUP, with rounding at float64's level. A block with an
    entry above :data:`PRODUCT_MAX_ACT` takes :func:`mixlab.numerics.softplus` instead."""
    if a.size == 0 or a.max() > PRODUCT_MAX_ACT:
        return softplus(a).sum(axis=1)
    np.exp(a, out=a)
    out = np.empty(a.shape[0])
    log_product_sums(np.ascontiguousarray(a.T), np.ones(a.shape[1]), out)
    return out
