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
  same split-chain ESS from the lagged products of the means of consecutive groups of ``L``
  draws, rescaled to the draws' variance (autocorrelation times up to about a thousand
  draws). Method ``coarse``;
- when that sequence has not ended by its lag ``L`` either: the batch-means ESS, ``chains ·
  n · σ² / (b · s²_b)`` with ``b`` the batch length and ``s²_b`` the variance of every
  chain's full batch means (16 to 32 per chain). Method ``fallback``. Since the batch means
  vary no more than the draws (``s²_b ≤ σ²``, the law of total variance), this ESS is never
  below ``chains · batches``, and ``ESS / (chains · batches) ≈ b / τ``: below
  :data:`SHORT_BATCHES` the batches are shorter than five autocorrelation times, the batch
  means overstate the ESS by more than their noise (by about ``τ / 2b``; chains stuck apart
  for the whole stream sit at the bound itself), and the estimate is marked ``upper``: the
  ESS is at most this.

What it cannot do: rank-normalise. The bulk ESS ranks every draw over all draws; a stream
cannot, so the ESS is of the raw values. For a 0/1 summary the two are equal (the normal
scores of two values are an affine map of them, and the ESS is affine-invariant); for a
summary with heavy tails they differ (the league's summaries are bounded: indicators,
fractions, energies of finite state spaces). The fallback is a batch-means estimate, noisier
(relative error about ``sqrt(2 / batches)``, 8-11% with 10 chains) and biased high when the
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
from .lag_products import lag_products

#: the lag bound: autocovariances of lags 0..LAGS are kept
LAGS = 64
#: the most batches kept per chain before neighbours merge
BATCHES = 32
#: the most draws per chain the thinned record keeps (at least half as many once full)
RECORD = 2048
#: a fallback ESS below this many times ``chains · batches`` is an upper bound (batches
#: shorter than five autocorrelation times overstate it by more than their ±10% noise)
SHORT_BATCHES = 5
#: the prefix of the block keys this estimator reads
PREFIX = "summary/"


