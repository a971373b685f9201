"""The league's streaming yardstick for targets whose truth is a vector of exact probabilities.

The probabilities are those of 0/1 features of a draw: the sites themselves (single-site
marginals: spin glass, RBM visible units) or, through ``features``, indicators such as "subset m
is in configuration s" (joints on subsets: MRF, which gives the configurations' ``codes``
instead, counted by ``bincount``: the same integer sums without the one-hot array). The error
is ``scale · mean_i |p̂_i − p_i|`` (``scale`` = 2^k turns the mean over the indicators of
k-variable subsets into the mean L1 distance between the estimated and exact joints). A target
whose features are sums of products (the RBM's pairwise moments) gives ``feature_sums``
instead: each chain's sums over a run of draws, computed without the per-draw features.

:class:`MarginalYardstick` is an evaluator (docs/plugins.md): fed blocks of draws ``{key:
(chains, n_draws, ...) bool or 0/1, "league_work": (chains, n_draws) float}``, it keeps

- the pooled estimate ``p̂ (n,)`` of ``P(x_i = 1)`` over all chains and draws and its error
  ``mean_i |p̂_i − p_i|`` against the exact ``p (n,)``;
- the curve of that error at every block end, against sampling seconds and against work
  (cumulative work of all chains; NaN when the sampler reports no cost statistic);
- the error at given marks of work (exactly at the draw where the cumulative work first
  reaches the mark) and of seconds (at the first block end at or after the mark);
- batch means per chain (at most :data:`MAX_BATCHES` batches; when full, neighbours are merged
  and the batch length doubles), from which :meth:`mcse` is ArviZ's Monte Carlo standard error
  of each site's mean over all chains (``arviz.mcse``, method "mean", as computed by
  mixlab.league.ess), and per-chain means,
  from which :meth:`chain_mcse` is the MCSE from the spread of independent chains.

Every number depends only on the draws (and, for seconds, on the block-end times), so a stream
resumed from a checkpoint gives the same work curve and marks as one never interrupted.
"""

from __future__ import annotations

import numpy as np

from ..runfile.checkpoint import AttributeState
from .cost import WORK_KEY

#: the most batches kept per chain before neighbours are merged
MAX_BATCHES = 32
#: the fewest independent chains whose spread gives an MCSE when the batches are too few
MIN_CHAINS = 4


def record_block_end(yard, seconds: float, err: float) -> None:
    """A yardstick's error ``err`` at the end of a block: one point of its curves (seconds and
    work), and the first value past each seconds mark it has not passed yet."""
    yard.xs_sec.append(float(seconds))
    yard.xs_work.append(yard.work)
    yard.ys.append(err)
    for j, mark in enumerate(yard.second_marks):
        if np.isnan(yard.sec_marks_err[j]) and seconds >= mark:
            yard.sec_marks_err[j] = err


def moment_sums(V: int):
    """``sums(x (chains, m, V) 0/1) -> (chains, V + V(V-1)/2)``: each chain's sums over its m
    draws of ``x_i`` and of ``x_i x_j`` (i < j, row-major upper triangle), the features of the
    pairwise-moment truth, as the diagonal and upper triangle of ``xᵀx`` (one batched
    product; exact integers in float64)."""
    iu, diag = np.triu_indices(V, 1), np.arange(V)

    def sums(x: np.ndarray) -> np.ndarray:
        xf = np.asarray(x, np.float64).reshape(x.shape[0], x.shape[1], V)
        S = np.matmul(xf.transpose(0, 2, 1), xf)                         # (chains, V, V)
        return np.concatenate([S[:, diag, diag], S[:, iu[0], iu[1]]], axis=1)

    return sums


