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


def _mean_autocov(x: np.ndarray) -> np.ndarray:
    """Autocovariance along axis 1 of ``x (chains, n, sites)`` at every lag, averaged over the
    chains: ``(n, sites)`` (biased: divided by n). By FFT with zero padding along a contiguous
    axis; the chains' power spectra are averaged before the one inverse transform (it is
    linear), so a site costs one inverse FFT, not one per chain."""
    from scipy import fft

    n = x.shape[1]
    m = fft.next_fast_len(2 * n)
    y = np.array(np.moveaxis(x, 1, -1), dtype=np.float64, order="C")  # (chains, sites, n)
    y -= y.mean(axis=-1, keepdims=True)
    f = fft.rfft(y, n=m, axis=-1)                                    # (chains, sites, m//2+1)
    power = np.einsum("csk,csk->sk", f.real, f.real)
    power += np.einsum("csk,csk->sk", f.imag, f.imag)                # Σ_c |f_c|²
    acov = fft.irfft(power, n=m, axis=-1)[:, :n] / (n * x.shape[0])  # (sites, n)
    return np.ascontiguousarray(acov.T)


def _split(x: np.ndarray) -> np.ndarray:
    """``(chains, n, ...)`` -> ``(2 chains, n // 2, ...)``: each chain's first and last
    halves."""
    half = x.shape[1] // 2
    return np.concatenate((x[:, :half], x[:, x.shape[1] - half:]), axis=0)


def _ess(x: np.ndarray) -> np.ndarray:
    """ESS of each site of ``x (chains, draws, sites)`` (no splitting, no ranking): ``(sites,)``.

    Geyer's sequences without a loop over lags: the loop of ArviZ reads the pairs ``P_k = ρ̂_2k +
    ρ̂_2k+1`` (``ρ̂_0 = 1``) while the previous pair sum is positive, up to ``k_max = (draws −
    3) // 2``; the pairs read before the last are positive and kept, made monotone by a running
    minimum of the pair sums; the last pair's even term counts when that pair's sum is ≥ 0 or
    the term itself is positive."""
    x = np.asarray(x, dtype=float)
    n_chain, n_draw, sites = x.shape
    out = np.full(sites, np.nan)
    ok = ~np.isnan(x).any(axis=(0, 1))
    const = ok & (np.ptp(np.where(ok, x, 0.0), axis=(0, 1)) < np.finfo(float).resolution)
    out[const] = float(n_chain * n_draw)
    live = np.flatnonzero(ok & ~const)
    if not len(live):
        return out
    x = x[:, :, live]
    acov_mean = _mean_autocov(x)                                       # (draws, sites)
    mean_var = acov_mean[0] * n_draw / (n_draw - 1.0)                  # (sites,)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus = var_plus + np.var(x.mean(axis=1), axis=0, ddof=1)
    k_max = max((n_draw - 3) // 2, 0)
    rho = 1.0 - (mean_var - acov_mean[:2 * k_max + 2]) / var_plus      # (2 k_max + 2, sites)
    rho[0] = 1.0
    pairs = rho[0::2] + rho[1::2]                                       # P_k, k = 0..k_max
    stop = ~(pairs > 0.0)                                               # NaN stops the loop too
    k_last = np.where(stop.any(axis=0), np.argmax(stop, axis=0), k_max)
    k_last = np.minimum(k_last, k_max)                                  # (sites,)
    cols = np.arange(len(live))
    monotone = np.minimum.accumulate(pairs, axis=0)
    kept = np.arange(pairs.shape[0])[:, None] < k_last                  # pairs 0..k_last-1
    even = rho[2 * k_last, cols]
    last = np.where(k_last == 0, 1.0,
                    np.where((pairs[k_last, cols] >= 0) | (even > 0), even, 0.0))
    tau = -1.0 + 2.0 * np.sum(np.where(kept, monotone, 0.0), axis=0) + last
    size = n_chain * n_draw
    tau = np.maximum(tau, 1 / np.log10(size))
    out[live] = np.where(np.isnan(rho[1]), np.nan, size / tau)
    return out


def _valid(x: np.ndarray) -> bool:
    return x.ndim == 2 and x.shape[1] >= MIN_DRAWS and not np.isnan(x).any()


def ess_bulk(x: np.ndarray) -> float:
    """Bulk ESS of ``x (chains, draws)``: ``arviz.ess(x, method="bulk")``."""
    x = np.asarray(x, dtype=float)
    if not _valid(x):
        return float("nan")
    s = _split(x)
    return float(_ess(_normal_scores(s.ravel()).reshape(*s.shape, 1))[0])


def _normal_scores(v: np.ndarray) -> np.ndarray:
    """Blom's normal scores ``Φ⁻¹((r − 3/8) / (S − 3/4 + 1))`` of ``v (S,)``, ``r`` the ranks
    1..S with ties given their average rank (``scipy.stats.rankdata``): ``(S,)``. Computed once
    per group of ties, without sorting all S when the values allow: whole numbers in a short
    range (a count, an indicator, a state code) are grouped by their offset from the smallest,
    and a few distinct values of any kind by binary search among them."""
    from scipy.special import ndtri

    def scores(group: np.ndarray, n_groups: int) -> np.ndarray:
        """The scores of values numbered by group, the groups in increasing order of value."""
        counts = np.bincount(group, minlength=n_groups)
        ranks = np.cumsum(counts) - (counts - 1) / 2                 # a group's average rank
        return ndtri((ranks - 3 / 8) / (len(v) - 2 * 3 / 8 + 1))[group]

    lo, hi = float(v.min()), float(v.max())
    if hi - lo < min(len(v), 1 << 20) and np.array_equal(v, np.floor(v)):
        # whole numbers in a range no longer than the sample (a count, an indicator, a code):
        # a value's offset from the smallest is its group; an empty group's score is unused
        return scores((v - lo).astype(np.intp), int(hi - lo) + 1)
    sample = v[::max(1, len(v) // 4096)]
    if len(np.unique(sample)) <= 64:      # few distinct values, by the look of it: a binary
        # search among them is a few comparisons a value, cheaper than sorting all S
        values = np.unique(v)
        return scores(np.searchsorted(values, v), len(values))
    order = np.argsort(v)               # ties get their average rank: any order among them
    s = v[order]
    first = np.empty(len(v), dtype=bool)
    first[0] = True
    np.not_equal(s[1:], s[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, len(v)))
    ranks = starts + (counts + 1) / 2                        # positions start+1 .. start+count
    z = np.empty(len(v))
    z[order] = np.repeat(ndtri((ranks - 3 / 8) / (len(v) - 2 * 3 / 8 + 1)), counts)
    return z


def mcse_mean(x: np.ndarray) -> np.ndarray:
    """MCSE of the mean of each site of ``x (chains, draws, ...)``: shape ``x.shape[2:]``, as
    ``arviz.mcse(x, method="mean")`` (one FFT and one Geyer pass for every site)."""
    x = np.asarray(x, dtype=float)
    if x.ndim < 3 or x.shape[1] < MIN_DRAWS:
        return np.full(x.shape[2:], np.nan)
    flat = x.reshape(x.shape[0], x.shape[1], -1)                      # (chains, draws, sites)
    s = _split(flat)                                                  # (2 chains, half, sites)
    sd = np.std(flat.reshape(-1, flat.shape[2]), axis=0, ddof=1)
    return (sd / np.sqrt(_ess(s))).reshape(x.shape[2:])
