"""Hamiltonian Monte Carlo (leapfrog, full-data gradients), vectorised over chains.

Used for ground truths.  The target is given by ``logp_grad(theta (C, d)) -> (logp (C,),
grad (C, d))``.  An optional constant mass matrix M (d, d) (e.g. the Laplace precision at the
mode) makes a badly scaled posterior isotropic: momenta p ~ N(0, M), kinetic energy p'M⁻¹p/2.

Each step: fresh momenta; ``n_leapfrog`` leapfrog steps of size ``step_size`` (jittered by a
uniform factor in [1 - jitter, 1 + jitter] per step and chain, to avoid periodic orbits); MH
accept on the change of the Hamiltonian.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["HMC", "laplace_mass"]


class HMC:
    """HMC sampler (mixlab sampler contract).

    logp_grad : callable (C, d) -> ((C,), (C, d)); chains : C; init : (d,) or (C, d);
    step_size : leapfrog step ε; n_leapfrog : L (path length ε·L); mass : (d, d) SPD matrix or
    None (identity); jitter : relative step-size jitter in [0, 1); grad : optional callable
    (C, d) -> (C, d) used inside the trajectory (saves computing log p at every leapfrog)."""

    def __init__(self, logp_grad: Callable, chains: int, init, step_size: float,
                 n_leapfrog: int, mass: np.ndarray | None = None, jitter: float = 0.1,
                 grad: Callable | None = None, points_per_gradient: int | None = None):
        if step_size <= 0 or n_leapfrog < 1 or not 0 <= jitter < 1:
            raise ValueError("need step_size > 0, n_leapfrog >= 1 and 0 <= jitter < 1")
        self.logp_grad, self.chains = logp_grad, int(chains)
        self.grad = grad
        # the logistic family's cost statistic ``points_read``: n_leapfrog full-data gradients
        self._points = (None if points_per_gradient is None else
                        np.full(self.chains, float(points_per_gradient) * int(n_leapfrog)))
        init = np.asarray(init, dtype=np.float64)
        self.d = init.shape[-1]
        self.theta0 = np.array(np.broadcast_to(init, (self.chains, self.d)))
        self.step_size, self.n_leapfrog, self.jitter = float(step_size), int(n_leapfrog), jitter
        if mass is None:
            self.chol = None
            self.inv_mass = None
        else:
            mass = np.asarray(mass, dtype=np.float64)
            self.chol = np.linalg.cholesky(mass)            # M = L L'
            self.inv_mass = np.linalg.inv(mass)

    def init(self, rng: np.random.Generator) -> dict:
        theta = self.theta0.copy()
        logp, grad = self.logp_grad(theta)
        return {"theta": theta, "logp": logp, "grad": grad}

    def _velocity(self, p: np.ndarray) -> np.ndarray:
        return p if self.inv_mass is None else p @ self.inv_mass

    def step(self, state: dict, rng: np.random.Generator):
        theta, logp, grad = state["theta"], state["logp"], state["grad"]
        C, d = theta.shape
        z = rng.standard_normal((C, d))
        p = z if self.chol is None else z @ self.chol.T        # p ~ N(0, M)
        eps = self.step_size * (1.0 + self.jitter * (2.0 * rng.random(C) - 1.0))[:, None]
        u = rng.random(C)
        kin0 = 0.5 * np.sum(p * self._velocity(p), axis=1)
        q, g = theta.copy(), grad
        p = p + 0.5 * eps * g
        for i in range(self.n_leapfrog):
            q = q + eps * self._velocity(p)
            if self.grad is not None and i < self.n_leapfrog - 1:
                g = self.grad(q)                        # log density only at the end
            else:
                lq, g = self.logp_grad(q)
            if i < self.n_leapfrog - 1:
                p = p + eps * g
        p = p + 0.5 * eps * g
        kin1 = 0.5 * np.sum(p * self._velocity(p), axis=1)
        log_ratio = (lq - kin1) - (logp - kin0)
        accept = np.log(u) < np.where(np.isfinite(log_ratio), log_ratio, -np.inf)
        a = accept[:, None]
        new = {"theta": np.where(a, q, theta), "logp": np.where(accept, lq, logp),
               "grad": np.where(a, g, grad)}
        stats = {"accept": accept}
        if self._points is not None:
            stats["points_read"] = self._points
        return new, {"samples": new["theta"]}, stats


def laplace_mass(hessian_neg: np.ndarray) -> np.ndarray:
    """Mass matrix from the negative Hessian of log p at the mode (symmetrised)."""
    H = np.asarray(hessian_neg, dtype=np.float64)
    return 0.5 * (H + H.T)
