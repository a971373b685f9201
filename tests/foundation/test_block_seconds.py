"""A time-budgeted stream whose blocks end on sampling time (``block_seconds``)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from mixlab.run.streams import run_stream
from mixlab.runfile.store import RunStore

STEP = 0.002          # each step sleeps this long (at least)


class _Sleeper:
    chains = 2

    def init(self, rng):
        return {"x": np.zeros(2)}

    def step(self, state, rng):
        time.sleep(STEP)
        return state, {"x": rng.random(2)}, {}


class _Blocks:
    """An evaluator that keeps each block's draw count and end time."""

    metric, series = "blocks", "s"

    def __init__(self):
        self.blocks: list[tuple[int, float]] = []

    def update(self, draws, count, seconds):
        self.blocks.append((draws["x"].shape[1], seconds))

    def curve(self):
        return np.zeros(1), np.zeros(1), None

    def state(self):
        return {}

    def load_state(self, state):
        pass


def test_blocks_end_after_block_seconds_of_sampling(tmp_path):
    ev = _Blocks()
    store = RunStore(tmp_path / "run")
    try:
        res = run_stream(store, "s", _Sleeper(), np.random.default_rng(0), seconds=0.1,
                         evaluators=[ev], block_seconds=0.02)
    finally:
        store.close()
    sizes = [n for n, _ in ev.blocks]
    assert sum(sizes) == res.draws and len(ev.blocks) >= 2
    # a block ends at its first draw past 0.02 s of sampling: with steps of at least 2 ms that
    # is at most 10 draws (the default block would have held them all, up to 1,000)
    assert max(sizes) <= 10
    ends = [0.0] + [t for _, t in ev.blocks]
    assert all(b - a >= 0.02 for a, b in zip(ends[:-2], ends[1:-1]))


def test_block_seconds_takes_a_budget_in_seconds_alone(tmp_path):
    store = RunStore(tmp_path / "run")
    try:
        with pytest.raises(ValueError, match="block_seconds"):
            run_stream(store, "s", _Sleeper(), np.random.default_rng(0), draws=10,
                       block_seconds=0.02)
    finally:
        store.close()
