"""Synthetic chains for the verdict tests: legs as a league cell builds them
(mixlab.league.cell._leg), from a yardstick fed with arrays of known law."""

import numpy as np
from scipy.signal import lfilter

from mixlab.league.yardstick import MarginalYardstick

FRACTIONS = [0.125, 0.25, 0.5, 1.0]


def ar1(rng, chains, draws, n, rho):
    """Stationary Gaussian AR(1) chains ``(chains, draws, n)``: unit variance, lag-1
    correlation ``rho`` (autocorrelation time ``(1 + rho) / (1 - rho)``)."""
    e = rng.standard_normal((chains, draws, n)) * np.sqrt(1 - rho ** 2)
    e[:, 0] = rng.standard_normal((chains, n))
    return lfilter([1.0], [1.0, -rho], e, axis=1)


def bernoulli(rng, p_t):
    """0/1 draws with ``P(x = 1) = p_t`` (any shape)."""
    return rng.random(p_t.shape) < p_t


def leg(x, truth, fractions=FRACTIONS):
    """One stream's leg from its draws ``x (chains, draws, n)`` (0/1 or real features) and the
    exact feature means ``truth (n,)``: one unit of work per draw of each chain."""
    K, T, _ = x.shape
    ev = MarginalYardstick(truth, work_marks=[f * K * T for f in fractions])
    step = max(1, T // 64)
    for i in range(0, T, step):
        b = x[:, i:i + step]
        ev.update({"samples": b, "league_work": np.ones(b.shape[:2])}, b.shape[1], 1.0)
    return {"marks": list(ev.work_marks_err), "estimate": ev.estimate(), "truth": ev.truth,
            "mcse": ev.mcse(), "mcse_dof": np.inf, "n_draws": K * T,
            "batches": ev.batches[:, :ev.nb] / ev.blen, "blen": ev.blen, "ess": np.nan}
