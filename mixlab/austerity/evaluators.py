"""Streaming evaluators of the austerity experiments (mixlab evaluator contract: ``update(draws
{key: (chain, n, ...)}, count, seconds)``, ``curve() -> (x, y, yerr)``, state as data through
:class:`mixlab.runfile.checkpoint.AttributeState` so that interrupted runs resume).

* :class:`PredictiveRisk` (Fig 3)  risk of the running predictive mean vs the HMC truth
* :class:`VarianceL1` (Figs 5-6)   L1 error of the running posterior variance
* :class:`PosteriorMean` (Figs 3-6) the running posterior-mean estimate and its error
* :class:`Calibration` (Fig 7)     P(sampler sets x_i = 1) binned by the exact conditional
* :class:`JointL1` (Fig 8)         average L1 error of the joints on random 5-variable subsets
"""

from __future__ import annotations

import numpy as np

from ..runfile.checkpoint import AttributeState
from .kernels.sigmoid import sigmoid_row_sums


class PredictiveRisk(AttributeState):
    """Risk of the running predictive mean: mean over chains and test points of
    (mean_t σ(x*·θ_t) - truth(x*))², after each block.  x = sampling seconds."""

    metric = "risk"
    x_label = "wall-clock seconds (sampling)"
    y_label = "risk of the predictive mean"

    state_attrs = ('sum', 'n', 'x', 'y', 'count')

    def __init__(self, series: str, X_test_b: np.ndarray, truth_pred: np.ndarray, chains: int):
        self.series = series
        self.Xt = np.ascontiguousarray(X_test_b, dtype=np.float32)      # (M, d) with bias col
        self.truth = np.asarray(truth_pred, dtype=np.float64)            # (M,)
        self.sum = np.zeros((chains, self.Xt.shape[0]))
        self.n = 0
        self.x, self.y, self.count = [], [], []

    def update(self, draws, count, seconds):
        th = np.asarray(draws["samples"], dtype=np.float32)             # (C, B, d)
        C, B, d = th.shape
        for s in range(0, B, 1000):
            b = min(1000, B - s)
            z = th[:, s:s + b].reshape(-1, d) @ self.Xt.T                 # (C b, M)
            sigmoid_row_sums(z, b, self.sum)
        self.n += B
        est = self.sum / self.n
        self.x.append(seconds)
        self.y.append(float(np.mean((est - self.truth) ** 2)))
        self.count.append(count)

    def curve(self):
        return np.array(self.x), np.array(self.y), None


class VarianceL1(AttributeState):
    """L1 error of the running posterior variance, sum_j |var_j - truth_j|, averaged over chains,
    after each block.  x = sampling seconds."""

    metric = "variance_l1"
    x_label = "wall-clock seconds (sampling)"
    y_label = "L1 error of the posterior variance"

    state_attrs = ('n', 'mean', 'm2', 'x', 'y')

    def __init__(self, series: str, truth_var: np.ndarray, chains: int):
        self.series = series
        self.truth = np.asarray(truth_var, dtype=np.float64)
        d = self.truth.shape[0]
        self.n = 0
        self.mean = np.zeros((chains, d))
        self.m2 = np.zeros((chains, d))
        self.x, self.y = [], []

    def update(self, draws, count, seconds):
        th = np.asarray(draws["samples"], dtype=np.float64)             # (C, B, d)
        B = th.shape[1]
        bm = th.mean(1)
        bm2 = ((th - bm[:, None]) ** 2).sum(1)
        n_new = self.n + B
        delta = bm - self.mean
        self.m2 += bm2 + delta ** 2 * (self.n * B / n_new)
        self.mean += delta * (B / n_new)
        self.n = n_new
        var = self.m2 / self.n
        self.x.append(seconds)
        self.y.append(float(np.abs(var - self.truth).sum(1).mean()))

    def curve(self):
        return np.array(self.x), np.array(self.y), None


