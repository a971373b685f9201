"""The sequential MH test: identities (eps = 0 is exact), calibration of its stopping rule
(Student-t with n-1 d.o.f., finite population correction) and decision errors on planted data."""

import numpy as np
import pytest

from mixlab.austerity.seqtest import (
    UniformOrder,
    sequential_test,
    sequential_test_batch,
    t_statistic,
)


def test_eps_zero_is_the_exact_decision_including_ties_and_constant_populations():
    rng = np.random.default_rng(0)
    N = 1037                                   # not a multiple of m
    for trial in range(200):
        kind = trial % 4
        if kind == 0:
            L = rng.normal(rng.normal(0, 0.05), 1.0, N)
        elif kind == 1:                        # integers: exact ties mean == mu0 occur
            L = rng.integers(-3, 4, N).astype(float)
        elif kind == 2:                        # constant population (s = 0 everywhere)
            L = np.full(N, rng.choice([-0.5, 0.0, 0.5]))
        else:                                  # heavy tails
            L = rng.standard_t(2, N)
        exact_mean = L.mean()
        if trial % 3 == 0:                     # (near-)ties
            # integer sums are exact in float64, so the tie is exact; otherwise stay 1e-12
            # away: two summation orders may round a float mean to either side of itself
            mu0 = exact_mean if kind in (1, 2) else exact_mean * (1 + 1e-12) + 1e-15
        else:
            mu0 = exact_mean + rng.normal(0, 0.02)
        r = sequential_test(lambda i, L=L: L[i], N, mu0, 0.0, 100, rng)
        assert r.n_used == N and r.exact_needed
        assert r.accept == (np.sum(L) / N > mu0)
    # a tie on an exactly representable mean rejects
    L = np.array([1.0, -1.0] * 50)
    assert not sequential_test(lambda i: L[i], 100, 0.0, 0.0, 7, rng).accept


def test_given_order_and_batch_agree_with_scalar():
    rng = np.random.default_rng(1)
    N, K = 3000, 6
    L = rng.normal(0.02, 1.0, (K, N))
    mu0 = rng.normal(0, 0.03, K)
    orders = np.stack([rng.permutation(N) for _ in range(K)])
    batch = sequential_test_batch(L, N, mu0, 0.05, 250, rng, order=orders)
    calls = []

    def fn(rows, idx):                         # callable form: one call per round
        calls.append(rows.size)
        return L[rows[:, None], idx]

    batch2 = sequential_test_batch(fn, N, mu0, 0.05, 250, rng, order=orders)
    for k in range(K):
        r = sequential_test(lambda i, k=k: L[k, i], N, mu0[k], 0.05, 250, rng,
                            order=orders[k])
        assert r.accept == batch.accept[k] == batch2.accept[k]
        assert r.n_used == batch.n_used[k] == batch2.n_used[k]
        assert r.n_used % 250 == 0 or r.n_used == N
        # the running mean reported is the mean of the values actually read
        assert np.isclose(r.mean, L[k, orders[k, :r.n_used]].mean())
    assert max(calls) == K
    # the lookahead only changes how many values are fetched per call, not the decisions
    calls.clear()
    one = sequential_test_batch(fn, N, mu0, 0.05, 250, rng, order=orders, lookahead=1)
    assert len(calls) == one.n_used.max() // 250
    assert np.array_equal(one.accept, batch.accept) and np.array_equal(one.n_used, batch.n_used)
    assert np.all(batch.n_read >= batch.n_used) and np.array_equal(one.n_read, one.n_used)


