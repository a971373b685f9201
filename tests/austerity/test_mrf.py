"""Dense triplet MRF: model algebra, exact Gibbs vs enumeration, approximate Gibbs identities."""

import numpy as np
import pytest
from scipy.special import expit

from mixlab.austerity.mrf import (
    ApproxGibbs,
    DenseMRF,
    ExactGibbs,
    all_states,
    enumerate_joint,
    exact_conditionals,
    joint_counts,
    l1_joint_error,
    log_odds_all,
    log_odds_tables,
    logit,
    make_mrf,
    random_subsets,
    subset_codes,
    sweep_approx,
    sweep_exact,
    triplets,
    update_approx,
)
from mixlab.austerity.seqtest import sequential_test_batch


def test_triplets_and_sizes():
    t = triplets(100)
    assert t.shape == (161_700, 3)
    assert np.all(t[:, 0] < t[:, 1]) and np.all(t[:, 1] < t[:, 2])
    assert len({tuple(r) for r in t[:1000]}) == 1000
    m = make_mrf(8, 0.3, "std", np.random.default_rng(0))
    assert m.N == 21 and m.pj.shape == (8, 21) and m.delta.shape == (8, 21, 4)
    # every variable's pairs are exactly the pairs of the other variables
    for i in range(8):
        others = [v for v in range(8) if v != i]
        pairs = {(int(a), int(b)) for a, b in zip(m.pj[i], m.pk[i])}
        assert pairs == {(a, b) for a in others for b in others if a < b}


def test_s_is_variance_or_std():
    a = make_mrf(30, 0.02, "std", np.random.default_rng(1))
    b = make_mrf(30, 0.02, "variance", np.random.default_rng(1))
    assert np.allclose(b.logpsi, a.logpsi * np.sqrt(0.02) / 0.02)
    assert abs(a.logpsi.std() - 0.02) < 0.001
    assert abs(b.logpsi.std() - np.sqrt(0.02)) < 0.005
    assert a.hash() == make_mrf(30, 0.02, "std", np.random.default_rng(1)).hash()
    assert a.hash() != b.hash()
    with pytest.raises(ValueError):
        make_mrf(10, 0.02, "sd")


@pytest.mark.parametrize("D", [5, 9])
def test_three_conditionals_agree(D):
    """Quadratic form, pair tables and brute-force flips give the same log-odds."""
    m = make_mrf(D, 0.8, "std", np.random.default_rng(D))
    X = all_states(D)[::7]
    L = log_odds_all(m, X)
    brute = exact_conditionals(m, X)
    assert np.allclose(expit(L), brute, atol=1e-12)
    for i in range(D):
        assert np.allclose(log_odds_tables(m, X, i), L[:, i], atol=1e-12)
    # and the joint: log P(x with x_i=1) - log P(x with x_i=0) = L_i
    S, p = enumerate_joint(m)
    assert np.isclose(p.sum(), 1.0)
    i = 2
    one = S[:, i] == 1
    zero_partner = np.flatnonzero(one) - (1 << i)
    assert np.allclose(np.log(p[one] / p[zero_partner]), log_odds_all(m, S[one])[:, i])


def _tv(counts, p):
    return 0.5 * np.abs(counts / counts.sum() - p).sum()


@pytest.mark.parametrize("impl", ["quadratic", "lookup"])
def test_exact_gibbs_matches_enumeration(impl):
    """6-variable triplet MRF with strong potentials: empirical joint of exact Gibbs vs the
    enumerated joint, TV < 0.02 (64 states, ~96k draws); the product of the exact marginals
    (what a sampler ignoring the triplet terms would approach) is far (TV > 0.1)."""
    D = 6
    m = make_mrf(D, 1.0, "std", np.random.default_rng(42))
    S, p = enumerate_joint(m)
    sampler = ExactGibbs(m, chains=64, impl=impl)
    rng = np.random.default_rng(7)
    state = sampler.init(rng)
    for _ in range(20):
        state, _, _ = sampler.step(state, rng)
    counts = np.zeros(2 ** D)
    w = 1 << np.arange(D)
    for _ in range(1500):
        state, draws, stats = sampler.step(state, rng)
        counts += np.bincount(draws["samples"].astype(np.int64) @ w, minlength=2 ** D)
    assert _tv(counts, p) < 0.02, _tv(counts, p)
    marg = (S * p[:, None]).sum(0)
    prod = np.prod(np.where(S == 1, marg, 1 - marg), axis=1)
    assert _tv(prod * 1e6, p) > 0.1          # the threshold separates right from wrong


