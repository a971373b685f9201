"""Work: each family's machine-independent cost unit, read from the samplers' own statistics.

A sampler reports its cost per step in a per-chain statistic (docs/plugins.md):

| family | unit | statistic (per chain, per step) |
|---|---|---|
| spinglass | site updates | ``site_updates`` |
| rbm | site updates (visible + hidden units resampled) | ``site_updates`` |
| logistic | data points read | ``data_points``, else ``data_used`` x N (fraction of the N points) |
| mrf | pair terms read | ``pair_terms``, else ``data_used`` x N (fraction of the N terms) |

A sampler that reports none of its family's statistics has no work: the league runs it at
equal wall time only, and its table says "ranked by time alone".

:class:`WorkMeter` wraps a sampler so that each step's cost travels with the draws (draw key
``league_work``, ``(chains,)`` float64): evaluators see draws, not statistics.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..contract import checked

#: family -> (unit, statistic names in order of preference, whether the name is a fraction of N)
UNITS = {
    "spinglass": ("site updates", (("site_updates", False),)),
    "rbm": ("site updates", (("site_updates", False),)),
    "logistic": ("data points read", (("data_points", False), ("data_used", True))),
    "mrf": ("pair terms read", (("pair_terms", False), ("data_used", True))),
}

WORK_KEY = "league_work"


def unit(family: str) -> str:
    return UNITS[family][0]


def step_cost(family: str, stats: dict, chains: int, n_total: float | None) -> np.ndarray | None:
    """Work of one step per chain ``(chains,)`` from the step's ``stats``, or None when the
    sampler reports no cost statistic of its family (``n_total``: N for a fraction)."""
    for name, fraction in UNITS[family][1]:
        if name in stats:
            if fraction and n_total is None:
                continue
            v = np.broadcast_to(np.asarray(stats[name], np.float64), (chains,))
            return v * (n_total if fraction else 1.0)
    return None


class WorkMeter:
    """``sampler`` with its step's cost added to the draws as ``league_work (chains,)``.

    The wrapped sampler is contract-checked under its own name first, so a plugin's mistake is
    reported against the plugin, not against this wrapper."""

    def __init__(self, sampler: Any, family: str, label: str, n_total: float | None = None):
        self.inner = checked(sampler, label)
        self.family, self.n_total = family, n_total
        self.chains = int(sampler.chains)

    def init(self, rng: np.random.Generator) -> dict:
        return self.inner.init(rng)

    def step(self, state: dict, rng: np.random.Generator):
        state, draws, stats = self.inner.step(state, rng)
        cost = step_cost(self.family, stats, self.chains, self.n_total)
        draws = dict(draws)
        draws[WORK_KEY] = np.full(self.chains, np.nan) if cost is None else cost
        return state, draws, stats


def probe_cost(family: str, sampler: Any, rng: np.random.Generator, steps: int = 5,
               n_total: float | None = None) -> tuple[float, bool] | None:
    """``(mean work per step over all chains, whether it varied)`` over ``steps`` steps of a
    probe on its own generator (the league's streams never see it), or None when the sampler
    reports no cost statistic of its family."""
    state = sampler.init(rng)
    costs = []
    for _ in range(steps):
        state, _, stats = sampler.step(state, rng)
        c = step_cost(family, stats, int(sampler.chains), n_total)
        if c is None:
            return None
        costs.append(float(np.sum(c)))
    return float(np.mean(costs)), bool(np.ptp(costs) > 0)
