"""Experiments for the ``mixlab run -j`` tests (loaded as a spec plugin): several random-walk
streams declared independent, and a chain of streams that depend on each other.

With ``witness: true`` each draw's stats record the process that sampled it and the wall clock,
so a test can tell which streams ran in a worker and whether they overlapped in time."""

from __future__ import annotations

import os
import time

import numpy as np

from mixlab.api import Param, experiment
from mixlab.toy.generic import GaussianRWM, MeanError


class Witnessed(GaussianRWM):
    def step(self, state, rng):
        state, draws, stats = super().step(state, rng)
        return state, draws, {**stats, "pid": float(os.getpid()), "clock": time.time()}


SCHEMA = {
    "streams": Param(3, int, lo=1, help="independent streams"),
    "draws": Param(None, int, lo=1, nullable=True, help="draws per chain per stream"),
    "seconds": Param(None, float, lo=0, lo_open=True, nullable=True, help="seconds per stream"),
    "block": Param(50, int, lo=1),
    "witness": Param(False, bool, help="record each draw's process id and wall clock"),
    "fail": Param(None, int, nullable=True, help="this stream's sampler raises after 100 draws"),
}


class Failing(GaussianRWM):
    def step(self, state, rng):
        state, draws, stats = super().step(state, rng)
        self.steps = getattr(self, "steps", 0) + 1
        if self.steps > 100:
            raise FloatingPointError("the sampler diverged (planted by the test)")
        return state, draws, stats


def _sampler(p, i):
    cls = Witnessed if p["witness"] else Failing if p["fail"] == i else GaussianRWM
    return cls(3, 2, 0.8, np.linspace(1.0, 2.0 + i, 3))


@experiment("jobs_test.independent", schema=SCHEMA, help="independent streams")
def run_independent(ctx) -> None:
    p = ctx.params
    evs, handles = {}, {}
    with ctx.parallel():
        for i in range(p["streams"]):
            ev = MeanError(f"s{i}", p["draws"] or 10**6)
            handles[i] = ctx.stream(f"s{i}", _sampler(p, i), draws=p["draws"],
                                    seconds=p["seconds"], evaluators=[ev], block=p["block"])
            evs[i] = ev
    for i, r in handles.items():
        ctx.store.set_result(f"s{i}/draws", r.draws)
        ctx.store.set_result(f"s{i}/final_error", evs[i].ys[-1])
        ctx.store.set_result(f"s{i}/x_end", r.state["x"])


@experiment("jobs_test.dependent", schema=SCHEMA, help="each stream starts where the last ended")
def run_dependent(ctx) -> None:
    p = ctx.params
    start = None
    for i in range(p["streams"]):
        sampler = _sampler(p, 0)
        if start is not None:
            sampler.init = lambda rng, s=start: {k: v.copy() for k, v in s.items()}
        r = ctx.stream(f"s{i}", sampler, draws=p["draws"], seconds=p["seconds"],
                       block=p["block"])
        start = r.state
        ctx.store.set_result(f"s{i}/x_end", r.state["x"])