class StreamingESS:
    """Streaming ESS and MCSE of each ``summary/<stat>`` of a stream, and its thinned record."""

    #: an evaluator that draws no curve (mixlab.run.streams skips it)
    metric = None
    _scalars = ("names", "n", "nc", "nb", "blen", "rec_n", "stride", "dtypes")
    _arrays = ("shift", "first", "hist", "Q", "S", "cfirst", "chist", "cQ", "cpart")

    def __init__(self, lags: int | None = None, batches: int | None = None,
                 record: int | None = None):
        lags = LAGS if lags is None else lags
        batches = BATCHES if batches is None else batches
        record = RECORD if record is None else record
        # lags a power of two: the batch length (a power of two, at least 2 lags once the
        # record is full) is then a whole number of the coarse lags' groups
        if batches < 4 or batches % 2 or lags < 2 or lags & (lags - 1) \
                or record < batches * lags or record % 2:
            raise ValueError("lags a power of two >= 2, batches >= 4 even, record >= "
                             "batches x lags, even")
        self.L, self.maxb, self.cap = int(lags), int(batches), int(record)
        self.names: list[str] = []
        self.dtypes: list[str] = []
        self.n = 0
        self.nc = 0
        self.nb = 0
        self.blen = 1
        self.rec_n = 0
        self.stride = 1
        self.shift = self.first = self.hist = self.Q = self.S = None
        self.cfirst = self.chist = self.cQ = self.cpart = None
        self.rec = None

    # -- state -----------------------------------------------------------------------------------
    def state(self) -> dict:
        out = {k: getattr(self, k) for k in self._scalars}
        if self.shift is not None:
            out.update({k: getattr(self, k) for k in self._arrays})
            for i, name in enumerate(self.names):   # the record in each summary's own type
                out[f"record_{name}"] = self.rec[:, i, :self.rec_n].astype(self.dtypes[i])
        return out

    def load_state(self, state: dict) -> None:
        for k in self._scalars:
            if k not in state:
                raise StateError(f"StreamingESS: checkpoint lacks state '{k}'")
            setattr(self, k, state[k])
        self.names, self.dtypes = list(self.names), list(self.dtypes)
        self.n, self.nc = int(self.n), int(self.nc)
        self.nb, self.blen = int(self.nb), int(self.blen)
        self.rec_n, self.stride = int(self.rec_n), int(self.stride)
        if not self.names:
            return
        wanted = list(self._arrays) + [f"record_{name}" for name in self.names]
        lacking = [k for k in wanted if k not in state]
        if lacking:
            raise StateError(f"StreamingESS: checkpoint lacks state {', '.join(lacking)}")
        for k in self._arrays:
            setattr(self, k, np.asarray(state[k], np.float64))
        C, S = self.shift.shape
        self.rec = np.zeros((C, S, self.cap))
        for i, name in enumerate(self.names):
            self.rec[:, i, :self.rec_n] = state[f"record_{name}"]

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
        y = x - self.shift[..., None]                                    # (C, S, B)
        self.hist = _add_lags(self.Q, self.first, self.hist, self.n, y)
        self._add_coarse(y)
        self._add_batches(y)
        self.n += y.shape[-1]

    def _start(self, names: list[str], dtypes: list[str], x: np.ndarray) -> None:
        C, S, _ = x.shape
        L = self.L
        self.names, self.dtypes = names, dtypes
        self.shift = x[:, :, 0].copy()
        self.first = np.zeros((C, S, L))
        self.hist = np.zeros((C, S, L))          # no draw before the first: products of 0
        self.Q = np.zeros((C, S, L + 1))
        self.S = np.zeros((self.maxb + 1, C, S))  # row nb: the open batch's sum
        self.cfirst, self.chist = np.zeros((C, S, L)), np.zeros((C, S, L))
        self.cQ = np.zeros((C, S, L + 1))
        self.cpart = np.zeros((C, S))            # the sum of the unfinished group
        self.rec = np.zeros((C, S, self.cap))

    def _add_coarse(self, y: np.ndarray) -> None:
        """The means of consecutive groups of ``L`` draws of ``y (C, S, B)``, draws ``n`` on,
        fed to the coarse lags."""
        g, B = self.L, y.shape[-1]
        p = self.n % g
        parts = []
        j = min((g - p) % g, B)
        if j:
            self.cpart += y[:, :, :j].sum(axis=-1)
            if p + j == g:
                parts.append(self.cpart[..., None] / g)
                self.cpart = np.zeros_like(self.cpart)
        full = (B - j) // g
        if full:
            parts.append(y[:, :, j:j + full * g].reshape(*y.shape[:2], full, g).sum(axis=-1)
                         / g)
            j += full * g
        self.cpart += y[:, :, j:].sum(axis=-1)
        if parts:
            v = np.concatenate(parts, axis=-1)
            self.chist = _add_lags(self.cQ, self.cfirst, self.chist, self.nc, v)
            self.nc += v.shape[-1]

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
        """``{stat: {"ess", "mcse", "method", "upper"}}`` (see the module docstring); NaN with
        fewer than 4 draws per chain. ``upper``: the ESS is an upper bound (a fallback on
        batches shorter than :data:`SHORT_BATCHES` autocorrelation times)."""
        if self.shift is None:
            return {}
        C, n = self.chains, self.n
        if n < MIN_DRAWS:
            return {k: {"ess": math.nan, "mcse": math.nan, "method": "record", "upper": False}
                    for k in self.names}
        sd = np.sqrt(self._variance() * C * n / (C * n - 1.0))
        upper = np.zeros(len(self.names), bool)
        if self.stride == 1:
            ess = np.array([ess_bulk(self.rec[:, i, :n]) for i in range(len(self.names))])
            method = ["record"] * len(self.names)
        else:
            ess, method = self._split_ess()
            past = np.array([m == "fallback" for m in method])
            if past.any():
                ess = np.where(past, self._batch_means_ess(), ess)
                upper = past & (ess < SHORT_BATCHES * C * self.nb)
        with np.errstate(divide="ignore", invalid="ignore"):
            mcse = np.where(ess > 0, sd / np.sqrt(ess), np.nan)
        return {k: {"ess": float(ess[i]), "mcse": float(mcse[i]), "method": method[i],
                    "upper": bool(upper[i])}
                for i, k in enumerate(self.names)}

    def _variance(self) -> np.ndarray:
        """The variance of all draws of every chain ``(S,)`` (population, ddof 0)."""
        mean_c = self.S.sum(axis=0) / self.n                             # (C, S)
        within = self.Q[..., 0] / self.n - mean_c ** 2
        return np.maximum(within.mean(axis=0) + np.var(mean_c + self.shift, axis=0), 0.0)

    def _split_ess(self) -> tuple[np.ndarray, list[str]]:
        """The split-chain ESS of each summary ``(S,)`` and its method: ``stream`` from lags
        0..L, ``coarse`` from those of the means of ``L`` draws when the first ran past lag
        L, ``fallback`` (NaN here) when both did."""
        C, n, g = self.chains, self.n, self.L
        tot = self.S.sum(axis=0)                                         # (C, S)
        k = int(np.clip(round(n / 2 / self.blen), 1, self.nb))
        h_a = k * self.blen                                              # a multiple of L
        s_a = self.S[:k].sum(axis=0)
        fine = _split_moments(self.Q, self.first, self.hist, n, tot, h_a, s_a, self.shift)
        coarse = _split_moments(self.cQ, self.cfirst, self.chist, self.nc,
                                (tot - self.cpart) / g, h_a // g, s_a / g, self.shift)
        floor = 1 / math.log10(C * n)
        ess = np.full(len(self.names), math.nan)
        method = ["fallback"] * len(self.names)
        for s in range(len(self.names)):
            (acov, cvar), (cacov, ccvar) = ((a[:, s:s + 1], v[s:s + 1]) for a, v in
                                            (fine, coarse))
            if acov[0, 0] <= 0 and cvar[0] <= 0:                         # constant
                ess[s], method[s] = float(C * n), "stream"
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                tau = _geyer_tau(acov.copy(), n / 2.0, cvar, max(int((n / 2 - 3) // 2), 0))
                if tau is not None:
                    ess[s], method[s] = C * n / max(float(tau[0]), floor), "stream"
                    continue
                if self.nc < 2 * MIN_DRAWS:
                    continue
                h = self.nc / 2.0
                tau = _geyer_tau(cacov.copy(), h, ccvar, max(int((h - 3) // 2), 0))
                if tau is not None:
                    # the variance of the mean, var⁺_c τ_c / (C nc), in raw draws' var⁺
                    size = C * self.nc
                    ess_c = size / max(float(tau[0]), 1 / math.log10(size))
                    ess[s] = ess_c * (acov[0, 0] + cvar[0]) / (cacov[0, 0] + ccvar[0])
                    method[s] = "coarse"
        return ess, method

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


def _add_lags(Q: np.ndarray, first: np.ndarray, hist: np.ndarray, count: int,
              v: np.ndarray) -> np.ndarray:
    """Add the lagged products of a block ``v (C, S, B)`` of a series (values ``count`` on)
    to ``Q (C, S, L + 1)``, keep its first ``L`` values in ``first``; returns the new history
    (the last ``L`` values; ``hist`` the old one, zeros before the first value)."""
    L = Q.shape[-1] - 1
    if count < L:
        k = min(L - count, v.shape[-1])
        first[:, :, count:count + k] = v[:, :, :k]
    e = np.concatenate([hist, v], axis=-1)                              # (C, S, L + B)
    Q += lag_products(e, L)
    return np.ascontiguousarray(e[:, :, -L:])


def _split_moments(Q, first, hist, n: int, total, h_a: int, sum_a, shift):
    """``(acov_mean (L + 1, S), chain_var (S,))`` of a series of ``n`` values per chain
    split after its first ``h_a``: the mean over chains of the within-half autocovariances
    (the whole chain's about its mean, exactly centred with its first and last ``L`` values,
    less the between-halves part), and the variance of the ``2 C`` half means (ddof 1).
    ``total``, ``sum_a`` ``(C, S)``: the sums of all values and of the first half's."""
    L = Q.shape[-1] - 1
    C, S = total.shape
    lags = np.arange(L + 1)
    m = total / n
    pre = np.concatenate([np.zeros((C, S, 1)), np.cumsum(first, axis=-1)], axis=-1)
    suf = np.concatenate([np.zeros((C, S, 1)), np.cumsum(hist[..., ::-1], axis=-1)], axis=-1)
    acov = (Q - m[..., None] * (2 * total[..., None] - pre - suf)
            + (n - lags) * m[..., None] ** 2) / n                        # (C, S, L + 1)
    h_b = n - h_a
    m_a, m_b = sum_a / h_a, (total - sum_a) / h_b
    between = (h_a * (m_a - m) ** 2 + h_b * (m_b - m) ** 2) / n         # (C, S)
    acov_mean = (acov - between[..., None]).mean(axis=0).T
    chain_var = np.var(np.concatenate([m_a, m_b]) + np.concatenate([shift, shift]), axis=0,
                       ddof=1)
    return acov_mean, chain_var
