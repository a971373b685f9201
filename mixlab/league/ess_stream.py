"""The ESS of a league stream's per-draw summaries, estimated as the draws stream past, and a
thinned record of them: O(1) memory in the number of draws, a state that checkpoints with
the stream.

:class:`StreamingESS` is an evaluator (docs/plugins.md) fed the stream's blocks; it reads the
``summary/<stat>`` keys (``(chains, n)`` each) and keeps, per chain and summary, with ``L`` =
:data:`LAGS`:

- the lagged products ``Σ_i y_{i−t} y_i``, ``t = 0..L``, over every pair of draws (``y`` the
  value minus the chain's first value, for rounding), the first ``L`` values and the last
  ``L`` (the lags' history);
- batch sums (at most :data:`BATCHES` batches; when full, neighbours merge and the batch
  length doubles, as the yardstick's batch means: mixlab.league.yardstick);
- a record of every ``stride``-th draw, at most :data:`RECORD` (when full, every other one is
  dropped and the stride doubles).

:meth:`StreamingESS.estimates` gives, per summary:

- while the record holds every draw (at most :data:`RECORD` per chain): ArviZ's bulk ESS of
  the record (mixlab.league.ess), method ``record``;
- else the split-chain ESS of Vehtari et al. (2021, eqs. 10-11) of the raw values: each
  chain's autocovariances of lags 0..L about its mean (exact: the centring uses its first
  and last ``L`` values), less the between-halves part ``(h_A (m_A − m)² + h_B (m_B − m)²) /
  n`` to give the mean within-half autocovariance, the halves split at the batch boundary
  nearest the middle (ArviZ splits at n // 2; here the halves differ by at most a batch,
  1/16 of the draws) and their means ``m_A``, ``m_B`` giving the between-chain variance;
  τ is Geyer's initial monotone sum over them (mixlab.league.ess's, the code of the bulk
  ESS). Method ``stream``. ArviZ also leaves out of each half the ``t`` pairs of lag ``t``
  that straddle the split, and centres each half's pairs at the half's mean: both change a
  lag's autocovariance by ``O(t / n)`` of it;
- when a summary's Geyer sequence has not ended by lag ``L`` (a chain that mixes slowly): the
  batch-means ESS, ``chains · n · σ² / (b · s²_b)`` with ``b`` the batch length and ``s²_b``
  the variance of every chain's full batch means (16 to 32 per chain). Method ``fallback``.

What it cannot do: rank-normalise. The bulk ESS ranks every draw over all draws; a stream
cannot, so the ESS is of the raw values. For a 0/1 summary the two are equal (the normal
scores of two values are an affine map of them, and the ESS is affine-invariant); for a
summary with heavy tails they differ (the league's summaries are bounded: indicators,
fractions, energies of finite state spaces). The fallback is a batch-means estimate, noisier
(relative error about ``sqrt(2 / batches)``, 8-11% with 10 chains) and biased low when the
batches are not much longer than the autocorrelation time. Geyer's sequence ends where its
pair sums first turn negative, which sampling noise decides for lags past the correlation
time, so the more draws the later it ends: a chain with an autocorrelation time of 20 runs
past lag 64 at about a million draws.

The MCSE of a summary's mean uses the same ESS: ``sd / sqrt(ESS)``. Every number depends only
on the draws, not on the blocks they arrive in (up to float rounding), so a stream resumed
from its checkpoint gives the same state as one never interrupted.
"""

from __future__ import annotations

import math

import numpy as np

from ..runfile.checkpoint import StateError
from .ess import MIN_DRAWS, _geyer_tau, ess_bulk

#: the lag bound: autocovariances of lags 0..LAGS are kept
LAGS = 64
#: the most batches kept per chain before neighbours merge
BATCHES = 32
#: the most draws per chain the thinned record keeps (at least half as many once full)
RECORD = 2048
#: the prefix of the block keys this estimator reads
PREFIX = "summary/"


