"""Bayesian logistic regression with an isotropic Gaussian prior.

Model: labels ``y_i ∈ {0, 1}``, signs ``s_i = 2 y_i - 1``, features ``x_i`` (d,),
``p(y_i | x_i, θ) = σ(s_i x_i·θ)``, prior ``θ ~ N(0, I / precision)`` (default precision 10, as
the paper).  With ``bias=True`` a constant feature 1 is appended as the *last* column, so the
intercept is the last coordinate of θ and it is penalised by the same prior as the weights
(one isotropic Gaussian over all of θ).

Shapes: ``X`` (N, d) float32 (C-contiguous), ``theta`` (C, d) for C chains (float64 states; the
data products run in float32 and sums of log-likelihoods are accumulated in float64).  The
log-likelihoods come from the compiled routines of :mod:`.kernels`; gradients and predictions
use BLAS.
"""

from __future__ import annotations

import numpy as np

from ..numerics import softplus
from .kernels import (
    column_tiles,
    gaussian_log_prior_diff,
    grad_loglik_gather,
    loglik_gather,
    loglik_rows,
    loglik_sums,
    padded_rows,
    tile_width,
)

__all__ = ["LogisticPosterior", "add_bias", "map_estimate", "neg_hessian", "softplus"]


_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))


def add_bias(X: np.ndarray) -> np.ndarray:
    """Append a constant-1 column: (N, d) -> (N, d + 1) float32 C-contiguous."""
    X = np.asarray(X, dtype=np.float32)
    return np.ascontiguousarray(np.hstack([X, np.ones((X.shape[0], 1), np.float32)]))


def _per_chain(idx: np.ndarray, chains: int) -> np.ndarray:
    """Shared row indices (n,) int64 as the gather kernels take them: (chains, n), C-contiguous
    and writable, so that one compiled specialisation serves every call (a broadcast view is
    read-only); one chain's is a view, more chains' a copy."""
    if chains == 1 and idx.flags.c_contiguous and idx.flags.writeable:
        return idx.reshape(1, -1)
    return np.ascontiguousarray(np.broadcast_to(idx, (chains, idx.size)))