class MarginalYardstick(AttributeState):
    """Mean |marginal error| against ``truth (n,)`` = exact P(x_i = 1), with batch means."""

    state_attrs = ("sum", "draws", "work", "xs_sec", "xs_work", "ys", "batches", "nb", "cur",
                   "cur_len", "blen", "work_marks_err", "work_marks_at", "sec_marks_err")

    def __init__(self, truth: np.ndarray, key: str = "samples", work_marks=(), second_marks=(),
                 metric: str = "error_vs_seconds", series: str = "sampler", features=None,
                 scale: float = 1.0, y_label: str = "mean |marginal error|", codes=None,
                 feature_sums=None):
        self.truth = np.asarray(truth, np.float64).ravel()
        self.key, self.metric, self.series = key, metric, series
        self.features, self.scale = features, float(scale)
        # codes(x) -> (chains, B, M) int in [0, S), S = truth.size // M: the one indicator of
        # each group that is 1 (feature m S + code), counted without the one-hot features
        self.codes = codes
        # feature_sums(x (chains, m, ...)) -> (chains, n): each chain's sums of the features
        # over its m draws, without the (chains, m, n) array of features (e.g. pairwise
        # products as one batched product xᵀx)
        self.feature_sums = feature_sums
        self.work_marks = [float(m) for m in work_marks]
        self.second_marks = [float(m) for m in second_marks]
        self.x_label, self.y_label = "sampling seconds", y_label
        n = self.truth.size
        self.sum = np.zeros(n)
        self.draws = 0
        self.work = 0.0
        self.xs_sec: list[float] = []
        self.xs_work: list[float] = []
        self.ys: list[float] = []
        self.batches = np.zeros((0, MAX_BATCHES, n))   # (chains, MAX_BATCHES, n) once known
        self.nb = 0
        self.cur = np.zeros((0, n))
        self.cur_len = 0
        self.blen = 1
        self.work_marks_err = [float("nan")] * len(self.work_marks)
        self.work_marks_at = [float("nan")] * len(self.work_marks)
        self.sec_marks_err = [float("nan")] * len(self.second_marks)

    # -- feeding ---------------------------------------------------------------------------------
    def update(self, draws: dict, count: int, seconds: float) -> None:
        x = np.asarray(draws[self.key])
        K, B = x.shape[:2]
        if self.codes is not None:
            total, prefix, block_sums = self._code_counts(x)
        elif self.feature_sums is not None:
            sums = self.feature_sums
            total = sums(x).sum(axis=0)

            def prefix(b):
                return sums(x[:, :b + 1]).sum(axis=0)

            def block_sums(i, m):
                return sums(x[:, i:i + m])
        else:
            x = (self.features(x) if self.features is not None else x).reshape(K, B, -1)
            # 0/1 bits are counted in integers (exact); other features summed in float64
            acc = np.int32 if x.dtype == np.bool_ else np.float64
            if acc is np.float64:
                x = x.astype(np.float64)
            per = x.sum(axis=0, dtype=acc)                             # (B, n)
            total = per.sum(axis=0)

            def prefix(b):              # rows summed in order: a cumulative sum's row b
                return per[:b + 1].sum(axis=0)

            def block_sums(i, m):                                      # (K, n)
                return x[:, i:i + m].sum(axis=1, dtype=acc)
        n = self.truth.size
        if self.batches.shape[0] != K:
            self.batches = np.zeros((K, MAX_BATCHES, n))
            self.cur = np.zeros((K, n))
        w = np.asarray(draws.get(WORK_KEY, np.full((K, B), np.nan)), np.float64).sum(axis=0)
        cum_work = self.work + np.cumsum(w)                             # (B,)
        for j, mark in enumerate(self.work_marks):
            if np.isnan(self.work_marks_err[j]) and np.isfinite(cum_work[-1]) \
                    and cum_work[-1] >= mark:
                b = int(np.argmax(cum_work >= mark))
                est = (self.sum + prefix(b)) / (K * (self.draws + b + 1))
                self.work_marks_err[j] = self._error(est)
                self.work_marks_at[j] = float(cum_work[b])
        self._add_batches(B, block_sums)
        self.sum = self.sum + total
        self.draws += B
        self.work = float(cum_work[-1])
        record_block_end(self, seconds, self._error(self.sum / (K * self.draws)))

    def _code_counts(self, x: np.ndarray):
        """For :attr:`codes`: the counts of each feature over all chains and draws ``(n,)``,
        ``prefix(b)`` the same over draws 0..b, and ``block_sums(i, m)`` each chain's counts
        over draws i..i+m-1 ``(chains, n)``: the integer sums of the one-hot features, by
        ``bincount``."""
        c = np.asarray(self.codes(x), np.int64)                        # (K, B, M)
        K, B, M = c.shape
        n = self.truth.size
        idx = c + np.arange(M, dtype=np.int64) * (n // M)              # feature of each group
        offsets = (np.arange(K, dtype=np.int64) * n)[:, None, None]

        def prefix(b):
            return np.bincount(idx[:, :b + 1].ravel(), minlength=n)

        def block_sums(i, m):
            return np.bincount((idx[:, i:i + m] + offsets).ravel(),
                               minlength=K * n).reshape(K, n)
        return np.bincount(idx.ravel(), minlength=n), prefix, block_sums

    def _add_batches(self, B: int, block_sums) -> None:
        """Per-chain batch sums of B draws, ``block_sums(i, m)`` (chains, n) the sums over
        draws i..i+m-1; merge pairs when all batches are full."""
        i = 0
        while i < B:
            m = min(self.blen - self.cur_len, B - i)
            self.cur = self.cur + block_sums(i, m)
            self.cur_len += m
            i += m
            if self.cur_len == self.blen:
                self.batches[:, self.nb] = self.cur
                self.nb += 1
                self.cur = np.zeros_like(self.cur)
                self.cur_len = 0
                if self.nb == MAX_BATCHES:
                    half = MAX_BATCHES // 2
                    merged = self.batches[:, 0::2] + self.batches[:, 1::2]
                    self.batches = np.zeros_like(self.batches)
                    self.batches[:, :half] = merged
                    self.nb = half
                    self.blen *= 2

    def _error(self, est: np.ndarray) -> float:
        return self.scale * float(np.mean(np.abs(est - self.truth)))

    # -- reading ---------------------------------------------------------------------------------
    def estimate(self) -> np.ndarray:
        """The pooled estimate ``p̂ (n,)`` (NaN before any draw)."""
        chains = self.batches.shape[0]
        return self.sum / (chains * self.draws) if self.draws else np.full_like(self.sum, np.nan)

    @property
    def chains(self) -> int:
        """The number of chains fed so far (0 before any draw)."""
        return int(self.batches.shape[0])

    def value(self) -> float:
        return self.ys[-1] if self.ys else float("nan")

    def mcse(self) -> np.ndarray | None:
        """ArviZ's MCSE of each site's mean (``mcse(method="mean")``, mixlab.league.ess) from
        the batch means ``(chains, nb)`` (None with fewer than 4 full batches per chain)."""
        if self.nb < 4:
            return None
        from .ess import mcse_mean

        means = self.batches[:, :self.nb] / self.blen                  # (chains, nb, n)
        with np.errstate(all="ignore"):
            out = mcse_mean(means)
        # a site constant in every batch has MCSE 0 (or NaN): the iid floor stands in for it
        return np.where(np.isfinite(out), out, 0.0)

    def chain_means(self) -> np.ndarray:
        """Each chain's mean of every feature over all its draws ``(chains, n)`` (the batch
        sums plus the unfinished batch: merging keeps every sum)."""
        total = self.batches[:, :self.nb].sum(axis=1) + self.cur
        return total / max(self.draws, 1)

    def chain_mcse(self) -> np.ndarray | None:
        """MCSE of each site's pooled mean from the spread of the chain means ``(n,)``:
        independent chains are replicates, so ``MCSE = sd_c(chain mean) / sqrt(C)`` (ddof 1;
        ``(p̂ − p)/MCSE`` is Student t with C − 1 degrees of freedom). None with fewer than
        :data:`MIN_CHAINS` chains or no draw."""
        C = self.batches.shape[0]
        if C < MIN_CHAINS or not self.draws:
            return None
        return np.std(self.chain_means(), axis=0, ddof=1) / np.sqrt(C)

    def curve(self):
        return np.asarray(self.xs_sec, float), np.asarray(self.ys, float), None