def test_approx_eps0_is_exact_gibbs_same_random_numbers():
    """eps = 0: every test reads all N terms and the chain is the exact Gibbs chain given the
    same uniforms, bit for bit (both exact implementations)."""
    D = 12
    m = make_mrf(D, 0.5, "std", np.random.default_rng(3))
    rng_u = np.random.default_rng(11)
    X0 = (rng_u.random((8, D)) < 0.5).astype(np.uint8)
    Xa, Xq, Xl = X0.copy(), X0.copy(), X0.copy()
    order_rng = np.random.default_rng(99)
    n_used = np.empty((8, D), dtype=np.int64)
    changed = 0
    for _ in range(150):
        U = rng_u.random((8, D))
        prev = Xq.copy()
        sweep_approx(m, Xa, U, 0.0, 7, order_rng, n_out=n_used)
        sweep_exact(m, Xq, U, "quadratic")
        sweep_exact(m, Xl, U, "lookup")
        assert np.all(n_used == m.N)
        assert np.array_equal(Xa, Xq) and np.array_equal(Xa, Xl)
        changed += int((prev != Xq).sum())
    assert changed > 500          # the chains move: the identity is not vacuous


def test_approx_eps0_identity_on_paper_size_model():
    m = make_mrf(100, 0.02, "std", np.random.default_rng(0))
    rng_u = np.random.default_rng(5)
    X0 = (rng_u.random((2, 100)) < 0.5).astype(np.uint8)
    Xa, Xq = X0.copy(), X0.copy()
    for _ in range(2):
        U = rng_u.random((2, 100))
        sweep_approx(m, Xa, U, 0.0, 500, np.random.default_rng(1))
        sweep_exact(m, Xq, U)
        assert np.array_equal(Xa, Xq)


def test_approx_conditional_close_to_exact():
    """Medium D (30 variables, N = 406 terms, m = 50): for fixed states the probability that the
    approximate update sets x_i = 1, estimated over 2000 replicas, vs the exact conditional.
    Paired with the exact decision of the same u, the difference has a small variance."""
    D, K = 30, 2000
    m = make_mrf(D, 0.07, "std", np.random.default_rng(8))
    rng = np.random.default_rng(21)
    states = (rng.random((4, D)) < 0.5).astype(np.uint8)
    P = expit(log_odds_all(m, states))
    assert P.min() < 0.1 and P.max() > 0.9           # conditionals span the range
    res = {}
    for eps in (0.01, 0.2):
        diffs, wrong, used = [], [], []
        for s in range(states.shape[0]):
            for i in range(0, D, 4):
                X = np.repeat(states[s:s + 1], K, axis=0)
                u = rng.random(K)
                r = update_approx(m, X, i, logit(u) / m.N, eps, 50, rng)
                exact = u < P[s, i]
                diffs.append(r.accept.mean() - exact.mean())
                wrong.append((r.accept != exact).mean())
                used.append(r.n_used.mean() / m.N)
        res[eps] = (np.abs(diffs).max(), np.mean(wrong), np.mean(used))
    # eps = 0.01: error of the conditional probability about 0.01 at most (the paired estimate's
    # standard error is ~0.0025 per point), few wrong decisions; a sign or threshold error in
    # the test gives errors of order 0.1-0.5
    assert res[0.01][0] < 0.02, res
    assert res[0.01][1] < 0.025, res
    # larger eps: less data, more wrong decisions and a larger error (the paper's Fig 7 trend)
    assert res[0.2][2] < res[0.01][2] < 1.0
    assert res[0.01][1] < res[0.2][1] < 0.4
    assert res[0.01][0] < res[0.2][0] < 0.25


