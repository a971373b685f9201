"""The compiled kernels: log σ accuracy, uniform minibatch orders, and the compiled sequential
test making the same decisions as the reference implementation in seqtest.py."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from mixlab.austerity.kernels import log_sigmoid, minibatch_orders
from mixlab.austerity.logistic import LogisticPosterior
from mixlab.austerity.samplers import CompiledSequentialTest
from mixlab.austerity.seqtest import sequential_test_batch


def test_log_sigmoid_within_four_ulp_of_float64():
    rng = np.random.default_rng(0)
    z = np.concatenate([np.linspace(-120, 120, 400_001), rng.standard_normal(200_000) * 6,
                        np.linspace(-1e-4, 1e-4, 2001), [0.0, -0.0, np.inf, -np.inf]])
    z = z.astype(np.float32)
    got = log_sigmoid(z).astype(np.float64)
    ref = -np.logaddexp(0.0, -z.astype(np.float64))
    big = (np.abs(ref) > 1e-30) & np.isfinite(ref)
    ulp = np.spacing(np.abs(ref[big]).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[big] - ref[big]) / ulp) <= 4.0
    tiny = np.abs(ref) <= 1e-30
    assert np.max(np.abs(got[tiny] - ref[tiny])) < 1e-37        # log σ(z) ~ -e^-z for z > 70
    assert got[-2] == 0.0 and got[-1] == -np.inf


def test_minibatch_orders_are_uniform_permutations():
    # all 120 orders of 5 points equally likely over 24,000 seeds (a shuffle drawing r in [0, N)
    # instead of [j, N) is biased and fails this)
    N, draws = 5, 24_000
    orders = np.concatenate([minibatch_orders(np.uint64(s), 4, N) for s in range(draws // 4)])
    assert all(sorted(o) == list(range(N)) for o in orders[:200])
    code = {p: i for i, p in enumerate(itertools.permutations(range(N)))}
    counts = np.bincount([code[tuple(o)] for o in orders], minlength=math.factorial(N))
    assert stats.chisquare(counts).pvalue > 1e-4
    # chains and seeds give different orders
    a = minibatch_orders(np.uint64(7), 2, 1000)
    assert not np.array_equal(a[0], a[1])
    assert not np.array_equal(a[0], minibatch_orders(np.uint64(8), 1, 1000)[0])


@pytest.fixture(scope="module")
def post():
    rng = np.random.default_rng(3)
    N, d0 = 3001, 7                      # N not a multiple of m: the last minibatch is short
    X = rng.standard_normal((N, d0)).astype(np.float32)
    y = (rng.random(N) < 1 / (1 + np.exp(-(X @ rng.normal(0, 1, d0))))).astype(int)
    return LogisticPosterior(X, y, precision=10.0, bias=True)


@pytest.mark.parametrize("eps", [0.0, 0.01, 0.1, 0.3])
@pytest.mark.parametrize("m", [4, 200])     # small m: the critical value changes a lot per look
def test_compiled_test_equals_reference_on_the_same_orders(post, eps, m):
    rng = np.random.default_rng(4)
    C = 6
    theta = rng.normal(0, 0.3, (C, post.d))
    prop = theta + rng.normal(0, 0.02, theta.shape)
    L = (post.loglik_terms(prop).astype(np.float64) - post.loglik_terms(theta))   # (C, N)
    test = CompiledSequentialTest(post, eps, m)
    n_total, agree = 0, 0
    for seed in range(40):
        # thresholds near the population means, so both early and late decisions occur
        mu0 = L.mean(axis=1) + rng.normal(0, 3, C) * L.std(axis=1) / np.sqrt(post.N)
        acc, n_used, mean, se = test(theta, prop, mu0, seed)
        ref = sequential_test_batch(L, post.N, mu0, eps, m, None,
                                    order=minibatch_orders(np.uint64(seed), C, post.N))
        agree += int(np.sum(acc == ref.accept) + np.sum(n_used == ref.n_used))
        n_total += 2 * C
        assert np.allclose(mean, ref.mean, rtol=0, atol=1e-12)
    assert agree == n_total
    if eps == 0.0:
        assert (n_used == post.N).all()


@pytest.mark.parametrize("eps", [0.0, 0.05, 0.2])
def test_compiled_mrf_sweep_equals_reference_updates_on_the_same_orders(eps):
    """The compiled approximate sweep equals D calls of the numpy update (seqtest.py's test on
    the pair terms) given the orders the kernel drew; also its conditionals (p_out)."""
    from scipy.special import expit

    from mixlab.austerity.mrf import log_odds_all, logit, make_mrf, sweep_approx, update_approx

    D, B, m = 15, 6, 9
    model = make_mrf(D, 0.4, "std", np.random.default_rng(5))
    rng = np.random.default_rng(6)
    X = (rng.random((B, D)) < 0.5).astype(np.uint8)
    for sweep in range(6):
        U = rng.random((B, D))
        seed_rng = np.random.default_rng(sweep)
        seed = np.uint64(np.random.default_rng(sweep).integers(0, 2 ** 63))
        orders = minibatch_orders(seed, B * D, model.N).reshape(B, D, model.N)
        Xr = X.copy()
        n_ref = np.empty((B, D), np.int64)
        p_ref = np.empty((B, D))
        for i in range(D):
            p_ref[:, i] = expit(log_odds_all(model, Xr)[:, i])
            r = update_approx(model, Xr, i, logit(U[:, i]) / model.N, eps, m, None,
                              order=orders[:, i])
            n_ref[:, i] = r.n_used
        n_k, p_k = np.empty((B, D), np.int64), np.empty((B, D))
        sweep_approx(model, X, U, eps, m, seed_rng, p_out=p_k, n_out=n_k)
        assert np.array_equal(X, Xr)
        assert np.array_equal(n_k, n_ref)
        assert np.allclose(p_k, p_ref, rtol=0, atol=1e-12)
        if eps == 0.0:
            assert (n_k == model.N).all()
