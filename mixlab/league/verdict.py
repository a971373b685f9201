"""A cell's verdict against exact truth: ``ok``, ``not mixed`` or ``biased`` (or none).

Two chains that miss the truth can miss it for two reasons: they have not mixed yet, or they
sample the wrong distribution. Only the first kind disagree with replicas started elsewhere,
or keep getting better with more budget. So, per clock (equal time, equal work), on every
chain of every seed (the chains start overdispersed: mixlab.league.targets):

1. **Mixing** (mixlab.league.mixing): rank-normalised split R-hat of the yardstick's batch
   means, max over its features, against the null quantile of that max.
2. **Bias** (mixlab.league.bias): the error against the sampler's own MCSE (χ² over features
   and seeds, and the error at least ``RATIO_FLAG`` times what the MCSE explains).
3. **Trend**: the slope of log error against log budget between half and the whole budget,
   median over seeds. A sampler with the wrong stationary distribution whose error is
   ``k`` times its MC error has a slope of about ``−1/(2k²)`` there (its error
   ``sqrt(bias² + mc²)``, ``mc² ∝ 1/budget``): above −1/8 when flagged (``k ≥ 2``). A
   slope below :data:`FALLING_SLOPE` says the error is still falling faster than a plateau
   allows: the chains are still converging.

The clock decided on is the one whose chains mixed best: a clock that passes the mixing
check before one that does not, then the larger bulk ESS (median over seeds), then the
smaller R-hat. On it:

- R-hat above its threshold → ``not mixed``;
- bias test fires and the error still falls → ``not mixed``;
- bias test fires on a plateau → ``biased`` (only where R-hat could be computed: with fewer
  than 4 batches per chain, no verdict);
- otherwise → ``ok``. An ``ok`` states its power when it is weak: a bias smaller than
  ``RATIO_FLAG`` times the error the MCSE explains passes unseen, and where that exceeds the
  target's stated error the note says so (too few draws to judge at that size).

``not mixed`` gives the budget that would be needed, as a multiple of the clock's budget: from
the ESS (each chain's bulk ESS at least :data:`ESS_PER_CHAIN`: ``ESS_PER_CHAIN · chains /
ESS``, the ESS of the stream's per-draw summaries, which chains that disagree keep low) and,
when the trend decided, from the trend (the error falling at slope ``s`` reaches the MC error
after ``ratio^(1/|s|)`` times the budget), the larger of the two, capped at
:data:`MAX_NEEDED`; none when chains never moved (no ESS) and R-hat decided.
"""

from __future__ import annotations

import math

import numpy as np

from . import bias
from .mixing import mixing

#: the slope of log error per log budget below which the error counts as still falling
FALLING_SLOPE = -0.25
#: the bulk ESS per chain that R-hat needs to be trusted (Vehtari et al. 2021, §4.3)
ESS_PER_CHAIN = 100
#: the largest budget multiple a note states (past it: "≥")
MAX_NEEDED = 1e4
CLOCK_WORDS = {"time": "equal time", "work": "equal work"}

NO_VERDICT = {"verdict": "", "clock": "", "note": "", "rhat": math.nan,
              "rhat_threshold": math.nan, "budget_needed": math.nan, "slope": math.nan}


def slope(legs: list[dict], fractions: list[float]) -> float:
    """Median over seeds of ``log(e(1) / e(f)) / log(1 / f)``, ``f`` the budget fraction
    nearest to 1/2 below 1, ``e`` the error at a fraction (NaN without two fractions)."""
    fr = [float(f) for f in fractions]
    below = [i for i, f in enumerate(fr) if f < 1.0]
    if not below or 1.0 not in fr:
        return math.nan
    i = min(below, key=lambda j: abs(fr[j] - 0.5))
    full = fr.index(1.0)
    out = []
    for leg in legs:
        a, b = float(leg["marks"][i]), float(leg["marks"][full])
        if a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b):
            out.append(math.log(b / a) / math.log(1.0 / fr[i]))
    return float(np.median(out)) if out else math.nan


def _ess(legs: list[dict]) -> float:
    v = [leg["ess"] for leg in legs if np.isfinite(leg.get("ess", math.nan))]
    return float(np.median(v)) if v else math.nan


def _chains(legs: list[dict]) -> int:
    return int(np.asarray(legs[0]["batches"]).shape[0]) if legs and \
        legs[0].get("batches") is not None else 0


def _choose(per_clock: dict) -> str:
    """The clock whose chains mixed best (see the module doc)."""
    def key(c):
        m = per_clock[c]["mixing"]
        ess = per_clock[c]["ess"]
        return (0 if m["mixed"] else 1 if m["mixed"] is False else 2,
                -(ess if math.isfinite(ess) else -1.0),
                m["rhat"] if math.isfinite(m["rhat"]) else math.inf)
    return min(per_clock, key=key)


