"""The compiled ISL kernels (mixlab.rbm.kernels): bit-packing, the popcount Hamming histograms
against brute-force numpy distances and against the float32 GEMM the evaluator used before,
the power-sum read-out against the numpy window + GEMM read-out it replaced, and the summaries;
then the evaluator's streamed records at record points inside blocks, threaded or not."""

import math
import platform

import numpy as np
import pytest
from numba import njit

from mixlab.errors import UsageError
from mixlab.rbm import isl
from mixlab.rbm import kernels as K

DIMS = [1, 63, 64, 65, 256, 784]


def _bits(rng, n, D, p=0.3):
    return rng.random((n, D)) < p


def _brute_dist(X, S):
    """(n, m) Hamming distances, numpy broadcasting."""
    return (X[:, None, :] != S[None, :, :]).sum(2)


def _gemm_dist(X, S):
    """(n, m) Hamming distances the way the evaluator's former GEMM path got them: one float32
    GEMM, d = |x| + |s| - 2 x.s (exact integers for 0/1 data)."""
    Xf, Sf = X.astype(np.float32), S.astype(np.float32)
    return (Xf.sum(1)[:, None] + Sf.sum(1)[None, :] - 2 * (Xf @ Sf.T)).astype(np.int64)


def _hist_of(dist, D):
    return np.stack([np.bincount(r, minlength=D + 1) for r in dist]) if dist.shape[1] else \
        np.zeros((dist.shape[0], D + 1), np.int64)


@pytest.fixture(params=[1, 2], ids=["serial", "split"])
def threads(request, monkeypatch):
    """Run with one thread, or with the rows split over 2 threads even for tiny calls."""
    monkeypatch.setattr(K, "THREADS", request.param)
    monkeypatch.delenv(K.KERNEL_THREADS_VAR, raising=False)
    monkeypatch.setattr(K, "_SPLIT_MIN_PAIRS", 0)
    return request.param


# ------------------------------------------------------------------------------- packing
@pytest.mark.parametrize("D", DIMS + [0, 128, 129])
def test_pack_rows_layout(D):
    rng = np.random.default_rng(D)
    X = _bits(rng, 9, D, 0.5)
    P = K.pack_rows(X)
    W = max(1, -(-D // 64))
    assert P.dtype == np.uint64 and P.shape == (9, W) and P.flags.c_contiguous
    bits = np.unpackbits(P.view(np.uint8), axis=1, bitorder="little")
    np.testing.assert_array_equal(bits[:, :D], X)  # bit i of the row in word i // 64
    assert not bits[:, D:].any()  # padding zero
    np.testing.assert_array_equal(K.pack_rows(X.astype(np.float32)), P)  # nonzero = 1
    C = K.pack_cols(X)
    assert C.shape == (W, 9) and C.flags.c_contiguous
    np.testing.assert_array_equal(C, P.T)


def test_popcount64_is_exact_and_hardware():
    @njit
    def pc(a):
        out = np.empty(a.size, np.uint64)
        for i in range(a.size):
            out[i] = K.popcount64(a[i])
        return out
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.integers(0, 2**63, 1000, dtype=np.uint64) * np.uint64(2)
                        + rng.integers(0, 2, 1000, dtype=np.uint64),
                        np.array([0, 1, 2**63, 2**64 - 1], np.uint64)])
    np.testing.assert_array_equal(pc(a), [bin(int(x)).count("1") for x in a])
    if platform.machine().lower() in ("x86_64", "amd64"):
        import llvmlite.binding as ll

        if "+popcnt" in ll.get_host_cpu_features().flatten():
            asm = next(iter(pc.inspect_asm().values()))
            assert "popcnt" in asm  # the ctpop intrinsic lowered to the instruction


