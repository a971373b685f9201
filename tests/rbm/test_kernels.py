"""The compiled ISL histogram kernels (mixlab.rbm.kernels) against the numpy code they replaced:
the counts equal a plain bincount, the read-out window and hence every log p(x) are bit-for-bit
the numpy read-out's."""

import math

import numpy as np
import pytest

from mixlab.rbm import isl
from mixlab.rbm.kernels import hist_count, hist_window


def _flat_indices(rng, n_eval, nb, B, dtype, spread=None):
    """(n_eval, B) exact flat indices t*nb + d as floats; d uniform in [0, nb) or, with spread,
    concentrated on a few bins (runs of increments of one bin)."""
    if spread is None:
        d = rng.integers(0, nb, (n_eval, B))
    else:
        d = rng.integers(0, spread, (n_eval, B)) + rng.integers(0, nb - spread, (n_eval, 1))
    return (np.arange(n_eval)[:, None] * nb + d).astype(dtype)


def _bincount_hist(G, nb):
    """The numpy reference: whole-array bincount of G.astype(intp) (what isl.py did)."""
    n_eval = G.shape[0]
    return np.bincount(G.astype(np.intp).ravel(), minlength=n_eval * nb).reshape(n_eval, nb)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spread", [None, 1, 3])
def test_hist_count_equals_bincount(dtype, spread):
    rng = np.random.default_rng(0)
    n_eval, nb, B = 37, 65, 300
    G = _flat_indices(rng, n_eval, nb, B, dtype, spread)
    h0 = rng.integers(0, 50, (n_eval, nb))  # counting adds to what is there
    h = h0.copy()
    # column ranges of every width, as record points split a block (incl. empty and width 1)
    cuts = np.unique(np.concatenate([[0, 0, 1, 2, 5, 70, 71, B], rng.integers(0, B, 6)]))
    for a, b in zip(cuts[:-1], cuts[1:]):
        assert hist_count(G, int(a), int(b), h) == 0
        np.testing.assert_array_equal(h, h0 + _bincount_hist(G[:, :b], nb))
    assert hist_count(G, 7, 7, h) == 0  # empty range: no change
    np.testing.assert_array_equal(h, h0 + _bincount_hist(G, nb))
    assert h.sum() == h0.sum() + G.size


def test_hist_count_reports_out_of_range_indices():
    rng = np.random.default_rng(2)
    n_eval, nb = 5, 9
    G = _flat_indices(rng, n_eval, nb, 20, np.float32)
    G[0, 3] = -1.0          # before row 0
    G[1, 4] = 1 * nb + nb   # row 2's first bin, in row 1
    G[4, 0] = 4 * nb - 1    # row 3's last bin, in row 4
    G[2, 19] = 1e9
    h = np.zeros((n_eval, nb), np.int64)
    assert hist_count(G, 0, 20, h) == 4
    ok = np.ones(G.shape, bool)
    ok[[0, 1, 4, 2], [3, 4, 0, 19]] = False
    ref = np.zeros_like(h)
    for t in range(n_eval):
        np.add.at(ref[t], G[t][ok[t]].astype(np.intp) - t * nb, 1)
    np.testing.assert_array_equal(h, ref)


def test_evaluator_raises_on_inexact_gemm(monkeypatch):
    rng = np.random.default_rng(3)
    X = (rng.random((6, 8)) < 0.5).astype(np.float64)
    ev = isl.ISLEvaluator(X, X, key="s", points=[4])
    real = isl.ISLEvaluator._hist_gemm

    def bad_gemm(self, Sf):
        G = real(self, Sf)
        G[0, 0] = -3.0
        return G
    monkeypatch.setattr(isl.ISLEvaluator, "_hist_gemm", bad_gemm)
    with pytest.raises(RuntimeError, match="out of range"):
        ev.add_samples(rng.random((4, 8)) < 0.5)


