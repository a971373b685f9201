"""Compiled random-walk MH steps: one numba call per step for C logistic-regression chains.

:meth:`mixlab.austerity.samplers.RandomWalkMH.step` draws the step's random numbers with numpy
(the proposal noise z (C, d), then u (C,), then the seed of the minibatch orders, the order every
test consumes them in) and hands the rest of the step to one of these kernels: the proposal
θ' = θ + σ z, the prior term, the threshold μ0 = (log u - log p(θ') + log p(θ)) / N, the
decision (the exact full-data test or a sequential test of :mod:`.kernels`), the kept state.
In Python those were a dozen numpy calls, ≈10 µs of a 50-60 µs step on the paper's problem,
paid alike by the exact and the approximate sampler.  Every operation is the one numpy did, in
the same order and precision (no fast-math), so a compiled step is the uncompiled step bit for
bit (tests/austerity/test_rwmh_steps.py); log u stays numpy's (its ``log`` may differ from
libm's in the last bit).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..compiled.numba_cache import CACHE
from .kernels import (
    gaussian_log_prior_diff,
    loglik_sums,
    seqtest_logistic,
    seqtest_logistic_blocks,
    seqtest_logistic_blocks_shared,
)

__all__ = ["rwmh_step_blocks", "rwmh_step_exact", "rwmh_step_points"]

_JIT = {"cache": CACHE, "nogil": True, "boundscheck": False, "error_model": "numpy"}


@njit(**_JIT)
def _propose(theta, z, sigma, log_u, precision, N):
    """θ' = θ + σ z (C, d) and μ0 = (log u - (log p(θ') - log p(θ))) / N (C,), as numpy's
    ``theta + sigma * z`` and ``(np.log(u) - extra) / N`` (the random walk is symmetric: no
    proposal term)."""
    C, d = theta.shape
    prop = np.empty((C, d))
    for c in range(C):
        for k in range(d):
            prop[c, k] = theta[c, k] + sigma * z[c, k]
    extra = gaussian_log_prior_diff(prop, theta, precision)
    mu0 = np.empty(C)
    for c in range(C):
        mu0[c] = (log_u[c] - extra[c]) / N
    return prop, mu0


@njit(**_JIT)
def _keep(accept, prop, theta):
    """(C, d) θ' where accepted, θ elsewhere (``np.where(accept[:, None], prop, theta)``)."""
    C, d = theta.shape
    out = np.empty((C, d))
    for c in range(C):
        src = prop if accept[c] else theta
        for k in range(d):
            out[c, k] = src[c, k]
    return out


@njit(**_JIT)
def rwmh_step_exact(Xt, Dp, N, theta, z, sigma, log_u, precision, ll):
    """One RW-MH step with the exact test: accept iff (ℓ(θ') - ℓ(θ)) / N > μ0, ℓ the full-data
    log-likelihood (:func:`.kernels.loglik_sums` on the tiles Xt of width Dp).

    theta, z (C, d) float64; log_u, ll (C,) float64 (ll = ℓ(θ)) -> (θ kept (C, d), accept (C,)
    bool, data used (C,) = 1, ℓ at the kept state (C,))."""
    prop, mu0 = _propose(theta, z, sigma, log_u, precision, N)
    ll_prop = loglik_sums(Xt, Dp, N, prop)
    C = theta.shape[0]
    accept = np.empty(C, np.bool_)
    ll_new = np.empty(C)
    for c in range(C):
        accept[c] = (ll_prop[c] - ll[c]) / N > mu0[c]
        ll_new[c] = ll_prop[c] if accept[c] else ll[c]
    return _keep(accept, prop, theta), accept, np.ones(C), ll_new


@njit(**_JIT)
def _outputs(C):
    """The sequential kernels' outputs for C chains: accept, n_used, mean, se."""
    return np.empty(C, np.bool_), np.empty(C, np.int64), np.empty(C), np.empty(C)


@njit(**_JIT)
def _sequential_result(accept, n_used, N, prop, theta):
    """(θ kept, accept, data used n_used / N, ℓ not computed: NaN) of a sequential step."""
    C = theta.shape[0]
    used = np.empty(C)
    for c in range(C):
        used[c] = n_used[c] / N
    return _keep(accept, prop, theta), accept, used, np.full(C, np.nan)


@njit(**_JIT)
def rwmh_step_points(Xs, N, theta, z, sigma, log_u, precision, seed, m, tcrit2, perm, swaps):
    """One RW-MH step with the paper's per-point sequential test
    (:func:`.kernels.seqtest_logistic`: Xs the padded rows, minibatches of m points).
    theta, z (C, d) float64; log_u (C,) -> (θ kept (C, d), accept (C,) bool, data used (C,) =
    points read / N, NaN (C,): the full-data log-likelihood, not computed)."""
    prop, mu0 = _propose(theta, z, sigma, log_u, precision, N)
    accept, n_used, mean, se = _outputs(theta.shape[0])
    seqtest_logistic(Xs, prop, theta, mu0, m, tcrit2, seed, accept, n_used, mean, se, perm,
                     swaps)
    return _sequential_result(accept, n_used, N, prop, theta)


@njit(**_JIT)
def rwmh_step_blocks(shared, Xt, Dp, N, bsize, theta, z, sigma, log_u, precision, seed, mb,
                     tcrit2, perm, swaps, cache, stamp, version, cache_theta):
    """One RW-MH step with the block test (:func:`.kernels.seqtest_logistic_blocks`, or
    ``seqtest_logistic_blocks_shared`` when ``shared``: one block order for all chains); the
    other arguments as those kernels take them.  -> as :func:`rwmh_step_points`."""
    prop, mu0 = _propose(theta, z, sigma, log_u, precision, N)
    accept, n_used, mean, se = _outputs(theta.shape[0])
    if shared:
        seqtest_logistic_blocks_shared(Xt, Dp, N, bsize, prop, theta, mu0, mb, tcrit2, seed,
                                       accept, n_used, mean, se, perm, swaps, cache, stamp,
                                       version, cache_theta)
    else:
        seqtest_logistic_blocks(Xt, Dp, N, bsize, prop, theta, mu0, mb, tcrit2, seed, accept,
                                n_used, mean, se, perm, swaps, cache, stamp, version,
                                cache_theta)
    return _sequential_result(accept, n_used, N, prop, theta)
