"""One look of the sequential test: fold a minibatch into the running moments and decide."""

from __future__ import annotations

import numpy as np
from numba import njit

from .jit import _JIT

__all__: list[str] = []


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
