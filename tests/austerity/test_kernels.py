"""The compiled kernels: log σ accuracy, the column-tile layout and its products, uniform
minibatch orders, and the compiled sequential test making the same decisions as the reference
implementation in seqtest.py."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from mixlab.austerity import kernels
from mixlab.austerity.kernels import (
    TILE,
    column_tiles,
    log_sigmoid,
    minibatch_orders,
    products,
    tile_width,
)
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


def test_sigmoid_row_sums_add_each_chains_sigmoids_within_four_ulp():
    """Each chain's sum over its B rows of σ(z) (float32 terms), against σ in float64: every
    term within 4 ulp of its float32 value, so a sum of B terms within 4 B ulp of 1."""
    rng = np.random.default_rng(1)
    C, B, M = 3, 7, 2001
    z = np.concatenate([np.linspace(-120, 120, C * B * M - 4), [0.0, -0.0, 60.0, -60.0]])
    z = rng.permutation(z).astype(np.float32).reshape(C * B, M)
    out = np.full((C, M), 0.5)                          # sums are added to what out holds
    kernels.sigmoid.sigmoid_row_sums(z, B, out)
    ref = 0.5 + (1.0 / (1.0 + np.exp(-z.astype(np.float64)))).reshape(C, B, M).sum(1)
    assert np.max(np.abs(out - ref)) <= 4 * B * np.spacing(np.float32(1.0))
    # one chain per row group: moving a row to another chain's group moves its term
    moved = z.copy()
    moved[[0, B]] = moved[[B, 0]]
    other = np.full((C, M), 0.5)
    kernels.sigmoid.sigmoid_row_sums(moved, B, other)
    assert not np.allclose(other[0], out[0])


@pytest.mark.parametrize("bsize", [7, 32, 40])
def test_column_tiles_layout(bsize):
    """Row j of block k, column c is at ((k T + j // TILE) Dp + c) TILE + j % TILE; everything
    else (the rows after a block's last, the columns after d, the short last block) is zero."""
    rng = np.random.default_rng(0)
    N, d = 101, 6
    X = rng.standard_normal((N, d)).astype(np.float32)
    flat = column_tiles(X, bsize)
    K, T, Dp = -(-N // bsize), -(-bsize // TILE), tile_width(d)
    assert Dp == 8 and flat.shape == (K * T * Dp * TILE,) and flat.dtype == np.float32
    got = np.zeros_like(flat)
    for i in range(N):
        k, j = divmod(i, bsize)
        for c in range(d):
            at = ((k * T + j // TILE) * Dp + c) * TILE + j % TILE
            assert flat[at] == X[i, c]
            got[at] = X[i, c]
    assert np.array_equal(flat, got)                     # nothing else is non-zero


def test_tile_products_are_one_arithmetic():
    """Products with θ from the one-vector and the two-vector tile kernels, in any tile order
    and at any output offset, are the same float32 bits (the block test's cache and the
    full-data pass depend on it), and within float32 rounding of the float64 products."""
    rng = np.random.default_rng(1)
    N, d = 200, 51
    X = (rng.standard_normal((N, d)) * 3).astype(np.float32)
    Dp = tile_width(d)
    Xt = column_tiles(X)
    nt = -(-N // TILE)
    th = np.zeros(64, np.float32)
    ph = np.zeros(64, np.float32)
    th[:d] = rng.standard_normal(d)
    ph[:d] = rng.standard_normal(d)
    tiles = rng.permutation(nt)
    outs = np.arange(nt) * TILE
    z1 = np.empty(nt * TILE, np.float32)
    z2 = np.empty(nt * TILE, np.float32)
    w2 = np.empty(nt * TILE + 5, np.float32)
    zp = np.empty(nt * TILE, np.float32)
    wp = np.empty(nt * TILE, np.float32)
    products._tile_dots(Xt, Dp, tiles, outs, nt, th, z1)
    products._tile_dots2(Xt, Dp, tiles, outs, outs + 5, nt, th, th, z2, w2)
    products._tile_dots2(Xt, Dp, tiles[::-1].copy(), outs, outs, nt, ph, th, zp, wp)
    assert np.array_equal(z1, z2) and np.array_equal(z1, w2[5:])
    assert np.array_equal(z1.reshape(nt, TILE)[::-1], wp.reshape(nt, TILE))   # other order
    rows = (tiles[:, None] * TILE + np.arange(TILE)).ravel()
    ok = rows < N
    ref = X.astype(np.float64) @ th[:d].astype(np.float64)
    scale = np.abs(X).astype(np.float64) @ np.abs(th[:d]).astype(np.float64)
    assert np.all(np.abs(z1[ok] - ref[rows[ok]]) <= 4e-7 * d * scale[rows[ok]])
    assert np.all(z1[~ok] == 0.0)
    # the full-data pass: its terms are these products' log σ, summed in float64
    theta = np.stack([th, ph])
    terms = kernels.loglik_rows(Xt, Dp, N, theta)
    inv = np.argsort(rows[ok])
    assert np.array_equal(terms[0], log_sigmoid(z1[ok][inv]))
    sums = kernels.loglik_sums(Xt, Dp, N, theta)
    assert np.allclose(sums, terms.astype(np.float64).sum(axis=1), rtol=1e-13, atol=0)


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


@pytest.mark.parametrize("seed,C,N,b", [(7, 3, 1000, 500), (123456789, 2, 50, 50),
                                         (2**63 - 1, 4, 10, 1), (0, 1, 300, 299)])
def test_minibatch_rows_are_the_first_b_of_the_uniform_orders(seed, C, N, b):
    # SGLD's minibatches: the prefix of the (tested) uniform orders, so each is a simple random
    # sample without replacement; the scratch permutation is left as the identity
    perm, swaps = np.arange(N), np.empty(N, np.int64)
    got = kernels.minibatch_rows(np.uint64(seed), C, N, b, perm, swaps)
    assert np.array_equal(got, minibatch_orders(np.uint64(seed), C, N)[:, :b])
    assert np.array_equal(perm, np.arange(N))
    assert all(len(set(r)) == b for r in got.tolist())
    again = kernels.minibatch_rows(np.uint64(seed), C, N, b, perm, swaps)
    assert np.array_equal(got, again)


def test_grad_loglik_gather_matches_float64_reference():
    # Σ_j σ(-s_i x_i·θ) s_i x_i over gathered rows; n = 300 crosses the 256-row chunk, the large
    # |logits| check the overflow-free σ(-z) (exp(z) alone would overflow float32 at z > 88)
    rng = np.random.default_rng(5)
    N, d0, C, n = 2000, 9, 3, 300
    X = rng.standard_normal((N, d0)).astype(np.float32)
    y = (rng.random(N) < 0.5).astype(int)
    post = LogisticPosterior(X, y, precision=1.0, bias=True)
    theta = rng.normal(0, 0.5, (C, post.d))
    theta[2] *= 60.0                                   # |z| up to ~1000
    idx = rng.integers(0, N, (C, n))
    got = kernels.grad_loglik_gather(post.Xk, theta, idx)
    assert got.shape == (C, post.Xk.shape[1]) and np.all(got[:, post.d:] == 0.0)
    Xs = post.Xs.astype(np.float64)
    th32 = theta.astype(np.float32).astype(np.float64)
    for c in range(C):
        rows = Xs[idx[c]]
        z = rows @ th32[c]
        w = np.exp(-np.logaddexp(0.0, z))              # σ(-z) in float64
        ref = w @ rows
        assert np.all(np.isfinite(got[c]))
        assert np.allclose(got[c, :post.d], ref, rtol=2e-5, atol=1e-4 * np.abs(rows).sum() / n)
    # and as the posterior's scaled minibatch gradient, shared or per-chain indices
    g1 = post.grad_loglik(theta[:1], idx[0])
    assert np.array_equal(g1[0], got[0, :post.d] * (N / n))


def test_gathers_refuse_row_indices_outside_the_data():
    # the compiled gathers read without bounds checks: an index outside [0, N) must raise, not
    # read another array's memory
    rng = np.random.default_rng(6)
    X = rng.standard_normal((50, 3)).astype(np.float32)
    post = LogisticPosterior(X, (rng.random(50) < 0.5).astype(int))
    theta = np.zeros((2, post.d))
    for bad in ([[0, 50], [0, 1]], [[-1, 3], [0, 1]], [[0, 1], [2, 10**9]]):
        idx = np.array(bad)
        with pytest.raises(IndexError, match="out of range"):
            post.loglik_terms(theta, idx)
        with pytest.raises(IndexError, match="out of range"):
            post.grad_loglik(theta, idx)
    assert np.all(np.isfinite(post.grad_loglik(theta, np.array([[0, 49], [1, 2]]))))


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
    every = np.arange(post.N)                      # rows gathered: the per-point test's products
    L = (post.loglik_terms(prop, every).astype(np.float64) - post.loglik_terms(theta, every))
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


def block_values(L, order, b):
    """(C, N) per-point values, the once-shuffled row order (N,) and block size b -> (C, K) block
    values (K / N) Σ_block l_i of the block test's population (mean = the mean of the l_i)."""
    C, N = L.shape
    K = -(-N // b)
    Ls = np.zeros((C, K * b))
    Ls[:, :N] = L[:, order]
    return Ls.reshape(C, K, b).sum(axis=2) * (K / N)


@pytest.mark.parametrize("eps", [0.0, 0.01, 0.1, 0.3])
@pytest.mark.parametrize("b, m, shared", [(16, 200, False), (7, 30, False), (64, 64, False),
                                          (16, 200, True), (7, 30, True)])
def test_compiled_block_test_equals_reference_on_block_values(post, eps, b, m, shared):
    """The block test is seqtest.py's test on the K block values, given the block orders the
    kernel drew (one per chain, or one for all chains with shared_order); at n = K the decision
    is the exact one.  The cache is exercised: some calls repeat the state (hits), some accept
    (the cache moves to θ')."""
    from mixlab.austerity.samplers import block_rows

    rng = np.random.default_rng(4)
    C = 5
    test = CompiledSequentialTest(post, eps, m, block=b, shared_order=shared)
    K, mb = test.K, test.mb
    assert K == -(-post.N // b) and mb == -(-m // b)
    order = block_rows(post.N)
    theta = rng.normal(0, 0.3, (C, post.d))
    agree = n_total = 0
    for seed in range(40):
        prop = theta + rng.normal(0, 0.02, theta.shape)
        L = post.loglik_terms(prop).astype(np.float64) - post.loglik_terms(theta)
        V = block_values(L, order, b)
        mu0 = L.mean(axis=1) + rng.normal(0, 3, C) * L.std(axis=1) / np.sqrt(post.N)
        acc, n_used, mean, se = test(theta, prop, mu0, seed)
        orders = minibatch_orders(np.uint64(seed), C, K)
        if shared:
            orders = np.broadcast_to(orders[0], orders.shape)
        ref = sequential_test_batch(V, K, mu0, eps, mb, None, order=orders)
        rows_read = ref.n_used * b                       # minus the short last block's gap
        short = post.N % b
        assert short                                     # N = 3001 and these b
        for c in range(C):
            rows_read[c] -= (b - short) * int(np.any(orders[c, :ref.n_used[c]] == K - 1))
        exact = ref.n_used == K
        ref_acc = np.where(exact, L.sum(axis=1) / post.N > mu0, ref.accept)
        agree += int(np.sum(acc == ref_acc) + np.sum(n_used == rows_read))
        n_total += 2 * C
        assert np.allclose(mean, ref.mean, rtol=0, atol=1e-9)
        theta = np.where((seed % 3 == 0) * acc[:, None], prop, theta)   # move now and then
    assert agree == n_total
    if eps == 0.0:
        assert (n_used == post.N).all()


def test_block_test_decision_error_within_the_papers_bound():
    """Decision errors of the block test at eps on a planted population whose rows come in a
    bad order (sorted: consecutive rows alike, so the once-shuffle matters): below 2 eps as for
    the per-point test (tests/austerity/test_seqtest.py; the paper's bound for one look is eps
    per side), monotone in eps, and the data used close to the per-point test's."""
    rng = np.random.default_rng(5)
    N, T, b, m = 12_000, 1500, 16, 500
    base = np.sort(rng.standard_t(4, N))
    base = (base - base.mean()) / base.std()
    from mixlab.austerity.samplers import block_rows
    for sign in (1.0, -1.0):
        pop = sign * 0.01 + base                            # exact: accept iff sign > 0
        V = block_values(pop[None, :], block_rows(N), b)[0]
        K, mb = V.size, -(-m // b)
        errs, used = [], []
        for eps in (0.01, 0.05, 0.1, 0.2):
            blk = sequential_test_batch(np.broadcast_to(V, (T, K)), K, np.zeros(T), eps, mb, rng)
            pt = sequential_test_batch(np.broadcast_to(pop, (T, N)), N, np.zeros(T), eps, m, rng)
            errs.append(np.mean(blk.accept != (sign > 0)))
            used.append(blk.n_used.mean() / K)
            assert errs[-1] < 2 * eps, (eps, errs)
            e_pt = np.mean(pt.accept != (sign > 0))
            assert abs(errs[-1] - e_pt) < 0.35 * eps + 0.01, (eps, errs[-1], e_pt)
            assert abs(used[-1] - pt.n_used.mean() / N) < 0.08, (eps, used[-1])
        assert errs[0] > 0.0 and np.all(np.diff(errs) > 0) and np.all(np.diff(used) < 0)
