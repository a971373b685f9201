"""Replica exchange (mixlab.spinglass.tempering): every rung's draws against the exact tempered
distribution on an enumerable frustrated grid, the swap acceptance against its closed form,
one replica equal to the base sweep draw for draw, and the keys validated."""

import numpy as np
import pytest

from mixlab.errors import SpecError
from mixlab.league.cell import sampler_params
from mixlab.spinglass import mcmc as M
from mixlab.spinglass.model import SpinGlass
from mixlab.spinglass.tempering import ParallelTempering, geometric_ladder

W = 1 << np.arange(9)


def frustrated_3x3() -> SpinGlass:
    """Strong ±2 couplings with a frustrated plaquette structure and a weak field."""
    rng = np.random.default_rng(5)
    return SpinGlass(rng.uniform(-0.2, 0.2, (3, 3)), 2.0 * rng.choice([-1.0, 1.0], (3, 2)),
                     2.0 * rng.choice([-1.0, 1.0], (2, 3)))


def exact_tempered(model: SpinGlass, beta: float) -> np.ndarray:
    """``p_β`` over the 512 states (state code = Σ_i bit_i 2^i, bit 1 = +1)."""
    idx = np.arange(512)[:, None]
    X = (2 * ((idx >> np.arange(9)) & 1) - 1).astype(float).reshape(-1, 3, 3)
    s = beta * model.score(X)
    p = np.exp(s - s.max())
    return p / p.sum()


def rung_counts(pt: ParallelTempering, rng, burn=200, every=100, takes=3):
    """Counts over the 512 states of each rung's spins ``(K, 512)``, taken ``takes`` times
    ``every`` steps apart after ``burn`` steps, and of the steps' β = 1 draws ``(512,)``. Many
    chains and takes far apart make the draws nearly independent (the cold rung of a
    frustrated grid moves between its ground states mostly through swaps)."""
    st = pt.init(rng)
    K = pt.replicas
    counts = np.zeros((K, 512))
    top = np.zeros(512)
    for t in range(burn + every * (takes - 1) + 1):
        st, d, stats = pt.step(st, rng)
        assert stats["site_updates"].shape == (pt.chains,)
        if t >= burn and (t - burn) % every == 0:
            codes = pt.rung_samples(st).reshape(pt.chains, K, 9).astype(np.int64) @ W
            for k in range(K):
                counts[k] += np.bincount(codes[:, k], minlength=512)
            top += np.bincount(d["samples"].reshape(pt.chains, 9).astype(np.int64) @ W,
                               minlength=512)
    return counts, top


def chi2_p(counts: np.ndarray, p: np.ndarray) -> float:
    """Pearson's χ² p-value of ``counts`` against ``p``: states expected 5 times or more are
    bins of their own, the rest one pooled bin."""
    from scipy.stats import chisquare

    n = counts.sum()
    big = n * p >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(n * p[big], n * p[~big].sum())
    keep = exp > 0
    return float(chisquare(obs[keep], exp[keep]).pvalue)


# 4,000 chains x 3 takes = 12,000 draws per rung
P_MIN = 1e-3


@pytest.mark.parametrize("sweep", ["gibbs", "metropolis"])
def test_every_rung_samples_its_exact_tempered_distribution(sweep):
    model = frustrated_3x3()
    pt = ParallelTempering(model, chains=4000, replicas=4, beta_min=0.2, sweep=sweep)
    counts, top = rung_counts(pt, np.random.default_rng(11))
    assert np.array_equal(counts[-1], top)             # the draw is the β = 1 rung
    for k, beta in enumerate(pt.ladder):
        pv = chi2_p(counts[k], exact_tempered(model, beta))
        print(sweep, k, round(float(beta), 3), pv)
        assert pv > P_MIN, (k, beta, pv)


class _WrongSwapSign(ParallelTempering):
    """Deliberately broken: the swap ratio's exponent has the wrong sign."""

    def _swap(self, perm, theta, first, rng):
        return super()._swap(perm, -theta, first, rng)


def test_a_wrong_swap_rule_fails_the_threshold():
    model = frustrated_3x3()
    pt = _WrongSwapSign(model, chains=4000, replicas=4, beta_min=0.2)
    _, top = rung_counts(pt, np.random.default_rng(11))
    pv = chi2_p(top, exact_tempered(model, 1.0))
    print("wrong sign", pv)
    assert pv < 1e-12


