"""The logistic-regression target handed to the ``logistic`` family's sampler factories."""

from __future__ import annotations

import numpy as np

from .logistic import LogisticPosterior, map_estimate, neg_hessian


class LogisticTarget:
    """A Bayesian logistic-regression posterior and where its chains start.

    ``posterior``: :class:`mixlab.austerity.logistic.LogisticPosterior` (``log_posterior``,
    ``grad_log_posterior(theta (C, d), idx=None | (n,) | (C, n))``, ``loglik_terms``, ``N``, ``d``);
    ``theta0`` (chains, d) float64: the start of every chain (the spec's ``init``);
    ``laplace()`` -> (mode (d,), negative Hessian at the mode (d, d)), computed once."""

    def __init__(self, posterior: LogisticPosterior, theta0: np.ndarray,
                 laplace: tuple[np.ndarray, np.ndarray] | None = None):
        self.posterior = posterior
        self.theta0 = np.asarray(theta0, dtype=np.float64)
        self._laplace = laplace

    def laplace(self) -> tuple[np.ndarray, np.ndarray]:
        if self._laplace is None:
            mode = map_estimate(self.posterior)
            self._laplace = (mode, neg_hessian(self.posterior, mode))
        return self._laplace