def _numpy_window(hist):
    """The read-out's window as isl.py computed it in numpy (argmax over the non-empty mask, a
    sliding window over the flat histogram with D+1 zeros behind it, overrun zeroed)."""
    n_eval, n_bins = hist.shape
    buf = np.zeros(hist.size + n_bins, np.int64)
    buf[:hist.size] = hist.ravel()
    nz = hist > 0
    d0 = np.argmax(nz, axis=1)
    span = int((n_bins - 1 - np.argmax(nz[:, ::-1], axis=1) - d0).max()) + 1
    j = np.arange(span)
    win = np.lib.stride_tricks.sliding_window_view(buf, span)
    shifted = win[np.arange(n_eval) * n_bins + d0].astype(np.float64)
    over = np.flatnonzero(d0 + span > n_bins)
    if over.size:
        shifted[over] *= j[None, :] < (n_bins - d0[over])[:, None]
    return d0, shifted


def _numpy_logp(ev):
    """isl.py's numpy read-out (hist mode), for bit-for-bit comparison with ev._logp()."""
    d0, shifted = _numpy_window(ev.hist)
    j = np.arange(shifted.shape[1])
    lam = np.log1p(-ev.bandwidths) - np.log(ev.bandwidths)
    P = np.exp(j[:, None] * lam[None, :])
    with isl._one_blas_thread():
        Q = shifted @ P
    out = (ev.D * np.log(ev.bandwidths))[:, None] + lam[:, None] * d0[None, :] + np.log(Q).T
    return out - math.log(ev.n)


def test_hist_window_equals_numpy_window():
    rng = np.random.default_rng(4)
    for nb in (1, 2, 7, 8, 9, 17, 64, 257):
        for _ in range(5):
            n_eval = int(rng.integers(1, 40))
            h = rng.integers(0, 3, (n_eval, nb)) * (rng.random((n_eval, nb)) < rng.random())
            # rows with one count at either end, at both ends, and empty rows
            h[rng.random(n_eval) < 0.2] = 0
            r = rng.random(n_eval)
            h[r < 0.15, 0] += 1
            h[(r > 0.15) & (r < 0.3), -1] += 1
            h[r > 0.9, :] = 0
            h[r > 0.9, 0] = 1
            h[r > 0.9, -1] += 1
            d0, sh = hist_window(h)
            d0_ref, sh_ref = _numpy_window(h)
            np.testing.assert_array_equal(d0, d0_ref)
            assert d0.dtype == np.int64
            assert sh.dtype == np.float64 and sh.flags.c_contiguous
            np.testing.assert_array_equal(sh, sh_ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_streamed_histogram_and_logp_bit_identical(dtype):
    """The evaluator's histogram equals a bincount of the directly computed Hamming distances,
    and its read-out equals the numpy read-out bit for bit, at every record point."""
    rng = np.random.default_rng(5)
    D = 40
    Xt = (rng.random((70, D)) < 0.3).astype(np.float64)
    Xv = (rng.random((50, D)) < 0.3).astype(np.float64)
    S = rng.random((500, D)) < 0.35
    S[::5] = ~S[::5]  # far centres: windows reaching the end of their rows
    points = [1, 2, 3, 9, 40, 41, 200, 333, 500]
    ev = isl.ISLEvaluator(Xt, Xv, key="s", points=points, dtype=dtype, chunk=128)
    E = np.concatenate([Xv, Xt]).astype(bool)
    seen = []
    real_record = isl.ISLEvaluator._record

    def check(self, seconds):
        dist = (E[:, None, :] != S[None, :self.n, :]).sum(2)  # (n_eval, n) Hamming distances
        ref = np.stack([np.bincount(r, minlength=D + 1) for r in dist])
        np.testing.assert_array_equal(self.hist, ref)
        np.testing.assert_array_equal(self._logp(), _numpy_logp(self))
        seen.append(self.n)
        real_record(self, seconds)
    ev._record = check.__get__(ev)
    pos = 0
    for b in (1, 1, 5, 30, 100, 200, 163):
        ev.update({"s": S[None, pos:pos + b]}, pos + b, 0.0)
        pos += b
    assert pos == 500 and seen == points
