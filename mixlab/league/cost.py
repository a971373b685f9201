"""Work: each family's machine-independent cost unit, read from the samplers' own statistics.

Each family declares one per-chain, per-step cost statistic (:func:`mixlab.plugins.families.
cost_statistic`; docs/plugins.md): ``site_updates`` (spinglass, rbm), ``points_read``
(logistic: data points read), ``pair_terms_read`` (mrf). A sampler whose steps do not report
its family's statistic has no work: the league runs it at equal wall time only, and its table
says "ranked by time alone".

:class:`WorkMeter` is a stream's ``after_block`` (mixlab.run.streams.run_stream): each step's cost
travels with the draws (draw key ``league_work``, ``(chains, n)`` float64 a block), since
evaluators see draws, not statistics; it runs once a block, outside the sampling clock, so no
sampler's seconds pay for it.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..plugins.families import cost_statistic
from ..plugins.sampler_builds import code_failure

#: family -> the unit of its work, in words
UNITS = {"spinglass": "site updates", "rbm": "site updates", "logistic": "data points read",
         "mrf": "pair terms read"}

WORK_KEY = "league_work"

#: a work probe stops after 2 steps once it has taken this long (seconds)
PROBE_SECONDS = 0.05

clock = time.perf_counter     # the probe's clock (a test replaces it)


def unit(family: str) -> str:
    return UNITS.get(family, cost_statistic(family))


def step_cost(family: str, stats: dict, chains: int) -> np.ndarray | None:
    """Work of one step per chain ``(chains,)`` from the step's ``stats``, or None when the
    sampler does not report its family's cost statistic."""
    name = cost_statistic(family)
    if name not in stats:
        return None
    return np.broadcast_to(np.asarray(stats[name], np.float64), (chains,)).astype(np.float64)


class WorkMeter:
    """``after_block`` of a league stream: the block's draws with each step's cost added as
    ``league_work (chains, n)`` (NaN where the sampler reported no cost statistic)."""

    def __init__(self, family: str, chains: int):
        self.family, self.chains = family, int(chains)

    def __call__(self, block: dict, stats: dict) -> dict:
        """``block {key: (chains, n, ...)}``, ``stats {stat: (n,) or (n, chains)}``."""
        n = next(iter(block.values())).shape[1] if block else 0
        cost = stats.get(cost_statistic(self.family))
        if cost is None:
            work = np.full((self.chains, n), np.nan)
        else:       # a per-step scalar or a value per chain: (n, chains), as chain-major rows
            per_step = np.asarray(cost, np.float64).reshape(n, -1)
            work = np.ascontiguousarray(np.broadcast_to(per_step, (n, self.chains)).T)
        return {**block, WORK_KEY: work}


def probe_cost(family: str, sampler: Any, rng: np.random.Generator, steps: int = 5,
               seconds: float = PROBE_SECONDS) -> tuple[float, bool] | None:
    """``(mean work per step over all chains, whether it varied)`` over at most ``steps`` steps
    of a probe on its own generator (the league's streams never see it), or None when the
    sampler reports no cost statistic of its family. A slow sampler is probed for 2 steps (the
    fewest that show a varying cost) once the probe has taken ``seconds``: a perturb-and-MAP
    step on the large grids takes up to seconds, and the probe is outside every budget."""
    try:
        state = sampler.init(rng)
    except Exception as exc:
        raise _named(sampler, exc, 0) from exc
    costs = []
    t0 = clock()
    for i in range(1, steps + 1):
        try:
            state, _, stats = sampler.step(state, rng)
        except Exception as exc:
            raise _named(sampler, exc, i) from exc
        c = step_cost(family, stats, int(sampler.chains))
        if c is None:
            return None
        costs.append(float(np.sum(c)))
        if i >= 2 and clock() - t0 >= seconds:
            break
    return float(np.mean(costs)), bool(np.ptp(costs) > 0)


def _named(sampler: Any, exc: Exception, step: int) -> Exception:
    """A plugin's exception in the probe, as the failure naming the plugin and the step (the
    one its streams would give); mixlab's own samplers keep theirs."""
    failure = code_failure(sampler, exc, "cost_probe", step)
    return exc if failure is None else failure
