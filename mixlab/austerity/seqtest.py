"""The sequential (approximate) MH test of Korattikara, Chen & Welling (2014), §4.

One question, asked many times: given a population of N numbers ``l_1..l_N`` (log-likelihood
differences), is their mean above a threshold ``mu0``?  The exact answer needs all N numbers; the
test looks at minibatches drawn *without replacement* and stops as soon as a Student-t test is
confident at level ``eps``:

    running mean l̄ and sample standard deviation s_l (ddof=1) over the n values seen
    s     = s_l / sqrt(n) * sqrt(1 - (n-1)/(N-1))          (finite population correction)
    t     = (l̄ - mu0) / s
    delta = 1 - Phi_{n-1}(|t|)                              (Student-t cdf, n-1 d.o.f.)
    if delta < eps: decide, accept iff l̄ > mu0;  at n = N: the exact decision (l̄ = mean > mu0)

``eps = 0`` never stops early (delta >= 0), so it makes exactly the exact decision.  Special
cases, stated once here:

* ``s = 0`` before n = N (all values seen so far equal): ``t = ±inf`` and ``delta = 0`` when
  ``l̄ != mu0`` (any ``eps > 0`` decides, as the paper's rule literally says); ``delta = 1`` when
  ``l̄ == mu0`` (no evidence either way).
* at n = N the decision is ``sum(l) / N > mu0`` with the sum accumulated in float64 minibatch
  by minibatch; a tie rejects (accept iff strictly greater), as the exact rule.  When the sums
  are exact (e.g. integer values) ties are reproduced exactly; otherwise two summation orders may
  differ in the last bit, which matters only for a mu0 within ~1e-15 relative of the mean.
* n = 1 (only possible with m = 1): no variance estimate, the test never stops there.

Two entry points:

* :func:`sequential_test` — one test, ``l_fn(idx) -> (len(idx),)``.
* :func:`sequential_test_batch` — K independent tests at once (vectorised over tests): ``L`` is
  either a (K, N) array or a callable ``l_fn(rows, idx) -> (len(rows), b)`` where ``rows`` (k,)
  are the indices of the still-undecided tests and ``idx`` (k, b) their data indices for this
  round (each row its own random order).  All undecided tests have seen the same number n of
  values, so a round is one vectorised call.

Minibatch indices are a uniformly random ordering of 0..N-1 (drawn lazily, so a test that stops
after 500 of 12,000 points does not pay for a whole permutation), or the given ``order``.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from scipy.special import stdtr

__all__ = ["TestResult", "BatchTestResult", "sequential_test", "sequential_test_batch",
           "t_statistic", "UniformOrder"]


class TestResult(NamedTuple):
    """Outcome of one sequential test."""
    accept: bool        # decision: accept iff the (running) mean exceeds mu0
    n_used: int         # number of data points looked at (multiple of m, or N)
    exact_needed: bool  # True iff the test went through all N points (decision = exact one)
    mean: float         # running mean l̄ at the decision
    delta: float        # p-value at the decision (0.0 when n = N)


class BatchTestResult(NamedTuple):
    """Outcomes of K independent sequential tests; every field has shape (K,)."""
    accept: np.ndarray        # bool
    n_used: np.ndarray        # int64
    exact_needed: np.ndarray  # bool
    mean: np.ndarray          # float64
    delta: np.ndarray         # float64


class UniformOrder:
    """Lazy uniformly random orderings of 0..N-1, one per row, all rows advancing together.

    ``take(rows, b, n)`` returns (len(rows), b) fresh indices for the given rows, which have all
    used exactly ``n`` indices so far.  Each minibatch is a uniform random subset of the indices
    not used yet (simple random sampling without replacement, the test's assumption):

    * while more than N/4 remain: i.i.d. uniform candidates, keeping the first ``b`` distinct
      unused ones in draw order (sequential sampling without replacement, O(b) work);
    * once at most N/4 remain: the remaining indices of each row are permuted once (cost
      proportional to the work already done); the last minibatch takes what is left.
    """

    def __init__(self, K: int, N: int, rng: np.random.Generator):
        self.K, self.N, self.rng = K, N, rng
        self.used = np.zeros(K * N, dtype=bool)            # row r, index i -> r * N + i
        self.stamp = None
        self.tail = None          # (K, N - n_tail) remaining indices in random order
        self.n_tail = 0

    def take(self, rows: np.ndarray, b: int, n: int) -> np.ndarray:
        N, rng = self.N, self.rng
        rem = N - n
        if b > rem:
            raise ValueError("asked for more indices than remain")
        if self.tail is None and (4 * rem <= N or b == rem):
            k = rows.size
            unused = np.nonzero(~self.used.reshape(self.K, N)[rows])[1].reshape(k, rem)
            if b < rem:
                unused = np.take_along_axis(unused, np.argsort(rng.random((k, rem)), axis=1),
                                            axis=1)
            tail = np.zeros((self.K, rem), dtype=np.int64)
            tail[rows] = unused
            self.tail, self.n_tail = tail, n
        if self.tail is not None:
            off = n - self.n_tail
            return self.tail[rows, off:off + b]
        if self.stamp is None:
            self.stamp = np.full(self.K * N, np.iinfo(np.int64).max, dtype=np.int64)
        k = rows.size
        out = np.empty((k, b), dtype=np.int64)
        filled = np.zeros(k, dtype=np.int64)
        todo = np.arange(k)
        used, stamp = self.used, self.stamp
        base = rows * N
        while todo.size:
            fl = filled[todo]
            need = b - fl
            c = int(np.max(need * N / (rem - fl)) * 1.1) + 16
            cand = rng.integers(0, N, size=(todo.size, c))
            flat = cand + base[todo][:, None]
            # first occurrence of each value within a row (ufunc.at is order-safe)
            pos = np.broadcast_to(np.arange(flat.size).reshape(flat.shape), flat.shape)
            np.minimum.at(stamp, flat.ravel(), pos.ravel())
            ok = stamp[flat] == pos
            stamp[flat] = np.iinfo(np.int64).max
            ok &= ~used[flat]
            csum = np.cumsum(ok, axis=1)
            sel = ok & (csum <= need[:, None])
            r_i, c_i = np.nonzero(sel)
            out[todo[r_i], fl[r_i] + csum[r_i, c_i] - 1] = cand[r_i, c_i]
            used[flat[r_i, c_i]] = True
            filled[todo] = fl + np.minimum(csum[:, -1], need)
            todo = todo[filled[todo] < b]
        return out


def _as_batch_fn(L) -> Callable:
    if callable(L):
        return L
    L = np.asarray(L)
    if L.ndim != 2:
        raise ValueError("L must be a (K, N) array or a callable l_fn(rows, idx)")
    return lambda rows, idx: L[rows[:, None], idx]


def sequential_test_batch(L, N: int, mu0, eps: float, m: int, rng: np.random.Generator,
                          order: np.ndarray | None = None) -> BatchTestResult:
    """K independent sequential tests of ``mean(l_k) > mu0[k]``.

    Parameters
    ----------
    L : (K, N) array, or callable ``l_fn(rows (k,), idx (k, b)) -> (k, b)`` giving the values of
        the undecided tests ``rows`` at data indices ``idx`` (one vectorised call per round).
    N : population size.   mu0 : (K,) thresholds.   eps : tolerance in [0, 1).
    m : minibatch size (the last minibatch may be smaller when m does not divide N).
    rng : numpy Generator for the random orders (unused when ``order`` is given).
    order : optional (N,) or (K, N) permutation(s) of 0..N-1 fixing the order the data is read.

    Returns a :class:`BatchTestResult` of (K,) arrays.
    """
    mu0 = np.atleast_1d(np.asarray(mu0, dtype=np.float64))
    K = mu0.shape[0]
    if not (0.0 <= eps < 1.0):
        raise ValueError(f"eps must be in [0, 1), got {eps}")
    if m < 1 or N < 1:
        raise ValueError("m and N must be positive")
    fn = _as_batch_fn(L)
    if order is not None:
        order = np.asarray(order)
        if order.ndim == 1:
            order = np.broadcast_to(order, (K, N))
        sampler = None
    else:
        sampler = UniformOrder(K, N, rng)

    total = np.zeros(K)                    # running sum of the values read
    m2 = np.zeros(K)                       # sum of squared deviations (Chan et al. update)
    accept = np.zeros(K, dtype=bool)
    n_used = np.zeros(K, dtype=np.int64)
    exact = np.zeros(K, dtype=bool)
    out_mean = np.zeros(K)
    out_delta = np.zeros(K)
    active = np.arange(K)
    n = 0
    while active.size:
        b = min(m, N - n)
        idx = order[active, n:n + b] if sampler is None else sampler.take(active, b, n)
        vals = np.asarray(fn(active, idx), dtype=np.float64).reshape(active.size, b)
        bsum = vals.sum(axis=1)
        bmean = bsum / b
        bm2 = ((vals - bmean[:, None]) ** 2).sum(axis=1)
        delta_mu = bmean - (total[active] / n if n else 0.0)
        n_new = n + b
        m2[active] += bm2 + delta_mu ** 2 * (n * b / n_new)   # Chan et al. pooled update
        total[active] += bsum
        new_mean = total[active] / n_new    # the mean as the exact rule computes it: sum / n
        n = n_new
        d = new_mean - mu0[active]
        if n == N:
            accept[active] = d > 0
            n_used[active] = N
            exact[active] = True
            out_mean[active] = new_mean
            out_delta[active] = 0.0
            break
        if eps <= 0.0 or n < 2:
            continue
        var = np.maximum(m2[active] / (n - 1), 0.0)
        s = np.sqrt(var / n * (1.0 - (n - 1) / (N - 1)))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.abs(d) / s
        t = np.where(s > 0, t, np.where(d != 0, np.inf, 0.0))
        delta = stdtr(n - 1, -t)           # = 1 - Phi_{n-1}(|t|), no cancellation
        delta = np.where(np.isinf(t), 0.0, delta)
        delta = np.where((s == 0) & (d == 0), 1.0, delta)
        done = delta < eps
        if done.any():
            rows = active[done]
            accept[rows] = d[done] > 0
            n_used[rows] = n
            out_mean[rows] = new_mean[done]
            out_delta[rows] = delta[done]
            active = active[~done]
    return BatchTestResult(accept, n_used, exact, out_mean, out_delta)


def sequential_test(l_fn: Callable[[np.ndarray], np.ndarray], N: int, mu0: float, eps: float,
                    m: int, rng: np.random.Generator,
                    order: np.ndarray | None = None) -> TestResult:
    """One sequential test of ``mean(l) > mu0``; ``l_fn(idx (b,)) -> (b,)`` the values at the
    data indices ``idx``.  See the module docstring for the rule; returns a :class:`TestResult`."""
    res = sequential_test_batch(lambda rows, idx: np.asarray(l_fn(idx[0]))[None, :], N,
                                np.array([mu0], dtype=np.float64), eps, m, rng, order=order)
    return TestResult(bool(res.accept[0]), int(res.n_used[0]), bool(res.exact_needed[0]),
                      float(res.mean[0]), float(res.delta[0]))


def t_statistic(sample: np.ndarray, mu: float | np.ndarray, N: int) -> np.ndarray:
    """The test's t statistic of sample(s) drawn without replacement from a population of N.

    sample : (..., n) values; mu : population mean (broadcasts against sample[..., 0]).
    Returns (...,) ``(mean - mu) / (s_l/sqrt(n) * sqrt(1 - (n-1)/(N-1)))`` with s_l ddof=1."""
    sample = np.asarray(sample, dtype=np.float64)
    n = sample.shape[-1]
    s = sample.std(axis=-1, ddof=1) / np.sqrt(n) * np.sqrt(1.0 - (n - 1) / (N - 1))
    return (sample.mean(axis=-1) - mu) / s