def test_uniform_order_is_a_permutation_and_first_batch_is_uniform():
    rng = np.random.default_rng(2)
    N, K, m = 5000, 4, 300
    u = UniformOrder(K, N, rng)
    parts, n = [], 0
    while n < N:
        b = min(m, N - n)
        parts.append(u.take(np.arange(K), b, n))
        n += b
    full = np.concatenate(parts, axis=1)
    assert all(np.array_equal(np.sort(r), np.arange(N)) for r in full)
    # chi-square of first-minibatch membership counts over 10 index bins
    counts = np.zeros(10)
    for _ in range(200):
        idx = UniformOrder(K, N, rng).take(np.arange(K), m, 0)
        counts += np.bincount(idx.ravel() * 10 // N, minlength=10)
    exp = counts.sum() / 10
    chi2 = ((counts - exp) ** 2 / exp).sum()
    assert chi2 < 27.9                          # chi2_9 0.999 quantile



class _NumpyOrder(UniformOrder):
    """UniformOrder with its chunks drawn by a plain numpy rendering of the same rule (stable
    argsort to find first occurrences, boolean masks for the unused indices)."""

    def _extend(self, rows, target):
        N, rng, L = self.N, self.rng, self.seq.shape[1]
        k = rows.size
        if 4 * target > N:
            unused = np.nonzero(~self.used[rows])[1].reshape(k, N - L)
            seq = np.zeros((self.K, N), dtype=np.int64)
            seq[:, :L] = self.seq
            seq[rows, L:] = rng.permuted(unused, axis=1)
            self.seq, self.full = seq, True
            return
        add = target - L
        new = np.zeros((self.K, add), dtype=np.int64)
        filled = np.zeros(k, dtype=np.int64)
        todo = np.arange(k)
        while todo.size:
            need = add - filled[todo]
            c = int(need.max() * N / (N - L - add) * 1.15) + 16
            cand = rng.integers(0, N, size=(todo.size, c))
            r = rows[todo]
            ok = ~self.used[r[:, None], cand]
            srt = np.argsort(cand, axis=1, kind="stable")
            cs = np.take_along_axis(cand, srt, axis=1)
            rep = np.zeros(cand.shape, dtype=bool)
            rep[:, 1:] = cs[:, 1:] == cs[:, :-1]
            dup = np.empty_like(rep)
            np.put_along_axis(dup, srt, rep, axis=1)
            ok &= ~dup
            csum = np.cumsum(ok, axis=1)
            sel = ok & (csum <= need[:, None])
            ri, ci = np.nonzero(sel)
            fl = filled[todo]
            new[r[ri], fl[ri] + csum[ri, ci] - 1] = cand[ri, ci]
            self.used[r[ri], cand[ri, ci]] = True
            filled[todo] = fl + np.minimum(csum[:, -1], need)
            todo = todo[filled[todo] < add]
        self.seq = np.concatenate([self.seq, new], axis=1)


@pytest.mark.parametrize("K, N, m", [(7, 5000, 300), (40, 1037, 100), (5, 64, 1), (3, 9, 4)])
def test_uniform_order_draws_the_orders_of_the_plain_numpy_rule(K, N, m):
    """The compiled bookkeeping of UniformOrder keeps exactly the indices the numpy rendering
    keeps, from the same random stream, while rows drop out as their tests decide."""
    for seed in range(3):
        fast, slow = UniformOrder(K, N, np.random.default_rng(seed)), \
            _NumpyOrder(K, N, np.random.default_rng(seed))
        drop = np.random.default_rng(100 + seed)
        rows, n = np.arange(K), 0
        while n < N and rows.size:
            b = min(m, N - n)
            assert np.array_equal(fast.take(rows, b, n), slow.take(rows, b, n))
            n += b
            rows = rows[drop.random(rows.size) < 0.85]         # some tests decide
        assert np.array_equal(fast.seq, slow.seq) and np.array_equal(fast.used, slow.used)
        assert fast.rng.random() == slow.rng.random()           # same draws consumed

def _null_stop_rate(N, m, eps, K, seed):
    rng = np.random.default_rng(seed)
    pop = rng.standard_normal(N)
    pop -= pop.mean()
    r = sequential_test_batch(np.broadcast_to(pop, (K, N)), N, np.zeros(K), eps, m, rng)
    return np.mean(r.n_used == m)


def test_first_look_stops_at_rate_two_eps_under_the_null_student_t():
    # n = 5 points of a Gaussian population: |t| > t_{4, 0.95} happens w.p. 2 eps = 0.10.
    # A normal cdf instead of Student-t would stop w.p. P(|t_4| > 1.645) = 0.175.
    rate = _null_stop_rate(N=5000, m=5, eps=0.05, K=4000, seed=3)   # fpc 0.9996
    assert 0.085 < rate < 0.13


def test_first_look_stops_at_rate_two_eps_with_finite_population_correction():
    # n = 800 of N = 1000: without the correction s is sqrt(1/0.2) = 2.2x too large and the
    # first-look stop rate falls from 0.10 to about 2 * (1 - Phi(3.7)) ~ 0.0002.
    rate = _null_stop_rate(N=1000, m=800, eps=0.05, K=4000, seed=4)
    assert 0.08 < rate < 0.12


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_decision_errors_on_planted_populations(sign):
    rng = np.random.default_rng(5)
    N, K = 10_000, 1500
    base = rng.standard_normal(N)
    base = (base - base.mean()) / base.std()
    L = np.broadcast_to(sign * 0.01 + base, (K, N))   # exact decision: accept iff sign > 0
    errs, used = [], []
    for eps in (0.0, 0.01, 0.05, 0.1, 0.2):
        r = sequential_test_batch(L, N, np.zeros(K), eps, 500, rng)
        errs.append(np.mean(r.accept != (sign > 0)))
        used.append(r.n_used.mean() / N)
        if eps > 0:
            assert errs[-1] < 2 * eps               # measured ~1.5 eps at this gap
    assert errs[0] == 0.0 and used[0] == 1.0
    assert errs[1] > 0.0 and errs[4] > 0.1           # early decisions are really made
    assert np.all(np.diff(errs) > 0) and np.all(np.diff(used) < 0)


def test_clear_cases_decide_on_the_first_minibatch_in_the_right_direction():
    rng = np.random.default_rng(6)
    N = 20_000
    L = rng.normal(0.0, 1.0, N)
    hi = sequential_test(lambda i: L[i], N, -0.5, 0.01, 500, rng)
    lo = sequential_test(lambda i: L[i], N, 0.5, 0.01, 500, rng)
    assert hi.accept and hi.n_used == 500 and not hi.exact_needed
    assert not lo.accept and lo.n_used == 500
    const = np.full(N, 0.25)                   # s = 0 at n < N: decided at once if eps > 0
    assert sequential_test(lambda i: const[i], N, 0.0, 0.01, 500, rng).n_used == 500
    assert sequential_test(lambda i: const[i], N, 0.25, 0.01, 500, rng).n_used == N


def test_t_statistic_matches_formula():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(3, 40))
    t = t_statistic(x, 0.1, 100)
    ref = (x.mean(1) - 0.1) / (x.std(1, ddof=1) / np.sqrt(40) * np.sqrt(1 - 39 / 99))
    assert np.allclose(t, ref)