class StreamingESS:
    """Streaming ESS and MCSE of each ``summary/<stat>`` of a stream, and its thinned record."""

    #: an evaluator that draws no curve (mixlab.run.streams skips it)
    metric = None
    _scalars = ("names", "n", "nb", "blen", "rec_n", "stride", "dtypes")
    _arrays = ("shift", "first", "hist", "Q", "S")

    def __init__(self, lags: int = LAGS, batches: int = BATCHES, record: int = RECORD):
        if batches < 4 or batches % 2 or lags < 2 or record < 2 * lags or record % 2:
            raise ValueError("lags >= 2, batches >= 4 and record >= 2 lags, both even")
        self.L, self.maxb, self.cap = int(lags), int(batches), int(record)
        self.names: list[str] = []
        self.dtypes: list[str] = []
        self.n = 0
        self.nb = 0
        self.blen = 1
        self.rec_n = 0
        self.stride = 1
        self.shift = self.first = self.hist = self.Q = self.S = self.cur = None
        self.rec = None

    # -- state -----------------------------------------------------------------------------------
    def state(self) -> dict:
        out = {k: getattr(self, k) for k in self._scalars}
        if self.shift is not None:
            out.update({k: getattr(self, k) for k in self._arrays})
            for i, name in enumerate(self.names):   # the record in each summary's own type
                out[f"rec_{name}"] = self.rec[:, i, :self.rec_n].astype(self.dtypes[i])
        return out

    def load_state(self, state: dict) -> None:
        for k in self._scalars:
            if k not in state:
                raise StateError(f"StreamingESS: checkpoint lacks state '{k}'")
            setattr(self, k, state[k])
        self.names, self.dtypes = list(self.names), list(self.dtypes)
        self.n, self.nb, self.blen = int(self.n), int(self.nb), int(self.blen)
        self.rec_n, self.stride = int(self.rec_n), int(self.stride)
        if not self.names:
            return
        for k in self._arrays:
            setattr(self, k, np.asarray(state[k], np.float64))
        C, S = self.shift.shape
        self.rec = np.zeros((C, S, self.cap))
        for i, name in enumerate(self.names):
            self.rec[:, i, :self.rec_n] = state[f"rec_{name}"]

    # -- feeding ---------------------------------------------------------------------------------
    def update(self, draws: dict, count: int, seconds: float) -> None:
        names = sorted(k[len(PREFIX):] for k in draws if k.startswith(PREFIX))
        if not names:
            return
        x = np.stack([np.asarray(draws[PREFIX + k], np.float64) for k in names], axis=1)
        if self.shift is None:
            self._start(names, [np.asarray(draws[PREFIX + k]).dtype.str for k in names], x)
        elif names != self.names:
            raise ValueError(f"summaries changed from {self.names} to {names} between blocks")
        self._record(x)
        L = self.L
        y = x - self.shift[..., None]                                    # (C, S, B)
        B = y.shape[-1]
        if self.n < L:                                                   # the first L values
            k = min(L - self.n, B)
            self.first[:, :, self.n:self.n + k] = y[:, :, :k]
        e = np.concatenate([self.hist, y], axis=-1)                      # (C, S, L + B)
        self.Q += _lag_products(e, L)
        self._add_batches(y)
        self.n += B
        self.hist = np.ascontiguousarray(e[:, :, -L:])

    def _start(self, names: list[str], dtypes: list[str], x: np.ndarray) -> None:
        C, S, _ = x.shape
        L = self.L
        self.names, self.dtypes = names, dtypes
        self.shift = x[:, :, 0].copy()
        self.first = np.zeros((C, S, L))
        self.hist = np.zeros((C, S, L))          # no draw before the first: products of 0
        self.Q = np.zeros((C, S, L + 1))
        self.S = np.zeros((self.maxb + 1, C, S))  # row nb: the open batch's sum
        self.rec = np.zeros((C, S, self.cap))

    def _add_batches(self, y: np.ndarray) -> None:
        """Batch sums of ``y (C, S, B)``, draws ``n`` on; pairs merged when all are full."""
        B, j = y.shape[-1], 0
        pos = self.n - self.nb * self.blen                               # in the open batch
        while j < B:
            m = min(self.blen - pos, B - j)
            self.S[self.nb] += y[:, :, j:j + m].sum(axis=-1)
            j += m
            pos += m
            if pos == self.blen:
                self.nb, pos = self.nb + 1, 0
                if self.nb == self.maxb:
                    h = self.maxb // 2
                    self.S[:h] = self.S[0:self.maxb:2] + self.S[1:self.maxb:2]
                    self.S[h:] = 0.0
                    self.nb, self.blen = h, 2 * self.blen

    def _record(self, x: np.ndarray) -> None:
        """Keep the draws whose index is a multiple of ``stride``, thinning when full."""
        while True:
            first = (-self.n) % self.stride
            take = x[:, :, first::self.stride]
            k = take.shape[-1]
            if self.rec_n + k <= self.cap:
                self.rec[:, :, self.rec_n:self.rec_n + k] = take
                self.rec_n += k
                return
            kept = self.rec[:, :, 0:self.rec_n:2]
            self.rec[:, :, :kept.shape[-1]] = kept
            self.rec[:, :, kept.shape[-1]:] = 0.0
            self.rec_n = kept.shape[-1]
            self.stride *= 2

    # -- reading ---------------------------------------------------------------------------------
    @property
    def chains(self) -> int:
        return 0 if self.shift is None else int(self.shift.shape[0])

    def record(self) -> dict[str, np.ndarray]:
        """The thinned record ``{stat: (chains, kept)}`` in each summary's own type: draws 0,
        ``stride``, ``2 stride``, ... of each chain."""
        if self.shift is None:
            return {}
        return {name: self.rec[:, i, :self.rec_n].astype(self.dtypes[i])
                for i, name in enumerate(self.names)}

    def estimates(self) -> dict[str, dict]:
        """``{stat: {"ess", "mcse", "method"}}`` (see the module docstring); NaN with fewer than
        4 draws per chain."""
        if self.shift is None:
            return {}
        C, n = self.chains, self.n
        if n < MIN_DRAWS:
            return {k: {"ess": math.nan, "mcse": math.nan, "method": "record"}
                    for k in self.names}
        sd = np.sqrt(self._variance() * C * n / (C * n - 1.0))
        if self.stride == 1:
            ess = np.array([ess_bulk(self.rec[:, i, :n]) for i in range(len(self.names))])
            method = ["record"] * len(self.names)
        else:
            ess, past = self._split_ess()
            method = ["fallback" if p else "stream" for p in past]
            if past.any():
                ess = np.where(past, self._batch_means_ess(), ess)
        with np.errstate(divide="ignore", invalid="ignore"):
            mcse = np.where(ess > 0, sd / np.sqrt(ess), np.nan)
        return {k: {"ess": float(ess[i]), "mcse": float(mcse[i]), "method": method[i]}
                for i, k in enumerate(self.names)}

    def _variance(self) -> np.ndarray:
        """The variance of all draws of every chain ``(S,)`` (population, ddof 0)."""
        mean_c = self.S.sum(axis=0) / self.n                             # (C, S)
        within = self.Q[..., 0] / self.n - mean_c ** 2
        return np.maximum(within.mean(axis=0) + np.var(mean_c + self.shift, axis=0), 0.0)

    def _split_ess(self) -> tuple[np.ndarray, np.ndarray]:
        """The split-chain ESS of each summary ``(S,)`` and whether its Geyer sequence ran
        past lag L ``(S,)``."""
        L, C, n = self.L, self.chains, self.n
        lags = np.arange(L + 1)
        tot = self.S.sum(axis=0)                                         # (C, S)
        m = tot / n
        pre = np.concatenate([np.zeros((C, len(self.names), 1)),
                              np.cumsum(self.first, axis=-1)], axis=-1)  # sums of first t
        suf = np.concatenate([np.zeros((C, len(self.names), 1)),
                              np.cumsum(self.hist[..., ::-1], axis=-1)], axis=-1)
        acov = (self.Q - m[..., None] * (2 * tot[..., None] - pre - suf)
                + (n - lags) * m[..., None] ** 2) / n                    # (C, S, L + 1)
        k = int(np.clip(round(n / 2 / self.blen), 1, self.nb))
        h_a = k * self.blen
        h_b = n - h_a
        m_a = self.S[:k].sum(axis=0) / h_a
        m_b = (tot - self.S[:k].sum(axis=0)) / h_b
        between = (h_a * (m_a - m) ** 2 + h_b * (m_b - m) ** 2) / n      # (C, S)
        acov_mean = (acov - between[..., None]).mean(axis=0).T           # (L + 1, S)
        chain_var = np.var(np.concatenate([m_a, m_b]) + np.concatenate([self.shift] * 2),
                           axis=0, ddof=1)
        half = n / 2.0
        k_max = max(int((half - 3) // 2), 0)
        size = C * n
        ess = np.empty(len(self.names))
        past = np.zeros(len(self.names), bool)
        for s in range(len(self.names)):
            if acov_mean[0, s] <= 0 and chain_var[s] <= 0:               # constant
                ess[s] = float(size)
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                tau = _geyer_tau(acov_mean[:, s:s + 1].copy(), half, chain_var[s:s + 1],
                                 k_max)
            if tau is None:
                past[s], ess[s] = True, math.nan
            else:
                ess[s] = size / max(float(tau[0]), 1 / math.log10(size))
        return ess, past

    def _batch_means_ess(self) -> np.ndarray:
        """``chains · n · σ² / (b · s²_b)`` of each summary ``(S,)``: ``s²_b`` the variance of
        every chain's full batch means (length ``b``), ``σ²`` that of all draws."""
        means = self.S[:self.nb] / self.blen + self.shift                # (nb, C, S)
        s2 = np.var(means.reshape(-1, means.shape[-1]), axis=0, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = self.chains * self.n * self._variance() / (self.blen * s2)
        return np.where(s2 > 0, out, float(self.chains * self.n))

    def curve(self):  # pragma: no cover - metric None: no curve is drawn
        return np.zeros(0), np.zeros(0), None


def _lag_products(e: np.ndarray, L: int) -> np.ndarray:
    """``Σ_u e[L+u] e[L+u−t]`` over a block's draws ``u`` for ``t = 0..L`` of every series of
    ``e (C, S, L + B)`` (the block after its ``L`` predecessors): ``(C, S, L + 1)``."""
    C, S, W = e.shape
    r = e.reshape(C * S, W)
    a = r[:, L:]
    out = np.empty((L + 1, C * S))
    for t in range(L + 1):
        out[t] = np.einsum("rk,rk->r", a, r[:, L - t:W - t])
    return out.T.reshape(C, S, L + 1)
