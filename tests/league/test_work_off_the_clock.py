"""A league stream reads each step's work outside the sampling clock (the stream's
``after_block``), so at equal time every sampler's seconds count its own steps alone."""

from __future__ import annotations

import numpy as np
import pytest

from mixlab.league.cost import WORK_KEY, WorkMeter
from mixlab.run import streams as runner
from mixlab.run.streams import run_stream
from mixlab.runfile.store import RunStore


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

    def meter_as_slow_as_a_step(block, stats):
        clock.now += 1.0
        return meter(block, stats)

    ev = _Work()
    store = RunStore(tmp_path / "run")
    try:
        with monkeypatch.context() as m:    # the fake clock for the stream alone
            m.setattr(runner.time, "perf_counter", clock)
            res = run_stream(store, "s", _OneSecondSteps(clock), np.random.default_rng(0),
                             seconds=10.0, evaluators=[ev], record=False, block=1,
                             after_block=meter_as_slow_as_a_step)
    finally:
        store.close()
    # 10 s of sampling buy 10 steps; with the meter on the clock they would buy 5
    assert (res.draws, res.seconds) == (10, 10.0)
    assert clock.now == 20.0
    assert ev.work == 10 * 2 * 3.0                  # every step's work reached the evaluator


def test_a_sampler_without_the_cost_statistic_carries_nan_work():
    block = WorkMeter("spinglass", 3)({"x": np.zeros((3, 4))}, {"accept": np.ones((4, 3))})
    assert np.isnan(block[WORK_KEY]).all() and block[WORK_KEY].shape == (3, 4)


def test_the_meter_puts_each_steps_cost_under_its_draw():
    """Per-chain costs (n, chains) and per-step scalars (n,) alike become (chains, n)."""
    block = {"x": np.zeros((2, 3, 5))}
    per_chain = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])       # step i, chain c
    got = WorkMeter("spinglass", 2)(block, {"site_updates": per_chain})[WORK_KEY]
    np.testing.assert_array_equal(got, per_chain.T)
    got = WorkMeter("spinglass", 2)(block, {"site_updates": np.array([7.0, 8.0, 9.0])})
    np.testing.assert_array_equal(got[WORK_KEY], [[7.0, 8.0, 9.0], [7.0, 8.0, 9.0]])
    assert got["x"] is block["x"]


class _SometimesSilent(_OneSecondSteps):
    """Reports its site updates on odd steps only."""

    def step(self, state, rng):
        self.n = getattr(self, "n", 0) + 1
        state, draws, stats = super().step(state, rng)
        return state, draws, stats if self.n % 2 else {}


def test_a_step_that_reports_no_cost_carries_nan_work(tmp_path):
    ev = _Work()
    seen = []

    def meter(block, stats):
        seen.append(stats["site_updates"].copy())
        return WorkMeter("spinglass", 2)(block, stats)

    store = RunStore(tmp_path / "run")
    try:
        run_stream(store, "s", _SometimesSilent(_Clock()), np.random.default_rng(0), draws=4,
                   evaluators=[ev], record=False, block=4, after_block=meter)
    finally:
        store.close()
    np.testing.assert_array_equal(seen[0][:, 0], [3.0, np.nan, 3.0, np.nan])


def test_after_block_is_refused_with_thinning(tmp_path):
    store = RunStore(tmp_path / "run")
    try:
        with pytest.raises(ValueError, match="thin = 1"):
            run_stream(store, "s", _OneSecondSteps(_Clock()), np.random.default_rng(0),
                       draws=4, thin=2, after_block=WorkMeter("spinglass", 2))
    finally:
        store.close()


class _CountedSteps:
    """Steps of a given cost each (``costs[i]`` site updates a chain at step i), each taking
    ``step_seconds`` of the fake clock; ``taken`` counts them."""

    chains = 2

    def __init__(self, clock: _Clock, step_seconds: float, costs: list[float]):
        self.clock, self.step_seconds, self.costs, self.taken = clock, step_seconds, costs, 0

    def init(self, rng):
        return {}

    def step(self, state, rng):
        self.clock.now += self.step_seconds
        c = self.costs[self.taken]
        self.taken += 1
        return state, {"x": np.zeros(2)}, {"site_updates": np.full(2, c)}


@pytest.mark.parametrize("step_seconds, taken", [(0.0, 5), (0.001, 5), (0.03, 2), (10.0, 2)])
def test_a_slow_sampler_is_probed_for_two_steps(monkeypatch, step_seconds, taken):
    """The work probe takes 5 steps of a fast sampler and stops after 2 once it has taken
    PROBE_SECONDS (a perturb-and-MAP step on a large grid takes seconds); its answer is the
    mean work of the steps it took, and whether their work varied."""
    from mixlab.league import cost

    clock = _Clock()
    monkeypatch.setattr(cost, "clock", clock)
    sampler = _CountedSteps(clock, step_seconds, [3.0, 5.0, 3.0, 3.0, 3.0])
    per_step, varies = cost.probe_cost("spinglass", sampler, np.random.default_rng(0))
    assert sampler.taken == taken
    assert per_step == pytest.approx(2 * np.mean(sampler.costs[:taken]))   # both chains
    assert varies
    same = _CountedSteps(clock, step_seconds, [4.0] * 5)
    assert cost.probe_cost("spinglass", same, np.random.default_rng(0)) == (8.0, False)
