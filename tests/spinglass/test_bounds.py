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
        assert cm.solve()[0] == pytest.approx(literal, abs=1e-10)
        assert cm.solve(max_edges=0)[0] == pytest.approx(literal, abs=1e-10)  # branch & bound


def test_copy_solver_matches_label_enumeration():
    rng = np.random.default_rng(9)
    for t in range(12):
        shape, m = [((2, 2), 8), ((1, 4), 9), ((2, 3), 4)][t % 3]
        model = random_spin_glass(*shape, coupling=rng.uniform(0, 5), rng=rng)
        cm = CopyModel(model, m, rng=rng)
        grid = np.array(list(itertools.product(range(m + 1), repeat=model.n)))
        best = max(cm.objective(k) for k in grid)
        for me in (0, 10 ** 9):            # pure branch and bound / one min cut
            assert cm.solve(max_edges=me)[0] == pytest.approx(best, abs=1e-10)


def test_probable_bound_reports_discrepancy_and_rejects_mixed():
    rng = np.random.default_rng(1)
    model = random_spin_glass(10, 10, coupling=1.0, rng=rng)
    pb = probable_lower_bound(model, 20, rng)
    assert pb.mu.shape == (10, 10) and pb.copies == 20
    assert pb.discrepancy > 0 and np.isfinite(pb.value)
    with pytest.raises(MixlabError, match="attractive"):
        probable_lower_bound(random_spin_glass(3, 3, mixed=True, rng=rng), 5, rng)
