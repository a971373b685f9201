import itertools

import numpy as np
import pytest

from mixlab.errors import MixlabError
from mixlab.spinglass import exact
from mixlab.spinglass.bounds import (
    CopyModel,
    expected_lower_bound,
    probable_lower_bound,
    upper_bound,
)
from mixlab.spinglass.model import random_spin_glass


def _enumerated_best(cm):
    """max over every label vector k in {0..m}^n of the copy model's Φ(k), the enumeration
    vectorised: Φ written from the model's couplings, Σ_i G[i, k_i] + Σ_(i,j) w_ij μ_i μ_j over
    the right and down edges, and checked against ``cm.objective`` at the maximiser and at a
    sample of other labels."""
    R, C = cm.model.shape
    grid = np.array(list(itertools.product(range(cm.m + 1), repeat=cm.n)))       # (L, n)
    mu = cm.mu[grid].reshape(-1, R, C)
    right, down = cm.model.right.reshape(R, C - 1), cm.model.down.reshape(R - 1, C)
    phi = (cm.G[np.arange(cm.n), grid].sum(axis=1)
           + np.einsum("lrc,rc->l", mu[:, :, :-1] * mu[:, :, 1:], right)
           + np.einsum("lrc,rc->l", mu[:, :-1, :] * mu[:, 1:, :], down))
    sample = np.random.default_rng(0).choice(len(grid), min(len(grid), 300), replace=False)
    for i in np.append(sample, np.argmax(phi)):
        assert phi[i] == pytest.approx(cm.objective(grid[i]), abs=1e-12)
    return cm.objective(grid[np.argmax(phi)])


@pytest.mark.parametrize("c", [0.5, 3.0])
def test_gumbel_bounds_bracket_log_z_on_10x10(c):
    rng = np.random.default_rng(int(10 * c))
    for k in range(2):
        m = random_spin_glass(10, 10, coupling=c, rng=rng)
        lz = exact.log_partition(m)
        u = upper_bound(m, 40, rng)
        e = expected_lower_bound(m, 40, rng)
        assert u.value >= lz - 3 * u.se
        assert e.value <= lz + 3 * e.se
        assert e.se > 0 and u.se > 0


def test_single_spin_upper_bound_is_log_z():
    # one spin: U = E max_s θ s + γ(s) = log Z exactly (Gumbel-max); 4000 draws -> s.e. ~ 0.02
    from mixlab.spinglass.model import SpinGlass
    m = SpinGlass(np.array([[0.7]]), np.zeros((1, 0)), np.zeros((0, 1)))
    u = upper_bound(m, 4000, np.random.default_rng(0))
    assert abs(u.value - np.log(2 * np.cosh(0.7))) < 4 * u.se


@pytest.mark.parametrize("shape,m", [((1, 2), 3), ((2, 2), 2), ((1, 3), 2)])
def test_copy_reduction_equals_literal_expanded_model(shape, m):
    """max over all 2^(n m) copy assignments of θ̂ + γ̂ == the reduced exact solve."""
    rng = np.random.default_rng(m + sum(shape))
    for _ in range(4):
        model = random_spin_glass(*shape, coupling=rng.uniform(0, 3), rng=rng)
        n = model.n
        g = rng.gumbel(size=(n, m, 2)) - np.euler_gamma
        X = exact.all_configurations(n * m).reshape(-1, n, m).astype(float)
        # θ̂ = average of θ over all combinations of copies; θ is multilinear -> θ(copy means)
        combos = np.array(list(itertools.product(range(m), repeat=n)))      # (m^n, n)
        theta_hat = np.mean([model.score(X[:, np.arange(n), k].reshape(-1, *shape))
                             for k in combos], axis=0)
        pert = np.where(X > 0, g[None, :, :, 1], g[None, :, :, 0]).sum((1, 2)) / m
        literal = (theta_hat + pert).max()
        cm = CopyModel(model, m, gumbels=g)
        assert cm.solve()[0] == pytest.approx(literal, abs=1e-10)                 # dual
        assert cm.solve(method="bnb")[0] == pytest.approx(literal, abs=1e-10)     # one min cut
        assert cm.solve(method="bnb", max_edges=0)[0] == pytest.approx(literal, abs=1e-10)


def test_copy_solver_matches_label_enumeration():
    rng = np.random.default_rng(9)
    for t in range(12):
        shape, m = [((2, 2), 8), ((1, 4), 9), ((2, 3), 4)][t % 3]
        model = random_spin_glass(*shape, coupling=rng.uniform(0, 5), rng=rng)
        cm = CopyModel(model, m, rng=rng)
        best = _enumerated_best(cm)
        for me in (0, 10 ** 9):            # pure branch and bound / one min cut
            assert cm.solve(method="bnb", max_edges=me)[0] == pytest.approx(best, abs=1e-10)
        v, k = cm.solve(method="dual")
        assert v == pytest.approx(best, abs=1e-10) and cm.objective(k) == v
        assert best - 1e-10 <= cm.upper <= best + 1e-9 * max(1.0, abs(best))