def test_update_approx_is_the_shared_sequential_test():
    """The update is sequential_test_batch on the pair terms: same decisions for a fixed order."""
    D = 20
    m = make_mrf(D, 0.1, "std", np.random.default_rng(2))
    rng = np.random.default_rng(4)
    X = (rng.random((50, D)) < 0.5).astype(np.uint8)
    i = 7
    terms = np.stack([m.delta[i][np.arange(m.N), 2 * x[m.pj[i]] + x[m.pk[i]]] for x in X])
    assert np.allclose(terms.sum(1), log_odds_all(m, X)[:, i])
    mu0 = logit(rng.random(50)) / m.N
    a = sequential_test_batch(terms, m.N, mu0, 0.1, 20, np.random.default_rng(9))
    Xc = X.copy()
    b = update_approx(m, Xc, i, mu0, 0.1, 20, np.random.default_rng(9))
    assert np.array_equal(a.accept, b.accept) and np.array_equal(a.n_used, b.n_used)
    assert np.array_equal(Xc[:, i], b.accept)


def test_samplers_contract_and_determinism():
    m = make_mrf(10, 0.3, "std", np.random.default_rng(0))
    for sampler in (ExactGibbs(m, 3, track=True), ApproxGibbs(m, 3, eps=0.1, m=5, track=True)):
        outs = []
        for _ in range(2):
            rng = np.random.default_rng(1)
            st = sampler.init(rng)
            assert st["x"].shape == (3, 10) and st["x"].dtype == np.uint8
            for _ in range(5):
                st, draws, stats = sampler.step(st, rng)
            outs.append((st["x"].copy(), draws, stats))
        assert np.array_equal(outs[0][0], outs[1][0])
        draws, stats = outs[0][1], outs[0][2]
        assert draws["samples"].dtype == bool and draws["samples"].shape == (3, 10)
        assert draws["p_exact"].shape == (3, 10)
        assert stats["data_used"].shape == (3,)
        assert np.all((stats["data_used"] > 0) & (stats["data_used"] <= 1))
    # the tracked exact conditionals are those of the state each update saw
    ex = ExactGibbs(m, 2, track=True)
    rng = np.random.default_rng(3)
    st = ex.init(rng)
    x_before = st["x"].copy()
    st, draws, _ = ex.step(st, rng)
    x_mid = np.concatenate([draws["samples"][:, :4], x_before[:, 4:]], axis=1).astype(np.uint8)
    assert np.allclose(draws["p_exact"][:, 4], expit(log_odds_all(m, x_mid)[:, 4]), atol=1e-6)


def test_subset_joint_counts_and_l1():
    rng = np.random.default_rng(0)
    subsets = random_subsets(12, 40, 5, rng)
    assert subsets.shape == (40, 5)
    assert all(len(set(r)) == 5 for r in subsets)
    X = (rng.random((300, 12)) < 0.3).astype(np.uint8)
    c = joint_counts(X, subsets)
    assert c.shape == (40, 32) and np.all(c.sum(1) == 300)
    for mi in (0, 17, 39):   # against a plain loop
        ref = np.zeros(32)
        for x in X:
            ref[sum(int(x[v]) << b for b, v in enumerate(subsets[mi]))] += 1
        assert np.array_equal(c[mi], ref)
    codes = subset_codes(X[:3], subsets)
    assert codes.shape == (3, 40)
    truth = c / 300
    assert l1_joint_error(c, truth) == 0.0
    assert np.isclose(l1_joint_error(np.ones((40, 32)), truth),
                      np.abs(1 / 32 - truth).sum(1).mean())


def test_from_tables_rejects_bad_shape():
    with pytest.raises(ValueError):
        DenseMRF.from_tables(np.zeros((3, 2, 2, 2)), 5)
    with pytest.raises(ValueError):
        triplets(2)


