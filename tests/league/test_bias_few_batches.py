"""The bias verdict when a stream has too few batches per chain: the MCSE from the spread of
independent chains, its Student-t degrees of freedom, and where a sampler without a verdict
ranks."""

import numpy as np

from mixlab.league import bias
from mixlab.league.rank import Entry, rank_target
from mixlab.league.report import rows
from mixlab.league.yardstick import MarginalYardstick


def _chain_legs(rng, p, shift, chains, seeds=3, sd=0.02, n_draws=10**7):
    """Legs built from synthetic chain means ``p + shift + N(0, sd²)`` ``(chains, n)``, the MCSE
    from their spread, as the league computes it with fewer than 4 batches per chain."""
    legs = []
    for _ in range(seeds):
        means = np.clip(p + shift + sd * rng.standard_normal((chains, p.size)), 0, 1)
        legs.append({"estimate": means.mean(axis=0), "truth": p,
                     "mcse": means.std(axis=0, ddof=1) / np.sqrt(chains),
                     "mcse_dof": chains - 1, "n_draws": n_draws})
    return legs


def test_chain_spread_flags_a_shifted_sampler_and_passes_an_unbiased_one():
    rng = np.random.default_rng(3)
    p = rng.uniform(0.2, 0.8, 50)
    bad = bias.verdict(_chain_legs(rng, p, 0.05, chains=8))
    ok = bias.verdict(_chain_legs(rng, p, 0.0, chains=8))
    assert bad["flag"] == 1 and bad["p_value"] < 1e-12 and bad["error_over_mc"] > 3
    assert ok["flag"] == 0 and ok["p_value"] > 1e-3 and ok["error_over_mc"] < 1.5


def test_chain_spread_p_values_are_uniform_for_unbiased_samplers():
    """With C = 4 chains z is t with 3 degrees of freedom (z² has mean 3, not 1): summed as
    z² the p-values of unbiased samplers would all be tiny. With the t correction they are
    uniform, and none falls below the flag's 1e-6 over 300 seeds."""
    rng = np.random.default_rng(4)
    p = rng.uniform(0.2, 0.8, 50)
    pv, flags = [], []
    for _ in range(300):
        v = bias.verdict(_chain_legs(rng, p, 0.0, chains=4))
        pv.append(v["p_value"])
        flags.append(v["flag"])
    pv = np.asarray(pv)
    assert flags.count(1) == 0 and pv.min() > 1e-6
    assert 0.4 < np.median(pv) < 0.6
    assert 0.0 < np.mean(pv < 0.05) < 0.1
    # the same legs scored as if the MCSE were exact (normal z): far too many small p-values
    naive = bias.verdict([{**leg, "mcse_dof": np.inf}
                          for leg in _chain_legs(rng, p, 0.0, chains=4, seeds=30)])
    assert naive["p_value"] < 1e-6


def test_yardstick_chain_means_and_chain_mcse():
    rng = np.random.default_rng(5)
    K, n = 8, 6
    p = np.full(n, 0.4)
    few = rng.random((K, 3, n)) < p                                 # 3 draws: 3 batches
    ev = MarginalYardstick(p)
    ev.update({"samples": few}, 3, 1.0)
    assert ev.mcse() is None
    want = few.mean(axis=1).std(axis=0, ddof=1) / np.sqrt(K)
    assert np.allclose(ev.chain_mcse(), want)
    many = rng.random((K, 203, n)) < p                              # batches merged, one open
    ev = MarginalYardstick(p)
    for i in range(0, 203, 10):
        ev.update({"samples": many[:, i:i + 10]}, min(i + 10, 203), 1.0)
    assert ev.cur_len > 0 and np.allclose(ev.chain_means(), many.mean(axis=1))
    ev3 = MarginalYardstick(p)
    ev3.update({"samples": few[:3]}, 3, 1.0)                        # 3 chains: no MCSE at all
    assert ev3.mcse() is None and ev3.chain_mcse() is None


def _entry(name, med, flag, exact=1):
    res = {"time/error/median": med, "time/error/min": med, "time/error/max": med,
           "bias/flag": flag, "has_work": 0, "exact_truth": exact}
    return Entry("t", name, "complete", "", res)


def test_no_verdict_ranks_after_passing_and_before_flagged():
    es = [_entry("unchecked", 0.01, -1), _entry("passed", 0.10, 0),
          _entry("flagged", 0.001, 1), _entry("passed-worse", 0.20, 0)]
    rank_target(es, "time")
    r = {e.sampler: e.rank["time"] for e in es}
    assert r == {"passed": 1, "passed-worse": 2, "unchecked": 3, "flagged": 4}
    shown = {row[0]: row[2] for row in rows(es)}
    assert shown == {"passed": "1", "passed-worse": "2", "unchecked": "3 ?", "flagged": "4 B"}
    ref = [_entry("a", 0.2, -1, exact=0), _entry("b", 0.1, -1, exact=0)]   # no exact truth
    rank_target(ref, "time")
    assert {row[0]: row[2] for row in rows(ref)} == {"a": "2", "b": "1"}
