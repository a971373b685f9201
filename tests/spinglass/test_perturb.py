import numpy as np
import pytest
from scipy import stats

from mixlab.spinglass import exact
from mixlab.spinglass.model import SpinGlass, random_spin_glass
from mixlab.spinglass.perturb import (
    PerturbMAPSampler,
    UnbiasedSampler,
    exact_conditional_value,
    mc_value,
)


def _chi2_pvalue(model, samples):
    n = model.n
    X = exact.all_configurations(n).reshape(-1, *model.shape)
    lz = exact.log_partition(model)
    p = np.exp(model.score(X) - lz)
    idx = ((samples.reshape(len(samples), -1) > 0) * (1 << np.arange(n))).sum(1)
    counts = np.bincount(idx, minlength=1 << n)
    return stats.chisquare(counts, p * len(samples)).pvalue


def _memoized(value_fn):
    """``value_fn`` computed once per clamping: the exact V depends only on which sites are fixed
    and their values (a 2x3 grid has 3^6 clampings), so the sampler draws the same samples."""
    cache = {}

    def V(fixed, values, rng=None):
        key = (fixed.tobytes(), np.where(fixed, values, 0.0).tobytes())
        if key not in cache:
            cache[key] = value_fn(fixed, values, rng)
        return cache[key]
    return V


def test_pam_local_is_exact_on_decoupled_model():
    f = np.array([[0.3, -1.0, 1.5]])
    m = SpinGlass(f, np.zeros((1, 2)), np.zeros((0, 3)))
    s = PerturbMAPSampler(m, chains=4000, perturbation="local")
    rng = np.random.default_rng(0)
    _, d, st = s.step(s.init(rng), rng)
    emp = d["samples"].mean(0)
    want = exact.marginals(m)
    assert np.all(np.abs(emp - want) < 4 * np.sqrt(want * (1 - want) / 4000))


def test_pam_pairwise_runs_and_is_exact_on_single_edge():
    # one edge, no field: pairwise Gumbels on the 2x2 table give the exact Gibbs distribution
    m = SpinGlass(np.zeros((1, 2)), np.array([[0.8]]), np.zeros((0, 2)))
    s = PerturbMAPSampler(m, chains=4000, perturbation="pairwise")
    rng = np.random.default_rng(1)
    _, d, _ = s.step(s.init(rng), rng)
    agree = (d["samples"][:, 0, 0] == d["samples"][:, 0, 1]).mean()
    want = 1 / (1 + np.exp(-1.6))
    assert abs(agree - want) < 4 * np.sqrt(want * (1 - want) / 4000)


def test_unbiased_sampler_exact_values_with_slack_is_exact():
    """Algorithm 1 with exact self-reducible V (+ slack -> forced rejections) is unbiased and
    its mean number of passes is exp(n δ)."""
    model = random_spin_glass(2, 3, coupling=1.5, rng=np.random.default_rng(2))
    delta = 0.1
    s = UnbiasedSampler(model, chains=3000, slack=delta,
                        value_fn=_memoized(exact_conditional_value(model)))
    rng = np.random.default_rng(3)
    _, d, st = s.step(s.init(rng), rng)
    assert st["violations"].sum() == 0
    assert _chi2_pvalue(model, d["samples"]) > 1e-3
    passes = 1 + st["restarts"]
    want = np.exp(model.n * delta)                         # geometric mean exp(nδ) = 1.82
    assert abs(passes.mean() - want) < 4 * np.sqrt(want * (want - 1) / len(passes))


def test_unbiased_sampler_monte_carlo_gumbel_values():
    """Algorithm 1 as published (V by Monte Carlo over Gumbel perturbations) on a 2x3 grid.

    The perturbed MAPs come from max-product, which solves all 200 perturbations of a V in one
    vectorised pass (graph cuts solve them one by one, 15x slower here); both are exact MAP
    solvers, checked against each other and enumeration in test_map.py."""
    model = random_spin_glass(2, 3, coupling=1.0, rng=np.random.default_rng(4))
    s = UnbiasedSampler(model, chains=300, perturbations=200, method="max_product")
    rng = np.random.default_rng(5)
    _, d, st = s.step(s.init(rng), rng)
    assert _chi2_pvalue(model, d["samples"]) > 1e-3
    assert np.all(st["restarts"] >= 0)


def test_mc_value_exact_cases():
    model = random_spin_glass(2, 2, coupling=1.0, rng=np.random.default_rng(6))
    V = mc_value(model, 10)
    vals = np.array([[1.0, -1.0], [1.0, 1.0]])
    fixed = np.ones((2, 2), bool)
    assert V(fixed, vals, None) == pytest.approx(float(model.score(vals)))
    fixed[1, 1] = False
    want = np.logaddexp(model.score(np.array([[1.0, -1], [1, -1]])), model.score(vals))
    assert V(fixed, vals, None) == pytest.approx(float(want))
