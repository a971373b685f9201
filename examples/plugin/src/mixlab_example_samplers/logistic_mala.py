"""Metropolis-adjusted Langevin (MALA) for a Bayesian logistic-regression posterior (the
``logistic`` family's ``mala``), optionally preconditioned by the Laplace covariance.

With a preconditioner ``M = L Lᵀ`` (the identity, or the inverse negative Hessian of the log
posterior at its mode), the proposal is

    θ' = θ + (ε²/2) M ∇log p(θ) + ε L ξ,   ξ ~ N(0, I)

accepted with ``min(1, p(θ') q(θ | θ') / (p(θ) q(θ' | θ)))``, where ``log q(b | a) =
-|L⁻¹(b - a - (ε²/2) M ∇log p(a))|² / (2ε²) + const``.  Every step uses all N data points
(``data_used`` = 1, ``points_read`` = N: the gradient at θ' and log p(θ') in one pass), like the
exact random-walk MH of the austerity paper.

State ``theta (chains, d)``, ``logp (chains,)``, ``grad (chains, d)`` float64.  Draws
``samples (chains, d)`` float64.  Stats ``accept (chains,)``, ``data_used (chains,)``,
``points_read (chains,)`` (the logistic family's cost statistic).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mixlab.api import LOGISTIC, Param, sampler


class MALA:
    """MALA on ``logp_grad(theta (C, d)) -> (logp (C,), grad (C, d))`` (see the module docstring).

    ``chol``: (d, d) lower-triangular L with M = L Lᵀ, or None for the identity."""

    def __init__(self, logp_grad, theta0: np.ndarray, step: float, chains: int,
                 chol: np.ndarray | None = None, points_per_step: int = 0):
        self.logp_grad, self.eps, self.chains = logp_grad, float(step), int(chains)
        self.points = np.full(self.chains, float(points_per_step))
        self.theta0 = np.broadcast_to(np.asarray(theta0, np.float64),
                                      (self.chains, np.shape(theta0)[-1])).copy()
        self.d = self.theta0.shape[1]
        self.L = np.eye(self.d) if chol is None else np.asarray(chol, np.float64)
        self.M = self.L @ self.L.T

    def init(self, rng: np.random.Generator) -> dict:
        logp, grad = self.logp_grad(self.theta0)
        return {"theta": self.theta0.copy(), "logp": logp, "grad": grad}

    def _drift(self, theta: np.ndarray, grad: np.ndarray) -> np.ndarray:
        return theta + 0.5 * self.eps ** 2 * grad @ self.M.T

    def _log_q(self, to: np.ndarray, frm: np.ndarray, grad_frm: np.ndarray) -> np.ndarray:
        """``log q(to | frm)`` up to a constant, (C,)."""
        r = np.linalg.solve(self.L, (to - self._drift(frm, grad_frm)).T).T
        return -0.5 * np.sum(r * r, axis=1) / self.eps ** 2

    def step(self, state: dict, rng: np.random.Generator):
        th, lp, g = state["theta"], state["logp"], state["grad"]
        prop = self._drift(th, g) + self.eps * rng.standard_normal(th.shape) @ self.L.T
        lp_p, g_p = self.logp_grad(prop)
        log_a = lp_p - lp + self._log_q(th, prop, g_p) - self._log_q(prop, th, g)
        acc = np.log(rng.random(self.chains)) < log_a
        th = np.where(acc[:, None], prop, th)
        lp = np.where(acc, lp_p, lp)
        g = np.where(acc[:, None], g_p, g)
        return ({"theta": th, "logp": lp, "grad": g}, {"samples": th},
                {"accept": acc.astype(np.float64), "data_used": np.ones(self.chains),
                 "points_read": self.points})


@sampler(LOGISTIC, "mala", params={
    "step_size": Param(0.3, float, lo=0, lo_open=True,
                       help="Langevin step ε (in Laplace-whitened units with precondition: true)"),
    "precondition": Param(True, bool, help="M = the Laplace covariance at the mode (else the "
                                           "identity)")},
    help="Metropolis-adjusted Langevin with full-data gradients, optionally Laplace-"
         "preconditioned (example plugin)")
def make_mala(target: Any, params: dict, chains: int) -> MALA:
    """``target``: ``posterior`` (``log_posterior(theta (C, d)) -> (C,)``,
    ``grad_log_posterior(theta) -> (C, d)``), ``theta0 (chains, d)`` the chains' start and
    ``laplace() -> (mode (d,), negative Hessian (d, d))``."""
    post = target.posterior

    def logp_grad(theta):
        return post.log_posterior(theta), post.grad_log_posterior(theta)

    chol = None
    if params["precondition"]:
        neg_hess = np.asarray(target.laplace()[1], np.float64)
        chol = np.linalg.cholesky(np.linalg.inv(neg_hess))
    return MALA(logp_grad, target.theta0, params["step_size"], chains, chol,
                points_per_step=post.N)
