"""Whether a clock's chains mixed: split R-hat of batch means over every chain of every seed.

The yardstick keeps each chain's batch means of every feature (mixlab.league.yardstick: at
most 32 batches per chain, the batch length doubling as the draws grow). Over all chains of
all seeds of one clock, each chain's first ``nb`` batches are split in halves (Vehtari,
Gelman, Simpson, Carpenter & Bürkner 2021, §4.1: a trend inside a chain shows as disagreeing
halves), each feature's batch means are rank-normalised over all split chains (their §4.2:
Blom's normal scores, mixlab.league.ess), and

    R̂ = sqrt(var⁺ / W),   var⁺ = (h − 1)/h · W + B/h,

with ``M`` split chains of ``h`` batch means each, ``W`` the mean within-chain variance and
``B/h`` the variance of the split chains' means (their eq. 3-4, on batch means instead of
draws).

**Why batch means.** The league stores no per-site draws; the batch means are what the
yardstick keeps anyway, and a batch mean is nearly an independent draw once the batch is
longer than the autocorrelation time. R-hat of batch means is then R-hat of a chain thinned
to nearly independent draws, and its sampling distribution is known: for chains that mix,
``B/W ~ F(M − 1, M(h − 1))``, so ``R̂² = (h − 1)/h + F/h``.

**Threshold.** Vehtari et al.'s 1.01 is for chains with a bulk ESS of at least 100 each;
here each split chain has only ``h`` (8 to 15) batch means, so R-hat of chains that mix
scatters more widely, and the league takes the max over up to several hundred features. The
threshold is the null quantile of that max: the ``1 − α/K`` quantile of ``F(M − 1, M(h −
1))`` (Bonferroni over the ``K`` features that vary), ``α`` = :data:`ALPHA`, turned into
``R̂``, and never below 1.01. With 60 split chains and independent batch means this is about
1.03 (h = 15) to 1.05 (h = 8). Batches only a few autocorrelation times long make
neighbouring batch means correlated, and a chain's mean then varies more than ``W/h`` says,
by ``κ ≈ 1 + 2ρ₁`` (``ρ₁`` the batch means' lag-1 autocorrelation within chains, which
offsets between chains do not raise): the F quantile is multiplied by ``κ``, measured
(:func:`inflation`, at most :data:`MAX_INFLATION`). Past that, a chain whose 32 batches do not
hold some 30 independent draws reads as not mixed: with fewer effective draws than that a
chain cannot show it has mixed (tests/league/test_verdict.py checks the false-alarm rate on
AR(1) chains that mix and the power on chains that do not, or are stuck in two modes).
"""

from __future__ import annotations

import math

import numpy as np

#: the family-wise false-alarm rate of the mixing check per cell and clock
ALPHA = 0.01
#: R-hat below this never counts as not mixed (Vehtari et al. 2021's recommendation)
RHAT_FLOOR = 1.01
#: batch means per split chain below which R-hat is not computed
MIN_HALF = 2
#: the most the batch means' correlation may widen the threshold (lag-1 correlation 1/2):
#: past it, batches are too short for the chains to show they mixed
MAX_INFLATION = 2.0


def aligned_batches(legs: list[dict]) -> np.ndarray | None:
    """Every chain's first batch means, at one batch length: ``(chains, nb, n)``.

    Each leg gives ``batches (chains, nb_l, n)`` (batch sums divided by the batch length) and
    ``blen`` (draws per batch, a power of two); a leg with shorter batches has neighbours
    merged to the longest length, and every chain is cut to the fewest batches any has. None
    when fewer than ``2 MIN_HALF`` batches remain."""
    legs = [leg for leg in legs if leg.get("batches") is not None]
    if not legs:
        return None
    L = max(int(leg["blen"]) for leg in legs)
    out = []
    for leg in legs:
        b = np.asarray(leg["batches"], np.float64)
        k = L // int(leg["blen"])
        nb = b.shape[1] // k
        out.append(b[:, :nb * k].reshape(b.shape[0], nb, k, b.shape[2]).mean(axis=2))
    nb = min(b.shape[1] for b in out)
    if nb < 2 * MIN_HALF:
        return None
    return np.concatenate([b[:, :nb] for b in out], axis=0)


