"""Compiled (numba) loops of the streaming ISL evaluator's binary path (mixlab.rbm.isl).

Binary evaluation points and binary centres are bit-packed (:func:`pack_rows`, :func:`pack_cols`):
D bits per point in W = ceil(D/64) uint64 words, bit i of the point in word i // 64, the
padding bits of the last word zero in both, so ``Σ_w popcount(e_w ^ s_w)`` is the Hamming
distance.

- :func:`hamming_count` adds the distances of every evaluation point to blocks ("pieces") of
  centres to the points' histograms (n_eval, D+1) int32 or int64, and keeps each point's
  smallest and largest distance.  Eight rows at a time (:data:`ROWS_PER_PASS`): first their
  distances to the whole piece, one pass per word over a (8, B) uint32 buffer (the centres are
  packed word-major, ``ST (W, B)``, so a pass reads contiguous words, each once for the eight
  rows, and LLVM vectorises it, with AVX-512 ``vpopcntq`` where the CPU has it), then, row by
  row, one increment per centre into the row's D+1 bins, which stay in L1.  A callback after
  each piece lets the evaluator read out the rows at a record point.
- :func:`hamming_sum`: the same distance pass with the distances summed instead of counted (the
  benchmark's bare lower bound).
- :func:`hist_power_sums`: the read-out, ``Q[b, t] = Σ_j hist[t, d0_t + j] r_b^j`` for every
  bandwidth b: one dot product per row and bandwidth with a table of r_b^j, reading the row's
  counts in place, the terms below 2^-53 of the sum skipped (:func:`power_tops`).
- :func:`mean_se`: the per-bandwidth validation mean, test mean and its standard error.

Measured with 3007 evaluation points, D = 256 and pieces of 4,900 centres on one thread of a
2-core AVX-512 machine: counting 0.43 ns per (point, centre) pair, the bare distance pass
0.18 ns.  A pass per row over a uint64 buffer (the pass reading the centres once per row)
measured 0.66 and 0.41 ns; 8 rows a pass over uint16 or uint32 buffers 0.38-0.42 ns (uint64:
0.52), 16 rows 1.3 ns (the rows' words no longer fit in registers); four interleaved
histograms per row to break the increments' store-to-load chains, 3% (not kept); int32 counts
measured 15-20% faster than int64.  A read-out takes 0.21 ms (USPS, 20 bandwidths).
Read-outs measured slower: Horner's scheme per row with the bandwidths in the vector lanes
(latency-bound, 2.5 ms); Horner on tiles of 32 rows in the lanes (0.46 ms, 0.29 ms of it the
transposed copy of the tiles); the histogram kept transposed and shifted so that no copy is
needed (counting 15-25% slower); the numpy window + float64 GEMM this replaces (0.8 ms).  The
popcount is LLVM's ``ctpop`` (:func:`popcount64`); the usual SWAR bit trick compiles to the same
``vpopcntq`` code (LLVM recognises the idiom) and measured the same.  Loops index from 0 or with
unsigned integers: a signed offset index costs numba's negative-index wraparound per element,
which turned contiguous vector loads into gathers (6x slower distance passes).

Threads: the kernels release the GIL and work on a range of rows, so :func:`hamming_count` splits
the rows into :func:`threads` ranges (``THREADS``, or 1 in a worker of mixlab's pools), each
taken through all the pieces (and the callbacks) by one thread: one hand-off (~50-90 µs) per
call.  numba's ``prange`` was a little faster on an idle machine, but its OpenMP layer
spin-waits at the end of a parallel region: with both cores busy elsewhere (another benchmark)
a count took 10x longer than serially, while plain threads stay at about the serial time.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from ..compiled.numba_cache import CACHE
from ..env_settings import env_int

__all__ = ["pack_rows", "pack_cols", "popcount64", "hamming_count", "hamming_sum",
           "hist_power_sums", "power_tops", "mean_se", "THREADS"]

# error_model="numpy": no Python zero-division checks in the loops
_JIT = {"cache": CACHE, "nogil": True, "boundscheck": False, "error_model": "numpy"}

#: Row ranges a large call is split into (threads used); at most 4 by default (2 on the 2-core
#: machine the split was measured on).  Set to 1 for serial.
THREADS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                     else (os.cpu_count() or 1)))
_SPLIT_MIN_PAIRS = 1 << 20  # (row, centre) pairs (~0.5 ms) below which one thread counts
#: environment variable that overrides :data:`THREADS`; mixlab's worker pools (``-j N`` streams,
#: sweep and league cells) set it to 1, as they set one BLAS thread: N workers on N cores
KERNEL_THREADS_VAR = "MIXLAB_KERNEL_THREADS"


def threads() -> int:
    """Threads a large call uses: ``$MIXLAB_KERNEL_THREADS`` (an integer >= 1) when set, else
    :data:`THREADS`."""
    return env_int(KERNEL_THREADS_VAR) or THREADS


# ------------------------------------------------------------------------------- packing
def pack_rows(X: np.ndarray) -> np.ndarray:
    """Bit-pack binary rows: X (n, D) (nonzero = 1) -> (n, W) uint64 C-contiguous,
    W = max(1, ceil(D/64)), bit i of row t in word i // 64, the padding bits zero."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"expected a 2-d array, got shape {X.shape}")
    n, D = X.shape
    W = max(1, -(-D // 64))
    buf = np.zeros((n, 8 * W), np.uint8)
    if D:
        buf[:, :(D + 7) // 8] = np.packbits(X if X.dtype == bool else X != 0, axis=1,
                                            bitorder="little")
    # a word is 8 consecutive bytes: whatever the byte order, every array packed here holds
    # bit i in the same bit of the same word, which is all popcount(e ^ s) needs
    return buf.view(np.uint64)


def pack_cols(X: np.ndarray) -> np.ndarray:
    """Bit-pack binary rows word-major: X (B, D) -> (W, B) uint64 C-contiguous (column j is
    ``pack_rows(X)[j]``): the centres' layout :func:`hamming_count` reads."""
    return np.ascontiguousarray(pack_rows(X).T)


@intrinsic
def popcount64(typingctx, x):
    """Number of set bits of a uint64 (LLVM ``ctpop``: ``popcnt`` / ``vpopcntq``)."""
    if not (isinstance(x, types.Integer) and x.bitwidth == 64 and not x.signed):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return types.uint64(types.uint64), codegen


# ------------------------------------------------------------------------------- distances
#: Evaluation points whose distances one pass over the centres computes: each word of a centre
#: is loaded once for all of them (the pass reads the centres from L2 once per 8 rows, not once
#: per row)
ROWS_PER_PASS = 8


@njit(inline="always")
def _rows_distances(E, t, r_n, ST, dist, e):
    """dist[r, j] = Hamming distance between packed row t + r of E (n, W) and packed column j
    of ST (W, B), for r < r_n <= ROWS_PER_PASS and j < B; dist (ROWS_PER_PASS, B) uint32, e
    (ROWS_PER_PASS,) uint64 scratch.  A full group of rows takes one pass over ST per word,
    each reading a contiguous row of ST (the loops index from 0: an offset index would be
    signed and cost a gather per load); a partial group (the last rows) a pass per row."""
    W = E.shape[1]
    B = ST.shape[1]
    if r_n == ROWS_PER_PASS:
        for w in range(W):
            for r in range(ROWS_PER_PASS):
                e[r] = E[t + r, w]
            if w == 0:
                for j in range(B):
                    s = ST[0, j]
                    for r in range(ROWS_PER_PASS):
                        dist[r, j] = np.uint32(popcount64(e[r] ^ s))
            else:
                for j in range(B):
                    s = ST[w, j]
                    for r in range(ROWS_PER_PASS):
                        dist[r, j] += np.uint32(popcount64(e[r] ^ s))
    else:
        for r in range(r_n):
            e0 = E[t + r, 0]
            for j in range(B):
                dist[r, j] = np.uint32(popcount64(e0 ^ ST[0, j]))
            for w in range(1, W):
                ew = E[t + r, w]
                for j in range(B):
                    dist[r, j] += np.uint32(popcount64(ew ^ ST[w, j]))


@njit(**_JIT)
def _count_rows(E, ST, hist, dmin, dmax, t0, t1):
    """hamming_count on the rows t0:t1; returns the number of rows with a distance outside the
    histogram (not counted)."""
    B = ST.shape[1]
    nb = np.uint64(hist.shape[1])
    dist = np.empty((ROWS_PER_PASS, B), np.uint32)
    e = np.empty(ROWS_PER_PASS, np.uint64)
    bad = 0
    for tb in range(t0, t1, ROWS_PER_PASS):
        r_n = min(ROWS_PER_PASS, t1 - tb)
        _rows_distances(E, tb, r_n, ST, dist, e)
        for r in range(r_n):
            t = tb + r
            lo = dist[r, 0]
            hi = dist[r, 0]
            for j in range(1, B):
                lo = min(lo, dist[r, j])
                hi = max(hi, dist[r, j])
            if np.uint64(hi) >= nb:  # only when padding bits are set: never write outside
                bad += 1
                continue
            for j in range(B):  # unsigned indices: no negative-index wraparound code
                hist[t, dist[r, j]] += 1
            dmin[t] = min(dmin[t], np.int64(lo))
            dmax[t] = max(dmax[t], np.int64(hi))
    return bad


@njit(**_JIT)
def _sum_rows(E, ST, out, t0, t1):
    B = ST.shape[1]
    dist = np.empty((ROWS_PER_PASS, B), np.uint32)
    e = np.empty(ROWS_PER_PASS, np.uint64)
    for tb in range(t0, t1, ROWS_PER_PASS):
        r_n = min(ROWS_PER_PASS, t1 - tb)
        _rows_distances(E, tb, r_n, ST, dist, e)
        for r in range(r_n):
            s = np.uint64(0)
            for j in range(B):
                s += dist[r, j]
            out[tb + r] += s


# ------------------------------------------------------------------------------- read-out
# reassoc: lets LLVM vectorise the sums over j (all terms >= 0, so any order is accurate);
# contract: fused multiply-adds
@njit(fastmath={"reassoc", "contract"}, **_JIT)
def _power_sums_rows(hist, dmin, dmax, powers, tops, Q, t0, t1):
    nbw = powers.shape[0]
    for t in range(t0, t1):
        lo = np.uint64(max(dmin[t], 0))  # unsigned: contiguous vector loads (see above)
        m = max(dmax[t] - dmin[t] + 1, 0)  # 0 for a row without counts
        for b in range(nbw):
            q = 0.0
            for j in range(np.uint64(min(m, tops[b]))):
                q += hist[t, lo + j] * powers[b, j]
            Q[b, t] = q


@njit(fastmath={"reassoc", "contract"}, **_JIT)
def _mean_se_rows(L, lam, d0, n_valid, out):
    """Of X[b, t] = L[b, t] + lam[b] d0[t]: out[0, b] = mean of X[b, :n_valid], out[1, b] =
    mean of X[b, n_valid:], out[2, b] = its standard error (ddof 1, 0 for fewer than 2 points);
    two passes for the variance (reassociated sums, vectorised: differences from numpy's
    pairwise sums are ~1e-16 relative)."""
    nbw, n = L.shape
    nt = n - n_valid
    u0, u1 = np.uint64(n_valid), np.uint64(n)  # unsigned: no wraparound code, vector loads
    for b in range(nbw):
        lb = lam[b]
        sv = 0.0
        for t in range(u0):
            sv += L[b, t] + lb * d0[t]
        st = 0.0
        for t in range(u0, u1):
            st += L[b, t] + lb * d0[t]
        mt = st / nt if nt > 0 else np.nan
        ss = 0.0
        for t in range(u0, u1):
            ss += (L[b, t] + lb * d0[t] - mt) ** 2
        out[0, b] = sv / n_valid if n_valid > 0 else np.nan
        out[1, b] = mt
        out[2, b] = math.sqrt(ss / (nt - 1) / nt) if nt > 1 else 0.0


# ------------------------------------------------------------------------------- threads
_POOL: list = []  # [(pid, workers, ThreadPoolExecutor)]: a new pool after a fork


def _pool(workers: int) -> ThreadPoolExecutor:
    pid = os.getpid()
    if not _POOL or _POOL[0][0] != pid or _POOL[0][1] < workers:
        if _POOL and _POOL[0][0] == pid:
            _POOL[0][2].shutdown(wait=False)
        _POOL[:] = [(pid, workers, ThreadPoolExecutor(workers, thread_name_prefix="mixlab-isl"))]
    return _POOL[0][2]


def _split_rows(kernel, n_rows: int, pairs: int, *args) -> list:
    """kernel(*args, t0, t1) over rows 0:n_rows, in :func:`threads` row ranges when there are
    enough pairs to amortise a thread hand-off (~50 µs; the first range on this thread);
    returns the results in row order."""
    k = min(threads(), n_rows) if pairs >= _SPLIT_MIN_PAIRS else 1
    cuts = [n_rows * i // k for i in range(k + 1)]
    if k <= 1:
        return [kernel(*args, 0, n_rows)]
    futures = [_pool(k - 1).submit(kernel, *args, cuts[i], cuts[i + 1]) for i in range(1, k)]
    try:
        first = kernel(*args, cuts[0], cuts[1])
    finally:
        wait(futures)  # never leave a range running (they write the caller's arrays)
    return [first] + [f.result() for f in futures]


# ------------------------------------------------------------------------------- API
def _check_packed(E: np.ndarray, ST: np.ndarray) -> None:
    if E.dtype != np.uint64 or ST.dtype != np.uint64 or E.ndim != 2 or ST.ndim != 2:
        raise TypeError("expected 2-d uint64 packed arrays (pack_rows, pack_cols)")
    if not (E.flags.c_contiguous and ST.flags.c_contiguous):
        raise ValueError("packed arrays must be C-contiguous")
    if E.shape[1] != ST.shape[0] or E.shape[1] == 0:
        raise ValueError(f"word counts differ or are 0: E {E.shape}, ST {ST.shape}")


def hamming_count(E: np.ndarray, pieces: list, hist: np.ndarray, dmin: np.ndarray,
                  dmax: np.ndarray, after=None) -> int:
    """Add the Hamming distances between packed evaluation points and blocks of packed centres
    to the histograms, block after block, in place.

    E (n, W) uint64 (:func:`pack_rows`), pieces: a list of ST (W, B_i) uint64
    (:func:`pack_cols`), hist (n, D+1) int32 or int64 (the caller keeps the counts in range):
    ``hist[t, d] += #{j : dist(E_t, S_j) = d}``; dmin,
    dmax (n,) int64: lowered / raised to the smallest / largest distance of row t (start them at
    D+1 and -1).  All C-contiguous.  ``after(i, t0, t1)``, if given, is called once the rows
    t0:t1 have counted pieces[0..i], by the thread that counted them (e.g. a read-out of those
    rows at a record point).  The rows are split into THREADS ranges, each taken through all the
    pieces by one thread: one thread hand-off per call.  Returns the number of (row, piece)
    pairs with a distance > D (not counted; 0 unless padding bits were set)."""
    for ST in pieces:
        _check_packed(E, ST)
    n = E.shape[0]

    def rows(t0, t1):
        bad = 0
        for i, ST in enumerate(pieces):
            if ST.shape[1]:
                bad += _count_rows(E, ST, hist, dmin, dmax, t0, t1)
            if after is not None:
                after(i, t0, t1)
        return bad
    if n == 0:
        return 0
    return sum(_split_rows(rows, n, n * sum(ST.shape[1] for ST in pieces)))


def hamming_sum(E: np.ndarray, ST: np.ndarray, out: np.ndarray) -> None:
    """The bare distance pass: ``out[t] += Σ_j dist(E_t, S_j)`` (out (n,) uint64), with
    :func:`hamming_count`'s loop and threads but no histogram (a benchmark's lower bound)."""
    _check_packed(E, ST)
    if ST.shape[1] and E.shape[0]:
        _split_rows(_sum_rows, E.shape[0], E.shape[0] * ST.shape[1], E, ST, out)


def power_tops(lam: np.ndarray, n: int, n_bins: int) -> np.ndarray:
    """Terms kept per ratio r = e^λ < 1 (lam: λ (n_bw,)) by :func:`hist_power_sums` for
    histograms of n counts: the smallest J with ``n r^J <= 2^-53``, at most n_bins (int64,
    >= 1).  The terms dropped (j >= J) sum to at most ``n r^J`` while the sum is >= 1 (its j = 0
    term is a count), so dropping them changes Q by at most 2^-53 relative: below float64
    rounding."""
    lam = np.asarray(lam, np.float64)
    J = np.full(lam.shape, float(n_bins))
    neg = lam < 0  # r < 1 (else: every term)
    J[neg] = np.ceil((math.log(max(n, 1)) + 53 * math.log(2)) / -lam[neg])
    return np.clip(J, 1, n_bins).astype(np.int64)


def hist_power_sums(hist: np.ndarray, dmin: np.ndarray, dmax: np.ndarray, powers: np.ndarray,
                    tops: np.ndarray, out: np.ndarray | None = None, rows: tuple | None = None
                    ) -> np.ndarray:
    """``Q[b, t] = Σ_{0 <= j < tops[b]} hist[t, dmin[t] + j] powers[b, j]`` (bins past dmax[t]
    are empty and skipped), one vectorised dot product per row and bandwidth.

    hist (n, D+1) int32 or int64, dmin, dmax (n,) int64 each row's first and last non-empty
    bin (a row with dmax < dmin gets Q = 0), powers (n_bw, >= D+1) float64 C-contiguous
    ``r_b^j``, tops (n_bw,) int64 (:func:`power_tops`).  Returns Q (n_bw, n) float64 (``out``
    if given, C-contiguous), written in the columns ``rows = (t0, t1)`` only if given (for the
    rows one thread owns in :func:`hamming_count`).  All terms are >= 0, so the sum in any order
    carries only a few ulps of rounding."""
    n = hist.shape[0]
    if powers.dtype != np.float64 or not powers.flags.c_contiguous:
        raise ValueError("powers must be C-contiguous float64")
    if powers.shape[1] < hist.shape[1]:
        raise ValueError(f"powers has {powers.shape[1]} columns, the histogram {hist.shape[1]}")
    Q = np.empty((powers.shape[0], n)) if out is None else out
    t0, t1 = (0, n) if rows is None else rows
    if t1 > t0 and powers.shape[0]:
        _power_sums_rows(hist, dmin, dmax, powers, np.asarray(tops, np.int64), Q, t0, t1)
    return Q


def mean_se(L: np.ndarray, n_valid: int, lam: np.ndarray | None = None,
            d0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Summaries of X = L + lam[:, None] * d0[None, :] (just L if lam is None), L (n_bw, n)
    float64, lam (n_bw,), d0 (n,): (mean of X[:, :n_valid] (nan if n_valid = 0), mean of
    X[:, n_valid:], its standard error ``std(ddof=1) / sqrt(count)`` (0 for fewer than 2
    columns)), each (n_bw,).  Compiled, without forming X (the read-out's log p)."""
    L = np.ascontiguousarray(L, np.float64)
    if lam is None:
        lam, d0 = np.zeros(L.shape[0]), np.zeros(L.shape[1], np.int64)
    out = np.empty((3, L.shape[0]))
    _mean_se_rows(L, np.ascontiguousarray(lam, np.float64), np.ascontiguousarray(d0), int(n_valid),
                  out)
    return out[0], out[1], out[2]
