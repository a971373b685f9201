"""MCMC samplers against exact distributions on a 3x3 grid (512 states), and MarginalError."""

import copy

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.csgraph

from mixlab.errors import SpecError
from mixlab.spinglass import mcmc as M
from mixlab.spinglass.model import SpinGlass, random_spin_glass

W = 1 << np.arange(9)
# Observed TV of correct samplers with these budgets: 0.010-0.016 (the i.i.d. noise level for
# 2e5 draws over 512 states is ~0.013); every deliberately broken variant tried scored >= 0.35.
TV_MAX = 0.035
MARG_MAX = 0.02


MCMC_NAMES = ("gibbs", "metropolis", "swendsen_wang")


def make_sampler(method, model, chains, init="random"):
    """A registered spin glass sampler, built as the experiments build it."""
    from mixlab.plugins import registry
    from mixlab.spinglass.target import SpinGlassTarget

    kind = registry.get_sampler("spinglass", method)
    return kind.factory(SpinGlassTarget.of(model, init), {"init": None}, chains)


def exact_joint(model):
    idx = np.arange(512)[:, None]
    X = (2 * ((idx >> np.arange(9)) & 1) - 1).astype(float).reshape(-1, 3, 3)
    s = model.score(X)
    p = np.exp(s - s.max())
    return p / p.sum(), X


def run(sampler, rng, burn=50, draws=1000):
    st = sampler.init(rng)
    for _ in range(burn):
        st, _, _ = sampler.step(st, rng)
    counts = np.zeros(512)
    for _ in range(draws):
        st, d, stats = sampler.step(st, rng)
        s = d["samples"]
        assert s.dtype == np.bool_ and s.shape == (sampler.chains, 3, 3)
        assert stats["site_updates"].shape == (sampler.chains,)
        assert np.all((stats["accept"] >= 0) & (stats["accept"] <= 1))
        counts += np.bincount(s.reshape(sampler.chains, 9).astype(np.int64) @ W, minlength=512)
    return counts / counts.sum()


MODELS = {
    "attractive": lambda: random_spin_glass(3, 3, 1.0, 1.0, False, np.random.default_rng(3)),
    "mixed": lambda: random_spin_glass(3, 3, 1.0, 1.5, True, np.random.default_rng(3)),
}


@pytest.mark.parametrize("kind", list(MODELS))
@pytest.mark.parametrize("method", list(MCMC_NAMES))
def test_joint_tv_and_marginals(kind, method):
    model = MODELS[kind]()
    p, X = exact_joint(model)
    q = run(make_sampler(method, model, chains=200), np.random.default_rng(11))
    tv = 0.5 * np.abs(p - q).sum()
    assert tv < TV_MAX, tv
    marg_p = np.einsum("k,krc->rc", p, X > 0)
    marg_q = np.einsum("k,krc->rc", q, X > 0)
    assert np.max(np.abs(marg_p - marg_q)) < MARG_MAX
    # edge correlations E[x_i x_j]
    for sl in ((slice(None), slice(None, -1), slice(None), slice(1, None)),
               (slice(None, -1), slice(None), slice(1, None), slice(None))):
        a = X[:, sl[0], sl[1]] * X[:, sl[2], sl[3]]
        assert np.max(np.abs(np.einsum("k,krc->rc", p - q, a))) < 2 * MARG_MAX


class _SWWrongFieldSign(M.SwendsenWang):
    """Deliberately broken: P(keep orientation) = sigmoid(-2 h) instead of sigmoid(2 h)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.field = -self.field    # only the cluster flip uses the field


class _SWFerroOnly(M.SwendsenWang):
    """Deliberately broken: bonds agreeing spins on every edge, ignoring the coupling's sign."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.sign = np.abs(self.sign)


class _GibbsHalfField(M.Gibbs):
    """Deliberately broken: P(+1) = sigmoid(h) instead of sigmoid(2h)."""

    def _field(self, X, idx, J):
        return 0.5 * M.Gibbs._field(X, idx, J)


@pytest.mark.parametrize("cls,kind", [(_SWWrongFieldSign, "attractive"),
                                      (_SWFerroOnly, "mixed"), (_GibbsHalfField, "attractive")])
def test_broken_variants_fail_the_threshold(cls, kind):
    model = MODELS[kind]()
    p, _ = exact_joint(model)
    q = run(cls(model, chains=200), np.random.default_rng(11), draws=300)
    assert 0.5 * np.abs(p - q).sum() > 5 * TV_MAX