class PosteriorMean(AttributeState):
    """The running posterior-mean estimate (mean over every chain and draw so far) and its
    Euclidean distance to the truth's mean, after each block.  x = sampling seconds.

    draws: ``samples (chain, n, d)``.  :meth:`mean` -> (d,) the estimate (the result
    ``mean/<series>``)."""

    metric = "mean_l2"
    x_label = "wall-clock seconds (sampling)"
    y_label = "|posterior-mean estimate - truth| (L2)"

    state_attrs = ('sum', 'n', 'x', 'y')

    def __init__(self, series: str, truth_mean: np.ndarray):
        self.series = series
        self.truth = np.asarray(truth_mean, dtype=np.float64)             # (d,)
        self.sum = np.zeros_like(self.truth)
        self.n = 0
        self.x, self.y = [], []

    def update(self, draws, count, seconds):
        th = np.asarray(draws["samples"], dtype=np.float64)             # (C, B, d)
        self.sum += th.sum(axis=(0, 1))
        self.n += th.shape[0] * th.shape[1]
        self.x.append(seconds)
        self.y.append(float(np.sqrt(np.sum((self.mean() - self.truth) ** 2))))

    def mean(self) -> np.ndarray:
        return self.sum / max(self.n, 1)

    def curve(self):
        return np.array(self.x), np.array(self.y), None


class Calibration(AttributeState):
    """Streaming evaluator: P(sampler sets x_i = 1) binned by the exact conditional p.

    draws: ``samples (chain, n, D)`` (the sweep's decisions), ``p_exact (chain, n, D)`` and,
    when ``paired``, ``exact_decision (chain, n, D)``.  Draws with index < ``burn_in`` are
    skipped.  curve(): x = mean p per non-empty bin, y = estimated P(set to 1) (paired estimate
    when ``paired``, else the raw frequency), yerr = its standard error."""

    metric = "calibration"
    x_label = "exact conditional probability P(x_i=1 | x_-i)"
    y_label = "empirical P(sampler sets x_i = 1)"

    state_attrs = ('n', 'sp', 'sx', 'sd', 'sd2', 'wrong')

    def __init__(self, series: str, bins: int, burn_in: int, paired: bool):
        self.series, self.bins, self.burn_in, self.paired = series, bins, burn_in, paired
        z = np.zeros(bins)
        self.n, self.sp, self.sx, self.sd, self.sd2 = z.copy(), z.copy(), z.copy(), z.copy(), z
        self.wrong = 0.0

    def update(self, draws: dict, count: int, seconds: float) -> None:
        p = draws["p_exact"]
        start = count - p.shape[1]
        skip = max(0, self.burn_in - start)
        if skip >= p.shape[1]:
            return
        p = p[:, skip:].astype(np.float64).ravel()
        x = draws["samples"][:, skip:].ravel().astype(np.float64)
        b = np.clip((p * self.bins).astype(np.int64), 0, self.bins - 1)
        self.n += np.bincount(b, minlength=self.bins)
        self.sp += np.bincount(b, p, self.bins)
        self.sx += np.bincount(b, x, self.bins)
        if self.paired:
            d = x - draws["exact_decision"][:, skip:].ravel()
            self.sd += np.bincount(b, d, self.bins)
            self.sd2 += np.bincount(b, d * d, self.bins)
            self.wrong += float(np.abs(d).sum())

    def table(self) -> dict:
        """Per non-empty bin: count, mean p, raw frequency (and SE), paired estimate (and SE)."""
        sel = self.n > 0
        n = self.n[sel]
        pbar = self.sp[sel] / n
        freq = self.sx[sel] / n
        freq_se = np.sqrt(np.maximum(freq * (1 - freq), 0) / n)
        if self.paired:
            dm = self.sd[sel] / n
            dv = np.maximum(self.sd2[sel] / n - dm ** 2, 0.0)
            est, est_se = pbar + dm, np.sqrt(dv / np.maximum(n - 1, 1))
        else:
            est, est_se = freq, freq_se
        return {"n": n, "p": pbar, "freq": freq, "freq_se": freq_se, "est": est, "est_se": est_se}

    def curve(self):
        t = self.table()
        return t["p"], t["est"], t["est_se"]


