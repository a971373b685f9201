"""A sweep starts its points in the order its ordering policy (mixlab.launch.order) asks for,
told the wall time of each point finished so far and of each running, one process or a pool; and
calls the policy's ``idle`` once a worker of the pool has no point left to start."""

from __future__ import annotations

import time

import pytest

from mixlab.launch.launchers import choose
from mixlab.launch.order import Order
from mixlab.plugins import registry
from mixlab.spec.schema import Param
from mixlab.sweep.grid import plan
from mixlab.sweep.launch import run_points


def run_sweep(sweep_dir, specs, grid, summary, workers=1, order=None):
    """The sweep's points on forked workers (they see this process's test kind)."""
    with choose(workers, None, "fork") as launcher:
        return run_points(sweep_dir, specs, grid, summary, launcher, order)


class Calls(Order):
    def __init__(self, fn=None, ended=None, idle=None):
        self.fn, self.on_end, self.on_idle = fn, ended, idle

    def order(self, left, took, running):
        return self.fn(left, took, running) if self.fn else list(left)

    def ended(self, i, end):
        if self.on_end:
            self.on_end(i)

    def idle(self):
        if self.on_idle:
            self.on_idle()


def _sleepy(ctx):
    time.sleep(ctx.params["x"])
    ctx.store.set_result("x", ctx.params["x"])


@pytest.fixture(autouse=True)
def sleepy_kind():
    """Experiment kind 'test.sleepy_point' (this process and the workers it forks)."""
    registry.experiment("test.sleepy_point", schema={
        "x": Param(0.0, float, help="seconds the point sleeps")},
        help="test only: sleeps x seconds")(_sleepy)
    yield
    registry._EXPERIMENTS.pop("test.sleepy_point", None)


def _sweep(tmp_path, xs):
    spec = tmp_path / "sleepy.yaml"
    spec.write_text("experiment: test.sleepy_point\nname: sleepy\nsweep: {summary: [x]}\n")
    return plan(str(spec), (f"x={','.join(map(str, xs))}",), scale="quick", seed=None,
                out=str(tmp_path / "sw"))


@pytest.mark.parametrize("workers", [1, 2])
def test_points_start_in_the_asked_order_and_the_order_sees_their_times(tmp_path, workers):
    xs = [0.0, 0.3, 0.0, 0.0, 0.0]
    sweep_dir, specs, summary, grid = _sweep(tmp_path, xs)
    calls = []

    def reverse(left, took, running):
        calls.append((list(left), dict(took), dict(running)))
        return sorted(left, reverse=True)

    outcome = run_sweep(sweep_dir, specs, grid, summary, workers=workers, order=Calls(reverse))
    assert outcome.status == ["complete"] * 5
    assert [c[0] for c in calls] == [[0, 1, 2, 3, 4], [0, 1, 2, 3], [0, 1, 2], [0, 1], [0]]
    # each call is told of the points finished before it, and how long each took
    final = calls[-1][1]
    if workers == 1:
        assert [sorted(c[1]) for c in calls] == [[], [4], [3, 4], [2, 3, 4], [1, 2, 3, 4]]
        assert final[1] >= 0.3 > max(final[i] for i in (2, 3, 4))
        assert all(c[2] == {} for c in calls)              # nothing runs beside the next
    else:        # two at a time: the last start comes after at least one of the first two ended
        assert [c[1] for c in calls[:2]] == [{}, {}]
        assert calls[0][2] == {} and list(calls[1][2]) == [4]     # point 4 started first
        assert set(final) <= {1, 2, 3, 4} and len(final) >= 2
        assert all(t > 0 for t in final.values())
        for _, took, running in calls:  # each point started is running or finished, not both
            assert not set(took) & set(running) and all(t >= 0 for t in running.values())
        assert 1 in calls[-1][2]                  # the 0.3 s point, running as 0 is to start


def test_an_order_that_drops_a_point_is_refused(tmp_path):
    sweep_dir, specs, summary, grid = _sweep(tmp_path, [0.0, 0.0])
    with pytest.raises(ValueError, match="left, reordered"):
        run_sweep(sweep_dir, specs, grid, summary,
                  order=Calls(lambda left, took, running: left[:1]))


def test_when_idle_is_called_once_a_worker_has_no_point_left(tmp_path):
    """With two workers and three points, the first two ending leave the third to start; only
    after that does a point's end leave a worker without one: the policy's ``idle`` is called then (as
    each of the last two ends), each time after that point's bookkeeping."""
    sweep_dir, specs, summary, grid = _sweep(tmp_path, [0.0, 0.6, 0.2])
    seen, recorded = [], []

    run_sweep(sweep_dir, specs, grid, summary, workers=2,
              order=Calls(ended=recorded.append, idle=lambda: seen.append(list(recorded))))
    assert len(seen) == 2                           # not when point 0 ended (2 was to start)
    assert seen[0][0] == 0 and seen[0][-1] == 2 and seen[1] == [0, 2, 1]
