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

from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from scipy.special import stdtr, stdtrit

__all__ = [
    "BatchTestResult",
    "TestResult",
    "UniformOrder",
    "sequential_test",
    "sequential_test_batch",
    "t_statistic",
    "tcrit2_table",
]


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
    n_read: np.ndarray        # int64, values computed (>= n_used: see ``lookahead``)


class UniformOrder:
    """Lazy uniformly random orderings of 0..N-1, one per row, all rows advancing together.

    ``take(rows, b, n)`` returns (len(rows), b) fresh indices for the given rows, which have all
    used exactly ``n`` indices so far.  The order of each row is a uniformly random permutation
    (so every minibatch is a simple random sample, without replacement, of the indices not used
    yet -- the test's assumption), generated in chunks of doubling length:

    * up to N/4: i.i.d. uniform candidates, keeping the distinct unused ones in draw order
      (sequential sampling without replacement, O(chunk) work, no sort over N);
    * beyond N/4: the remaining indices of each row are permuted once (cost proportional to
      the work already done).
    """

    def __init__(self, K: int, N: int, rng: np.random.Generator):
        self.K, self.N, self.rng = K, N, rng
        self.used = np.zeros((K, N), dtype=bool)
        self.seq = np.empty((K, 0), dtype=np.int64)        # the orders generated so far
        self.full = False                                   # seq holds whole permutations

    def _extend(self, rows: np.ndarray, target: int) -> None:
        # compiled bookkeeping, imported here: importing the package does not load numba
        from .kernels.orders import fresh_in_draw_order, unused_indices

        N, rng, L = self.N, self.rng, self.seq.shape[1]
        k = rows.size
        if 4 * target > N:                                  # permute what remains, once
            unused = unused_indices(self.used, rows, N - L)
            seq = np.zeros((self.K, N), dtype=np.int64)
            seq[:, :L] = self.seq
            seq[rows, L:] = rng.permuted(unused, axis=1)    # Fisher-Yates per row
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
            filled[todo] += fresh_in_draw_order(self.used, rows[todo], cand, need, new,
                                                filled[todo])
            todo = todo[filled[todo] < add]
        self.seq = np.concatenate([self.seq, new], axis=1)

    def take(self, rows: np.ndarray, b: int, n: int) -> np.ndarray:
        if n + b > self.N:
            raise ValueError("asked for more indices than remain")
        if n + b > self.seq.shape[1] and not self.full:
            self._extend(rows, min(self.N, max(n + b, 2 * n, 2 * b)))
        return self.seq[rows, n:n + b]


@lru_cache(maxsize=4096)
def _t_crit(df: int, eps: float) -> float:
    """Critical value: Phi_df(t_crit) = 1 - eps (Student-t, df degrees of freedom)."""
    return float(stdtrit(df, 1.0 - eps))


