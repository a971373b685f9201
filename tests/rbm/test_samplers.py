"""Samplers of mixlab.rbm.samplers against exact distributions and identities (GUIDE §4)."""

import itertools

import numpy as np
import pytest
from scipy.special import expit, logsumexp

from mixlab.errors import SpecError
from mixlab.plugins import registry
from mixlab.rbm import samplers as S
from mixlab.rbm.model import RBM
from mixlab.rbm.target import RBMTarget


def small_rbm(seed=3, V=6, H=4, scale=1.5):
    rng = np.random.default_rng(seed)
    return RBM(W=(rng.standard_normal((V, H)) * scale).astype(np.float32),
               b=(rng.standard_normal(V) * 0.7).astype(np.float32),
               c=(rng.standard_normal(H) * 0.7).astype(np.float32))


def exact_px(rbm):
    """Exact P(x) over all 2^V visible states (index = binary number, x[0] most significant)."""
    V = rbm.W.shape[0]
    X = np.array(list(itertools.product([0, 1], repeat=V)), np.float64)
    W, b, c = (np.asarray(a, np.float64) for a in (rbm.W, rbm.b, rbm.c))
    logp = X @ b + np.logaddexp(0, X @ W + c).sum(1)
    return np.exp(logp - logsumexp(logp))


def state_index(x):
    V = x.shape[-1]
    return (np.asarray(x, np.int64) * (1 << np.arange(V - 1, -1, -1))).sum(-1)


def gibbs_tv(rbm, seed=0, chains=2000, burn=30, draws=60):
    sampler = S.Gibbs(rbm, k=1, chains=chains, init="noise", emit="binary")
    rng = np.random.default_rng(seed)
    state = sampler.init(rng)
    counts = np.zeros(2 ** rbm.W.shape[0])
    for t in range(burn + draws):
        state, d, stats = sampler.step(state, rng)
        if t >= burn:
            counts += np.bincount(state_index(d["samples"]), minlength=counts.size)
    emp = counts / counts.sum()
    return 0.5 * np.abs(emp - exact_px(rbm)).sum()


TV_MAX = 0.02  # 120k correlated draws over 64 states: a correct sampler gives ~0.007


def test_gibbs_matches_exact_marginal():
    assert gibbs_tv(small_rbm()) < TV_MAX


def _broken_no_hidden_sample(x, W, Wf, b, c, k, rng):
    """Uses E[h|x] instead of a sample of h (skips the hidden resample)."""
    for _ in range(k):
        a = S._vis_to_hid(x, W, Wf) + c
        h = expit(a)
        rng.random(a.shape, dtype=np.float32)
        px = expit(S._hid_to_vis(h, W, Wf) + b)
        x = S._bernoulli(px, rng)
    return x, h, px


def _broken_wrong_bias(x, W, Wf, b, c, k, rng):
    """Forgets the visible bias."""
    for _ in range(k):
        a = expit(S._vis_to_hid(x, W, Wf) + c)
        h = S._bernoulli(a, rng)
        px = expit(S._hid_to_vis(h, W, Wf))
        x = S._bernoulli(px, rng)
    return x, h, px


@pytest.mark.parametrize("broken", [_broken_no_hidden_sample, _broken_wrong_bias])
def test_exact_check_has_power(monkeypatch, broken):
    monkeypatch.setattr(S, "gibbs_sweeps", broken)
    assert gibbs_tv(small_rbm()) > 3 * TV_MAX


def _data(rbm, n=50, seed=1):
    return (np.random.default_rng(seed).random((n, rbm.W.shape[0])) < 0.4).astype(np.float32)