@pytest.mark.parametrize("eps", [0.0, 0.05, 0.2])
def test_compiled_block_sweep_equals_reference_on_block_values(eps):
    """The block sweep is seqtest.py's test on each variable's K block values of its
    once-shuffled terms, given the block orders the kernel drew; exact decision at n = K."""
    from mixlab.austerity.kernels import minibatch_orders
    from mixlab.austerity.mrf import block_tables

    D, B, b, m = 15, 6, 4, 9                     # N = 91 terms: 23 blocks, the last one short
    model = make_mrf(D, 0.4, "std", np.random.default_rng(5))
    t = block_tables(model, b)
    N, K, mb = model.N, -(-model.N // b), -(-m // b)
    assert sorted(t.order[3]) == list(range(N)) and not np.array_equal(t.order[3], np.arange(N))
    rng = np.random.default_rng(6)
    X = (rng.random((B, D)) < 0.5).astype(np.uint8)
    early = 0
    for sweep in range(6):
        U = rng.random((B, D))
        seed = np.uint64(np.random.default_rng(sweep).integers(0, 2 ** 63))
        orders = minibatch_orders(seed, B * D, K).reshape(B, D, K)
        Xr = X.copy()
        n_ref = np.empty((B, D), np.int64)
        for i in range(D):
            terms = np.zeros((B, K * b))
            terms[:, :N] = np.stack([t.delta[i, np.arange(N), 2 * x[t.pj[i]] + x[t.pk[i]]]
                                     for x in Xr])
            V = terms.reshape(B, K, b).sum(axis=2) * (K / N)
            mu0 = logit(U[:, i]) / N
            r = sequential_test_batch(V, K, mu0, eps, mb, None, order=orders[:, i])
            full = r.n_used == K
            Xr[:, i] = np.where(full, terms.sum(axis=1) / N > mu0, r.accept)
            n_ref[:, i] = np.where(full, N, r.n_used * b
                                   - (K * b - N) * np.any(
                                       (orders[:, i] == K - 1)
                                       & (np.arange(K) < r.n_used[:, None]), axis=1))
            early += int((~full).sum())
        n_k = np.empty((B, D), np.int64)
        sweep_approx(model, X, U, eps, m, np.random.default_rng(sweep), n_out=n_k, tables=t)
        assert np.array_equal(X, Xr)
        assert np.array_equal(n_k, n_ref)
    assert (early > 0) == (eps > 0)


def test_block_approx_eps0_is_exact_gibbs_and_conditionals_close_at_small_eps():
    """Blocks of pair terms: eps = 0 is exact Gibbs with the same uniforms (every test reads all
    terms); at eps = 0.01 the probability of x_i = 1 over 2000 replicas is within 0.02 of the
    exact conditional, as the per-term test (test_approx_conditional_close_to_exact)."""
    D = 30
    model = make_mrf(D, 0.07, "std", np.random.default_rng(8))
    rng = np.random.default_rng(21)
    a = ApproxGibbs(model, 8, eps=0.0, m=50, block=8)
    st = a.init(np.random.default_rng(2))
    Xq = st["x"].copy()
    rng_a, rng_q = np.random.default_rng(4), np.random.default_rng(4)
    for _ in range(30):
        st, _, stats = a.step(st, rng_a)
        U = rng_q.random(Xq.shape)
        rng_q.integers(0, 2 ** 63)                      # the seed the approximate step drew
        sweep_exact(model, Xq, U)
        assert np.array_equal(st["x"], Xq) and np.all(stats["data_used"] == 1.0)
    states = (rng.random((4, D)) < 0.5).astype(np.uint8)
    P = expit(log_odds_all(model, states))
    from mixlab.austerity.mrf import block_tables
    t = block_tables(model, 8)
    diffs, wrong, used = [], [], []
    R = 2000
    for s in range(states.shape[0]):
        X = np.repeat(states[s:s + 1], R, axis=0)
        U = rng.random((R, D))
        n = np.empty((R, D), np.int64)
        p = np.empty((R, D))
        Xc = X.copy()
        sweep_approx(model, Xc, U, 0.01, 50, rng, p_out=p, n_out=n, tables=t)
        # variable 0 is updated first, from the state itself: compare its decisions
        exact = U[:, 0] < P[s, 0]
        diffs.append(Xc[:, 0].mean() - exact.mean())
        wrong.append((Xc[:, 0].astype(bool) != exact).mean())
        used.append(n[:, 0].mean() / model.N)
    assert np.max(np.abs(diffs)) < 0.02 and np.mean(wrong) < 0.025, (diffs, wrong)
    assert np.mean(used) < 1.0
