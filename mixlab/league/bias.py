"""The bias flag: an error at the full budget that the sampler's own Monte Carlo error cannot
explain (only where the truth is exact).

For each seed's stream (the equal-work streams, else the equal-time ones), with the pooled
estimate ``p̂_i``, the exact ``p_i`` and ArviZ's MCSE of ``p̂_i`` from per-chain batch means
(mixlab.league.yardstick; floored at the i.i.d. value ``sqrt(max(p_i(1-p_i), 1/N) / N)``, N =
all draws of all chains, since a site seen constant has a batch-means MCSE of 0):

    z_i = (p̂_i − p_i) / MCSE_i,      X = Σ_seeds Σ_i z_i²  ~  χ²(seeds · n)  for a sampler
                                                               without bias (CLT for MCMC).

The sampler is **flagged** when ``P(χ² ≥ X) < P_FLAG`` *and* its median error is more than
``RATIO_FLAG`` times the error its MCSE explains (``mean_i sqrt(2/π) MCSE_i``, the expected
``|p̂_i − p_i|`` of a normal error), so that a tiny but significant bias on a long run does not
flag an otherwise perfect sampler. A sampler whose chains all sit in the same wrong mode is
flagged too: its own diagnostics cannot see the mode it misses, and its estimate is wrong.
With fewer than 4 batches per chain but at least 4 independent chains (C), the MCSE is the spread
of the chain means, ``sd_c / sqrt(C)`` (floored as above); then ``z_i`` is Student t with C − 1
degrees of freedom, not normal, so it enters the sum as the normal score of equal two-sided
tail probability, ``χ²₁⁻¹(2·T_{C−1}(−|z_i|))``, which keeps ``X ~ χ²(seeds · n)`` (the floor only
shrinks ``|z_i|``: conservative). With fewer chains too there is no verdict (``flag`` = -1); the
ranking puts such a sampler after every one that passed (mixlab.league.rank).
"""

from __future__ import annotations

import math

import numpy as np

P_FLAG = 1e-6
RATIO_FLAG = 2.0
NO_VERDICT = {"flag": -1, "p_value": math.nan, "error_over_mc": math.nan, "mc_error": math.nan}


def verdict(legs: list[dict]) -> dict:
    """``{"flag": 1 biased | 0 not | -1 no verdict, "p_value", "error_over_mc", "mc_error"}``
    (``mc_error``: the error the MCSE explains, median over the legs) from the
    legs' ``estimate (n,)``, ``truth (n,)``, ``mcse (n,)`` (None: no MCSE), ``mcse_dof``
    (degrees of freedom of the MCSE estimate: absent or inf for batch means, C − 1 for the
    spread of C chains) and ``n_draws`` (all chains)."""
    # scipy.stats' chi2.sf, chi2.isf and t.sf are these functions (scipy.special is quick to
    # import, scipy.stats is not)
    from scipy.special import chdtrc, chdtri, stdtr

    x, dof, errs, mc = 0.0, 0, [], []
    for leg in legs:
        if leg["mcse"] is None:
            return dict(NO_VERDICT)
        p, est, n = leg["truth"], leg["estimate"], max(leg["n_draws"], 1)
        floor = np.sqrt(np.maximum(p * (1 - p), 1.0 / n) / n)
        se = np.maximum(leg["mcse"], floor)
        z = (est - p) / se
        dof_se = leg.get("mcse_dof", math.inf)
        if math.isfinite(dof_se):   # Student t → the χ²₁ value of the same tail probability
            x += float(np.sum(chdtri(1, 2 * stdtr(dof_se, -np.abs(z)))))
        else:
            x += float(np.sum(z ** 2))
        dof += p.size
        errs.append(float(np.mean(np.abs(est - p))))
        mc.append(float(np.mean(np.sqrt(2 / np.pi) * se)))
    if not legs:
        return dict(NO_VERDICT)
    pval = float(chdtrc(dof, x))
    ratio = float(np.median(errs) / np.median(mc))
    return {"flag": int(pval < P_FLAG and ratio > RATIO_FLAG), "p_value": pval,
            "error_over_mc": ratio, "mc_error": float(np.median(mc))}