@pytest.mark.parametrize("alpha", [1.0, 0.9])
@pytest.mark.parametrize("shared", [False, True])
def test_rates_fpcd_eps0_is_gibbs(alpha, shared):
    rbm = small_rbm(V=12, H=7)
    X = _data(rbm)
    R = S.compute_rates(rbm, X)
    g = S.Gibbs(rbm, k=2, chains=5, init="data", init_data=X, emit="both")
    r = S.RatesFPCD(rbm, eps_f=0.0, alpha=alpha, k=2, chains=5, shared=shared, rates=R,
                    init="data", init_data=X, emit="both")
    rg, rr = np.random.default_rng(7), np.random.default_rng(7)
    sg, sr = g.init(rg), r.init(rr)
    for _ in range(40):
        sg, dg, _ = g.step(sg, rg)
        sr, dr, _ = r.step(sr, rr)
        assert np.array_equal(dg["samples"], dr["samples"])
        assert np.array_equal(dg["means"], dr["means"])
    assert dg["samples"].dtype == bool and dg["means"].dtype == np.float32


@pytest.mark.parametrize("cls,kw", [(S.RatesFPCD, {"alpha": 1.0}), (S.RatesFPCD, {"alpha": 0.9}),
                                    (S.SamplePenalization, {"alpha": 0.9}),
                                    (S.RatesHerding, {"alpha": 1.0, "emit": "binary"})])
def test_per_chain_one_chain_equals_shared(cls, kw):
    rbm = small_rbm(V=12, H=7)
    X = _data(rbm)
    R = S.compute_rates(rbm, X)
    a = cls(rbm, eps_f=0.05, k=3, chains=1, shared=False, rates=R, init_data=X, **kw)
    b = cls(rbm, eps_f=0.05, k=3, chains=1, shared=True, rates=R, init_data=X, **kw)
    ra, rb = np.random.default_rng(11), np.random.default_rng(11)
    sa, sb = a.init(ra), b.init(rb)
    moved = 0
    for _ in range(60):
        sa, da, _ = a.step(sa, ra)
        sb, db, _ = b.step(sb, rb)
        for key in da:
            assert np.array_equal(da[key], db[key])
        moved += np.abs(sa["W_eff"] - rbm.W).max() > 0
    assert np.array_equal(sa["W_eff"], sb["W_eff"])
    assert moved > 0  # the fast weights did move


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("alpha", [1.0, 0.8])
@pytest.mark.parametrize("C", [1, 4])
def test_rates_fpcd_update_rule(shared, alpha, C):
    """θ_F ← α θ_F + ε_F (R − s(x, ĥ)), ĥ = E[h|x; θ⁻] before the update (chain mean if shared)."""
    rbm = small_rbm(V=10, H=5)
    X = _data(rbm)
    R = S.compute_rates(rbm, X)
    eps = 0.1
    smp = S.RatesFPCD(rbm, eps_f=eps, alpha=alpha, k=1, chains=C, shared=shared, rates=R,
                      init_data=X, emit="binary")
    rng = np.random.default_rng(5)
    st = smp.init(rng)
    for _ in range(5):
        st, _, _ = smp.step(st, rng)
    def theta_minus(st):
        ps = smp.effective_params(st)
        return tuple(np.stack([p[key] for p in ps]).astype(np.float64) for key in "Wbc")

    W0, b0, c0 = theta_minus(st)
    assert W0.shape[0] == (1 if shared else C)
    st, d, _ = smp.step(st, rng)
    x = d["samples"].astype(np.float64)
    Wm = np.broadcast_to(W0, (C,) + W0.shape[1:]) if shared else W0
    cm = np.broadcast_to(c0, (C, c0.shape[1])) if shared else c0
    hh = expit(np.einsum("cv,cvh->ch", x, Wm) + cm)
    sW, sb, sc = x[:, :, None] * hh[:, None, :], x, hh
    if shared:
        sW, sb, sc = sW.mean(0, keepdims=True), sb.mean(0, keepdims=True), sc.mean(0, keepdims=True)
    W, b, c = (np.asarray(a, np.float64) for a in (rbm.W, rbm.b, rbm.c))
    expW = W + alpha * (W0 - W) + eps * (R["W"] - sW)
    expb = b + alpha * (b0 - b) + eps * (R["b"] - sb)
    expc = c + alpha * (c0 - c) + eps * (R["c"] - sc)
    W1, b1, c1 = theta_minus(st)
    np.testing.assert_allclose(W1, expW, atol=2e-5)
    np.testing.assert_allclose(b1, expb, atol=2e-5)
    np.testing.assert_allclose(c1, expc, atol=2e-5)


