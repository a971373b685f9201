"""Logistic posterior: per-datum terms, differences, gradients and predictions against float64
references and finite differences."""

import numpy as np
import pytest

from mixlab.austerity.logistic import LogisticPosterior, map_estimate, neg_hessian, softplus


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    N, d0 = 2000, 6
    X = rng.standard_normal((N, d0)).astype(np.float32)
    w = rng.normal(0, 1.0, d0)
    y = (rng.random(N) < 1 / (1 + np.exp(-(X @ w + 0.3)))).astype(int)
    return LogisticPosterior(X, y, precision=10.0, bias=True), X.astype(np.float64), y


def ref_terms(X, y, theta):
    Xb = np.hstack([X, np.ones((X.shape[0], 1))])
    z = Xb @ theta
    return np.where(y == 1, -np.logaddexp(0, -z), -np.logaddexp(0, z)), Xb


def test_softplus_stable():
    a = np.array([-800.0, -30, -1, 0, 1, 30, 800], dtype=np.float64)
    assert np.allclose(softplus(a), np.logaddexp(0, a), rtol=1e-12, atol=1e-300)
    assert np.isfinite(softplus(a.astype(np.float32))).all()


def test_terms_differences_and_prior(problem):
    post, X, y = problem
    rng = np.random.default_rng(1)
    th = rng.normal(0, 0.5, (3, post.d))
    assert post.d == X.shape[1] + 1 and post.bias
    ref = np.stack([ref_terms(X, y, t)[0] for t in th])
    assert np.allclose(post.loglik_terms(th), ref, rtol=1e-5, atol=1e-5)
    assert np.allclose(post.loglik(th), ref.sum(1), rtol=1e-5)
    assert np.allclose(post.log_prior(th), -5.0 * np.sum(th ** 2, 1))
    th2 = np.random.default_rng(1).standard_normal(th.shape)
    assert np.allclose(post.log_prior_diff(th2, th), post.log_prior(th2) - post.log_prior(th),
                       rtol=1e-12, atol=1e-12)
    assert np.allclose(post.log_prior_diff(th2.astype(np.float32), th[0]),
                       post.log_prior(th2.astype(np.float32)) - post.log_prior(th[0]),
                       rtol=1e-6)
    idx = np.stack([rng.permutation(post.N)[:300] for _ in range(3)])
    th2 = th + rng.normal(0, 0.1, th.shape)
    ref2 = np.stack([ref_terms(X, y, t)[0] for t in th2])
    diff = post.lldiff(th2, th, idx)
    assert diff.shape == (3, 300)
    assert np.allclose(diff, np.take_along_axis(ref2 - ref, idx, 1), atol=2e-5)
    assert np.allclose(post.loglik_terms(th, idx), np.take_along_axis(ref, idx, 1), atol=1e-5)
    assert np.allclose(post.loglik_terms(th, idx[0]), ref[:, idx[0]], atol=1e-5)


def test_gradients(problem):
    post, X, y = problem
    rng = np.random.default_rng(2)
    th = rng.normal(0, 0.3, (2, post.d))
    g = post.grad_log_posterior(th)
    h = 1e-5
    for c in range(2):
        for j in range(post.d):
            e = np.zeros(post.d)
            e[j] = h
            f = lambda t: ref_terms(X, y, t)[0].sum() - 5.0 * t @ t
            fd = (f(th[c] + e) - f(th[c] - e)) / (2 * h)
            assert abs(fd - g[c, j]) < 1e-3 * max(1.0, abs(fd))
    # minibatch gradient is scaled by N/n: the average over a partition equals the full one
    perm = rng.permutation(post.N).reshape(4, 500)
    gl = np.mean([post.grad_loglik(th, p) for p in perm], axis=0)
    assert np.allclose(gl, post.grad_loglik(th), rtol=1e-4, atol=1e-3)
    per_chain = post.grad_loglik(th, np.stack([perm[0], perm[1]]))
    assert np.allclose(per_chain[0], post.grad_loglik(th[:1], perm[0])[0], rtol=1e-5)
    assert np.allclose(per_chain[1], post.grad_loglik(th[1:], perm[1])[0], rtol=1e-5)


def test_map_hessian_and_predict(problem):
    post, X, _ = problem
    mode = map_estimate(post)
    assert np.linalg.norm(post.grad_log_posterior(mode[None])[0]) < 1e-2
    H = neg_hessian(post, mode)
    h = 1e-4
    e = np.zeros(post.d)
    e[0] = h
    fd = -(post.grad_log_posterior((mode + e)[None]) - post.grad_log_posterior((mode - e)[None]))
    assert np.allclose(fd[0] / (2 * h), H[0], rtol=1e-2, atol=1e-1)
    Xt = X[:5]
    p = post.predict_proba(np.stack([mode, -mode]), Xt)
    z = np.hstack([Xt, np.ones((5, 1))]) @ mode
    assert np.allclose(p[0], 1 / (1 + np.exp(-z))) and np.allclose(p[1], 1 / (1 + np.exp(z)))


def test_without_bias_and_bad_labels():
    X = np.ones((4, 2))
    post = LogisticPosterior(X, np.array([0, 1, 1, 0]), bias=False)
    assert post.d == 2
    with pytest.raises(ValueError):
        LogisticPosterior(X, np.array([0, 2, 1, 0]))


def test_theta_in_any_layout_gives_the_same_loglik(problem):
    """The kernels take θ as the samplers hold it and round it to float32 themselves: a strided
    view, a read-only array, float32, and one (d,) vector all give the values of the contiguous
    float64 array; a wrong width is refused."""
    post = problem[0]
    th = np.random.default_rng(2).normal(0, 0.3, (3, post.d))
    ref = post.loglik(th)
    wide = np.zeros((3, 2 * post.d))
    wide[:, ::2] = th
    frozen = th.copy()
    frozen.setflags(write=False)
    assert np.array_equal(post.loglik(wide[:, ::2]), ref)
    assert np.array_equal(post.loglik(frozen), ref)
    assert np.array_equal(post.loglik(th.astype(np.float32)), ref)   # rounded the same way
    assert np.array_equal(post.loglik(th[1]), ref[1:2])
    with pytest.raises(ValueError, match="theta must be"):
        post.loglik(np.zeros((3, post.d + 1)))


def test_shared_indices_reach_the_gather_kernels_in_one_layout():
    """One compiled specialisation of the gather kernels: shared indices become (C, n) int64,
    C-contiguous and writable, whatever C (a broadcast view would be read-only)."""
    from numba import typeof

    from mixlab.austerity.logistic import _per_chain

    idx = np.arange(7, dtype=np.int64)
    types = {typeof(_per_chain(idx, c)) for c in (1, 3)} | {typeof(np.tile(idx, (3, 1)))}
    assert len(types) == 1
    assert _per_chain(idx, 1).base is idx                  # one chain: a view, no copy
    np.testing.assert_array_equal(_per_chain(idx, 3), np.tile(idx, (3, 1)))
