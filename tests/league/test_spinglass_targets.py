"""The critical ferromagnet and the ±J glass league targets: their models, their exact truths
(site marginals and nearest-neighbour agreement probabilities) against enumeration and against
what is known of the critical Ising model, and their yardstick's feature order."""

import math

import numpy as np
import pytest

from mixlab.errors import SpecError
from mixlab.league import reach, targets
from mixlab.league.target_spinglass import site_edge_features, spinglass_model
from mixlab.spinglass import exact


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path / "data"))


def enumerate_features(model):
    """Exact ``P`` of every site-and-edge feature by enumerating the 2^n states: ``(F,)``."""
    R, C = model.shape
    X = exact.all_configurations(model.n).reshape(-1, R, C)
    s = model.score(X)
    p = np.exp(s - s.max())
    p /= p.sum()
    feats = site_edge_features((X > 0)[None]).astype(np.float64)[0]     # (2^n, F)
    return p @ feats, p, X


@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 5), (5, 2), (1, 6)])
def test_site_and_edge_marginals_match_enumeration(shape):
    for kind in ("ferromagnet", "pm_j"):
        d = {"model": kind, "rows": shape[0], "cols": shape[1], "field": 0.3,
             "coupling": 1.7, "model_seed": 3}
        model = spinglass_model(d)
        brute, _, _ = enumerate_features(model)
        marg, right, down = exact.site_and_edge_marginals(model)
        got = np.concatenate([marg.ravel(), right.ravel(), down.ravel()])
        assert np.allclose(got, brute, atol=1e-10), (kind, shape)


def test_the_targets_models():
    std = targets.standard_targets("spinglass")
    ferro = spinglass_model(std["critical-16x64"])
    assert ferro.shape == (16, 64)
    # p ∝ exp(J Σ x_i x_j) over ±1 spins: the critical point sinh(2 J) = 1 (Onsager)
    assert math.sinh(2 * ferro.right[0, 0]) == pytest.approx(1.0, abs=1e-12)
    assert np.all(ferro.right == ferro.right[0, 0]) and np.all(ferro.down == ferro.right[0, 0])
    assert np.all(ferro.field == 0)
    glass = spinglass_model(std["pmj-16x16-b3"])
    J = np.concatenate([glass.right.ravel(), glass.down.ravel()])
    assert set(np.unique(J)) == {-3.0, 3.0} and np.all(glass.field == 0)
    # equal probabilities: 480 couplings, the count of positive ones within 4 sd of 240
    assert abs(np.sum(J > 0) - 240) < 4 * math.sqrt(120)
    # the same definition, the same model
    assert np.array_equal(spinglass_model(std["pmj-16x16-b3"]).right, glass.right)


def test_critical_ferromagnet_truth():
    """Zero field: every marginal is 1/2. Nearest-neighbour correlations ``E[x_i x_j] = 2P − 1``:
    by Griffiths' second inequality they grow with every coupling, so each edge's lies between
    ``tanh J_c`` (the edge alone) and ``√2/2`` (the infinite lattice at criticality, Onsager),
    and on the 16 x 64 grid above the same edge's on an 8 x 32 grid inside it."""
    inst = targets.build("spinglass", targets.standard_targets("spinglass")["critical-16x64"])
    t = inst.truth
    assert np.allclose(t["marginals"], 0.5, atol=1e-9)
    corr = np.concatenate([2 * t["right_agree"].ravel() - 1, 2 * t["down_agree"].ravel() - 1])
    Jc = targets.CRITICAL_COUPLING
    assert np.all(corr > math.tanh(Jc)) and np.all(corr < math.sqrt(2) / 2)
    small = spinglass_model(dict(targets.standard_targets("spinglass")["critical-16x64"],
                                 rows=8, cols=32))
    _, right8, _ = exact.site_and_edge_marginals(small)
    # the 8 x 32 grid placed at rows 4..11, columns 16..47: the same edge, fewer couplings
    assert np.all(t["right_agree"][4:12, 16:47] > right8)
    # the centre is within 0.04 of the infinite lattice (0.678 against 0.707)
    assert 0.64 < corr.max() < math.sqrt(2) / 2
    assert inst.exact and inst.reach_error == reach.marginal_reach(
        np.concatenate([t["marginals"].ravel(), t["right_agree"].ravel(),
                        t["down_agree"].ravel()]))


def test_yardstick_features_follow_the_truth_order():
    """Independent exact draws of a small ±J grid fed to the target's yardstick: its error is
    the binomial error the stated-error rule predicts (a misordered feature would add the
    difference of two probabilities to it)."""
    d = {"model": "pm_j", "rows": 3, "cols": 4, "field": 0.0, "coupling": 1.5,
         "model_seed": 8, "yardstick": "sites_and_edges"}
    inst = targets.build("spinglass", d)
    model = spinglass_model(d)
    truth, p, X = enumerate_features(model)
    got = np.concatenate([inst.truth["marginals"].ravel(), inst.truth["right_agree"].ravel(),
                          inst.truth["down_agree"].ravel()])
    assert np.allclose(got, truth, atol=1e-10)
    rng = np.random.default_rng(1)
    errs = []
    for _ in range(200):
        idx = rng.choice(len(p), size=1000, p=p)
        ev = inst.yardstick()
        ev.update({"samples": (X[idx] > 0).reshape(10, 100, 3, 4)}, 100, 1.0)
        errs.append(ev.value())
    assert np.mean(errs) == pytest.approx(reach.marginal_reach(truth), rel=0.1)


def test_a_bad_definition_names_what_it_needs():
    with pytest.raises(SpecError, match="pm_j.*model_seed"):
        spinglass_model({"model": "pm_j", "rows": 3, "cols": 3, "field": 0, "coupling": 1})
    with pytest.raises(SpecError, match="model must be one of"):
        spinglass_model({"model": "potts", "rows": 3, "cols": 3})
