"""Variational log Z baselines against exact enumeration (brute force over 2^n states)."""

import warnings

import numpy as np
import pytest

from mixlab.spinglass import variational as V
from mixlab.spinglass.model import SpinGlass, random_spin_glass


def brute(model):
    """(log Z, P(x=+1)) by enumerating every configuration (independent of mixlab.exact)."""
    R, C = model.shape
    n = R * C
    idx = np.arange(1 << n)[:, None]
    X = (2 * ((idx >> np.arange(n)) & 1) - 1).astype(float).reshape(-1, R, C)
    s = model.score(X)
    w = np.exp(s - s.max())
    Z = w.sum()
    return float(s.max() + np.log(Z)), np.einsum("k,krc->rc", w, (X > 0)) / Z


def tree_model(rng, R=4, C=4, mixed=True):
    """A random spanning tree of the grid (a 'snake' plus random extra zero couplings kept 0)."""
    m = random_spin_glass(R, C, 1.0, 2.0, mixed, rng)
    right, down = m.right.copy(), m.down.copy()
    down[:, 1:] = 0.0      # keep all right edges + down edges of column 0: a comb spanning tree
    right[1::2, :] *= 1.0
    return SpinGlass(m.field, right, down)


@pytest.mark.parametrize("shape", [(1, 9), (9, 1)])
@pytest.mark.parametrize("mixed", [False, True])
def test_chain_exact(shape, mixed):
    rng = np.random.default_rng(1)
    m = random_spin_glass(*shape, field=1.0, coupling=2.5, mixed=mixed, rng=rng)
    lz, marg = brute(m)
    for fn in (V.bethe_bp, V.trw, V.ntrw):
        z, p = fn(m, return_marginals=True)
        assert abs(z - lz) < 1e-8, fn.__name__
        assert np.max(np.abs(p - marg)) < 1e-6, fn.__name__
    assert abs(V.trw(m, rho=1.0) - lz) < 1e-8


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tree_grid_bp_and_trw_rho1_exact(seed):
    rng = np.random.default_rng(seed)
    m = tree_model(rng, mixed=seed % 2 == 1)
    lz, marg = brute(m)
    z, p = V.bethe_bp(m, return_marginals=True)
    assert abs(z - lz) < 1e-8 and np.max(np.abs(p - marg)) < 1e-7
    z, p = V.trw(m, rho=1.0, return_marginals=True)
    assert abs(z - lz) < 1e-8 and np.max(np.abs(p - marg)) < 1e-7
    # on a forest every zero-coupling edge is irrelevant, so rho there does not matter
    rr = np.ones_like(m.right)
    rd = np.where(m.down == 0, 0.37, 1.0)
    assert abs(V.trw(m, rho=(rr, rd)) - lz) < 1e-8
    # a broken rho (< 1 on a tree edge) is not exact: the test can tell
    assert V.trw(m, rho=0.5) - lz > 1e-3


def test_tree_infer_matches_brute_force():
    rng = np.random.default_rng(5)
    m = tree_model(rng, R=3, C=4)
    R, C = m.shape
    forest, eidx = V._comb(R, C, vertical=False)
    J_all = np.concatenate([m.right.ravel(), m.down.ravel()])
    J = np.where(eidx >= 0, J_all[np.maximum(eidx, 0)], 0.0)
    logZ, mean, pair = V.tree_infer(forest, m.field.ravel(), J)
    lz, marg = brute(m)
    assert abs(logZ - lz) < 1e-10
    assert np.max(np.abs(mean - (2 * marg.ravel() - 1))) < 1e-10
    # pairwise moments by enumeration
    n = R * C
    idx = np.arange(1 << n)[:, None]
    X = (2 * ((idx >> np.arange(n)) & 1) - 1).astype(float)
    w = np.exp(m.score(X.reshape(-1, R, C)) - lz)
    par = forest.parent
    for i in range(n):
        if par[i] >= 0:
            assert abs(pair[i] - np.sum(w * X[:, i] * X[:, par[i]])) < 1e-10


@pytest.mark.parametrize("seed", range(6))
def test_bounds_on_loopy_grids(seed):
    rng = np.random.default_rng(100 + seed)
    shape = [(3, 4), (4, 4), (4, 3)][seed % 3]
    m = random_spin_glass(*shape, field=1.0, coupling=[0.5, 1.5, 3.0][seed % 3],
                          mixed=seed >= 3, rng=rng)
    lz, _ = brute(m)
    mf = V.mean_field(m)
    smf = V.structured_mean_field(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", V.VariationalWarning)  # a non-optimal NTRW is still a bound
        nt = V.ntrw(m)
    t = V.trw(m, max_iter=50000)
    assert V.last_info["converged"]
    assert mf <= lz + 1e-9
    assert smf <= lz + 1e-9
    assert smf >= mf - 1e-9
    assert nt <= lz + 1e-9
    assert t >= lz - 1e-9
    assert lz - mf > 1e-3          # loopy with non-trivial couplings: MF is not exact here


def test_smf_exact_without_horizontal_couplings():
    rng = np.random.default_rng(7)
    m = random_spin_glass(4, 3, field=1.0, coupling=2.0, mixed=True, rng=rng)
    m = SpinGlass(m.field, np.zeros_like(m.right), m.down)
    lz, marg = brute(m)
    z, p = V.structured_mean_field(m, return_marginals=True)
    assert abs(z - lz) < 1e-9
    assert np.max(np.abs(p - marg)) < 1e-9
    # naive MF is not exact on this model (vertical chains are coupled)
    assert lz - V.mean_field(m) > 1e-3


def test_mf_exact_without_couplings_and_bp_marginals_close_when_weak():
    rng = np.random.default_rng(8)
    f = rng.uniform(-1, 1, (3, 3))
    m = SpinGlass(f, np.zeros((3, 2)), np.zeros((2, 3)))
    lz = float(np.sum(np.logaddexp(f, -f)))
    assert abs(V.mean_field(m) - lz) < 1e-12
    w = random_spin_glass(3, 3, 1.0, 0.1, False, rng)
    lzw, margw = brute(w)
    z, p = V.bethe_bp(w, return_marginals=True)
    assert abs(z - lzw) < 1e-3 and np.max(np.abs(p - margw)) < 1e-3


def test_nonconvergence_warns():
    rng = np.random.default_rng(3)
    m = random_spin_glass(4, 4, 1.0, 2.0, False, rng)
    for fn in (V.bethe_bp, V.trw, V.mean_field, V.structured_mean_field):
        with pytest.warns(V.VariationalWarning):
            fn(m, max_iter=2)
        assert V.last_info["converged"] is False


def test_bad_arguments():
    m = random_spin_glass(2, 2, rng=np.random.default_rng(0))
    with pytest.raises(ValueError):
        V.bethe_bp(m, damping=1.0)
    with pytest.raises(ValueError):
        V.trw(m, rho=0.0)
    with pytest.raises(ValueError):
        V.ntrw(m, weights=(0.0,))
