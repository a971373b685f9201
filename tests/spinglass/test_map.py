import numpy as np
import pytest

from mixlab.errors import MixlabError
from mixlab.spinglass import exact
from mixlab.spinglass.map import map_graphcut, map_solve, perturbed_value
from mixlab.spinglass.model import random_spin_glass


def _brute_max(m, u):
    X = exact.all_configurations(m.n).reshape(-1, *m.shape)
    return perturbed_value(m, X, np.broadcast_to(u, X.shape + (2,))).max()


@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (3, 3), (2, 5), (4, 4)])
def test_graphcut_matches_brute_force(shape):
    rng = np.random.default_rng(sum(shape))
    for _ in range(3):
        m = random_spin_glass(*shape, coupling=3.0, rng=rng)
        u = rng.gumbel(size=(2,) + shape + (2,))
        x = map_graphcut(m, u)
        for b in range(2):
            assert perturbed_value(m, x[b], u[b]) == pytest.approx(_brute_max(m, u[b]), abs=1e-9)


def test_graphcut_agrees_with_max_product_on_large_attractive_grid():
    rng = np.random.default_rng(3)
    m = random_spin_glass(12, 30, coupling=2.0, rng=rng)
    u = rng.gumbel(size=(3, 12, 30, 2))
    vg = perturbed_value(m, map_graphcut(m, u), u)
    _, vm = exact.max_product(m, u, return_value=True)
    assert np.allclose(vg, vm, atol=1e-8)


def test_non_submodular_errors():
    m = random_spin_glass(3, 3, coupling=1.0, mixed=True, rng=np.random.default_rng(0))
    with pytest.raises(MixlabError, match="negative coupling"):
        map_graphcut(m)
    x = map_solve(m)                                  # auto -> max-product
    assert perturbed_value(m, x) == pytest.approx(_brute_max(m, np.zeros((3, 3, 2))))
    with pytest.raises(MixlabError, match="pairwise"):
        map_solve(m, pairwise=(np.zeros((3, 2, 2, 2)), np.zeros((2, 3, 2, 2))), method="graphcut")
    big = random_spin_glass(30, 30, coupling=1.0, mixed=True, rng=np.random.default_rng(0))
    with pytest.raises(MixlabError, match="no exact MAP solver"):
        map_solve(big)
