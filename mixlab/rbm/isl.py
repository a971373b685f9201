"""Indirect Sampling Likelihood (ISL, ALGORITHMS.md §A.5), computed as a stream.

A kernel density is put on the first N generated samples (the *centres*) and the mean
log-likelihood of the test set under it is reported as a curve over N:

    log p(x) = logsumexp_n log k(x | s_n) − log N.

Kernels (bandwidth = β or σ):

- ``"bernoulli"`` (binary test data): ``k(x|μ) = Π_i p_i^{x_i} (1−p_i)^{1−x_i}`` with
  ``p_i = β μ_i + (1−β)(1−μ_i)``; for a binary centre s this is ``β^{#agree} (1−β)^{#disagree}``.
- ``"gaussian"`` (real data): isotropic ``N(x; s, σ² I)``.

How the curve is computed (its cost is about that of its last point):

- **binary centres** (bool draws, Bernoulli kernel): ``log k(x|s) = D log β − d (log β − log(1−β))``
  depends only on the Hamming distance ``d``, so the evaluator keeps, per evaluation point, the
  histogram ``hist`` (n_eval, D+1) of its distances to all centres so far, and its smallest and
  largest distance.  The evaluation points are bit-packed once (n_eval, ceil(D/64)) uint64, each
  block of centres as it arrives (word-major, (ceil(D/64), B)); a compiled kernel computes every
  distance as a sum of ``popcount(e ^ s)`` over the words and counts it
  (:mod:`mixlab.rbm.kernels`).  Distances are exact integers, so a block is simply cut into
  pieces ending at the record points.
  Read-out, exact for any number of β: with r = (1−β)/β < 1 and d0 a point's smallest distance,
  ``log p(x) = D log β + d0 log r + log Σ_j hist[d0 + j] r^j − log N``: all terms of the sum are
  >= 0 and the first >= 1, so it is accurate in any order (a compiled dot product per point and
  β with a table of r^j, the terms below 2^-53 of the sum skipped).
  Threads: the evaluation points are split into row ranges (``kernels.threads()``), and each
  thread takes its rows through all the pieces of an ``update`` and through the read-outs at
  the record points on the way (the points are independent): one thread hand-off per update.
  Costs (USPS, 3007 points, D = 256, 20 β, 2 threads): counting ~0.43 ns per (point, centre)
  pair and thread, a read-out ~0.3 ms CPU: 10^5 centres with 29 record points take ~0.07 s.
- **grayscale centres / Gaussian kernel**: a running log-sum-exp ``(max, scaled sum)`` per
  evaluation point and per candidate bandwidth, fed block by block; ``log k`` is affine in x, so
  each block costs one GEMM per β (Bernoulli) or one GEMM in total (Gaussian).

Bandwidth selection: the evaluator accumulates the validation and the test set together; at every
recorded sample count it computes the mean validation and test log-likelihood for every candidate
bandwidth, and :meth:`ISLEvaluator.curve` reports the test value at the bandwidth that maximises
validation ISL *at that sample count* (``select="per-point"``, the default) or at the final count
(``select="final"``).  The full table is kept (:meth:`ISLEvaluator.table`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from mixlab.rbm.kernels import (
    hamming_count,
    hist_power_sums,
    mean_se,
    pack_cols,
    pack_rows,
    power_tops,
)

KERNELS = ("bernoulli", "gaussian")


def default_betas(n: int = 20, lo: float = 0.55, hi: float = 0.9999) -> np.ndarray:
    """Candidate Bernoulli-kernel β's, equally spaced in logit between lo and hi (float64)."""
    lg = np.linspace(math.log(lo / (1 - lo)), math.log(hi / (1 - hi)), n)
    return 1.0 / (1.0 + np.exp(-lg))


def default_sigmas(X: np.ndarray, n: int = 16) -> np.ndarray:
    """Candidate Gaussian σ's: log-spaced around the per-dimension scale of X."""
    s = float(np.sqrt(np.mean(np.var(np.asarray(X, np.float64), axis=0)))) or 1.0
    return s * np.geomspace(0.02, 2.0, n)


