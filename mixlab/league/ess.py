"""Effective sample size and Monte Carlo standard error, as ArviZ computes them, in NumPy
(with one compiled helper, mixlab.league.tie_groups, for ranking summaries with ties).

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


#: lags whose autocovariances are summed directly, in two stages, before the FFT is used:
#: Geyer's sequence of a chain that mixes within a few steps ends inside the first 16 (their
#: products cost a third of the FFT of a long chain, which gives every lag), and in the leagues'
#: summaries that do not, it ends by lag 32 for 30-70% of them, for another third of the FFT
DIRECT_LAGS = (16, 32)
_CACHE_VALUES = 1 << 17          # float64 values of the series summed at a time (1 MiB)
#: distinct values a summary's ties are grouped by hash up to (a 2 MiB table); past them, and
#: for a summary whose values look mostly distinct, the ranking sorts all the values
TIE_GROUPS = 1 << 16


def _centred(x: np.ndarray) -> np.ndarray:
    """``x (chains, n, sites)`` -> ``(chains, sites, n)`` float64, C-contiguous, each series
    minus its mean."""
    y = np.array(np.moveaxis(x, 1, -1), dtype=np.float64, order="C")
    y -= y.mean(axis=-1, keepdims=True)
    return y


def _autocov_direct(y: np.ndarray, lags: int, first: int = 0) -> np.ndarray:
    """The autocovariances of lags ``first`` to ``lags - 1`` of ``y (chains, sites, n)``
    (centred), averaged over the chains: ``(lags - first, sites)``, ``Σ_c Σ_i y[c, s, i]
    y[c, s, i + t] / (n · chains)`` (the biased estimate, as :func:`_autocov_fft`), summed a
    cache-sized stretch at a time."""
    C, S, n = y.shape
    rows = y.reshape(C * S, n)
    acc = np.zeros((lags - first, C * S))
    step = max(256, _CACHE_VALUES // (C * S))
    for i0 in range(0, n, step):
        a = rows[:, i0:i0 + step]
        for t in range(first, lags):
            b = rows[:, i0 + t:i0 + t + a.shape[1]]
            acc[t - first] += np.einsum("rk,rk->r", a[:, :b.shape[1]], b)
    return acc.reshape(lags - first, C, S).sum(axis=1) / (n * C)


def _autocov_fft(y: np.ndarray) -> np.ndarray:
    """Every autocovariance of ``y (chains, sites, n)`` (centred), averaged over the chains:
    ``(n, sites)`` (biased: divided by n). By FFT with zero padding along the contiguous axis;
    the chains' power spectra are averaged before the one inverse transform (it is linear), so
    a site costs one inverse FFT, not one per chain."""
    from scipy import fft

    n = y.shape[-1]
    m = fft.next_fast_len(2 * n)
    f = fft.rfft(y, n=m, axis=-1)                                    # (chains, sites, m//2+1)
    power = np.einsum("csk,csk->sk", f.real, f.real)
    power += np.einsum("csk,csk->sk", f.imag, f.imag)                # Σ_c |f_c|²
    acov = fft.irfft(power, n=m, axis=-1)[:, :n] / (n * y.shape[0])  # (sites, n)
    return np.ascontiguousarray(acov.T)


def _split(x: np.ndarray) -> np.ndarray:
    """``(chains, n, ...)`` -> ``(2 chains, n // 2, ...)``: each chain's first and last
    halves."""
    half = x.shape[1] // 2
    return np.concatenate((x[:, :half], x[:, x.shape[1] - half:]), axis=0)


def _ess(x: np.ndarray) -> np.ndarray:
    """ESS of each site of ``x (chains, draws, sites)`` (no splitting, no ranking): ``(sites,)``.

    The autocovariances of the first lags are summed directly (:data:`DIRECT_LAGS`: 16, then
    16 more when a site's Geyer sequence runs past them); only when a sequence runs past those
    too are every lag's computed by FFT (the same numbers, to rounding)."""
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
    y = _centred(x)                                                    # (chains, sites, draws)
    k_max = max((n_draw - 3) // 2, 0)
    chain_var = np.var(x.mean(axis=1), axis=0, ddof=1) if n_chain > 1 else 0.0
    lags = 2 * k_max + 2
    acov, tau = np.zeros((0, y.shape[1])), None
    for stage in DIRECT_LAGS:
        acov = np.concatenate((acov, _autocov_direct(y, min(lags, stage), len(acov))))
        tau = _geyer_tau(acov, n_draw, chain_var, k_max)
        if tau is not None or len(acov) >= lags:
            break
    if tau is None:                        # a sequence longer than the direct lags: all of them
        tau = _geyer_tau(_autocov_fft(y)[:lags], n_draw, chain_var, k_max)
    size = n_chain * n_draw
    out[live] = size / np.maximum(tau, 1 / np.log10(size))
    return out


def _geyer_tau(acov_mean: np.ndarray, n_draw: int, chain_var, k_max: int) -> np.ndarray | None:
    """τ of each site from its mean autocovariances ``acov_mean (lags, sites)`` (NaN where the
    first autocorrelation is NaN), or None when a site's sequence has not ended within them.

    Geyer's sequences without a loop over lags: the loop of ArviZ reads the pairs ``P_k = ρ̂_2k +
    ρ̂_2k+1`` (``ρ̂_0 = 1``) while the previous pair sum is positive, up to ``k_max = (draws −
    3) // 2``; the pairs read before the last are positive and kept, made monotone by a running
    minimum of the pair sums; the last pair's even term counts when that pair's sum is ≥ 0 or
    the term itself is positive."""
    mean_var = acov_mean[0] * n_draw / (n_draw - 1.0)                  # (sites,)
    var_plus = mean_var * (n_draw - 1.0) / n_draw + chain_var
    rho = 1.0 - (mean_var - acov_mean) / var_plus                      # (lags, sites)
    rho[0] = 1.0
    n_pairs = len(rho) // 2
    pairs = rho[0:2 * n_pairs:2] + rho[1:2 * n_pairs:2]                # P_k, k < n_pairs
    stop = ~(pairs > 0.0)                                               # NaN stops the loop too
    k_last = np.where(stop.any(axis=0), np.argmax(stop, axis=0), k_max)
    k_last = np.minimum(k_last, k_max)                                  # (sites,)
    if np.any(k_last >= n_pairs):
        return None
    cols = np.arange(pairs.shape[1])
    monotone = np.minimum.accumulate(pairs, axis=0)
    kept = np.arange(n_pairs)[:, None] < k_last                         # pairs 0..k_last-1
    even = rho[2 * k_last, cols]
    last = np.where(k_last == 0, 1.0,
                    np.where((pairs[k_last, cols] >= 0) | (even > 0), even, 0.0))
    tau = -1.0 + 2.0 * np.sum(np.where(kept, monotone, 0.0), axis=0) + last
    return np.where(np.isnan(rho[1]), np.nan, tau)


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
    and up to :data:`TIE_GROUPS` distinct values of any kind by a hash table
    (mixlab.league.tie_groups), so that only the distinct values are sorted."""
    from scipy.special import ndtri

    def scores(counts: np.ndarray) -> np.ndarray:
        """The scores of groups of tied values, given in increasing order of value."""
        ranks = np.cumsum(counts) - (counts - 1) / 2                 # a group's average rank
        return ndtri((ranks - 3 / 8) / (len(v) - 2 * 3 / 8 + 1))

    lo, hi = float(v.min()), float(v.max())
    if hi - lo < min(len(v), 1 << 20) and np.array_equal(v, np.floor(v)):
        # whole numbers in a range no longer than the sample (a count, an indicator, a code):
        # a value's offset from the smallest is its group; an empty group's score is unused
        group = (v - lo).astype(np.intp)
        return scores(np.bincount(group, minlength=int(hi - lo) + 1))[group]
    sample = v[::max(1, len(v) // 4096)]
    # fewer distinct values in some 4,096 spread over the data than TIE_GROUPS equally likely
    # values would show (the most any TIE_GROUPS values can, on average): likely few enough
    if len(np.unique(sample)) < TIE_GROUPS * -np.expm1(-len(sample) / TIE_GROUPS):
        from .tie_groups import group_values

        grouped = group_values(v, TIE_GROUPS)
        if grouped is not None:
            codes, distinct, counts = grouped
            order = np.argsort(distinct)
            by_code = np.empty(len(distinct))
            by_code[order] = scores(counts[order])
            return by_code[codes]
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