def test_swap_acceptance_matches_its_closed_form():
    """One spin, field h, no couplings: a heat-bath sweep is an exact draw at each rung, so the
    swap of rungs (b, 1) is accepted with E[min(1, exp((b − 1)(θ(x_b) − θ(x_a))))] over
    independent x_a ~ p_b, x_b ~ p_1, θ(x) = h x."""
    h, b = 0.8, 0.3
    model = SpinGlass(np.array([[h]]), np.zeros((1, 0)), np.zeros((0, 1)))
    pt = ParallelTempering(model, chains=2000, replicas=2, beta_min=b)
    rng = np.random.default_rng(2)
    st = pt.init(rng)
    rates = []
    for _ in range(50):
        st, _, stats = pt.step(st, rng)
        rates.append(stats["swap_accept"].mean())
        assert np.array_equal(stats["swap_accept"], stats["swap_accept_0"])
    p = {beta: {s: np.exp(beta * h * s) / (2 * np.cosh(beta * h)) for s in (-1, 1)}
         for beta in (b, 1.0)}
    expected = sum(p[b][xa] * p[1.0][xb] * min(1.0, np.exp((b - 1.0) * (h * xb - h * xa)))
                   for xa in (-1, 1) for xb in (-1, 1))
    se = np.sqrt(expected * (1 - expected) / (2000 * 50))
    assert abs(np.mean(rates) - expected) < 5 * se, (np.mean(rates), expected)


@pytest.mark.parametrize("base,sweep", [(M.Gibbs, "gibbs"), (M.Metropolis, "metropolis")])
def test_one_replica_is_the_base_sweep_draw_for_draw(base, sweep):
    rng_model = np.random.default_rng(4)
    model = SpinGlass(rng_model.normal(size=(5, 6)), rng_model.normal(size=(5, 5)),
                      rng_model.normal(size=(4, 6)))
    pt = ParallelTempering(model, chains=7, replicas=1, sweep=sweep)
    ref = base(model, chains=7)
    r1, r2 = np.random.default_rng(9), np.random.default_rng(9)
    s1, s2 = pt.init(r1), ref.init(r2)
    for _ in range(25):
        s1, d1, st1 = pt.step(s1, r1)
        s2, d2, st2 = ref.step(s2, r2)
        assert np.array_equal(d1["samples"], d2["samples"])
        assert np.array_equal(st1["site_updates"], st2["site_updates"])
        assert np.allclose(st1["accept"], st2["accept"])
    assert r1.random() == r2.random()          # the same stream, nothing more drawn


def test_work_counts_every_replica_and_the_ladder_is_geometric():
    model = frustrated_3x3()
    pt = ParallelTempering(model, chains=3, replicas=5, beta_min=0.1)
    rng = np.random.default_rng(0)
    _, _, stats = pt.step(pt.init(rng), rng)
    assert np.array_equal(stats["site_updates"], np.full(3, 5 * 9.0))
    assert sorted(k for k in stats if k.startswith("swap_accept_")) == \
        [f"swap_accept_{i}" for i in range(4)]
    lad = geometric_ladder(5, 0.1)
    assert lad[0] == pytest.approx(0.1) and lad[-1] == 1.0
    assert np.allclose(lad[1:] / lad[:-1], 10 ** 0.25)


@pytest.mark.parametrize("key,value", [("replicas", 0), ("beta_min", 1.0), ("beta_min", 0.0),
                                       ("sweep", "swendsen_wang")])
def test_bad_keys_are_refused_with_their_name(key, value):
    with pytest.raises(SpecError) as exc:
        sampler_params("spinglass", {"method": "parallel_tempering", key: value},
                       "samplers.pt")
    assert f"samplers.pt.{key}" in str(exc.value)


def test_the_experiments_charge_every_replica():
    """perturb_map's update budgets and axes count a step's ``site_updates``: K sweeps."""
    from mixlab.spinglass.experiments_sampling import _run_mcmc, step_updates

    model = frustrated_3x3()
    pt = ParallelTempering(model, chains=4, replicas=3)
    assert step_updates(pt, model.n) == 3 * 9
    assert step_updates(M.Gibbs(model, chains=4), model.n) == 9
    _, _, used = _run_mcmc(pt, model, {"chains": 4, "updates": 4 * 27 * 10, "burn_in": 0.1},
                           np.random.default_rng(0))
    assert used == 4 * 27 * 10                  # 10 steps of 4 chains x 3 replicas x 9 sites


@pytest.mark.parametrize("chains", [3, 4])
def test_plus_minus_starts_every_replica_of_a_chain_at_its_chain_sign(chains):
    """The league's overdispersed starts: chain c's every rung (its β = 1 draw included) at +1
    for even c and −1 for odd c, whatever the parity of the chain count."""
    pt = ParallelTempering(frustrated_3x3(), chains=chains, init="plus_minus", replicas=4)
    spins = pt.rung_samples(pt.init(np.random.default_rng(0)))          # (chains, K, 3, 3)
    for c in range(chains):
        assert spins[c].all() if c % 2 == 0 else not spins[c].any(), c