def test_bilinear_envelope_matches_brute_force():
    from mixlab.spinglass.copy_dual import bilinear_envelope
    rng = np.random.default_rng(3)
    for L, w in [(7, 0.8), (40, 2.5), (40, -1.3), (12, 0.0), (1, 1.0), (30, 1e-6)]:
        mu = 2.0 * np.arange(L) / max(L - 1, 1) - 1.0
        a = rng.normal(size=L) * rng.choice([0.01, 1.0, 30.0])
        out, arg, hull = np.empty(L), np.empty(L, np.int64), np.empty(L, np.int64)
        bilinear_envelope(a, mu, w, out, arg, hull)
        table = a[:, None] + w * mu[:, None] * mu[None, :]          # (k, q)
        np.testing.assert_allclose(out, table.max(axis=0), rtol=0, atol=1e-12)
        np.testing.assert_allclose(table[arg, np.arange(L)], out, rtol=0, atol=1e-12)


def test_dual_bound_is_an_upper_bound_for_any_messages_and_mixed_couplings():
    """The chain-decomposition bound holds whatever the messages (even random ones) and the
    couplings' signs: checked against enumeration of all label vectors."""
    from mixlab.spinglass.copy_dual import dual_bound
    rng = np.random.default_rng(11)
    for shape, m in [((2, 3), 3), ((3, 2), 4), ((2, 2), 6)]:
        model = random_spin_glass(*shape, coupling=3.0, mixed=True, rng=rng)
        cm = CopyModel(model, m, rng=rng)
        best = _enumerated_best(cm)
        R, C = shape
        for scale in (0.0, 1.0, 10.0):
            M = scale * rng.normal(size=(model.n, 4, m + 1))
            ub = dual_bound(cm.G, model.right.reshape(R, C - 1), model.down.reshape(R - 1, C),
                            cm.mu, M)
            assert ub >= best - 1e-10
        v, _ = cm.solve(method="dual", max_sweeps=50)
        assert v <= best + 1e-10 and cm.upper >= best - 1e-10


def test_auto_finishes_an_uncertified_dual_by_branch_and_bound():
    rng = np.random.default_rng(4)
    model = random_spin_glass(2, 3, coupling=4.0, rng=rng)
    cm = CopyModel(model, 7, rng=rng)
    best = _enumerated_best(cm)                             # 8^6 label vectors
    v0, _ = cm.solve(method="dual", max_sweeps=0)          # no messages: usually a gap
    assert v0 <= best + 1e-12 <= cm.upper + 2e-12
    v, k = cm.solve(method="auto", max_sweeps=0)
    assert v == pytest.approx(best, abs=1e-10) and cm.upper == v and cm.objective(k) == v


@pytest.mark.parametrize("c", [1.0, 3.0])
def test_paper_copies_on_10x10_are_certified_and_agree_with_branch_and_bound(c):
    rng = np.random.default_rng(int(c))
    model = random_spin_glass(10, 10, coupling=c, rng=rng)
    pb = probable_lower_bound(model, 10_000, rng)             # the paper's m = 10^4
    assert pb.certified and abs(pb.gap) <= 1e-9 * abs(pb.value) and pb.sweeps <= 200
    assert pb.mu.shape == (10, 10)
    g = np.random.default_rng(5).gumbel(size=(model.n, 60, 2)) - np.euler_gamma
    a, b = CopyModel(model, 60, gumbels=g), CopyModel(model, 60, gumbels=g)
    assert a.solve(method="dual")[0] == pytest.approx(b.solve(method="bnb")[0], abs=1e-9)


def test_probable_bound_reports_discrepancy_and_branch_and_bound_rejects_mixed():
    rng = np.random.default_rng(1)
    model = random_spin_glass(10, 10, coupling=1.0, rng=rng)
    pb = probable_lower_bound(model, 20, rng)
    assert pb.mu.shape == (10, 10) and pb.copies == 20
    assert pb.discrepancy > 0 and np.isfinite(pb.value)
    assert np.isnan(pb.se) and pb.draws.shape == (1,)
    p3 = probable_lower_bound(model, 20, rng, draws=3)
    assert p3.draws.shape == (3,) and p3.value == pytest.approx(p3.draws.mean())
    assert p3.se == pytest.approx(p3.draws.std(ddof=1) / np.sqrt(3)) and p3.se > 0
    mixed = random_spin_glass(3, 3, mixed=True, rng=rng)
    with pytest.raises(MixlabError, match="attractive"):
        probable_lower_bound(mixed, 5, rng, method="bnb")
    pm = probable_lower_bound(mixed, 5, rng, method="dual")
    assert pm.upper >= pm.value - 1e-9 and np.isfinite(pm.value)
