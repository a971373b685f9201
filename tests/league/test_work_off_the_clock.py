"""A league stream reads each step's work outside the sampling clock (the stream's
``after_step``), so at equal time every sampler's seconds count its own steps alone."""

from __future__ import annotations

import numpy as np
import pytest

from mixlab import runner
from mixlab.league.cost import WORK_KEY, WorkMeter
from mixlab.runner import run_stream
from mixlab.store import RunStore


class _Clock:
    """A clock that moves only when told to."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _OneSecondSteps:
    """Each step takes one second of the fake clock and reports 3 site updates a chain."""

    chains = 2

    def __init__(self, clock: _Clock):
        self.clock = clock

    def init(self, rng):
        return {"x": np.zeros(2)}

    def step(self, state, rng):
        self.clock.now += 1.0
        return state, {"x": rng.random(2)}, {"site_updates": np.full(2, 3.0)}


class _Work:
    """An evaluator that sums the work the draws carry."""

    metric, series = "work", "s"

    def __init__(self):
        self.work = 0.0

    def update(self, draws, count, seconds):
        self.work += float(np.sum(draws[WORK_KEY]))

    def curve(self):
        return np.zeros(1), np.zeros(1), None

    def state(self):
        return {"work": np.float64(self.work)}

    def load_state(self, state):
        self.work = float(state["work"])


def test_the_work_meter_takes_no_sampling_time(tmp_path, monkeypatch):
    clock = _Clock()
    meter = WorkMeter("spinglass", 2)

    def meter_as_slow_as_a_step(draws, stats):
        clock.now += 1.0
        return meter(draws, stats)

    ev = _Work()
    store = RunStore(tmp_path / "run")
    try:
        with monkeypatch.context() as m:    # the fake clock for the stream alone
            m.setattr(runner.time, "perf_counter", clock)
            res = run_stream(store, "s", _OneSecondSteps(clock), np.random.default_rng(0),
                             seconds=10.0, evaluators=[ev], record=False,
                             after_step=meter_as_slow_as_a_step)
    finally:
        store.close()
    # 10 s of sampling buy 10 steps; with the meter on the clock they would buy 5
    assert (res.draws, res.seconds) == (10, 10.0)
    assert clock.now == 20.0
    assert ev.work == 10 * 2 * 3.0                  # every step's work reached the evaluator


def test_a_sampler_without_the_cost_statistic_carries_nan_work():
    draws = WorkMeter("spinglass", 3)({"x": np.zeros((3, 4))}, {"accept": np.ones(3)})
    assert np.isnan(draws[WORK_KEY]).all() and draws[WORK_KEY].shape == (3,)


def test_after_step_is_refused_with_thinning(tmp_path):
    store = RunStore(tmp_path / "run")
    try:
        with pytest.raises(ValueError, match="thin = 1"):
            run_stream(store, "s", _OneSecondSteps(_Clock()), np.random.default_rng(0),
                       draws=4, thin=2, after_step=WorkMeter("spinglass", 2))
    finally:
        store.close()