def test_sample_penalization_has_no_rates_and_rejects_alpha_1():
    rbm = small_rbm()
    X = _data(rbm)
    with pytest.raises(ValueError, match="alpha < 1"):
        S.SamplePenalization(rbm, eps_f=0.1, alpha=1.0, init_data=X)
    with pytest.raises(ValueError, match="alpha < 1"):
        S.sample_penalization_factory(RBMTarget(rbm.W, rbm.b, rbm.c, train_X=X),
                                      {"eps_f": 0.1, "alpha": 1.0, "k": 1, "shared": False}, 1)
    smp = S.SamplePenalization(rbm, eps_f=0.1, alpha=0.5, chains=1, init_data=X, emit="binary")
    rng = np.random.default_rng(0)
    st = smp.init(rng)
    st, d, _ = smp.step(st, rng)
    # θ_F = −ε s(x, ĥ) after one step from θ_F = 0
    x = d["samples"].astype(np.float64)
    np.testing.assert_allclose(st["b_fast"], -0.1 * x, atol=1e-7)


def test_rates_herding_reaches_fixed_point_which_is_local_energy_min():
    rbm = small_rbm(V=30, H=12, scale=0.8, seed=9)
    X = _data(rbm, n=20)
    R = S.compute_rates(rbm, X)
    smp = S.RatesHerding(rbm, eps_f=0.0, k=200, chains=16, rates=R, init="noise")
    rng = np.random.default_rng(2)
    st = smp.init(rng)
    st, d, stats = smp.step(st, rng)
    assert d.keys() == {"samples"} and d["samples"].dtype == bool
    assert np.all(stats["rounds"] <= 200)  # every chain converged
    x = d["samples"].astype(np.float32)
    W, b, c = rbm.W, rbm.b, rbm.c
    h = (x @ W + c > 0).astype(np.float32)
    assert np.array_equal((h @ W.T + b > 0), d["samples"])  # fixed point
    # a local minimum of the energy: no single flip of a visible or hidden unit lowers it
    E0 = S.energy(x, h, W, b, c)
    for i in range(x.shape[1]):
        xf = x.copy()
        xf[:, i] = 1 - xf[:, i]
        assert np.all(S.energy(xf, h, W, b, c) >= E0 - 1e-9)
    for j in range(h.shape[1]):
        hf = h.copy()
        hf[:, j] = 1 - hf[:, j]
        assert np.all(S.energy(x, hf, W, b, c) >= E0 - 1e-9)
    # no randomness used after init: a second run with another seed gives the same draw
    st2 = smp.init(np.random.default_rng(2))
    _, d2, _ = smp.step(st2, np.random.default_rng(999))
    assert np.array_equal(d2["samples"], d["samples"])


def test_hill_climb_never_raises_energy():
    rbm = small_rbm(V=30, H=12, scale=0.8, seed=4)
    rng = np.random.default_rng(0)
    x = (rng.random((8, 30)) < 0.5).astype(np.float32)
    b2, c2 = rbm.b[None], rbm.c[None]
    prev = None
    for k in range(1, 6):
        xk, hk, _ = S.hill_climb(x, rbm.W, None, b2, c2, k)
        e = S.energy(xk, hk, rbm.W, rbm.b, rbm.c)
        if prev is not None:
            assert np.all(e <= prev + 1e-9)
        prev = e


def test_rates_herding_rejects_means():
    rbm = small_rbm()
    with pytest.raises(ValueError, match="binary"):
        S.RatesHerding(rbm, eps_f=0.1, rates=S.compute_rates(rbm, _data(rbm)),
                       init="noise", emit="means")