@lru_cache(maxsize=64)
def tcrit2_table(N: int, m: int, eps: float) -> np.ndarray:
    """Squared critical values for the looks of a test with minibatches of m: entry k is
    ``t_crit(n - 1, eps)^2`` at n = min((k+1) m, N) values seen, +inf where the test may not
    stop (eps = 0, n < 2).  (ceil(N/m),) float64, read-only; the compiled tests use it."""
    n = np.minimum(np.arange(1, -(-N // m) + 1) * m, N)
    out = np.full(n.shape, np.inf)
    if eps > 0:
        ok = n >= 2
        out[ok] = stdtrit(n[ok] - 1, 1.0 - eps) ** 2
    out.setflags(write=False)
    return out


def _as_batch_fn(L) -> Callable:
    if callable(L):
        return L
    L = np.asarray(L)
    if L.ndim != 2:
        raise ValueError("L must be a (K, N) array or a callable l_fn(rows, idx)")
    return lambda rows, idx: L[rows[:, None], idx]


def sequential_test_batch(L, N: int, mu0, eps: float, m: int, rng: np.random.Generator,
                          order: np.ndarray | None = None,
                          lookahead: int = 8) -> BatchTestResult:
    """K independent sequential tests of ``mean(l_k) > mu0[k]``.

    Parameters
    ----------
    L : (K, N) array, or callable ``l_fn(rows (k,), idx (k, b)) -> (k, b)`` giving the values of
        the undecided tests ``rows`` at data indices ``idx`` (one vectorised call per round).
    N : population size.   mu0 : (K,) thresholds.   eps : tolerance in [0, 1).
    m : minibatch size (the last minibatch may be smaller when m does not divide N).
    rng : numpy Generator for the random orders (unused when ``order`` is given).
    order : optional (N,) or (K, N) permutation(s) of 0..N-1 fixing the order the data is read.
    lookahead : at most this many minibatches are fetched per ``l_fn`` call (1, 2, 4, ... up to
        ``lookahead`` in successive rounds).  The test still looks after every minibatch, so
        decisions and ``n_used`` do not depend on it (``lookahead=1`` gives the same results);
        it trades values computed past the stopping point (``n_read``) for fewer Python round
        trips, which dominate on small minibatches.

    Returns a :class:`BatchTestResult` of (K,) arrays.
    """
    mu0 = np.atleast_1d(np.asarray(mu0, dtype=np.float64))
    K = mu0.shape[0]
    if not (0.0 <= eps < 1.0):
        raise ValueError(f"eps must be in [0, 1), got {eps}")
    if m < 1 or N < 1 or lookahead < 1:
        raise ValueError("m, N and lookahead must be positive")
    fn = _as_batch_fn(L)
    if order is not None:
        order = np.asarray(order)
        if order.ndim == 1:
            order = np.broadcast_to(order, (K, N))
        sampler = None
    else:
        sampler = UniformOrder(K, N, rng)

    total = np.zeros(K)                    # running sums of the values read (active rows)
    m2 = np.zeros(K)                       # sums of squared deviations (Chan et al. update)
    mu0_a = mu0.copy()
    accept = np.zeros(K, dtype=bool)
    n_used = np.zeros(K, dtype=np.int64)
    n_read = np.zeros(K, dtype=np.int64)
    exact = np.zeros(K, dtype=bool)
    out_mean = np.zeros(K)
    out_delta = np.zeros(K)
    active = np.arange(K)
    n = 0
    j = 1
    while active.size:
        B = min(j * m, N - n)
        idx = order[active, n:n + B] if sampler is None else sampler.take(active, B, n)
        vals = np.asarray(fn(active, idx), dtype=np.float64).reshape(active.size, B)
        n_read[active] = n + B
        j = min(2 * j, lookahead)
        for start in range(0, B, m):
            b = min(m, B - start)
            v = vals[:, start:start + b]
            bsum = v.sum(axis=1)
            dev = v - (bsum / b)[:, None]
            bm2 = np.einsum("kb,kb->k", dev, dev)
            if n:
                delta_mu = bsum / b - total / n
                m2 += bm2 + delta_mu * delta_mu * (n * b / (n + b))   # pooled update
            else:
                m2 += bm2
            total += bsum
            n += b
            mean = total / n               # the mean as the exact rule computes it: sum / n
            d = mean - mu0_a
            if n == N:
                accept[active] = d > 0
                n_used[active] = N
                exact[active] = True
                out_mean[active] = mean
                active = active[:0]
                break
            if eps <= 0.0 or n < 2:
                continue
            # delta = 1 - Phi_{n-1}(|t|) < eps <=> |d| > t_crit * s, t_crit = Phi^-1(1 - eps)
            # (also right when s = 0: decide iff d != 0)
            s2 = np.maximum(m2 / (n - 1), 0.0) / n * (1.0 - (n - 1) / (N - 1))
            done = d * d > _t_crit(n - 1, eps) ** 2 * s2
            if done.any():
                rows = active[done]
                dd, ss = d[done], np.sqrt(s2[done])
                accept[rows] = dd > 0
                n_used[rows] = n
                out_mean[rows] = mean[done]
                with np.errstate(divide="ignore"):
                    out_delta[rows] = np.where(ss > 0, stdtr(n - 1, -np.abs(dd) / ss), 0.0)
                keep = ~done
                active, total, m2, mu0_a = active[keep], total[keep], m2[keep], mu0_a[keep]
                if not active.size:
                    break
                vals = vals[keep]
    return BatchTestResult(accept, n_used, exact, out_mean, out_delta, n_read)


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