def log_kernel_matrix(X: np.ndarray, centres: np.ndarray, bandwidth: float,
                      kernel: str = "bernoulli") -> np.ndarray:
    """Naive float64 reference: (n, m) matrix of log k(X_i | centres_j).  For tests and small
    problems only (it materialises the (n, m, D) terms one centre block at a time)."""
    X = np.asarray(X, np.float64).reshape(len(X), -1)
    S = np.asarray(centres, np.float64).reshape(len(centres), -1)
    out = np.empty((X.shape[0], S.shape[0]))
    for j in range(S.shape[0]):
        if kernel == "bernoulli":
            p = bandwidth * S[j] + (1 - bandwidth) * (1 - S[j])
            out[:, j] = np.sum(X * np.log(p) + (1 - X) * np.log(1 - p), axis=1)
        elif kernel == "gaussian":
            d2 = np.sum((X - S[j]) ** 2, axis=1)
            out[:, j] = -d2 / (2 * bandwidth ** 2) \
                - 0.5 * X.shape[1] * math.log(2 * math.pi * bandwidth ** 2)
        else:
            raise ValueError(f"unknown kernel {kernel!r}")
    return out


def isl_naive(X: np.ndarray, centres: np.ndarray, bandwidth: float,
              kernel: str = "bernoulli") -> np.ndarray:
    """Naive float64 per-point log p(X_i) under the kernel density on ``centres``: (n,)."""
    L = log_kernel_matrix(X, centres, bandwidth, kernel)
    return logsumexp(L, axis=1) - math.log(L.shape[1])


def log_points(max_samples: int, n_points: int = 30) -> np.ndarray:
    """About ``n_points`` log-spaced integer sample counts from 1 to ``max_samples`` (unique,
    sorted, always ending at ``max_samples``)."""
    max_samples = int(max_samples)
    if max_samples < 1:
        raise ValueError(f"max_samples must be >= 1, got {max_samples}")
    pts = np.unique(np.round(np.geomspace(1, max_samples, max(int(n_points), 1))).astype(np.int64))
    if pts[-1] != max_samples:
        pts = np.append(pts, max_samples)
    return pts


