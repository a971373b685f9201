"""The order a league's cells start in (mixlab.league.schedule): one cell of each target
first, then longest expected first (those that would wait for a truth last), and once every
length is expected, the cell that ends the league earliest by the lengths the finished cells
predict (budget + target factor x sampler factor)."""

from __future__ import annotations

import math

import pytest

from mixlab.league.schedule import StartOrder


def _cells(pairs: str) -> list[dict]:
    """``"Ag Af Bg"`` -> cells of target A, B and sampler g, f, in that table order."""
    return [{"target": {"name": p[0]}, "label": p[1]} for p in pairs.split()]


def test_one_cell_of_each_target_first_then_longest_then_those_that_would_wait():
    """One cell of each target first (their truths computed side by side), then longest
    expected first (a target with none finished: its length unknown, counting as longest),
    and last the cells of a target whose started cells are all still running (the first may
    be computing the truth they would wait for)."""
    order = StartOrder(_cells("Ag Af Bg Bf Cg"), workers=2).order
    assert order([0, 1, 2, 3, 4], {}) == [0, 2, 4, 1, 3]
    assert order([1, 3, 4], {}) == [4, 1, 3]                     # C not started yet
    assert order([1, 3], {0: 5.0}, {2: 1.0}) == [1, 3]           # B running, none finished
    assert order([1, 3], {0: 5.0}) == [3, 1]     # B: none running (its cell ran before)
    assert order([1, 3], {0: 5.0, 2: 1.0, 4: 1.0}) == [1, 3]     # A took longer than B
    assert order([1, 3], {0: 1.0, 2: 5.0, 4: 1.0}) == [3, 1]


def test_a_cells_expected_length_is_its_budget_plus_target_times_sampler_factors():
    """Budget 4 s a cell. Beyond it A's Gibbs cell took 2 s and its f cell 0.5 s, so f costs a
    quarter of Gibbs; B's Gibbs cell took 4 s beyond it, so B's f cell is expected at 4 + 1 s.
    Sampler h, with none finished, counts as the average sampler (its factor the geometric
    mean of g's and f's: half of g's), so B's h cell is expected at 4 + 2 s. A target with
    none finished: inf."""
    cells = [{**c, "seeds": 2, "seconds": 2.0} for c in _cells("Ag Af Bg Bf Bh")]
    expect = StartOrder(cells, workers=2).expected({0: 6.0, 1: 4.5, 2: 8.0})
    assert expect(3) == pytest.approx(5.0, rel=1e-6)
    assert expect(1) == pytest.approx(4.5, rel=1e-6)      # the fit reproduces A's f cell
    assert expect(4) == pytest.approx(6.0, rel=1e-6)      # B's factor 2 x the average sampler's 1
    assert math.isinf(StartOrder(_cells("Ag Bg"), 2).expected({0: 3.0})(1))


def test_a_cell_that_failed_at_once_predicts_its_samplers_other_cells_short():
    """A sampler whose first cell failed within 0.1 s (its excess floored at 1% of the budget)
    is expected short on every target, not at the target's mean."""
    cells = [{**c, "seeds": 1, "seconds": 5.0} for c in _cells("Ag Ax Bg Bx")]
    expect = StartOrder(cells, workers=2).expected({0: 7.0, 1: 0.1, 2: 7.0})
    assert expect(3) < 5.5 < expect(2)


def test_the_cell_that_ends_the_league_earliest_starts_first():
    """Two workers; the other one's cell has 1 s left, and cells of 3, 2 and 2 s wait.
    Longest first ends the league at 5 s (3 here; 2 there from 1 to 3; 2 from 3 to 5); a 2 s
    cell here ends it at 4 s (2 here; 3 there from 1 to 4; 2 here from 2 to 4)."""
    cells = _cells("Pa Pb Qc Qd Re Rf Sg Sh")
    took = {0: 3.0, 2: 2.0, 4: 2.0, 6: 2.0}       # each target's length: its finished cell's
    schedule = StartOrder(cells, workers=2)
    order = schedule.order
    assert [schedule.expected(took)(i) for i in (1, 3, 5, 7)] == pytest.approx([3.0, 2.0, 2.0, 2.0])
    assert order([1, 3, 5], took, {7: 1.0}) == [3, 1, 5]
    # the other worker free now: 3 here and 2 + 2 there end at 4 either way; longest first
    assert order([1, 3, 5], took, {7: 2.5}) == [1, 3, 5]
    # one worker: every order ends at the same time; longest first
    assert StartOrder(cells, workers=1).order([1, 3, 5], took) == [1, 3, 5]


def test_a_long_queue_starts_longest_expected_first(monkeypatch):
    """Past LOOKAHEAD_MAX waiting cells the choice is longest expected first (each earliest-end
    choice simulates the rest once per distinct length)."""
    from mixlab.league import schedule

    cells = _cells("Pa Pb Qc Qd Re Rf Sg Sh")
    took = {0: 3.0, 2: 2.0, 4: 2.0, 6: 2.0}
    monkeypatch.setattr(schedule, "LOOKAHEAD_MAX", 2)
    assert StartOrder(cells, workers=2).order([1, 3, 5], took, {7: 1.0}) == [1, 3, 5]
