"""The spin glass family's evaluators (streaming accumulators fed by ``ctx.stream``).

:class:`MarginalError`: mean absolute error of the running single-site marginal estimate
(pooled over chains and draws) against exact marginals, at log-spaced points, versus site
updates or versus seconds.
"""

from __future__ import annotations

import numpy as np

from ..runfile.checkpoint import AttributeState


class MarginalError(AttributeState):
    """Streaming mean absolute error of single-site marginal estimates.

    ``exact_marginals (R, C)``: the true ``P(x = +1)``. The estimate after ``d`` draws per chain
    is the fraction of +1 over all chains' first ``d`` draws (``samples`` key, (chain, draw, R,
    C) bool). ``x``: ``"updates"`` -- points at log-spaced draw counts (``points_per_decade``),
    x = total site updates over all chains (``d * chains * updates_per_draw``), identical however
    the stream is blocked; or ``"seconds"`` -- one point per block end, x = cumulative sampling
    seconds. The last draw is always a point."""

    state_attrs = ('sum', 'draws', 'chains', 'next_k', 'last_t', 'xs', 'ys', 'last')

    def __init__(self, exact_marginals: np.ndarray, metric: str = "marginal_error",
                 series: str = "sampler", x: str = "updates", updates_per_draw: float = 1.0,
                 points_per_decade: int = 10, key: str = "samples"):
        if x not in ("updates", "seconds"):
            raise ValueError(f"x must be 'updates' or 'seconds', got {x!r}")
        self.exact = np.asarray(exact_marginals, dtype=np.float64)
        self.metric, self.series, self.xmode, self.key = metric, series, x, key
        self.updates_per_draw = float(updates_per_draw)
        self.ppd = int(points_per_decade)
        self.x_label = "site updates (all chains)" if x == "updates" else "seconds"
        self.y_label = "mean |marginal error|"
        self.sum = np.zeros(self.exact.shape)
        self.draws = 0                 # draws per chain seen so far
        self.chains = 0
        self.next_k = 0                # index of the next log-spaced target
        self.last_t = 0                # last recorded target (draws per chain)
        self.xs: list[float] = []
        self.ys: list[float] = []
        self.last = (0.0, np.nan)

    def _target(self, k: int) -> int:
        return int(np.ceil(10.0 ** (k / self.ppd) - 1e-9))

    def update(self, draws: dict, count: int, seconds: float) -> None:
        s = np.asarray(draws[self.key])
        K, B = s.shape[:2]
        self.chains = K
        per = s.sum(axis=0, dtype=np.float64)                    # (B, R, C)
        start = self.draws
        if self.xmode == "updates":
            cum = np.cumsum(per, axis=0)
            while True:
                t = self._target(self.next_k)
                if t <= max(start, self.last_t):      # already passed, or a repeated target
                    self.next_k += 1
                    continue
                if t > start + B:
                    break
                est = (self.sum + cum[t - start - 1]) / (K * t)
                self._record(t * K * self.updates_per_draw, est)
                self.last_t = t
                self.next_k += 1
            self.sum += cum[-1]
        else:
            self.sum += per.sum(axis=0)
        self.draws = start + B
        est = self.sum / (K * self.draws)
        err = float(np.mean(np.abs(est - self.exact)))
        xv = (self.draws * K * self.updates_per_draw) if self.xmode == "updates" else seconds
        self.last = (float(xv), err)
        if self.xmode == "seconds":
            self.xs.append(float(seconds))
            self.ys.append(err)

    def _record(self, xv: float, est: np.ndarray) -> None:
        self.xs.append(float(xv))
        self.ys.append(float(np.mean(np.abs(est - self.exact))))

    def value(self) -> float:
        """Error of the current estimate (nan before any draw)."""
        return self.last[1]

    def curve(self):
        xs, ys = list(self.xs), list(self.ys)
        if self.draws and (not xs or xs[-1] != self.last[0]):
            xs.append(self.last[0])
            ys.append(self.last[1])
        return np.asarray(xs, float), np.asarray(ys, float), None