class ISLEvaluator:
    """Streaming ISL accumulator (mixlab evaluator contract: ``update(draws, count, seconds)``,
    ``curve()``).

    X_test (n_t, D), X_valid (n_v, D) or None: evaluation sets (binary for the Bernoulli kernel).
    key: which draw to use as centres (``"means"`` or ``"samples"``); bool draws take the exact
    Hamming-histogram path.  Draws arrive as (chain, n_block, ...) and are taken in draw-major
    order (draw t of every chain, then draw t+1), so "the first N samples" mixes the chains.
    points: the total sample counts at which the curve is recorded (default: ``log_points(
    max_samples, n_points)``); a block is split so every point lands exactly.  dtype: float32
    (fast) or float64 (for exactness checks) for the per-block kernel matrices of grayscale
    centres; the running sums are float64 either way (the binary path is exact integer counting
    and float64 read-outs whatever dtype).  chunk: the most centres handled at once (grayscale:
    the kernel-matrix width; binary: the packed piece a counting pass streams per point).
    """

    metric = "isl"
    x_label = "samples"
    y_label = "ISL (nats)"

    def __init__(self, X_test: np.ndarray, X_valid: np.ndarray | None = None, *,
                 series: str = "isl", key: str = "means", kernel: str = "bernoulli",
                 bandwidths: np.ndarray | None = None, max_samples: int | None = None,
                 n_points: int = 30, points: np.ndarray | None = None,
                 select: str = "per-point", dtype=np.float32, chunk: int = 2048):
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
        if select not in ("per-point", "final"):
            raise ValueError(f"select must be 'per-point' or 'final', got {select!r}")
        Xt = np.asarray(X_test).reshape(len(X_test), -1)
        Xv = None if X_valid is None else np.asarray(X_valid).reshape(len(X_valid), -1)
        if bandwidths is None:
            bandwidths = default_betas() if kernel == "bernoulli" else default_sigmas(Xt)
        self.bandwidths = np.atleast_1d(np.asarray(bandwidths, np.float64))
        if kernel == "bernoulli" and not np.all((self.bandwidths > 0.5) & (self.bandwidths < 1)):
            raise ValueError("Bernoulli-kernel bandwidths β must lie in (0.5, 1)")
        if kernel == "gaussian" and not np.all(self.bandwidths > 0):
            raise ValueError("Gaussian-kernel bandwidths σ must be > 0")
        if Xv is None and self.bandwidths.size > 1:
            raise ValueError("choosing among several bandwidths needs a validation set")
        if kernel == "bernoulli":
            for name, A in (("test", Xt), ("valid", Xv)):
                if A is not None and not np.all((A == 0) | (A == 1)):
                    raise ValueError(f"the Bernoulli kernel needs binary {name} data")
        if points is None:
            if max_samples is None:
                raise ValueError("give max_samples or points")
            points = log_points(max_samples, n_points)
        points = np.unique(np.asarray(points, np.int64))
        if points.size == 0 or points[0] < 1:
            raise ValueError("record points must be >= 1")
        self.points = points
        self.series, self.key, self.kernel, self.select = series, key, kernel, select
        self.dtype = np.dtype(dtype)
        self.chunk = int(chunk)
        self.n_valid = 0 if Xv is None else Xv.shape[0]
        self.n_test = Xt.shape[0]
        E = Xt if Xv is None else np.concatenate([Xv, Xt], axis=0)
        self.E = np.ascontiguousarray(E, dtype=self.dtype)  # (n_eval, D), validation first
        self.D = self.E.shape[1]
        self.E_sq = np.einsum("ij,ij->i", self.E, self.E)  # |x|², for distances
        self.mode = None  # "hist" or "lse", fixed by the first block
        self.n = 0  # samples consumed
        self.last_seconds = 0.0
        self._next = 0  # index into points of the next record point
        # records (one row per recorded sample count)
        self.rec_n: list[int] = []
        self.rec_seconds: list[float] = []
        self.rec_valid: list[np.ndarray] = []
        self.rec_test: list[np.ndarray] = []
        self.rec_test_se: list[np.ndarray] = []
        self.hist = None  # (n_eval, D+1) int32/int64 Hamming-distance histograms ("hist" mode)
        self._dmin = self._dmax = self._Ebits = None
        self._lam = self._powers = None  # read-out: λ = log((1-β)/β) (n_bw,), e^{jλ} (n_bw, D+1)
        self.m = None
        self.s = None

    # ---------------------------------------------------------------------------- checkpoints
    _STATE = ("mode", "n", "last_seconds", "_next", "rec_n", "rec_seconds", "hist", "_dmin",
              "_dmax", "_Ebits", "_lam", "_powers", "m", "s")
    _RECORDS = ("rec_valid", "rec_test", "rec_test_se")  # lists of equal-shape arrays

    def state(self) -> dict:
        """Accumulated histograms / log-sum-exp sums and the recorded points (resumable)."""
        out = {k: getattr(self, k) for k in self._STATE}
        for k in self._RECORDS:
            out[k] = np.array(getattr(self, k))
        return out

    def load_state(self, state: dict) -> None:
        for k in self._STATE:
            setattr(self, k, state[k])
        for k in self._RECORDS:
            setattr(self, k, list(np.asarray(state[k])))

    # ---------------------------------------------------------------------------- feeding
    def update(self, draws: dict, count: int, seconds: float) -> None:
        """Feed one block: draws[key] is (chain, n_block, ...); ``seconds`` the cumulative
        sampling time at the block's end (record points inside a block get a linearly
        interpolated time)."""
        arr = np.asarray(draws[self.key])
        if arr.ndim < 2:
            raise ValueError(f"draws['{self.key}'] must be (chain, draw, ...), got {arr.shape}")
        S = np.swapaxes(arr, 0, 1).reshape(arr.shape[0] * arr.shape[1], -1)
        self.add_samples(S, seconds)

    def add_samples(self, S: np.ndarray, seconds: float | None = None) -> None:
        """Feed centres S (n, D) in order; ``seconds`` is the time at the end of this batch."""
        S = np.asarray(S).reshape(len(S), -1)
        if S.shape[1] != self.D:
            raise ValueError(f"samples have {S.shape[1]} dimensions, the data {self.D}")
        mode = "hist" if (self.kernel == "bernoulli" and S.dtype == bool) else "lse"
        if self.mode is None:
            self.mode = mode
            if mode == "hist":
                n_eval = self.E.shape[0]
                self.hist = np.zeros((n_eval, self.D + 1), np.int32)  # int64 past 2^31-1
                self._dmin = np.full(n_eval, self.D + 1, np.int64)  # first / last non-empty bin
                self._dmax = np.full(n_eval, -1, np.int64)
                self._Ebits = pack_rows(self.E != 0)  # (n_eval, ceil(D/64)) uint64
                beta = self.bandwidths
                self._lam = np.log1p(-beta) - np.log(beta)
                self._powers = np.exp(self._lam[:, None] * np.arange(self.D + 1)[None, :])
            else:
                self.m = np.full((self.bandwidths.size, self.E.shape[0]), -np.inf)
                self.s = np.zeros((self.bandwidths.size, self.E.shape[0]))
        elif mode != self.mode:
            raise ValueError("ISL centres changed kind (binary vs grayscale) mid-stream")
        if self.kernel == "bernoulli" and mode == "lse" and S.size and (S.min() < 0 or S.max() > 1):
            raise ValueError("Bernoulli-kernel centres must lie in [0, 1]")
        t0 = self.last_seconds
        t1 = t0 if seconds is None else float(seconds)
        (self._add_hist if self.mode == "hist" else self._add_lse)(S, t0, t1)
        self.last_seconds = t1

    def _add_lse(self, S: np.ndarray, t0: float, t1: float) -> None:
        """Fold the centres S (n, D) into the running log-sum-exps, block by block (blocks end
        at the record points)."""
        n_total, pos = S.shape[0], 0
        while pos < n_total:
            take = min(n_total - pos, self.chunk)
            if self._next < self.points.size:
                take = min(take, int(self.points[self._next]) - self.n)
            self._consume(S[pos:pos + take])
            pos += take
            self.n += take
            if self._next < self.points.size and self.n == self.points[self._next]:
                self._record(t0 + (t1 - t0) * pos / n_total)
                self._next += 1

    def _add_hist(self, S: np.ndarray, t0: float, t1: float) -> None:
        """Count the bool centres S (n, D) into the Hamming histograms (bit-packed, compiled:
        :func:`mixlab.rbm.kernels.hamming_count`), cut into pieces of at most ``chunk`` centres
        ending at the record points; each thread reads out its own rows at a record point
        right after counting the piece that ends there (the rows are independent), and the
        records are then summarised here in order."""
        n_total, pos, n, nxt = S.shape[0], 0, self.n, self._next
        n_eval = self.E.shape[0]
        if self.n + n_total > np.iinfo(self.hist.dtype).max:  # a bin could overflow
            self.hist = self.hist.astype(np.int64)
        pieces, reads = [], {}  # piece index -> (count, position in S, tops, log Q, d0)
        while pos < n_total:
            take = min(n_total - pos, self.chunk)
            if nxt < self.points.size:
                take = min(take, int(self.points[nxt]) - n)
            pieces.append(pack_cols(S[pos:pos + take]))
            pos += take
            n += take
            if nxt < self.points.size and n == self.points[nxt]:
                reads[len(pieces) - 1] = (n, pos, power_tops(self._lam, n, self.D + 1),
                                          np.empty((self.bandwidths.size, n_eval)),
                                          np.empty(n_eval, np.int64))
                nxt += 1

        def after(i, r0, r1):  # on the thread owning rows r0:r1, after piece i
            if i in reads:  # log Q and d0 of those rows (the kernel and numpy's log: no GIL)
                _, _, tops, Q, d0 = reads[i]
                hist_power_sums(self.hist, self._dmin, self._dmax, self._powers, tops, out=Q,
                                rows=(r0, r1))
                np.log(Q[:, r0:r1], out=Q[:, r0:r1])
                d0[r0:r1] = self._dmin[r0:r1]
        bad = hamming_count(self._Ebits, pieces, self.hist, self._dmin, self._dmax,
                            after if reads else None)
        if bad:
            raise RuntimeError(f"{bad} Hamming distances > D: the bit-packing is broken")
        self.n, self._next = n, nxt
        for n_r, pos_r, _, Q, d0 in reads.values():
            self._record(t0 + (t1 - t0) * pos_r / n_total, n_r, self._hist_summaries(Q, d0, n_r))

    def _consume(self, S: np.ndarray) -> None:
        Sf = np.ascontiguousarray(S, dtype=self.dtype)
        if self.kernel == "gaussian":
            G = self.E @ Sf.T
            G *= -2
            G += self.E_sq[:, None]
            G += np.einsum("ij,ij->i", Sf, Sf)[None, :]
            np.maximum(G, 0, out=G)  # squared distances
            for j, sig in enumerate(self.bandwidths):
                L = G * self.dtype.type(-0.5 / sig ** 2)
                L += self.dtype.type(-0.5 * self.D * math.log(2 * math.pi * sig ** 2))
                self._merge(j, L)
            return
        for j, beta in enumerate(self.bandwidths):  # Bernoulli kernel, grayscale centres
            P = Sf * self.dtype.type(2 * beta - 1)
            P += self.dtype.type(1 - beta)
            logq = np.log1p(-P)  # log(1 - p_i)   (B, D)
            lodds = np.log(P)
            lodds -= logq  # logit p_i
            L = self.E @ lodds.T
            L += logq.sum(1)[None, :]
            self._merge(j, L)

    def _merge(self, j: int, L: np.ndarray) -> None:
        """Fold a block's (n_eval, B) log-kernel matrix into the running log-sum-exp of
        bandwidth j."""
        mb = L.max(axis=1)
        L -= mb[:, None]
        np.exp(L, out=L)
        sb = L.sum(axis=1, dtype=np.float64)
        mb = mb.astype(np.float64)
        m_old = self.m[j]
        m_new = np.maximum(m_old, mb)
        self.s[j] = self.s[j] * np.exp(m_old - m_new) + sb * np.exp(mb - m_new)
        self.m[j] = m_new

    # ---------------------------------------------------------------------------- reading
    # Hist mode: log Σ_d h[t,d] β^(D-d) (1-β)^d = D log β + d0_t λ + log Q[t] with
    # Q[t] = Σ_j h[t, d0_t + j] r^j, r = (1-β)/β = e^λ < 1, d0_t the smallest distance seen from
    # point t: every term of Q is >= 0 and the j = 0 one is >= 1, so the sum is accurate in any
    # order (compiled dot products with a table of r^j: mixlab.rbm.kernels.hist_power_sums);
    # the terms past mixlab.rbm.kernels.power_tops are below 2^-53 of Q and skipped.
    def _hist_const(self, n: int) -> np.ndarray:
        return self.D * np.log(self.bandwidths) - math.log(n)  # (n_bw,)

    def _hist_summaries(self, logQ: np.ndarray, d0: np.ndarray, n: int) -> tuple:
        """(valid mean, test mean, test se) (n_bw,) of log p from the logs of the power sums
        logQ (n_bw, n_eval) and the smallest distances d0 (n_eval,) of n samples."""
        c = self._hist_const(n)
        valid, test, se = mean_se(logQ, self.n_valid, self._lam, d0)
        return valid + c, test + c, se

    def _hist_power_sums(self) -> np.ndarray:
        return hist_power_sums(self.hist, self._dmin, self._dmax, self._powers,
                               power_tops(self._lam, self.n, self.D + 1))

    def _logp(self) -> np.ndarray:
        """(n_bw, n_eval) float64 log p(x) under the density on the samples so far."""
        if self.n == 0:
            raise ValueError("no samples yet")
        if self.mode == "hist":
            lp = np.log(self._hist_power_sums())
            lp += self._lam[:, None] * self._dmin
            lp += self._hist_const(self.n)[:, None]
            return lp
        return self.m + np.log(self.s) - math.log(self.n)

    def _summaries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(valid mean, test mean, test se) (n_bw,) of log p now."""
        if self.mode == "hist":
            return self._hist_summaries(np.log(self._hist_power_sums()), self._dmin, self.n)
        return mean_se(self._logp(), self.n_valid)

    def _record(self, seconds: float, n: int | None = None, summaries: tuple | None = None
                ) -> None:
        """Record the summaries at n samples (default: now, computed here)."""
        valid, test, se = self._summaries() if summaries is None else summaries
        self.rec_n.append(self.n if n is None else n)
        self.rec_seconds.append(float(seconds))
        self.rec_valid.append(valid)
        self.rec_test.append(test)
        self.rec_test_se.append(se)

    def table(self) -> dict[str, np.ndarray]:
        """Everything recorded: ``n`` (k,), ``seconds`` (k,), ``bandwidths`` (n_bw,), ``valid``,
        ``test``, ``test_se`` (k, n_bw), and ``chosen`` (k,) the index of the bandwidth used.
        The current sample count is appended if it is not a record point."""
        n, sec = list(self.rec_n), list(self.rec_seconds)
        va, te, se = list(self.rec_valid), list(self.rec_test), list(self.rec_test_se)
        if self.n > 0 and (not n or n[-1] != self.n):
            v, t, s = self._summaries()
            n.append(self.n)
            sec.append(self.last_seconds)
            va.append(v)
            te.append(t)
            se.append(s)
        nb = self.bandwidths.size
        va = np.array(va).reshape(-1, nb)
        te = np.array(te).reshape(-1, nb)
        se = np.array(se).reshape(-1, nb)
        if nb == 1 or self.n_valid == 0:
            chosen = np.zeros(len(n), np.int64)
        elif self.select == "per-point":
            chosen = np.argmax(va, axis=1)
        else:
            chosen = np.full(len(n), int(np.argmax(va[-1])) if len(n) else 0, np.int64)
        return {"n": np.array(n, np.int64), "seconds": np.array(sec, np.float64),
                "bandwidths": self.bandwidths.copy(), "valid": va, "test": te, "test_se": se,
                "chosen": chosen}

    def curve(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(samples (k,), test ISL (k,), standard error over test points (k,)) at the
        validation-chosen bandwidth."""
        t = self.table()
        rows = np.arange(t["n"].size)
        return (t["n"].astype(np.float64), t["test"][rows, t["chosen"]],
                t["test_se"][rows, t["chosen"]])


