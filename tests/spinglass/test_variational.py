"""Variational log Z baselines against exact enumeration (brute force over 2^n states)."""

import warnings

import numpy as np
import pytest

from mixlab.spinglass import variational as V
from mixlab.spinglass.model import SpinGlass, random_spin_glass
from mixlab.spinglass.variational import naive_mean_field, structured, trees


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
    forest, eidx = trees.comb_tree(R, C, vertical=False)
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


# --- multi-start optimisers (strong coupling: the old single-start ascent found domain walls) ---

def _strong(seed, shape=(4, 4)):
    return random_spin_glass(*shape, field=1.0, coupling=3.0, mixed=False,
                             rng=np.random.default_rng(300 + seed))


@pytest.mark.parametrize("seed", range(4))
def test_mean_field_family_near_map_at_strong_coupling(seed):
    from mixlab.spinglass.map import map_solve
    m = _strong(seed)
    lz, _ = brute(m)
    xmap = float(m.score(map_solve(m)))
    mf = V.mean_field(m)
    assert V.last_info["converged"]
    # the point mass on x* is a start and the ascent is monotone: MF >= max_x θ(x)
    assert mf >= xmap - 1e-9
    assert mf <= lz + 1e-9
    smf = V.structured_mean_field(m)
    assert mf - 1e-9 <= smf <= lz + 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", V.VariationalWarning)
        nt = V.ntrw(m, max_iter=40)   # the guarantees below hold for any iteration count
    assert smf - 1e-9 <= nt <= lz + 1e-9
    assert V.last_info["bounds"][0.0] == pytest.approx(smf, abs=1e-9)   # the limit point
    # every a > 0 run is a valid lower bound on its own
    assert all(b <= lz + 1e-9 for b in V.last_info["bounds"].values())


def test_old_single_start_is_stuck_but_multistart_is_not():
    """Regression: on this model the field-only start converges to a domain-wall optimum far
    below max θ(x); the multi-start default does not."""
    from mixlab.spinglass.map import map_solve
    found = False
    for seed in range(20):
        m = _strong(seed, (6, 6))
        xmap = float(m.score(map_solve(m)))
        single = V.mean_field(m, inits=("field",), restarts=0)
        if single < xmap - 2.0:
            found = True
            assert V.mean_field(m) >= xmap - 1e-9
            assert V.structured_mean_field(m) >= V.mean_field(m) - 1e-9
    assert found   # the test model set does contain a trap for the single start


def test_mean_field_map_start_value_is_theta_of_map():
    """A point-mass start has bound θ(x); zero iterations of ascent must return it."""
    m = _strong(1)
    x = np.ones(m.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", V.VariationalWarning)
        v = V.mean_field(m, init=x, max_iter=1)
    assert v >= float(m.score(x)) - 1e-9
    assert naive_mean_field._mf_value(m, x) == pytest.approx(float(m.score(x)), abs=1e-12)


def test_chains_infer_matches_tree_infer():
    rng = np.random.default_rng(11)
    m = random_spin_glass(5, 3, 1.0, 2.0, True, rng)
    he = rng.normal(size=(2, 5, 3))
    forest, _ = trees.column_forest(5, 3)
    Jv = np.zeros((5, 3))
    Jv[1:] = m.down
    lz, mean, pair = structured._chains_infer(he, m.down)
    for k in range(2):
        z, mu, pr = V.tree_infer(forest, he[k].ravel(), Jv.ravel())
        assert abs(lz[k].sum() - z) < 1e-10
        assert np.max(np.abs(mean[k].ravel() - mu)) < 1e-10
        assert np.max(np.abs(pair[k] - pr.reshape(5, 3)[1:])) < 1e-10


@pytest.mark.parametrize("schedule", ["sequential", "parallel"])
def test_bp_schedules_agree_on_weak_coupling(schedule):
    m = random_spin_glass(4, 4, 1.0, 0.3, True, np.random.default_rng(12))
    ref = V.bethe_bp(m, schedule="parallel", inits=("zero",))
    assert abs(V.bethe_bp(m, schedule=schedule) - ref) < 1e-8
    assert abs(V.trw(m, schedule=schedule) - V.trw(m, schedule="parallel")) < 1e-8


def test_bp_picks_lowest_free_energy_fixed_point():
    m = _strong(0, (6, 6))
    V.bethe_bp(m)
    vals, ok = V.last_info["values"], V.last_info["converged_runs"]
    best = V.bethe_bp(m)
    assert best == pytest.approx(max(v for v, c in zip(vals, ok) if c))