def test_compute_rates_matches_definition():
    rbm = small_rbm(V=9, H=5)
    X = _data(rbm, n=37)
    R = S.compute_rates(rbm, X, block=8)
    Xd = X.astype(np.float64)
    H = expit(Xd @ rbm.W.astype(np.float64) + rbm.c)
    np.testing.assert_allclose(R["W"], Xd.T @ H / 37, atol=1e-6)
    np.testing.assert_allclose(R["b"], Xd.mean(0), atol=1e-6)
    np.testing.assert_allclose(R["c"], H.mean(0), atol=1e-6)


def test_rates_fpcd_moves_away_from_a_stuck_mode():
    """With ε_F > 0 the chain keeps moving where Gibbs on a peaked model stays put."""
    rbm = small_rbm(V=12, H=7, scale=3.0, seed=5)
    X = _data(rbm, n=40)
    R = S.compute_rates(rbm, X)
    flips = {}
    for eps in (0.0, 0.5):
        smp = S.RatesFPCD(rbm, eps_f=eps, k=1, chains=8, rates=R, init_data=X, emit="binary")
        rng = np.random.default_rng(3)
        st = smp.init(rng)
        tot = 0.0
        for _ in range(200):
            st, _, stats = smp.step(st, rng)
            tot += stats["flip"].mean()
        flips[eps] = tot / 200
    assert flips[0.5] > 2 * flips[0.0]


def test_bad_arguments():
    rbm = small_rbm()
    with pytest.raises(ValueError, match="init_data"):
        S.Gibbs(rbm, init="data")
    with pytest.raises(ValueError, match="emit"):
        S.Gibbs(rbm, init="noise", emit="gray")
    with pytest.raises(ValueError, match="rates"):
        S.RatesFPCD(rbm, eps_f=0.1, init="noise")
    with pytest.raises(ValueError, match="alpha"):
        S.RatesFPCD(rbm, eps_f=0.1, alpha=1.5, init="noise", rates=S.compute_rates(rbm, _data(rbm)))
    with pytest.raises(SpecError, match="unknown rbm sampler 'metropolis'"):
        registry.get_sampler("rbm", "metropolis")


def test_builtin_samplers_are_registered_and_factories_match_the_classes():
    """Each built-in method is an ``rbm`` sampler of the registry whose factory builds the class
    with the spec entry's settings; the stream it gives is the class's, bit for bit."""
    rbm = small_rbm()
    X = _data(rbm)
    kinds = registry.samplers_for("rbm")
    assert set(S.METHODS) <= set(kinds)
    target = RBMTarget(rbm.W, rbm.b, rbm.c, train_X=X)  # no rates: the factory computes them
    R = S.compute_rates(rbm, X)
    cases = {
        "gibbs": ({"k": 2}, S.Gibbs(rbm, k=2, chains=3, init_data=X, emit="both")),
        "rates-fpcd": ({"eps_f": 0.05, "alpha": 0.9, "k": 1, "shared": False},
                       S.RatesFPCD(rbm, eps_f=0.05, alpha=0.9, chains=3, rates=R, init_data=X,
                                   emit="both")),
        "rates-herding": ({"eps_f": 0.05, "alpha": 1.0, "k": 10, "shared": True},
                          S.RatesHerding(rbm, eps_f=0.05, k=10, chains=3, shared=True, rates=R,
                                         init_data=X)),
        "sample-penalization": ({"eps_f": 0.05, "alpha": 0.5, "k": 1, "shared": False},
                                S.SamplePenalization(rbm, eps_f=0.05, alpha=0.5, chains=3,
                                                     init_data=X, emit="both")),
    }
    for name, (params, ref) in cases.items():
        smp = kinds[name].factory(target, params, 3)
        assert type(smp) is type(ref) and smp.chains == 3
        assert smp.draw_keys == (("samples",) if name == "rates-herding"
                                 else ("samples", "means"))
        r1, r2 = np.random.default_rng(5), np.random.default_rng(5)
        s1, s2 = smp.init(r1), ref.init(r2)
        for _ in range(4):
            s1, d1, _ = smp.step(s1, r1)
            s2, d2, _ = ref.step(s2, r2)
            for k in d2:
                np.testing.assert_array_equal(d1[k], d2[k])
