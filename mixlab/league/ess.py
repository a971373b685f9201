"""Effective sample size and Monte Carlo standard error, as ArviZ computes them, in NumPy.

The league's cells need two numbers per stream: the bulk ESS of each per-draw summary
(``arviz.ess(method="bulk")``) and the MCSE of each site's mean from batch means
(``arviz.mcse(method="mean")``). Importing ArviZ costs several CPU seconds in every worker
process (pandas, xarray, matplotlib, numba), more than a quick cell samples; these functions
are ArviZ 0.2x's definitions (``arviz.stats.diagnostics._ess``, ``_ess_bulk``, ``_ess_mean``,
``_mcse_mean``) on plain arrays, and tests/league/test_ess_matches_arviz.py checks that they
give ArviZ's numbers.

The definitions (Vehtari, Gelman, Simpson, Carpenter & Bürkner 2021, "Rank-normalization,
folding, and localization", eqs. 10-11 and §3.2):

- chains are split in halves (a chain of n draws gives two of ``n // 2``: the first and the
  last halves);
- the ESS of ``x (chains, draws)`` is ``chains · draws / τ``, ``τ = −1 + 2 Σ ρ̂_t`` over Geyer's
  initial positive, then monotone, sequence of paired autocorrelations, with ``ρ̂_t = 1 −
  (W − mean_c acov_c(t)) / var⁺``, ``W`` the mean within-chain variance and ``var⁺`` the
  between-plus-within estimate; ``τ`` is floored at ``1 / log10(chains · draws)``;
- bulk ESS: the ESS of the split chains after rank normalisation, ``z = Φ⁻¹((r − 3/8) / (S −
  3/4 + 1))`` with ``r`` the average ranks over all ``S`` draws (Blom 1958);
- MCSE of the mean: ``sd(all draws, ddof 1) / sqrt(ESS of the split chains)``.

An array with a NaN, or fewer than 4 draws per chain, has NaN for both (as in ArviZ); a
constant array has ESS = its size.
"""

from __future__ import annotations

import numpy as np

#: ArviZ's minimum draws per chain for ESS and MCSE
MIN_DRAWS = 4


def _autocov(x: np.ndarray) -> np.ndarray:
    """Autocovariance along axis 1 of ``x (chains, n, ...)`` at every lag, same shape (biased:
    divided by n), by FFT with zero padding."""
    from scipy.fft import next_fast_len

    n = x.shape[1]
    m = next_fast_len(2 * n)
    y = x - x.mean(axis=1, keepdims=True)
    f = np.fft.rfft(y, n=m, axis=1)
    f *= np.conjugate(f)
    return np.fft.irfft(f, n=m, axis=1)[:, :n] / n


def _split(x: np.ndarray) -> np.ndarray:
    """``(chains, n, ...)`` -> ``(2 chains, n // 2, ...)``: each chain's first and last
    halves."""
    half = x.shape[1] // 2
    return np.concatenate((x[:, :half], x[:, x.shape[1] - half:]), axis=0)


def _ess(x: np.ndarray, acov_mean: np.ndarray | None = None) -> float:
    """ESS of ``x (chains, draws)`` (no splitting, no ranking); ``acov_mean (draws,)``: its
    autocovariance averaged over chains, when already computed."""
    x = np.asarray(x, dtype=float)
    if np.isnan(x).any():
        return float("nan")
    if np.max(x) - np.min(x) < np.finfo(float).resolution:
        return float(x.size)
    n_chain, n_draw = x.shape
    acov_mean = _autocov(x).mean(axis=0) if acov_mean is None else acov_mean
    acov_t = _Lags(acov_mean)               # mean over chains at each lag (floats: fast loop)
    mean_var = acov_t[0] * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus += np.var(x.mean(axis=1), ddof=1)
    rho = np.zeros(n_draw)
    even, odd = 1.0, 1.0 - (mean_var - acov_t[1]) / var_plus
    rho[0], rho[1] = even, odd
    t = 1                                   # Geyer's initial positive sequence
    while t < n_draw - 3 and even + odd > 0.0:
        even = 1.0 - (mean_var - acov_t[t + 1]) / var_plus
        odd = 1.0 - (mean_var - acov_t[t + 2]) / var_plus
        if even + odd >= 0:
            rho[t + 1], rho[t + 2] = even, odd
        t += 2
    max_t = t - 2
    if even > 0:
        rho[max_t + 1] = even
    t = 1                                   # Geyer's initial monotone sequence
    while t <= max_t - 2:
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
            rho[t + 1] = rho[t + 2] = (rho[t - 1] + rho[t]) / 2.0
        t += 2
    size = n_chain * n_draw
    tau = -1.0 + 2.0 * np.sum(rho[:max_t + 1]) + np.sum(rho[max_t + 1:max_t + 2])
    tau = max(tau, 1 / np.log10(size))
    return float("nan") if np.isnan(rho).any() else float(size / tau)


class _Lags:
    """``a (n,)`` read as Python floats, converted in pieces as the Geyer sequences reach
    them (they usually stop after a few lags; converting all n is most of the cost)."""

    def __init__(self, a: np.ndarray):
        self.a, self.vals = a, a[:64].tolist()

    def __getitem__(self, t: int) -> float:
        if t >= len(self.vals):
            self.vals = self.a[:max(2 * len(self.vals), t + 1)].tolist()
        return self.vals[t]


def _average_ranks(v: np.ndarray) -> np.ndarray:
    """Ranks 1..S of ``v (S,)``, ties given their average rank (``scipy.stats.rankdata``)."""
    order = np.argsort(v)               # ties get their average rank: any order among them
    s = v[order]
    first = np.r_[True, s[1:] != s[:-1]]
    group = np.cumsum(first)                                         # 1-based tie groups
    bounds = np.r_[np.flatnonzero(first), len(v)]
    ranks = np.empty(len(v))
    ranks[order] = 0.5 * (bounds[group - 1] + 1 + bounds[group])
    return ranks


def _valid(x: np.ndarray) -> bool:
    return x.ndim == 2 and x.shape[1] >= MIN_DRAWS and not np.isnan(x).any()


def ess_bulk(x: np.ndarray) -> float:
    """Bulk ESS of ``x (chains, draws)``: ``arviz.ess(x, method="bulk")``."""
    from scipy.special import ndtri

    x = np.asarray(x, dtype=float)
    if not _valid(x):
        return float("nan")
    s = _split(x)
    r = _average_ranks(s.ravel())
    z = ndtri((r - 3 / 8) / (r.size - 2 * 3 / 8 + 1)).reshape(s.shape)
    return _ess(z)


def mcse_mean(x: np.ndarray) -> np.ndarray:
    """MCSE of the mean of each site of ``x (chains, draws, n)``: ``(n,)``, as
    ``arviz.mcse(x, method="mean")`` (one FFT for every site)."""
    x = np.asarray(x, dtype=float)
    out = np.full(x.shape[2:], np.nan)
    if x.ndim < 3 or x.shape[1] < MIN_DRAWS:
        return out
    s = _split(x)                                                     # (2 chains, half, n)
    acov_mean = _autocov(s).mean(axis=0)                              # (half, n)
    sd = np.std(x.reshape(-1, *x.shape[2:]), axis=0, ddof=1)
    for i in np.ndindex(*x.shape[2:]):
        site = (slice(None), slice(None)) + i
        if not np.isnan(x[site]).any():
            out[i] = sd[i] / np.sqrt(_ess(s[site], acov_mean[(slice(None),) + i]))
    return out
