"""Each target's stated error: the error at which the league reads "time to reach" and "work
to reach".

One rule for every target, in its own yardstick's units: the stated error is the yardstick's
**expected error of** :data:`REACH_DRAWS` **independent exact draws** (all chains together).
"Time to reach" is then the time a sampler takes to be as accurate as 1,000 independent draws
from the target. The number depends only on the target (its truth), never on a run:

- marginal yardsticks (spin glass marginals, MRF subset joints, RBM moments): each feature's
  pooled mean over ``n`` independent draws is ``Binomial(n, p_i) / n``, so the stated error is
  ``scale · mean_i E|p̂_i − p_i|``, the binomial mean absolute deviation summed exactly over
  ``k = 0..n`` (:func:`marginal_reach`);
- the logistic moment yardstick ``mean_j (|m̂_j − m_j| + |ŝ_j − s_j|) / (2 s_j)`` for a normal
  posterior: ``E|m̂ − m|/s = sqrt(2/(π n))`` and, asymptotically, ``E|ŝ − s|/s = 1/sqrt(π n)``
  (``sd(ŝ)/s = 1/sqrt(2n)``), so ``(sqrt(2) + 1) / (2 sqrt(π n))`` (:func:`moment_reach`);
- the ISL yardstick has no exact draws to imitate (the reference is the training digits), so
  its stand-in for "1,000 ideal draws" is 1,000 training digits (a random subset fixed by the
  target's seed): the stated error is ``ISL(all training digits) − ISL(those 1,000)``
  (mixlab.league.target_rbm_isl).

Numbers are rounded to two significant digits (:func:`stated`). A league spec's
``reach_error`` (a number) overrides every target's stated error; ``null`` (the built-in specs)
keeps each target's own.
"""

from __future__ import annotations

import math

import numpy as np

#: the independent exact draws whose expected error is a target's stated error
REACH_DRAWS = 1000


def stated(value: float) -> float:
    """``value`` rounded to two significant digits (the number the tables print)."""
    return float(f"{float(value):.2g}")


def binomial_mad(p: np.ndarray, n: int = REACH_DRAWS) -> np.ndarray:
    """``E|X/n − p|`` for ``X ~ Binomial(n, p)``, elementwise over ``p (m,)``: ``(m,)``."""
    from scipy.special import gammaln, xlog1py, xlogy

    p = np.clip(np.asarray(p, np.float64).ravel(), 0.0, 1.0)[None, :]
    k = np.arange(n + 1, dtype=np.float64)[:, None]                    # (n+1, 1)
    log_pmf = (gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)
               + xlogy(k, p) + xlog1py(n - k, -p))                     # (n+1, m)
    pmf = np.exp(log_pmf)
    p = p[0]
    return np.sum(pmf * np.abs(k / n - p[None, :]), axis=0)


def marginal_reach(p: np.ndarray, scale: float = 1.0, n: int = REACH_DRAWS) -> float:
    """Stated error of a marginal yardstick with exact feature probabilities ``p (m,)``:
    ``scale · mean_i E|p̂_i − p_i|`` over ``n`` independent exact draws."""
    return stated(scale * float(np.mean(binomial_mad(p, n))))


def moment_reach(n: int = REACH_DRAWS) -> float:
    """Stated error of the posterior mean/sd yardstick (sd units) over ``n`` independent draws
    of a normal posterior: ``(sqrt(2) + 1) / (2 sqrt(π n))``."""
    return stated((math.sqrt(2.0) + 1.0) / (2.0 * math.sqrt(math.pi * n)))
