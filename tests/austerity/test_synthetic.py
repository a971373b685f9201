"""The synthetic logistic-regression target: deterministic given its seed, prefix-stable across
sizes, and its truth (an HMC run on the posterior) checks out against the parameters that
generated the data."""

import numpy as np
import pytest
from scipy import stats

from mixlab.austerity.logistic import LogisticPosterior
from mixlab.austerity.synthetic import CHUNK, generate, synthetic_spec
from mixlab.austerity.target_logistic import hmc_truth
from mixlab.errors import SpecError


def test_generation_is_deterministic_and_prefix_stable():
    big = synthetic_spec({"n": CHUNK + 5000, "d": 7, "seed": 11, "test": 50})
    a, b = generate(big), generate(big)
    for x, y in ((a.X, b.X), (a.y, b.y), (a.X_test, b.X_test), (a.theta_star, b.theta_star)):
        assert np.array_equal(x, y)
    small = generate(synthetic_spec({"n": 3000, "d": 7, "seed": 11, "test": 50}))
    assert np.array_equal(small.X, a.X[:3000]) and np.array_equal(small.y, a.y[:3000])
    other = generate(synthetic_spec({"n": 3000, "d": 7, "seed": 12, "test": 50}))
    assert not np.array_equal(other.X, small.X)
    assert a.X.dtype == np.float32 and a.X.shape == (CHUNK + 5000, 7)
    # the labels follow σ(x·θ*): their mean matches the mean of the probabilities
    p = 1 / (1 + np.exp(-(a.X.astype(np.float64) @ a.theta_star)))
    assert abs(a.y.mean() - p.mean()) < 4 * np.sqrt(p.var() / p.size + (p * (1 - p)).mean()
                                                    / p.size)


def test_spec_needs_n_and_names_bad_keys():
    with pytest.raises(SpecError, match=r"data\.synthetic\.n"):
        synthetic_spec({"d": 5})
    with pytest.raises(SpecError, match=r"data\.synthetic\.rows"):
        synthetic_spec({"n": 10, "rows": 5})


def test_truth_checks_out_against_the_generating_parameters():
    """At n = 20,000 the posterior (flat-ish prior) is within a few posterior sd of θ*: every
    coordinate's z = (E[θ|data] - θ*) / sd[θ|data] under 4 in size, and Σ z² below the 99.9%
    point of χ²_d (a correct generator gives z ~ N(0, 1) roughly; labels drawn with the wrong
    sign or features misaligned with their labels give z in the tens)."""
    spec = synthetic_spec({"n": 20_000, "d": 6, "seed": 5, "signal": 2.0, "test": 100})
    syn = generate(spec)
    post = LogisticPosterior(syn.X, syn.y, precision=1.0, bias=False)
    hspec = {"chains": 2, "burn_in": 100, "samples": 600, "step_size": 0.5, "n_leapfrog": 6,
             "keep": 100}
    truth = hmc_truth(post, syn.X_test, hspec, log=lambda *_: None)
    z = (truth["mean"] - syn.theta_star) / np.sqrt(truth["var"])
    assert np.all(np.abs(z) < 4.0), z
    assert np.sum(z ** 2) < stats.chi2.ppf(0.999, spec["d"]), z
    # the posterior sd is that of n rows of information, about 1/sqrt(n E[σ(1-σ)]) per feature
    # (unit-variance features, a negligible prior): σ(1-σ) <= 1/4 bounds it below, and at
    # logits of sd 2 its mean is above 0.05
    sd = np.sqrt(truth["var"])
    n = spec["n"]
    assert np.all(sd > 0.9 / np.sqrt(n / 4)) and np.all(sd < 1 / np.sqrt(0.05 * n)), sd
    assert truth["accept"] > 0.6


def test_big_n_run_records_every_series_and_checks_its_truth(tmp_path):
    """The big-N experiment end to end at small N: every (N, test) series sampled and recorded,
    the exact series reading all the data and the tests a fraction of it, and the truth's mean
    within a few posterior sd of the generating parameters."""
    from mixlab.plotting import render
    from mixlab.run.context import execute
    from mixlab.runfile.store import RunReader
    from mixlab.spec.resolver import resolve

    raw = {"name": "bign-small", "experiment": "austerity.big_n", "seed": 1,
            "data": {"synthetic": {"n": 1000, "d": 5, "seed": 2, "test": 50}},
            "model": {"precision": 1.0, "bias": False}, "ns": [4000, 8000], "seconds": 0.3,
            "block": 10, "hmc": {"chains": 2, "burn_in": 50, "samples": 200, "step_size": 0.8,
                                 "n_leapfrog": 4}}
    run_dir, _ = execute(resolve(raw), tmp_path / "run", quiet=True, render=False)
    with RunReader(run_dir) as run:
        res = run.results()
        assert render(run, "austerity.big_n", tmp_path / "bign.png").stat().st_size > 0
    for N in ("4e+03", "8e+03"):
        assert res[f"N={N} exact/data_used"] == 1.0
        for test in ("per-point", "blocks"):
            assert 0 < res[f"N={N} {test}/data_used"] < 1
            assert res[f"N={N} {test}/samples"] > 0
        assert res[f"N={N}/truth_vs_theta_star_max_z"] < 4.0
    assert len(res["data/theta_star"]) == 5
