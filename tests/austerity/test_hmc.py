"""HMC against the known moments of a correlated Gaussian (with and without a mass matrix)."""

import numpy as np
import pytest

from mixlab.austerity.hmc import HMC


@pytest.mark.parametrize("use_mass", [False, True])
def test_hmc_matches_gaussian_moments(use_mass):
    mu = np.array([1.0, -2.0, 0.5])
    A = np.array([[1.0, 0.0, 0.0], [0.9, 0.3, 0.0], [-0.5, 0.2, 0.6]])
    S = A @ A.T                                    # correlated, condition number ~ 30
    P = np.linalg.inv(S)

    def logp_grad(th):
        r = th - mu
        return -0.5 * np.einsum("cd,de,ce->c", r, P, r), -r @ P

    h = HMC(logp_grad, chains=50, init=np.zeros(3), step_size=0.5 if use_mass else 0.1,
            n_leapfrog=10 if use_mass else 20, mass=P if use_mass else None)
    rng = np.random.default_rng(0)
    st = h.init(rng)
    draws, acc = [], []
    for i in range(600):
        st, d, s = h.step(st, rng)
        if i >= 100:
            draws.append(d["samples"])
            acc.append(s["accept"])
    x = np.concatenate(draws)                      # 25,000 draws
    assert 0.6 < np.mean(acc) <= 1.0
    # near-independent draws: tolerance ~ 5 standard errors
    se = np.sqrt(np.diag(S) / x.shape[0]) * 3
    assert np.all(np.abs(x.mean(0) - mu) < 5 * se)
    assert np.allclose(np.cov(x.T), S, atol=0.06)
    # a broken integrator (sign of the gradient flipped) would not find the mean at all