def test_sw_without_couplings_is_exact_independent_sampling():
    f = np.random.default_rng(0).uniform(-1, 1, (3, 3))
    model = SpinGlass(f, np.zeros((3, 2)), np.zeros((2, 3)))
    s = M.SwendsenWang(model, chains=4000)
    rng = np.random.default_rng(1)
    st = s.init(rng)
    st, d, _ = s.step(st, rng)   # every spin is its own cluster: one step is an exact draw
    p1 = 1 / (1 + np.exp(-2 * f))
    assert np.max(np.abs(d["samples"].mean(0) - p1)) < 4 * np.sqrt(0.25 / 4000)


def _components_min_site(R, C, right, down):
    """Reference clusters of one bond set with scipy: ``right (R, C-1)``, ``down (R-1, C)`` bool
    -> (n,) smallest site of each site's connected component."""
    n = R * C
    idx = np.arange(n).reshape(R, C)
    a = np.concatenate([idx[:, :-1][right], idx[:-1, :][down]])
    b = np.concatenate([idx[:, 1:][right], idx[1:, :][down]])
    g = scipy.sparse.coo_matrix((np.ones(a.size), (a, b)), shape=(n, n))
    _, lab = scipy.sparse.csgraph.connected_components(g, directed=False)
    first = np.full(lab.max() + 1, n)
    np.minimum.at(first, lab, np.arange(n))
    return first[lab]


def _kernel(x, C, sign, pbond, field, u):
    """Run the compiled SW kernel on copies; returns (new x, samples, changed, labels)."""
    x = np.array(x, np.float32)
    K, n = x.shape
    samples = np.empty((K, n), bool)
    changed = np.empty(K, np.int64)
    labels = np.full((K, n), -1, np.int32)
    M._sw_sweep(x, C, sign.astype(np.float32), pbond.astype(np.float32),
                field.astype(np.float32), u, samples, changed, labels)
    return x, samples, changed, labels


def _serpentine(R, C):
    """Bonds of a snake through the grid (row 0 left to right, down at the right end, row 1 right
    to left, ...): one cluster whose smallest site is reached last by a row-major union-find."""
    right = np.ones((R, C - 1), bool)
    down = np.zeros((R - 1, C), bool)
    down[::2, -1] = True
    down[1::2, 0] = True
    return right, down


@pytest.mark.parametrize("R,C", [(1, 1), (1, 7), (7, 1), (3, 3), (4, 9), (9, 4), (12, 12)])
def test_sw_cluster_labels_equal_connected_components(R, C):
    """Union-find labelling = scipy's components, on random bond sets of several densities (and a
    serpentine and a comb): bonds are forced by x = +1, sign = +1 and pbond ∈ {0, 1}. The unused
    right-edge slots of the last column get pbond = 1 and must be ignored."""
    rng = np.random.default_rng(R * 100 + C)
    n = R * C
    cases = [(rng.random((R, C - 1)) < d, rng.random((R - 1, C)) < d)
             for d in (0.2, 0.45, 0.5, 0.55, 0.8, 1.0) for _ in range(30)]
    cases.append(_serpentine(R, C))
    comb = (np.zeros((R, C - 1), bool), np.ones((R - 1, C), bool))
    comb[0][-1] = True                      # teeth (columns) joined only along the last row
    cases.append(comb)
    K = len(cases)
    pbond = np.ones((K, 2 * n - C))
    for k, (right, down) in enumerate(cases):
        pbond[k, :n].reshape(R, C)[:, :-1] = right
        pbond[k, n:] = down.ravel()
    u = rng.random((K, 3 * n - C), dtype=np.float32)
    for k in range(K):          # pbond differs per case: one kernel call per chain
        _, _, _, labels = _kernel(np.ones((1, n)), C, np.ones(2 * n - C), pbond[k],
                                  np.zeros(n), u[k:k + 1])
        assert np.array_equal(labels[0], _components_min_site(R, C, *cases[k])), k


def _sw_reference(model, x, u):
    """The Swendsen-Wang update written plainly in numpy + scipy (the pre-kernel implementation's
    arithmetic), driven by the kernel's uniforms ``u (K, 3n - C)``. x (K, R, C) ±1."""
    K, (R, C) = x.shape[0], model.shape
    n = R * C
    pb_r = (-np.expm1(-2.0 * np.abs(model.right))).astype(np.float32)
    pb_d = (-np.expm1(-2.0 * np.abs(model.down))).astype(np.float32)
    u_cl = u[:, :n]
    u_r = u[:, n:2 * n].reshape(K, R, C)[:, :, :-1]
    u_d = u[:, 2 * n:].reshape(K, R - 1, C)
    new = np.empty_like(x)
    labels = np.empty((K, n), np.int64)
    for k in range(K):
        right = (model.right * x[k, :, :-1] * x[k, :, 1:] > 0) & (u_r[k] < pb_r)
        down = (model.down * x[k, :-1, :] * x[k, 1:, :] > 0) & (u_d[k] < pb_d)
        lab = _components_min_site(R, C, right, down)
        xf = x[k].ravel()
        h = np.bincount(lab, weights=xf * model.field.ravel(), minlength=n)
        keep = u_cl[k] < 1.0 / (1.0 + np.exp(-2.0 * h))         # read at each cluster's root
        new[k] = (xf * np.where(keep[lab], 1.0, -1.0)).reshape(R, C)
        labels[k] = lab
    return new, labels