def normal_scores(v: np.ndarray) -> np.ndarray:
    """Blom's normal scores of each column of ``v (S, n)`` (ties get their average rank), as
    mixlab.league.ess's rank normalisation of one array, for every column at once. The columns
    are sorted as contiguous rows of ``v.T``, and average ranks are worked out only for the
    columns that hold ties."""
    from scipy.special import ndtri

    S, n = v.shape
    w = np.ascontiguousarray(v.T)                                   # (n, S)
    order = np.argsort(w, axis=1, kind="stable")
    s = np.take_along_axis(w, order, axis=1)
    differs = s[:, 1:] != s[:, :-1]                                 # (n, S - 1)
    sorted_ranks = np.broadcast_to(np.arange(1.0, S + 1), (n, S)).copy()
    tied = np.nonzero(~differs.all(axis=1))[0]
    if tied.size:
        pos = np.broadcast_to(np.arange(S), (tied.size, S))
        starts = np.ones((tied.size, S), bool)
        starts[:, 1:] = differs[tied]
        ends = np.ones((tied.size, S), bool)
        ends[:, :-1] = differs[tied]
        first = np.maximum.accumulate(np.where(starts, pos, 0), axis=1)
        last = np.minimum.accumulate(np.where(ends, pos, S - 1)[:, ::-1], axis=1)[:, ::-1]
        sorted_ranks[tied] = (first + last) / 2 + 1
    ranks = np.empty((n, S))
    np.put_along_axis(ranks, order, sorted_ranks, axis=1)
    return ndtri((ranks.T - 3 / 8) / (S - 2 * 3 / 8 + 1))


def split_rhat(means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank-normalised split R-hat of each feature of ``means (chains, nb, n)`` and the lag-1
    autocorrelation of its batch means within the split chains: ``(n,)`` each. R-hat is NaN
    for a feature constant over every batch, inf for one constant within every split chain
    but not across them. The autocorrelation is pooled over the split chains, each centred at
    its own mean, plus ``1/h`` (the bias of that estimate for independent batch means)."""
    from .ess import _split

    C, nb, n = means.shape
    h = nb // 2
    s = _split(means[:, :2 * h])                                     # (2C, h, n)
    M = s.shape[0]
    live = np.ptp(s.reshape(M * h, n), axis=0) > 0
    out, rho = np.full(n, np.nan), np.full(n, np.nan)
    if not live.any():
        return out, rho
    z = normal_scores(s[:, :, live].reshape(M * h, -1)).reshape(M, h, -1)
    W = np.mean(np.var(z, axis=1, ddof=1), axis=0)                    # (live,)
    B_over_h = np.var(z.mean(axis=1), axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        # W at rounding level (every split chain constant): chains that never moved
        out[live] = np.where(W <= 1e-12 * (W + B_over_h), np.inf,
                             np.sqrt(((h - 1) / h * W + B_over_h) / W))
        c = z - z.mean(axis=1, keepdims=True)
        den = np.sum(c * c, axis=(0, 1))
        rho[live] = np.where(den > 0, np.sum(c[:, 1:] * c[:, :-1], axis=(0, 1)) / den
                             + 1.0 / h, np.nan)
    return out, rho


def threshold(split_chains: int, h: int, features: int, inflation: float = 1.0,
              alpha: float = ALPHA) -> float:
    """The R-hat above which chains count as not mixed: ``sqrt((h − 1 + κ F_q) / h)``, ``F_q``
    the ``1 − alpha/features`` quantile of ``F(split_chains − 1, split_chains (h − 1))``, ``κ``
    = ``inflation`` (the variance of a split chain's mean over what independent batch means
    would give), at least :data:`RHAT_FLOOR`."""
    from scipy.special import fdtri

    q = 1.0 - alpha / max(features, 1)
    f = float(fdtri(split_chains - 1, split_chains * (h - 1), q))
    return max(RHAT_FLOOR, math.sqrt((h - 1 + inflation * f) / h))


def mixing(legs: list[dict]) -> dict:
    """``{"rhat": max over features, "threshold", "mixed": bool or None, "split_chains",
    "half": h}`` of one clock's legs (None for ``mixed`` when too few batches)."""
    means = aligned_batches(legs)
    if means is None:
        return {"rhat": math.nan, "threshold": math.nan, "mixed": None, "split_chains": 0,
                "half": 0}
    r, rho = split_rhat(means)
    live = np.isfinite(r) | np.isinf(r)
    h, M = means.shape[1] // 2, 2 * means.shape[0]
    if not live.any():            # every feature constant everywhere: the chains agree
        return {"rhat": 1.0, "threshold": RHAT_FLOOR, "mixed": True, "split_chains": M,
                "half": h, "inflation": 1.0}
    rmax = float(np.max(r[live]))
    kappa = inflation(rho[live])
    thr = threshold(M, h, int(live.sum()), kappa)
    return {"rhat": rmax, "threshold": thr, "mixed": bool(rmax <= thr), "split_chains": M,
            "half": h, "inflation": kappa}


def inflation(rho: np.ndarray) -> float:
    """``κ = 1 + 2 ρ₁``, ``ρ₁`` the median over features of the batch means' lag-1
    autocorrelation within split chains, between 1 and :data:`MAX_INFLATION`: batches
    shorter than a few autocorrelation times make neighbouring batch means correlated, so a
    chain's mean varies ``κ`` times more than independent batch means say."""
    rho = rho[np.isfinite(rho)]
    if not len(rho):
        return 1.0
    return float(min(MAX_INFLATION, max(1.0, 1.0 + 2.0 * float(np.median(rho)))))
