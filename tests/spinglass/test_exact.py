import numpy as np
import pytest

from mixlab.spinglass import exact
from mixlab.spinglass.model import SpinGlass, random_spin_glass

SHAPES = [(1, 1), (1, 6), (4, 1), (3, 4), (4, 3), (2, 7), (4, 5)]


@pytest.mark.parametrize("shape", SHAPES)
def test_log_partition_and_marginals_match_brute_force(shape):
    rng = np.random.default_rng(sum(shape))
    for mixed in (False, True):
        m = random_spin_glass(*shape, coupling=2.5, mixed=mixed, rng=rng)
        lz, marg = exact.brute_force(m)
        assert exact.log_partition(m) == pytest.approx(lz, abs=1e-10)
        assert np.allclose(exact.marginals(m), marg, atol=1e-10)


@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 5)])
def test_edge_marginals_match_enumeration(shape):
    m = random_spin_glass(*shape, coupling=2.0, mixed=True, rng=np.random.default_rng(7))
    X = exact.all_configurations(m.n).reshape(-1, *shape).astype(float)
    s = m.score(X)
    p = np.exp(s - s.max())
    p /= p.sum()
    right = np.einsum("k,krc->rc", p, X[:, :, :-1] * X[:, :, 1:] > 0)
    down = np.einsum("k,krc->rc", p, X[:, :-1] * X[:, 1:] > 0)
    er, ed = exact.edge_marginals(m)
    assert np.allclose(er, right, atol=1e-10) and np.allclose(ed, down, atol=1e-10)


def test_chain_closed_form():
    # 1 x n chain without field: Z = 2 prod_e 2 cosh(J_e)
    J = np.array([0.3, -1.2, 2.0, 0.7])
    m = SpinGlass(np.zeros((1, 5)), J[None], np.zeros((0, 5)))
    assert exact.log_partition(m) == pytest.approx(np.log(2) + np.sum(np.log(2 * np.cosh(J))))
    assert np.allclose(exact.marginals(m), 0.5)
    er, _ = exact.edge_marginals(m)
    assert np.allclose(2 * er - 1, np.tanh(J))         # E[x_i x_j] = tanh J on a chain


def test_decoupled_marginals_are_sigmoids():
    f = np.random.default_rng(4).normal(size=(5, 6))
    m = SpinGlass(f, np.zeros((5, 5)), np.zeros((4, 6)))
    assert np.allclose(exact.marginals(m), 1 / (1 + np.exp(-2 * f)))
    assert exact.log_partition(m) == pytest.approx(np.sum(np.log(2 * np.cosh(f))))


def test_strong_couplings_stay_finite():
    m = random_spin_glass(6, 6, field=1.0, coupling=60.0, mixed=True, rng=np.random.default_rng(5))
    mg = exact.marginals(m)
    assert np.all(np.isfinite(mg)) and np.isfinite(exact.log_partition(m))


@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (1, 7)])
def test_max_product_with_perturbations_is_exact(shape):
    rng = np.random.default_rng(11)
    m = random_spin_glass(*shape, coupling=2.0, mixed=True, rng=rng)
    R, C = shape
    u = rng.gumbel(size=(4, R, C, 2))
    pw = (rng.gumbel(size=(4, R, C - 1, 2, 2)), rng.gumbel(size=(4, R - 1, C, 2, 2)))
    X = exact.all_configurations(m.n).reshape(-1, R, C)
    B = (X > 0).astype(int)
    x, v = exact.max_product(m, u, pw, return_value=True)
    for b in range(4):
        tot = m.score(X) + np.take_along_axis(u[b][None], B[..., None], -1)[..., 0].sum((1, 2))
        tot += pw[0][b][np.arange(R)[:, None], np.arange(C - 1), B[:, :, :-1], B[:, :, 1:]].sum((1, 2))
        tot += pw[1][b][np.arange(R - 1)[:, None], np.arange(C), B[:, :-1], B[:, 1:]].sum((1, 2))
        assert v[b] == pytest.approx(tot.max(), abs=1e-10)
        assert np.array_equal(x[b], X[np.argmax(tot)])   # ties have probability 0


def test_width_limit_is_a_clear_error():
    m = random_spin_glass(exact.MAX_WIDTH + 1, exact.MAX_WIDTH + 1, rng=np.random.default_rng(0))
    with pytest.raises(Exception, match="min\\(rows, cols\\)"):
        exact.log_partition(m)