def _needed(legs: list[dict], ess: float, ratio: float, s: float, trend: bool) -> float:
    """The budget multiple (> 1) the ESS suggests and, when the trend decided (``trend``), the
    trend too (the larger); NaN when neither says (chains that never moved have no ESS, and
    an error that does not fall says nothing of when it will)."""
    out = []
    chains = _chains(legs)
    if math.isfinite(ess) and ess > 0 and chains:
        out.append(ESS_PER_CHAIN * chains / ess)
    if trend and math.isfinite(s) and s < FALLING_SLOPE and math.isfinite(ratio) and ratio > 1:
        out.append(math.exp(min(math.log(ratio) / -s, math.log(MAX_NEEDED))))
    out = [min(x, MAX_NEEDED) for x in out if math.isfinite(x) and x > 1]
    return float(max(out)) if out else math.nan


def decide(legs_by_clock: dict[str, list[dict]], fractions: list[float],
           exact: bool = True, stated_error: float = math.nan) -> dict:
    """The cell's verdict: ``{"verdict", "clock", "note", "rhat", "rhat_threshold",
    "budget_needed", "slope"}`` from each clock's legs (the cell's ``_leg`` dicts: ``marks``,
    ``estimate``, ``truth``, ``mcse``, ``n_draws``, ``batches (chains, nb, n)``, ``blen``,
    ``ess``); an empty verdict without exact truth or legs. ``stated_error``: the target's
    stated error, against which an ``ok`` states the smallest bias it would have seen."""
    clocks = {c: legs for c, legs in legs_by_clock.items() if legs}
    if not exact or not clocks:
        return dict(NO_VERDICT)
    per = {c: {"mixing": mixing(legs), "ess": _ess(legs)} for c, legs in clocks.items()}
    clock = _choose(per)
    legs, m, ess = clocks[clock], per[clock]["mixing"], per[clock]["ess"]
    b = bias.verdict(legs)
    s = slope(legs, fractions)
    ratio = b["error_over_mc"]
    out = {"clock": clock, "rhat": m["rhat"], "rhat_threshold": m["threshold"],
           "slope": s, "budget_needed": math.nan}
    where = CLOCK_WORDS[clock]
    if m["mixed"] is False:
        need = _needed(legs, ess, ratio, s, trend=False)
        out.update(verdict="not mixed", budget_needed=need,
                   note=f"not mixed at {where}: chains disagree (R-hat {m['rhat']:.3g} > "
                        f"{m['threshold']:.3g}){_need_words(need, ess, legs)}")
    elif b["flag"] == 1 and math.isfinite(s) and s < FALLING_SLOPE:
        need = _needed(legs, ess, ratio, s, trend=True)
        out.update(verdict="not mixed", budget_needed=need,
                   note=f"not mixed at {where}: error {ratio:.3g}x its MC error but still "
                        f"falling (slope {s:.2g}){_need_words(need, ess, legs)}")
    elif b["flag"] == 1 and m["mixed"]:
        out.update(verdict="biased",
                   note=f"biased at {where}: chains agree (R-hat {m['rhat']:.3g}) but the "
                        f"error is {ratio:.3g}x their MC error (p={b['p_value']:.2g})")
    elif b["flag"] == 0:            # explained by its MC error, whether or not R-hat could say
        unseen = bias.RATIO_FLAG * b["mc_error"]
        weak = math.isfinite(unseen) and math.isfinite(stated_error) and unseen > stated_error
        out.update(verdict="ok", note=(f"ok at {where} with few draws: a bias up to "
                                       f"{unseen:.2g} ({bias.RATIO_FLAG:g}x its MC error) would "
                                       f"pass unseen, above the stated error "
                                       f"{stated_error:.2g}") if weak else "")
    else:   # no MCSE, or an error beyond it where too few batches leave mixing unknown
        out.update(verdict="", note="too few draws per chain to tell 'not mixed' from "
                                    "'biased'")
    return out


def _need_words(need: float, ess: float, legs: list[dict]) -> str:
    if not math.isfinite(need):
        return "; needs more budget (ESS and trend do not say how much)"
    how = "ESS" if math.isfinite(ess) and ess > 0 and \
        abs(need - ESS_PER_CHAIN * _chains(legs) / ess) < 1e-9 * need else "trend"
    if need >= MAX_NEEDED:
        return f"; needs ≥ {MAX_NEEDED:.0e}x this budget ({how})"
    if how == "ESS" and ess <= 2 * _chains(legs):
        # each chain is worth at most two draws: the ESS gives a lower bound, not an estimate
        return f"; needs ≥ {need:.2g}x this budget (ESS: each chain worth ≤ 2 draws)"
    if how == "ESS" and any(leg.get("ess_upper") for leg in legs):
        # batches shorter than a few autocorrelation times (chains stuck apart: each batch
        # mean counts as a draw): the ESS is only an upper bound (mixlab.league.ess_stream)
        return f"; needs ≥ {need:.2g}x this budget (ESS from batch means: a floor)"
    return f"; needs ≈ {need:.2g}x this budget ({how})"
