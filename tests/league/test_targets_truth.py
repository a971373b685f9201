"""The league's truths against brute force computed another way, and the truth cache."""

import itertools

import numpy as np
import pytest

from mixlab.league import targets, truth


def test_mrf_subset_joints_match_brute_force_over_the_tables():
    d = {"D": 6, "s": 0.5, "s_is": "std", "subsets": 3, "subset_size": 3, "model_seed": 4}
    inst = targets.build("mrf", d)
    model = inst.target
    tri = [tuple(t) for t in itertools.combinations(range(6), 3)]
    states = list(itertools.product((0, 1), repeat=6))
    logp = np.array([sum(model.logpsi[n][x[i], x[j], x[k]] for n, (i, j, k) in enumerate(tri))
                     for x in states])
    p = np.exp(logp - logp.max())
    p /= p.sum()
    from mixlab.austerity.mrf import random_subsets

    seq = np.random.SeedSequence(4)
    subsets = random_subsets(6, 3, 3, np.random.default_rng(seq.spawn(2)[1]))
    want = np.zeros((3, 8))
    for x, px in zip(states, p):
        for m, sub in enumerate(subsets):
            want[m, sum(x[v] << b for b, v in enumerate(sub))] += px
    assert np.allclose(inst.truth["subset_joints"], want, atol=1e-12)
    # the yardstick of draws from the exact joint is small; of a uniform sampler large
    rng = np.random.default_rng(0)
    draw = rng.choice(len(states), size=(4, 4000), p=p)
    X = np.array(states, bool)[draw]                                   # (4, 4000, 6)
    ev = inst.yardstick()
    ev.update({"samples": X}, 4000, 1.0)
    uni = inst.yardstick()
    uni.update({"samples": rng.random((4, 4000, 6)) < 0.5}, 4000, 1.0)
    assert ev.value() < 0.05 < uni.value()


def test_rbm_moments_match_enumerating_visible_and_hidden_units():
    pytest.importorskip("h5py")
    d = dict(targets.standard_targets("rbm")["usps4x4-h8"], downsample=8, hidden=3, epochs=2,
             max_train=300)
    try:
        inst = targets.build("rbm", d)
    except Exception as exc:                      # no USPS in this environment
        pytest.skip(f"USPS not available: {exc}")
    t = inst.target
    W, b, c = (np.asarray(a, np.float64) for a in (t.W, t.b, t.c))
    V, H = W.shape
    vs = np.array(list(itertools.product((0, 1), repeat=V)), float)
    hs = np.array(list(itertools.product((0, 1), repeat=H)), float)
    logp = vs @ b[:, None] + (hs @ c)[None, :] + vs @ W @ hs.T        # (2^V, 2^H)
    pv = np.exp(logp - logp.max()).sum(axis=1)
    pv /= pv.sum()
    second = (vs * pv[:, None]).T @ vs
    iu = np.triu_indices(V, 1)
    assert np.allclose(inst.truth["moments"], np.concatenate([second.diagonal(), second[iu]]),
                       atol=1e-6)


def test_truth_is_cached_by_definition(tmp_path, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path))
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.arange(3.0)}

    a = truth.cached_truth("spinglass", {"k": 1}, compute)
    b = truth.cached_truth("spinglass", {"k": 1}, compute)
    c = truth.cached_truth("spinglass", {"k": 2}, compute)
    assert calls == [1, 1] and np.array_equal(a["x"], b["x"]) and np.array_equal(b["x"], c["x"])
    path = truth.truth_path("spinglass", {"k": 1})
    assert path.is_file() and path.parent == tmp_path / "league-truth"
    path.write_bytes(b"not an npz")                 # a damaged file is computed again
    truth.cached_truth("spinglass", {"k": 1}, compute)
    assert calls == [1, 1, 1]


def test_logistic_target_builds_with_its_hmc_truth_and_every_standard_definition_is_complete():
    base = targets.standard_targets("logistic")["synthetic-1e6"]
    d = {**base, "synthetic": {"n": 400, "d": 2, "seed": 1, "signal": 1.0, "test": 10},
         "test_max": 10, "hmc": {**base["hmc"], "chains": 2, "burn_in": 20, "samples": 200,
                                 "n_leapfrog": 5, "keep": 50}}
    inst = targets.build("logistic", d)
    t = inst.target(3)
    assert t.theta0.shape == (3, 2) and not inst.exact
    mode, H = t.laplace()
    sd_lap = np.sqrt(np.diag(np.linalg.inv(H)))
    # the HMC posterior mean sits within a few Laplace sd of the mode, its sd near Laplace's
    assert np.all(np.abs(inst.truth["mean"] - mode) < 3 * sd_lap)
    assert np.all(np.abs(inst.truth["sd"] / sd_lap - 1) < 0.5)
    for name, defn in targets.standard_targets("logistic").items():
        assert set(defn["hmc"]) >= {"chains", "burn_in", "samples", "step_size", "n_leapfrog",
                                    "keep"}, name