def isl_of_centres(centres: np.ndarray, X_test: np.ndarray, X_valid: np.ndarray | None,
                   kernel: str = "bernoulli", bandwidths: np.ndarray | None = None,
                   dtype=np.float32) -> dict[str, float]:
    """ISL of a fixed set of centres (e.g. the training set: the baseline line of Fig 2).

    Binary centres should be passed as bool for the exact Hamming path.  Returns
    ``{"isl": test mean, "se": its standard error, "valid": validation mean, "bandwidth": the
    validation-chosen bandwidth, "n": number of centres}``."""
    S = np.asarray(centres).reshape(len(centres), -1)
    ev = ISLEvaluator(X_test, X_valid, key="x", kernel=kernel, bandwidths=bandwidths,
                      points=[S.shape[0]], dtype=dtype)
    ev.add_samples(S)
    t = ev.table()
    j = int(t["chosen"][-1])
    return {"isl": float(t["test"][-1, j]), "se": float(t["test_se"][-1, j]),
            "valid": float(t["valid"][-1, j]), "bandwidth": float(t["bandwidths"][j]),
            "n": int(S.shape[0])}


def samples_to_reach(n: np.ndarray, y: np.ndarray, target: float) -> float | None:
    """The smallest sample count at which the curve (n, y) first reaches ``target``, linearly
    interpolated in log n between recorded points; None when it never does."""
    n = np.asarray(n, np.float64)
    y = np.asarray(y, np.float64)
    hit = np.flatnonzero(y >= target)
    if hit.size == 0:
        return None
    i = int(hit[0])
    if i == 0:
        return float(n[0])
    y0, y1 = y[i - 1], y[i]
    f = (target - y0) / (y1 - y0) if y1 != y0 else 1.0
    return float(np.exp(np.log(n[i - 1]) + f * (np.log(n[i]) - np.log(n[i - 1]))))


def coverage_speedup(n_ref: np.ndarray, y_ref: np.ndarray, n_new: np.ndarray,
                     y_new: np.ndarray, at: float | None = None) -> dict:
    """How many reference-sampler (e.g. Gibbs) samples are needed to reach the ISL the new sampler
    (e.g. rates-FPCD) reaches with ``at`` samples (default: its last recorded count).

    Returns ``{"at": N, "isl_new": y_new(N), "ref_needed": M or None, "speedup": M/N or None,
    "reached": bool}``; ``reached`` False means the reference never gets there within its
    budget (then the speed-up is at least ``max(n_ref)/N``, reported as ``lower_bound``)."""
    n_new = np.asarray(n_new, np.float64)
    y_new = np.asarray(y_new, np.float64)
    if at is None:
        at = float(n_new[-1])
    i = int(np.argmin(np.abs(n_new - at)))
    target = float(y_new[i])
    need = samples_to_reach(n_ref, y_ref, target)
    out = {"at": float(n_new[i]), "isl_new": target, "ref_needed": need, "reached": need is not None,
           "speedup": None if need is None else need / float(n_new[i]),
           "lower_bound": float(np.max(n_ref)) / float(n_new[i])}
    return out
