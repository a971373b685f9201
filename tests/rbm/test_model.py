"""mixlab.rbm.model: conditionals, energies and Gibbs sampling against enumeration."""

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from mixlab.errors import MixlabError
from mixlab.rbm.model import RBM, sigmoid, softplus, sufficient_stats
from mixlab.rbm.partition import all_configs, exact_visible_log_probs


def random_rbm(V, H, scale=1.0, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return RBM((scale * rng.standard_normal((V, H))).astype(dtype),
               rng.standard_normal(V).astype(dtype), rng.standard_normal(H).astype(dtype))


def test_stable_sigmoid_softplus_extremes():
    z = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = sigmoid(z)
        sp = softplus(z)
        sp32 = softplus(z.astype(np.float32))
    np.testing.assert_allclose(s, [0.0, np.exp(-50.0), 0.5, 1.0, 1.0], rtol=1e-12, atol=0)
    np.testing.assert_allclose(sp, [0.0, np.exp(-50.0), np.log(2.0), 50.0, 1000.0], rtol=1e-12)
    assert sp32.dtype == np.float32 and np.isfinite(sp32).all()
    # float32 fast path (tanh form): within float32 rounding of the exact logistic, no warnings
    z32 = np.linspace(-100, 100, 100001).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s32 = sigmoid(z32)
    assert s32.dtype == np.float32
    assert np.abs(s32.astype(np.float64) - sigmoid(z32.astype(np.float64))).max() < 2.5e-7
    assert s32.min() >= 0 and s32.max() <= 1


def test_free_energy_and_conditionals_match_enumeration():
    m = random_rbm(5, 4, seed=1)
    x = all_configs(5)                       # (32, 5)
    h = all_configs(4)                       # (16, 4)
    E = m.energy(x[:, None, :], h[None, :, :])             # (32, 16)
    # F(x) = -log sum_h exp(-E(x, h))
    np.testing.assert_allclose(m.free_energy(x), -logsumexp(-E, axis=1), rtol=0, atol=1e-12)
    # P(h_j = 1 | x) by enumeration
    p_h_given_x = np.exp(-E - logsumexp(-E, axis=1, keepdims=True))          # (32, 16)
    np.testing.assert_allclose(m.hidden_probs(x), p_h_given_x @ h, atol=1e-12)
    p_x_given_h = np.exp(-E - logsumexp(-E, axis=0, keepdims=True))          # (32, 16)
    np.testing.assert_allclose(m.visible_probs(h), p_x_given_h.T @ x, atol=1e-12)


def test_energy_definition_and_batch_shapes():
    m = random_rbm(6, 3, seed=2)
    rng = np.random.default_rng(0)
    x = (rng.random((2, 3, 6)) < 0.5).astype(float)
    h = (rng.random((2, 3, 3)) < 0.5).astype(float)
    e = m.energy(x, h)
    assert e.shape == (2, 3)
    x0, h0 = x[1, 2], h[1, 2]
    assert e[1, 2] == pytest.approx(-(m.b @ x0) - (m.c @ h0) - x0 @ m.W @ h0, abs=1e-12)
    np.testing.assert_allclose(m.free_energy(x).reshape(-1), m.free_energy(x.reshape(6, 6)))
    assert m.hidden_probs(x).shape == (2, 3, 3) and m.visible_probs(h).shape == (2, 3, 6)


def test_float32_model_stays_float32():
    m = random_rbm(8, 5, dtype=np.float32)
    rng = np.random.default_rng(0)
    x = m.sample_v(np.zeros((4, 5), np.float32), rng)
    assert x.dtype == np.float32 and set(np.unique(x)) <= {0.0, 1.0}
    assert m.hidden_probs(x).dtype == np.float32
    assert m.free_energy(x).dtype == np.float32
    assert m.gibbs_step(x, rng, k=2).dtype == np.float32


def test_sample_h_frequencies():
    m = random_rbm(4, 3, seed=3)
    rng = np.random.default_rng(1)
    x = np.tile([[1.0, 0.0, 1.0, 1.0]], (200_000, 1))
    freq = m.sample_h(x, rng).mean(axis=0)
    p = m.hidden_probs(x[:1])[0]
    # binomial standard error <= 0.0012; 5 s.e.
    np.testing.assert_allclose(freq, p, atol=0.006)


def test_gibbs_chains_reach_exact_distribution():
    """20000 chains x 30 block-Gibbs sweeps on a 6x4 RBM: total variation to exact p(x)."""
    m = random_rbm(6, 4, scale=1.0, seed=4)
    p = np.exp(exact_visible_log_probs(m))
    rng = np.random.default_rng(2)
    x = (rng.random((20000, 6)) < 0.5).astype(float)
    x = m.gibbs_step(x, rng, k=30)
    idx = (x @ (1 << np.arange(6))).astype(int)       # all_configs order: unit 0 = bit 0
    emp = np.bincount(idx, minlength=64) / len(idx)
    tv = 0.5 * np.abs(emp - p).sum()
    assert tv < 0.03, tv       # sampling noise alone gives ~0.02; a wrong conditional >> 0.05
    # a broken sampler (e.g. transposed roles of b and c) would be far off
    bad = RBM(m.W, -m.b, m.c)
    xb = bad.gibbs_step((rng.random((20000, 6)) < 0.5).astype(float), rng, k=30)
    emp_b = np.bincount((xb @ (1 << np.arange(6))).astype(int), minlength=64) / 20000
    assert 0.5 * np.abs(emp_b - p).sum() > 0.2


def test_with_offset_copy_swapped():
    m = random_rbm(3, 2)
    dW, db, dc = np.ones((3, 2)), np.full(3, 2.0), np.full(2, -1.0)
    o = m.with_offset(dW, db, dc)
    np.testing.assert_array_equal(o.W, m.W + 1)
    np.testing.assert_array_equal(o.b, m.b + 2)
    np.testing.assert_array_equal(o.c, m.c - 1)
    s = m.swapped()
    assert s.n_visible == 2 and s.n_hidden == 3
    np.testing.assert_array_equal(s.W, m.W.T)
    with pytest.raises(ValueError):
        RBM(np.zeros((3, 2)), np.zeros(2), np.zeros(2))


def test_sufficient_stats():
    rng = np.random.default_rng(0)
    x = rng.random((7, 3))
    h = rng.random((7, 2))
    xh, mx, mh = sufficient_stats(x, h)
    ref = sum(np.outer(x[i], h[i]) for i in range(7)) / 7
    np.testing.assert_allclose(xh, ref, atol=1e-14)
    np.testing.assert_allclose(mx, x.mean(0))
    np.testing.assert_allclose(mh, h.mean(0))


def test_init_hinton():
    rng = np.random.default_rng(0)
    data = np.zeros((1000, 300), np.float32)
    data[:250, :] = 1.0                       # p = 0.25 everywhere except column 0
    data[:, 0] = 0.0                          # p = 0 -> clipped to 1e-3
    m = RBM.init(300, 200, rng, data=data)
    assert m.W.dtype == np.float32 and m.W.shape == (300, 200)
    assert abs(float(m.W.std()) - 0.01) < 0.0005 and abs(float(m.W.mean())) < 0.0005
    np.testing.assert_array_equal(m.c, 0.0)
    np.testing.assert_allclose(m.b[1:], np.log(0.25 / 0.75), rtol=1e-6)
    assert m.b[0] == pytest.approx(np.log(1e-3 / (1 - 1e-3)), rel=1e-5)
    m0 = RBM.init(4, 3, rng)
    np.testing.assert_array_equal(m0.b, 0.0)


def test_save_load_roundtrip(tmp_path):
    m = random_rbm(7, 3, dtype=np.float32)
    path = tmp_path / "m.h5"
    m.save(path, monitor={"pseudo_ll": np.array([-3.0, -2.5])}, trainer="pcd", lr=0.1)
    r = RBM.load(path)
    np.testing.assert_array_equal(r.W, m.W)
    np.testing.assert_array_equal(r.b, m.b)
    np.testing.assert_array_equal(r.c, m.c)
    assert r.W.dtype == np.float32
    _, attrs, mon = RBM.load_with_attrs(path)
    assert attrs["trainer"] == "pcd" and attrs["lr"] == 0.1 and attrs["n_hidden"] == 3
    np.testing.assert_array_equal(mon["pseudo_ll"], [-3.0, -2.5])
    assert not (tmp_path / "m.h5.tmp").exists()


def test_load_errors(tmp_path):
    with pytest.raises(MixlabError, match="not found"):
        RBM.load(tmp_path / "missing.h5")
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not an hdf5 file at all")
    with pytest.raises(MixlabError, match="cannot read"):
        RBM.load(bad)
    import h5py
    with h5py.File(tmp_path / "partial.h5", "w") as f:
        f["W"] = np.zeros((2, 2))
    with pytest.raises(MixlabError, match="missing dataset"):
        RBM.load(tmp_path / "partial.h5")
    # truncated file
    m = random_rbm(50, 40, dtype=np.float32)
    m.save(tmp_path / "full.h5")
    raw = (tmp_path / "full.h5").read_bytes()
    (tmp_path / "trunc.h5").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(MixlabError):
        RBM.load(tmp_path / "trunc.h5")