class LogisticPosterior:
    """Posterior of logistic regression; holds the (float32) data and the prior precision.

    Parameters
    ----------
    X : (N, d0) features; y : (N,) labels in {0, 1}; precision : prior precision λ;
    bias : append a constant feature (then d = d0 + 1, intercept last and penalised).
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, precision: float = 10.0, bias: bool = True):
        y = np.asarray(y)
        if not np.isin(y, (0, 1)).all():
            raise ValueError("labels must be 0/1")
        self.X = add_bias(X) if bias else np.ascontiguousarray(X, dtype=np.float32)
        self.s = (2.0 * y - 1.0).astype(np.float32)        # (N,) ±1
        # signed rows s_i x_i, zero-padded to a multiple of 16 columns on 64-byte aligned rows
        # for the compiled products (a row is then whole SIMD vectors); Xs is the (N, d) view
        self.Xk = padded_rows(self.X * self.s[:, None])
        self.Xs = self.Xk[:, :self.X.shape[1]]
        # the same rows as column tiles (kernels.column_tiles) for the full-data pass: products
        # vectorised across rows, the arithmetic of the block test's products
        self.Xt = column_tiles(self.Xs)
        self.tile_width = tile_width(self.X.shape[1])
        self.precision = float(precision)
        self.bias = bool(bias)
        self.N, self.d = self.X.shape
        # first calls of the compiled kernels load (or compile) them: do it here, not inside a
        # sampler's wall-clock budget
        zero = np.zeros((1, self.d))
        self.loglik(zero)
        self.loglik_terms(zero, np.zeros((1, 1), np.int64))
        self.grad_loglik(zero, np.zeros((1, 1), np.int64))
        self.log_prior_diff(zero, zero)

    # ----- prior -------------------------------------------------------------------------
    def log_prior(self, theta: np.ndarray) -> np.ndarray:
        """(..., d) -> (...): log N(θ; 0, I/λ) up to the constant."""
        theta = np.asarray(theta, dtype=np.float64)
        sq = theta * theta
        return -0.5 * self.precision * sq.sum(axis=-1)   # the method: np.sum's reduction, less overhead

    def log_prior_diff(self, theta_new: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """(C, d), (C, d) -> (C,) log p(θ') - log p(θ), one compiled call (the MH samplers' prior
        term; equal to ``log_prior(θ') - log_prior(θ)`` up to rounding)."""
        a = self.theta_2d(theta_new).astype(np.float64, copy=False)
        b = self.theta_2d(theta).astype(np.float64, copy=False)
        if a.shape != b.shape:                         # one side a single θ: broadcast it
            a, b = (np.ascontiguousarray(x) for x in np.broadcast_arrays(a, b))
        return gaussian_log_prior_diff(a, b, self.precision)

    def grad_log_prior(self, theta: np.ndarray) -> np.ndarray:
        """(..., d) -> (..., d)."""
        return -self.precision * np.asarray(theta, dtype=np.float64)

    # ----- likelihood --------------------------------------------------------------------
    def logits(self, theta: np.ndarray) -> np.ndarray:
        """(C, d) -> (C, N) signed logits ``s_i x_i·θ_c`` over all data (one GEMM/GEMV)."""
        th = np.asarray(theta, dtype=np.float32)
        return (self.Xs @ th.T).T

    def loglik_terms(self, theta: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        """Per-datum log-likelihoods ``log σ(s_i x_i·θ_c)`` (float32, computed by the compiled
        routines the samplers share, :mod:`mixlab.austerity.kernels`).

        theta (C, d); idx None (all N data) -> (C, N): the full-data pass's terms (column tiles,
        bit for bit those of :meth:`loglik` and of the block test); idx (n,) shared -> (C, n),
        or idx (C, n) per chain -> (C, n): rows gathered, the per-point test's products (they
        may differ from the column tiles' in the last bit)."""
        th = self.theta_2d(theta)                      # the kernels round and pad it
        if idx is None:
            return loglik_rows(self.Xt, self.tile_width, self.N, th)
        idx = np.asarray(idx, dtype=np.int64)
        idx = _per_chain(idx, th.shape[0]) if idx.ndim == 1 else np.ascontiguousarray(idx)
        return loglik_gather(self.Xk, th, idx)

    def loglik(self, theta: np.ndarray) -> np.ndarray:
        """(C, d) -> (C,) full-data log-likelihood, the float32 terms summed in float64 (one
        compiled pass over the data for all chains)."""
        return loglik_sums(self.Xt, self.tile_width, self.N, self.theta_2d(theta))

    def log_posterior(self, theta: np.ndarray) -> np.ndarray:
        """(C, d) -> (C,) unnormalised log posterior."""
        theta = np.atleast_2d(theta)
        return self.loglik(theta) + self.log_prior(theta)

    def lldiff(self, theta_new: np.ndarray, theta_old: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Log-likelihood differences ``l_i = log p(x_i|θ'_c) - log p(x_i|θ_c)`` at per-chain
        indices: theta_new, theta_old (k, d), idx (k, b) -> (k, b) float32."""
        return self.loglik_terms(theta_new, idx) - self.loglik_terms(theta_old, idx)

    def theta_2d(self, theta: np.ndarray) -> np.ndarray:
        """θ as the kernels take it (they round to float32 and pad): writable C-contiguous
        (C, d) float64 or float32 arrays pass as they are (no copy: one compiled specialisation,
        none compiled mid-run); (d,) becomes (1, d); anything else is checked and copied."""
        if type(theta) is np.ndarray and theta.ndim == 2 and theta.shape[1] == self.d \
                and theta.dtype in _FLOATS:
            flags = theta.flags
            if flags.c_contiguous and flags.writeable:
                return theta
        theta = np.asarray(theta)
        if theta.ndim < 2:                             # np.atleast_2d, without its overhead
            theta = theta.reshape(1, -1)
        if theta.ndim != 2 or theta.shape[1] != self.d:
            raise ValueError(f"theta must be (C, {self.d}), got shape {theta.shape}")
        return np.array(theta, dtype=np.float64, order="C")

    # ----- gradients ---------------------------------------------------------------------
    def grad_loglik(self, theta: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        """Gradient of the log-likelihood, (C, d) -> (C, d) float64.

        idx None: the full-data gradient ``Σ_i s_i σ(-s_i z_i) x_i``.  idx (n,) shared or
        (C, n) per chain: the minibatch estimate scaled by N/n."""
        if idx is None:
            z = self.logits(np.atleast_2d(theta))               # (C, N)
            w = self.s * _sigmoid(-z)                           # (C, N)
            return (w @ self.X).astype(np.float64)
        th = self.theta_2d(theta)                               # the kernel rounds and pads it
        idx = np.asarray(idx, dtype=np.int64)
        n = idx.shape[-1]
        idx = _per_chain(idx, th.shape[0]) if idx.ndim == 1 else np.ascontiguousarray(idx)
        # one compiled pass over the rows gathered (SGLD's minibatches, 8 chains x 500 rows of
        # KDD99: 0.17 ms against 0.29 ms for numpy's gather, batched products and logistic)
        g = grad_loglik_gather(self.Xk, th, idx)
        return g[:, :self.d] * (self.N / n)

    def grad_log_posterior(self, theta: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        """(C, d) -> (C, d): grad_loglik (full or N/n-scaled minibatch) + grad of the prior."""
        theta = np.atleast_2d(theta)
        return self.grad_loglik(theta, idx) + self.grad_log_prior(theta)

    # ----- prediction --------------------------------------------------------------------
    def predict_proba(self, theta: np.ndarray, X_test: np.ndarray) -> np.ndarray:
        """P(y = 1 | x*, θ_c): theta (C, d), X_test (M, d0) raw features -> (C, M) float64."""
        Xt = add_bias(X_test) if self.bias else np.asarray(X_test, dtype=np.float32)
        z = Xt.astype(np.float64) @ np.atleast_2d(theta).astype(np.float64).T
        return _sigmoid(z.T)


def _sigmoid(a: np.ndarray) -> np.ndarray:
    """Stable logistic function, same dtype as ``a``."""
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(a.dtype, copy=False)


def map_estimate(post: LogisticPosterior, theta0: np.ndarray | None = None,
                 tol: float = 1e-10) -> np.ndarray:
    """The posterior mode (d,) by L-BFGS on the full-data log posterior (float64 products)."""
    from scipy.optimize import minimize

    X = post.X.astype(np.float64)
    s = post.s.astype(np.float64)

    def f(th):
        z = s * (X @ th)
        val = np.sum(np.logaddexp(0.0, -z)) + 0.5 * post.precision * th @ th
        grad = -(s * _sigmoid(-z)) @ X + post.precision * th
        return val, grad

    x0 = np.zeros(post.d) if theta0 is None else np.asarray(theta0, dtype=np.float64)
    res = minimize(f, x0, jac=True, method="L-BFGS-B", options={"maxiter": 10_000,
                                                                 "gtol": tol, "ftol": 1e-15})
    return res.x


def neg_hessian(post: LogisticPosterior, theta: np.ndarray) -> np.ndarray:
    """-∇² log p(θ | data) at θ (d,): X' diag(σ(z)(1-σ(z))) X + λ I, (d, d) float64."""
    X = post.X.astype(np.float64)
    z = X @ np.asarray(theta, dtype=np.float64)
    w = _sigmoid(z) * _sigmoid(-z)
    return (X * w[:, None]).T @ X + post.precision * np.eye(post.d)