@pytest.mark.parametrize("coupling", [0.3, 1.5, 6.0])
@pytest.mark.parametrize("mixed", [False, True])
def test_sw_step_equals_plain_reference(coupling, mixed):
    """A whole SwendsenWang.step (bonds from spins and signed couplings, clusters, one flip per
    cluster from the field sum) equals the plain numpy/scipy update fed the same uniforms."""
    for R, C in ((5, 8), (1, 6), (6, 1)):
        model = random_spin_glass(R, C, 1.0, coupling, mixed, np.random.default_rng(7))
        s = M.SwendsenWang(model, chains=64)
        rng = np.random.default_rng(3)
        st = s.init(rng)
        for _ in range(3):
            x0 = st["x"].copy()
            u = copy.deepcopy(rng).random((64, 3 * model.n - C), dtype=np.float32)  # step's
            st, d, stats = s.step(st, rng)
            want, want_labels = _sw_reference(model, x0.astype(float), u)
            assert np.array_equal(st["x"], want)
            assert np.array_equal(d["samples"], want > 0)
            assert np.array_equal(stats["accept"] * model.n,
                                  np.count_nonzero((x0 != want).reshape(64, -1), axis=1))
            _, _, _, labels = _kernel(x0.reshape(64, -1), C, s.sign, s.pbond, s.field, u)
            assert np.array_equal(labels, want_labels)


def test_reproducible_and_init_modes():
    model = MODELS["mixed"]()
    for method in MCMC_NAMES:
        outs = []
        for _ in range(2):
            rng = np.random.default_rng(5)
            s = make_sampler(method, model, chains=3)
            st = s.init(rng)
            for _ in range(4):
                st, d, _ = s.step(st, rng)
            outs.append(d["samples"])
        assert np.array_equal(outs[0], outs[1])
        s = make_sampler(method, model, chains=2, init="plus")
        st = s.init(np.random.default_rng(0))
        assert np.all(np.asarray(st["x"])[np.nonzero(st["x"])] == 1)
    with pytest.raises(ValueError):
        make_sampler("gibbs", model, chains=0)
    with pytest.raises(SpecError, match="unknown spinglass sampler 'hmc'"):
        make_sampler("hmc", model, chains=1)
    with pytest.raises(ValueError):
        M.Gibbs(model, chains=1, init="zeros")


def _blocks(arr, sizes):
    i = 0
    for b in sizes:
        yield arr[:, i:i + b]
        i += b


def test_marginal_error_log_points_independent_of_blocking():
    rng = np.random.default_rng(0)
    exact = rng.uniform(0, 1, (2, 3))
    samples = rng.random((4, 137, 2, 3)) < 0.5
    curves = []
    for sizes in ([137], [1] * 137, [10, 50, 77], [100, 37]):
        ev = M.MarginalError(exact, series="t", updates_per_draw=6, points_per_decade=12)
        count = 0
        for blk in _blocks(samples, sizes):
            count += blk.shape[1]
            ev.update({"samples": blk}, count, 0.1 * count)
        curves.append(ev.curve())
    for x, y, _ in curves[1:]:
        assert np.array_equal(x, curves[0][0]) and np.array_equal(y, curves[0][1])
    x, y, _ = curves[0]
    # direct computation at each point
    for xv, yv in zip(x, y):
        d = int(round(xv / (4 * 6)))
        est = samples[:, :d].mean(axis=(0, 1))
        assert abs(yv - np.mean(np.abs(est - exact))) < 1e-12
    assert x[-1] == 137 * 4 * 6 and np.all(np.diff(x) > 0)
    targets = np.unique(np.ceil(10 ** (np.arange(40) / 12) - 1e-9))
    assert len(x) == np.count_nonzero(targets <= 137) + 1   # log-spaced points + the last draw


def test_marginal_error_seconds_mode():
    exact = np.full((2, 2), 0.5)
    ev = M.MarginalError(exact, x="seconds")
    s = np.ones((2, 5, 2, 2), bool)
    ev.update({"samples": s}, 5, 0.5)
    ev.update({"samples": ~s}, 10, 1.25)
    x, y, _ = ev.curve()
    assert np.allclose(x, [0.5, 1.25]) and np.allclose(y, [0.5, 0.0])
    with pytest.raises(ValueError):
        M.MarginalError(exact, x="draws")