class JointL1(AttributeState):
    """Streaming evaluator: average (over M subsets) L1 error of each chain's empirical joint on
    the subsets vs the truth; mean over chains (±SE over chains).

    draws: ``samples (chain, n, D)``, ``terms (chain, n)`` (pair-term evaluations per sweep).
    Records at the log-spaced sweep counts ``at`` the error, the sampling time (linearly
    interpolated inside the block, exact at block ends) and the cumulative pair terms.
    curve(): x = seconds, y = mean L1, yerr = SE over chains."""

    metric = "joint_l1"
    x_label = "sampling time (s)"
    y_label = "average L1 error of 5-variable joints"

    state_attrs = ('counts', 'terms', 't_prev', 'xs_sweeps', 'xs_sec', 'xs_terms', 'ys', 'yerr')

    def __init__(self, series: str, subsets: np.ndarray, truth: np.ndarray, at: np.ndarray,
                 D: int):
        M, k = subsets.shape
        self.series = series
        self.subsets, self.truth, self.at = subsets, truth, at
        self.k, self.M = k, M
        self.counts = None          # (chain, M * 2^k)
        self.terms = None           # (chain,)
        self.t_prev = 0.0
        self.xs_sweeps: list[int] = []
        self.xs_sec: list[float] = []
        self.xs_terms: list[float] = []
        self.ys: list[float] = []
        self.yerr: list[float] = []
        W = np.zeros((D, M), dtype=np.float32)
        for b in range(k):
            W[subsets[:, b], np.arange(M)] += float(1 << b)
        self.W = W

    def _add(self, X: np.ndarray) -> None:
        C, n, D = X.shape
        codes = (X.reshape(C * n, D).astype(np.float32) @ self.W).astype(np.int64)
        codes = codes.reshape(C, n * self.M) + np.tile(np.arange(self.M) << self.k, n)[None, :]
        S = self.M << self.k
        flat = (codes + (np.arange(C, dtype=np.int64) * S)[:, None]).ravel()
        self.counts += np.bincount(flat, minlength=C * S).reshape(C, S)

    def _record(self, count: int, sec: float) -> None:
        c = self.counts.reshape(-1, self.M, 1 << self.k)
        emp = c / c.sum(axis=2, keepdims=True)
        err = np.abs(emp - self.truth[None]).sum(axis=2).mean(axis=1)      # (chain,)
        self.xs_sweeps.append(int(count))
        self.xs_sec.append(float(sec))
        self.xs_terms.append(float(self.terms.mean()))
        self.ys.append(float(err.mean()))
        self.yerr.append(float(err.std(ddof=1) / np.sqrt(len(err))) if len(err) > 1 else 0.0)

    def update(self, draws: dict, count: int, seconds: float) -> None:
        X = draws["samples"]
        C, n = X.shape[:2]
        terms = draws["terms"].astype(np.float64)                           # (chain, n)
        if self.counts is None:
            self.counts = np.zeros((C, self.M << self.k))
            self.terms = np.zeros(C)
        start = count - n
        cuts = [int(a) for a in self.at if start < a <= count]
        pos = 0
        for a in cuts:
            self._add(X[:, pos:a - start])
            self.terms += terms[:, pos:a - start].sum(axis=1)
            pos = a - start
            frac = (a - start) / n
            self._record(a, self.t_prev + frac * (seconds - self.t_prev))
        if pos < n:
            self._add(X[:, pos:])
            self.terms += terms[:, pos:].sum(axis=1)
        if not cuts or cuts[-1] != count:
            self._record(count, seconds)        # every block end too (exact time)
        self.t_prev = seconds

    def curve(self):
        return (np.asarray(self.xs_sec, float), np.asarray(self.ys, float),
                np.asarray(self.yerr, float))
