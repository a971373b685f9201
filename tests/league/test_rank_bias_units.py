"""The league's parts with known answers: ranking rules, the yardstick's marks and batch
means, the bias verdict."""

import math

import numpy as np
import pytest

from mixlab.league import bias
from mixlab.league.rank import Entry, rank_target
from mixlab.league.yardstick import MAX_BATCHES, MarginalYardstick


def _entry(name, med, lo, hi, flag=0, work=1):
    res = {"time/error/median": med, "time/error/min": lo, "time/error/max": hi,
           "bias/flag": flag, "has_work": work}
    if work:
        res.update({"work/error/median": med, "work/error/min": lo, "work/error/max": hi})
    return Entry("t", name, "complete", "", res)


def test_ranks_ties_and_bias_order():
    es = [_entry("a", 0.10, 0.09, 0.12), _entry("b", 0.11, 0.115, 0.13),   # overlaps a: tie
          _entry("c", 0.20, 0.19, 0.21), _entry("fast-but-wrong", 0.01, 0.005, 0.02, flag=1),
          _entry("no-cost", 0.05, 0.04, 0.06, work=0),
          Entry("t", "broken", "failed", "boom", {})]
    rank_target(es, "time")
    rank_target(es, "work")
    r = {e.sampler: (e.rank["time"], e.tied["time"]) for e in es}
    assert r["no-cost"] == (1, False)
    assert r["a"] == (2, True) and r["b"] == (2, True)      # seeds cannot separate a and b
    assert r["c"] == (4, False)
    assert r["fast-but-wrong"] == (5, False)                # smallest error, still last
    assert r["broken"] == (None, False)
    w = {e.sampler: e.rank["work"] for e in es}
    assert w["no-cost"] is None and w["a"] == 1 and w["fast-but-wrong"] == 4


def test_an_ess_that_is_only_an_upper_bound_is_printed_with_le():
    """A clock whose ESS came from the batch-means fallback at its floor (``<clock>/ess_upper``
    1): the tables write ``≤`` before its ESS rate, league.csv a 1 in its
    ``*_ess_upper_bound`` column; an estimate, or a cell written before the flag existed,
    prints the bare number."""
    from mixlab.league.report import HEAD, csv_text, rows

    stuck = _entry("stuck", 0.4, 0.3, 0.5)
    stuck.results.update({"time/ess_per_s/median": 4.79, "time/ess_upper": 1,
                          "work/ess_per_munit/median": 9.73, "work/ess_upper": 0})
    old = _entry("old", 0.1, 0.09, 0.12)
    old.results.update({"time/ess_per_s/median": 50.0, "work/ess_per_munit/median": 70.0})
    got = {r[0]: dict(zip(HEAD, r)) for r in rows([stuck, old])}
    assert (got["stuck"]["ESS/s"], got["stuck"]["ESS/Mwork"]) == ("≤ 4.79", "9.73")
    assert (got["old"]["ESS/s"], got["old"]["ESS/Mwork"]) == ("50", "70")
    import csv
    import io

    table = {r["sampler"]: r for r in csv.DictReader(io.StringIO(csv_text([stuck, old], [1.0])))}
    assert (table["stuck"]["time_ess_upper_bound"], table["stuck"]["work_ess_upper_bound"]) \
        == ("1", "0")
    assert table["old"]["time_ess_upper_bound"] == table["old"]["work_ess_upper_bound"] == ""
    assert table["stuck"]["time_ess_per_s"] == "4.79"


def test_yardstick_work_marks_are_exact_and_independent_of_blocking():
    rng = np.random.default_rng(0)
    K, T, n = 3, 200, 5
    x = rng.random((K, T, n)) < 0.3
    work = np.full((K, T), 7.0)                             # 21 units per draw (all chains)
    truth = np.full(n, 0.3)
    marks = [21 * 50, 21 * 123.5, 21 * 200]
    outs = []
    for cuts in ([200], [7, 13, 100, 80], [1] * 200):
        ev = MarginalYardstick(truth, work_marks=marks)
        i = 0
        for c in cuts:
            ev.update({"samples": x[:, i:i + c], "league_work": work[:, i:i + c]}, i + c, 0.0)
            i += c
        outs.append((ev.work_marks_err, ev.work_marks_at, ev.estimate(), ev.nb, ev.blen))
    for d, at in ((50, 21 * 50), (124, 21 * 124), (200, 21 * 200)):
        j = [50, 124, 200].index(d)
        want = np.mean(np.abs(x[:, :d].mean(axis=(0, 1)) - truth))
        assert outs[0][0][j] == pytest.approx(want, abs=1e-12)
        assert outs[0][1][j] == at
    for o in outs[1:]:
        assert o[0] == pytest.approx(outs[0][0]) and o[3:] == outs[0][3:]
        assert np.allclose(o[2], outs[0][2])
    # 200 draws: batches doubled from length 1 until fewer than MAX_BATCHES are full
    assert outs[0][3] < MAX_BATCHES and outs[0][3] * outs[0][4] <= 200


def test_batch_mcse_matches_iid_error_and_bias_verdict():
    """i.i.d. Bernoulli chains: ArviZ's batch-means MCSE is the binomial standard error, an
    unbiased estimate passes, and one drawn at the wrong p is flagged."""
    rng = np.random.default_rng(1)
    K, T, n = 8, 4096, 40
    p = rng.uniform(0.2, 0.8, n)
    legs = {}
    for name, q in (("right", p), ("wrong", np.clip(p + 0.05, 0, 1))):
        one = []
        for s in range(3):
            x = rng.random((K, T, n)) < q
            ev = MarginalYardstick(p)
            ev.update({"samples": x, "league_work": np.ones((K, T))}, T, 1.0)
            se = ev.mcse()
            if name == "right" and s == 0:
                iid = np.sqrt(p * (1 - p) / (K * T))
                assert np.median(se / iid) == pytest.approx(1.0, abs=0.2)
            one.append({"estimate": ev.estimate(), "truth": p, "mcse": se, "n_draws": K * T})
        legs[name] = one
    ok, bad = bias.verdict(legs["right"]), bias.verdict(legs["wrong"])
    assert ok["flag"] == 0 and ok["p_value"] > 1e-3 and ok["error_over_mc"] < 1.5
    assert bad["flag"] == 1 and bad["error_over_mc"] > 3
    assert bias.verdict([{**legs["right"][0], "mcse": None}])["flag"] == -1
    assert math.isnan(bias.NO_VERDICT["p_value"])


def test_moment_yardstick_scores_mean_and_sd_in_sd_units():
    from mixlab.league.logistic_targets import MomentYardstick

    mean, sd = np.array([1.0, -2.0]), np.array([0.5, 2.0])
    ev = MomentYardstick(mean, sd, work_marks=[8.0])
    th = np.array([[[1.5, -2.0], [1.5, -2.0]]])                    # (1 chain, 2 draws, d = 2)
    ev.update({"samples": th, "league_work": np.full((1, 2), 4.0)}, 2, 1.0)
    # coordinate 0: mean off by 1 sd, sd 0 (off by 1 sd); coordinate 1: mean right, sd off by 1
    assert ev.value() == pytest.approx(((1 + 1) / 2 + (0 + 1) / 2) / 2)
    assert ev.work_marks_err[0] == pytest.approx(ev.value())
    rng = np.random.default_rng(2)
    good = MomentYardstick(mean, sd)
    good.update({"samples": mean + sd * rng.standard_normal((4, 20000, 2))}, 20000, 1.0)
    assert good.value() < 0.01