# ------------------------------------------------------------------------------- counting
@pytest.mark.parametrize("D", DIMS)
def test_hamming_count_equals_brute_force_and_gemm(D, threads):
    """Histograms, smallest and largest distances equal numpy's, block after block, with
    pieces of every width (empty, 1, and across word boundaries of the packed centres)."""
    rng = np.random.default_rng(D)
    n_eval, m = 23, 140
    X = _bits(rng, n_eval, D)
    S = _bits(rng, m, D, 0.45)
    S[::9] = ~S[::9]  # far centres: distances up to D
    S[5] = X[3]  # distance 0
    dist = _brute_dist(X, S)
    np.testing.assert_array_equal(dist, _gemm_dist(X, S))
    cuts = [0, 0, 1, 2, 9, 64, 65, 100, m]
    pieces = [K.pack_cols(S[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    h = np.zeros((n_eval, D + 1), np.int32)
    dmin, dmax = np.full(n_eval, D + 1), np.full(n_eval, -1)
    seen = []

    def after(i, t0, t1):  # the rows t0:t1 hold exactly pieces[0..i]
        b = cuts[i + 1]
        np.testing.assert_array_equal(h[t0:t1], _hist_of(dist[t0:t1, :b], D))
        if b:
            np.testing.assert_array_equal(dmin[t0:t1], dist[t0:t1, :b].min(1))
            np.testing.assert_array_equal(dmax[t0:t1], dist[t0:t1, :b].max(1))
        seen.append((i, t0, t1))
    assert K.hamming_count(K.pack_rows(X), pieces, h, dmin, dmax, after) == 0
    np.testing.assert_array_equal(h, _hist_of(dist, D))
    np.testing.assert_array_equal(dmin, dist.min(1))
    np.testing.assert_array_equal(dmax, dist.max(1))
    # every piece once per row range, the ranges covering the rows
    ranges = sorted({(t0, t1) for _, t0, t1 in seen})
    assert len(ranges) == threads and ranges[0][0] == 0 and ranges[-1][1] == n_eval
    assert all(a[1] == b[0] for a, b in zip(ranges[:-1], ranges[1:]))
    assert sorted(seen) == sorted((i, t0, t1) for i in range(len(pieces)) for t0, t1 in ranges)


def test_hamming_count_adds_to_existing_counts():
    rng = np.random.default_rng(1)
    D = 70
    X, S = _bits(rng, 11, D), _bits(rng, 50, D)
    h0 = rng.integers(0, 9, (11, D + 1)).astype(np.int64)
    h = h0.copy()
    dmin, dmax = np.full(11, 30), np.full(11, 31)
    K.hamming_count(K.pack_rows(X), [K.pack_cols(S)], h, dmin, dmax)
    dist = _brute_dist(X, S)
    np.testing.assert_array_equal(h, h0 + _hist_of(dist, D))
    np.testing.assert_array_equal(dmin, np.minimum(30, dist.min(1)))
    np.testing.assert_array_equal(dmax, np.maximum(31, dist.max(1)))


def test_hamming_count_reports_set_padding_bits():
    """Distances > D (only possible with padding bits set) are reported, their row untouched,
    nothing written past the row: in a full group of ROWS_PER_PASS rows and in the partial
    group after it."""
    rng = np.random.default_rng(2)
    D = 65  # 2 words, 63 padding bits
    n = K.ROWS_PER_PASS + 4
    X, S = _bits(rng, n, D), _bits(rng, 6, D)
    bad = [1, K.ROWS_PER_PASS + 2]   # one row in each group
    E = K.pack_rows(X)
    for t in bad:
        X[t] = ~S[2]  # at distance D from centre 2 ...
        E[t] = K.pack_rows(X[t:t + 1])[0]
        E[t, 1] |= np.uint64(1) << np.uint64(63)  # ... and D + 1 with a padding bit set
    h = np.zeros((n, D + 1), np.int64)
    dmin, dmax = np.full(n, D + 1), np.full(n, -1)
    assert K.hamming_count(E, [K.pack_cols(S)], h, dmin, dmax) == len(bad)
    dist = _brute_dist(X, S)
    ok = [t for t in range(n) if t not in bad]
    np.testing.assert_array_equal(h[ok], _hist_of(dist[ok], D))
    np.testing.assert_array_equal(dmin[ok], dist[ok].min(1))
    assert not h[bad].any() and (dmin[bad] == D + 1).all() and (dmax[bad] == -1).all()


def test_hamming_count_checks_layout():
    rng = np.random.default_rng(3)
    E = K.pack_rows(_bits(rng, 3, 100))
    h, lo, hi = np.zeros((3, 101), np.int64), np.full(3, 101), np.full(3, -1)
    with pytest.raises(ValueError, match="word counts"):
        K.hamming_count(E, [K.pack_cols(_bits(rng, 5, 200))], h, lo, hi)
    with pytest.raises(ValueError, match="contiguous"):
        K.hamming_count(E, [K.pack_rows(_bits(rng, 5, 100)).T], h, lo, hi)
    with pytest.raises(TypeError, match="uint64"):
        K.hamming_count(E, [K.pack_cols(_bits(rng, 5, 100)).astype(np.int64)], h, lo, hi)


@pytest.mark.parametrize("D", [1, 65, 256])
def test_hamming_sum_equals_brute_force(D, threads):
    rng = np.random.default_rng(4)
    X, S = _bits(rng, 19, D), _bits(rng, 77, D)
    out = np.full(19, 5, np.uint64)
    K.hamming_sum(K.pack_rows(X), K.pack_cols(S), out)
    np.testing.assert_array_equal(out, 5 + _brute_dist(X, S).sum(1))


# ------------------------------------------------------------------------------- read-out
def _old_readout_Q(hist, lam):
    """The former read-out's power sums: each row from its first non-empty bin as float64
    (zeros past the row's end), times P[j, b] = exp(j λ_b), one float64 GEMM."""
    n_eval, nb = hist.shape
    nz = hist > 0
    d0 = np.argmax(nz, axis=1)
    span = int((nb - 1 - np.argmax(nz[:, ::-1], axis=1) - d0).max()) + 1
    shifted = np.zeros((n_eval, span))
    for t in range(n_eval):
        row = hist[t, d0[t]:d0[t] + span]
        shifted[t, :row.size] = row
    P = np.exp(np.arange(span)[:, None] * lam[None, :])
    return d0, (shifted @ P).T


def _random_hists(rng, n_eval, nb):
    """Histograms with a few non-empty bins per row, some at either end or both, one row with
    a single count, the counts from 1 to 10^5 (the read-out's j = 0 term is >= 1)."""
    h = rng.integers(0, 100_000, (n_eval, nb)) * (rng.random((n_eval, nb)) < 0.3)
    h[0] = 0
    h[0, -1] = 1  # one count, at distance D
    h[1] = 0
    h[1, [0, -1]] = [1, 7]
    h[2, 0] = 3
    for t in range(n_eval):
        if not h[t].any():
            h[t, rng.integers(0, nb)] = 1
    nz = h > 0
    dmin = np.argmax(nz, 1).astype(np.int64)
    return h, dmin, (nb - 1 - np.argmax(nz[:, ::-1], 1)).astype(np.int64)


@pytest.mark.parametrize("nb", [1, 2, 9, 65, 257, 785])
def test_power_sums_equal_former_readout(nb):
    rng = np.random.default_rng(nb)
    bw = np.concatenate([isl.default_betas(), [0.5000001, 0.51, 0.99999999]])
    lam = np.log1p(-bw) - np.log(bw)
    h, dmin, dmax = _random_hists(rng, 40, nb)
    powers = np.exp(lam[:, None] * np.arange(nb)[None, :])
    n = int(h.sum(1).max())
    d0, Q_ref = _old_readout_Q(h, lam)
    np.testing.assert_array_equal(d0, dmin)
    for tops in (K.power_tops(lam, n, nb), np.full(lam.size, nb)):  # truncated, full
        Q = K.hist_power_sums(h.astype(np.int32), dmin, dmax, powers, tops)
        np.testing.assert_allclose(Q, Q_ref, rtol=1e-13, atol=0)
    # rows written only in the given range
    out = np.full((lam.size, 40), -1.0)
    K.hist_power_sums(h, dmin, dmax, powers, K.power_tops(lam, n, nb), out=out, rows=(5, 17))
    assert np.all(out[:, :5] == -1) and np.all(out[:, 17:] == -1)
    np.testing.assert_allclose(out[:, 5:17], Q_ref[:, 5:17], rtol=1e-13, atol=0)


def test_power_sums_of_empty_rows_and_short_tables():
    h = np.zeros((3, 6), np.int64)
    h[1, 2] = 4
    dmin, dmax = np.array([6, 2, 6]), np.array([-1, 2, -1])  # rows 0, 2 empty
    Q = K.hist_power_sums(h, dmin, dmax, np.ones((2, 6)), np.array([6, 1]))
    np.testing.assert_array_equal(Q, [[0, 4, 0], [0, 4, 0]])
    with pytest.raises(ValueError, match="columns"):
        K.hist_power_sums(h, dmin, dmax, np.ones((2, 5)), np.array([5, 1]))


def test_power_tops_bound():
    """J is the smallest count of terms with n r^J <= 2^-53 (the dropped tail), clipped."""
    bw = np.array([0.5, 0.5 + 1e-12, 0.55, 0.8, 0.99, 0.9999])
    lam = np.log1p(-bw) - np.log(bw)
    for n in (1, 37, 10**5, 10**9):
        J = K.power_tops(lam, n, 300)
        assert J.dtype == np.int64 and np.all((J >= 1) & (J <= 300))
        assert J[0] == J[1] == 300  # r = 1 or about: everything
        for b in range(2, bw.size):
            r = (1 - bw[b]) / bw[b]
            if J[b] < 300:
                assert n * r ** J[b] <= 2.0 ** -53 < n * r ** (J[b] - 1) or J[b] == 1


def test_mean_se_equals_numpy():
    rng = np.random.default_rng(5)
    L = rng.standard_normal((4, 31)) * 50 - 100
    lam = rng.standard_normal(4)
    d0 = rng.integers(0, 40, 31)
    X = L + lam[:, None] * d0
    for nv in (0, 1, 12, 29, 30):
        v, t, se = K.mean_se(L, nv, lam, d0)
        if nv:
            np.testing.assert_allclose(v, X[:, :nv].mean(1), rtol=1e-13)
        else:
            assert np.all(np.isnan(v))
        np.testing.assert_allclose(t, X[:, nv:].mean(1), rtol=1e-13)
        ref = X[:, nv:].std(1, ddof=1) / math.sqrt(31 - nv) if 31 - nv > 1 else np.zeros(4)
        np.testing.assert_allclose(se, ref, rtol=1e-11, atol=1e-300)
    v, t, se = K.mean_se(L, 10)
    np.testing.assert_allclose(t, L[:, 10:].mean(1), rtol=1e-13)


# ------------------------------------------------------------------------------- evaluator
def _summaries_of_hist(hist, bws, D, n, nv):
    """Validation mean, test mean and se of log p from a histogram, with the former read-out."""
    lam = np.log1p(-bws) - np.log(bws)
    d0, Q = _old_readout_Q(hist, lam)
    lp = (D * np.log(bws))[:, None] + lam[:, None] * d0[None, :] + np.log(Q) - math.log(n)
    test = lp[:, nv:]
    return lp[:, :nv].mean(1), test.mean(1), test.std(1, ddof=1) / math.sqrt(test.shape[1])


@pytest.mark.parametrize("D", [40, 64, 130])
def test_streamed_records_equal_former_readout(D, threads):
    """Every record point, inside blocks or at their ends, gets the summaries the former
    read-out gives on the brute-force histogram of exactly the first n samples; the final
    histogram equals it too; splitting the rows over threads changes nothing."""
    rng = np.random.default_rng(D)
    Xt, Xv = _bits(rng, 70, D).astype(np.float64), _bits(rng, 50, D).astype(np.float64)
    S = _bits(rng, 500, D, 0.35)
    S[::5] = ~S[::5]  # far centres
    points = [1, 2, 3, 9, 40, 41, 200, 333, 500]
    bws = np.array([0.55, 0.7, 0.9, 0.999])
    ev = isl.ISLEvaluator(Xt, Xv, key="s", points=points, bandwidths=bws, chunk=64)
    pos = 0
    for b in (1, 1, 5, 30, 100, 200, 163):
        ev.update({"s": S[None, pos:pos + b]}, pos + b, float(pos + b))
        pos += b
    E = np.concatenate([Xv, Xt]).astype(bool)
    dist = _brute_dist(E, S)
    np.testing.assert_array_equal(ev.hist, _hist_of(dist, D))
    t = ev.table()
    assert list(t["n"]) == points
    np.testing.assert_array_equal(t["seconds"], points)  # the record's position in its block
    for r, n in enumerate(points):
        v, te, se = _summaries_of_hist(_hist_of(dist[:, :n], D), bws, D, n, 50)
        np.testing.assert_allclose(t["valid"][r], v, rtol=1e-12)
        np.testing.assert_allclose(t["test"][r], te, rtol=1e-12)
        np.testing.assert_allclose(t["test_se"][r], se, rtol=1e-9)
    lp = ev._logp()  # the read-out now, in full
    v, te, se = _summaries_of_hist(ev.hist, bws, D, 500, 50)
    np.testing.assert_allclose(lp[:, 50:].mean(1), te, rtol=1e-12)


def test_threads_give_identical_records(monkeypatch):
    rng = np.random.default_rng(9)
    D = 100
    Xt, Xv = _bits(rng, 60, D).astype(np.float64), _bits(rng, 40, D).astype(np.float64)
    S = _bits(rng, 300, D)
    tables = []
    monkeypatch.delenv(K.KERNEL_THREADS_VAR, raising=False)
    for th in (1, 2, 3):
        monkeypatch.setattr(K, "THREADS", th)
        monkeypatch.setattr(K, "_SPLIT_MIN_PAIRS", 0)
        ev = isl.ISLEvaluator(Xt, Xv, key="s", max_samples=300, n_points=12)
        for i in range(0, 300, 70):
            ev.update({"s": S[None, i:i + 70]}, i + 70, 0.0)
        tables.append(ev.table())
    for t in tables[1:]:
        for k in ("n", "valid", "test", "test_se"):
            np.testing.assert_array_equal(t[k], tables[0][k])


def test_the_environment_sets_the_threads(monkeypatch):
    """``$MIXLAB_KERNEL_THREADS`` (set to 1 in mixlab's pool workers) overrides THREADS."""
    monkeypatch.setattr(K, "THREADS", 2)
    monkeypatch.setattr(K, "_SPLIT_MIN_PAIRS", 0)

    def ranges() -> list:
        return K._split_rows(lambda t0, t1: (t0, t1), 12, 1)
    monkeypatch.delenv(K.KERNEL_THREADS_VAR, raising=False)
    assert ranges() == [(0, 6), (6, 12)]
    for value, want in (("1", [(0, 12)]), ("3", [(0, 4), (4, 8), (8, 12)])):
        monkeypatch.setenv(K.KERNEL_THREADS_VAR, value)
        assert ranges() == want, value
    monkeypatch.setenv(K.KERNEL_THREADS_VAR, "many")    # refused, never silently the default
    with pytest.raises(UsageError, match="MIXLAB_KERNEL_THREADS must be a whole number"):
        ranges()


def test_histogram_widens_before_a_bin_could_overflow():
    rng = np.random.default_rng(10)
    Xt, Xv = _bits(rng, 3, 8).astype(np.float64), _bits(rng, 2, 8).astype(np.float64)
    S = np.zeros((40_000, 8), bool)  # every centre at the same distance: one bin gets them all
    ev = isl.ISLEvaluator(Xt, Xv, key="s", points=[1, 40_000])
    ev.add_samples(S[:1])
    assert ev.hist.dtype == np.int32
    ev.hist = ev.hist.astype(np.int16)  # a narrow histogram: 32767 at most per bin
    ev.add_samples(S[1:])
    assert ev.hist.dtype == np.int64
    E = np.concatenate([Xv, Xt]).astype(bool)
    np.testing.assert_array_equal(ev.hist, _hist_of(_brute_dist(E, S[:1]), 8) * 40_000)
