"""Independent stages under ``-j N`` (mixlab.run.stages): computed in other processes,
written in their given order, a failing stage's exception raised in the parent (a real
experiment's stages: tests/spinglass/test_stages_under_jobs.py)."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from mixlab.run.stages import compute


def _stage(i: int, delay: float):
    def fn():
        time.sleep(delay)
        return {"pid": np.array(os.getpid()), "i": np.array(i)}
    return fn


def test_stages_run_in_workers_and_are_written_in_order():
    written = []
    # the first stage is the slowest: the others finish first and wait for it to be written
    stages = [(f"s{i}", _stage(i, d)) for i, d in enumerate([0.6, 0.0, 0.1, 0.0])]
    compute(stages, 2, lambda name, values, built: written.append((name, values)))
    assert [n for n, _ in written] == ["s0", "s1", "s2", "s3"]
    assert [int(v["i"]) for _, v in written] == [0, 1, 2, 3]
    assert all(int(v["pid"]) != os.getpid() for _, v in written)


def test_a_failing_stage_raises_in_the_parent_and_stops_the_others():
    def bad():
        raise ValueError("no such coupling")
    written = []
    with pytest.raises(ValueError, match="no such coupling"):
        compute([("slow", _stage(0, 30.0)), ("bad", bad)], 2,
                lambda name, values, built: written.append(name))
    assert written == []
