"""Streaming ISL (mixlab.rbm.isl) against a naive recomputation, and the bandwidth search."""

import math

import numpy as np
import pytest

from mixlab.rbm import isl


def _binary(rng, n, D, p=0.3):
    return (rng.random((n, D)) < p).astype(np.float64)


def _feed_in_random_blocks(ev, S, rng, chains=1):
    """Feed S (n, D) to ev.update in random-sized blocks shaped (chain, n_block, D)."""
    n = S.shape[0]
    assert n % chains == 0
    per = S.reshape(n // chains, chains, -1).swapaxes(0, 1)  # (chain, draw, D), draw-major order
    pos, t = 0, 0.0
    while pos < per.shape[1]:
        b = int(rng.integers(1, 9))
        blk = per[:, pos:pos + b]
        pos += blk.shape[1]
        t += 1.0
        ev.update({ev.key: blk}, pos, t)


@pytest.mark.parametrize("kind", ["binary", "gray", "gaussian"])
def test_streaming_equals_naive(kind):
    rng = np.random.default_rng(0)
    D, n = 12, 60
    Xt, Xv = _binary(rng, 25, D), _binary(rng, 15, D)
    if kind == "binary":
        S = rng.random((n, D)) < 0.3
        kernel, bws = "bernoulli", np.array([0.6, 0.8, 0.95])
    elif kind == "gray":
        S = rng.random((n, D))
        kernel, bws = "bernoulli", np.array([0.6, 0.8, 0.95])
    else:
        Xt, Xv = rng.standard_normal((25, D)), rng.standard_normal((15, D))
        S = rng.standard_normal((n, D))
        kernel, bws = "gaussian", np.array([0.3, 1.0, 2.5])
    points = [1, 2, 3, 7, 10, 31, 59, 60]
    for chains in (1, 3):
        ev = isl.ISLEvaluator(Xt, Xv, key="c", kernel=kernel, bandwidths=bws, points=points,
                              dtype=np.float64, chunk=5)
        _feed_in_random_blocks(ev, S, rng, chains=chains)
        t = ev.table()
        assert list(t["n"]) == points  # every record point landed exactly
        for r, N in enumerate(points):
            for j, bw in enumerate(bws):
                lt = isl.isl_naive(Xt, S[:N], bw, kernel)
                lv = isl.isl_naive(Xv, S[:N], bw, kernel)
                assert abs(t["test"][r, j] - lt.mean()) < 1e-9
                assert abs(t["valid"][r, j] - lv.mean()) < 1e-9
                assert abs(t["test_se"][r, j] - lt.std(ddof=1) / math.sqrt(len(lt))) < 1e-9
        x, y, yerr = ev.curve()
        best = np.argmax(t["valid"], axis=1)
        np.testing.assert_array_equal(x, points)
        np.testing.assert_allclose(y, t["test"][np.arange(len(points)), best])


def test_float32_path_close_to_naive():
    rng = np.random.default_rng(1)
    D = 64
    Xt, Xv = _binary(rng, 40, D), _binary(rng, 30, D)
    S = rng.random((300, D)).astype(np.float32)
    ev = isl.ISLEvaluator(Xt, Xv, key="means", bandwidths=[0.7, 0.9], max_samples=300,
                          n_points=5)
    ev.update({"means": S[None]}, 300, 1.0)
    t = ev.table()
    for j, bw in enumerate([0.7, 0.9]):
        assert abs(t["test"][-1, j] - isl.isl_naive(Xt, S, bw).mean()) < 1e-3


def test_binary_centres_hist_path_equals_gray_path():
    rng = np.random.default_rng(2)
    D = 20
    Xt, Xv = _binary(rng, 30, D), _binary(rng, 30, D)
    S = rng.random((100, D)) < 0.4
    a = isl.isl_of_centres(S, Xt, Xv, dtype=np.float64)
    b = isl.isl_of_centres(S.astype(np.float64), Xt, Xv, dtype=np.float64)
    assert a["bandwidth"] == b["bandwidth"]
    assert abs(a["isl"] - b["isl"]) < 1e-9


def test_bandwidth_search_finds_planted_beta():
    """Data drawn from a Bernoulli-kernel mixture with known β: validation picks β."""
    rng = np.random.default_rng(3)
    D, beta = 40, 0.85
    centres = rng.random((30, D)) < 0.5

    def draw(n):
        c = centres[rng.integers(0, len(centres), n)]
        flip = rng.random((n, D)) > beta
        return (c ^ flip).astype(np.float64)

    Xv, Xt = draw(3000), draw(500)
    grid = np.linspace(0.6, 0.98, 39)  # step 0.01
    res = isl.isl_of_centres(centres, Xt, Xv, bandwidths=grid, dtype=np.float64)
    assert abs(res["bandwidth"] - beta) <= 0.011
    # and the test ISL at the chosen β is within noise of the true model's log-likelihood
    true = isl.isl_naive(Xt, centres.astype(np.float64), beta).mean()
    assert abs(res["isl"] - true) < 0.05


def test_planted_sigma_gaussian():
    rng = np.random.default_rng(4)
    D, sigma = 5, 0.3
    centres = rng.standard_normal((20, D)) * 3
    Xv = centres[rng.integers(0, 20, 4000)] + sigma * rng.standard_normal((4000, D))
    Xt = centres[rng.integers(0, 20, 300)] + sigma * rng.standard_normal((300, D))
    grid = np.linspace(0.2, 0.4, 21)
    res = isl.isl_of_centres(centres, Xt, Xv, kernel="gaussian", bandwidths=grid,
                             dtype=np.float64)
    assert abs(res["bandwidth"] - sigma) <= 0.011


def test_select_final_uses_last_point_bandwidth():
    rng = np.random.default_rng(5)
    D = 16
    Xt, Xv = _binary(rng, 30, D), _binary(rng, 30, D)
    S = rng.random((200, D)) < 0.3
    ev = isl.ISLEvaluator(Xt, Xv, key="s", select="final", max_samples=200, n_points=6)
    ev.update({"s": S[None]}, 200, 2.0)
    t = ev.table()
    assert np.all(t["chosen"] == np.argmax(t["valid"][-1]))
    assert t["seconds"][-1] == 2.0 and np.all(np.diff(t["seconds"]) >= 0)


def test_curve_includes_unrecorded_end_point():
    rng = np.random.default_rng(6)
    Xt, Xv = _binary(rng, 10, 8), _binary(rng, 10, 8)
    ev = isl.ISLEvaluator(Xt, Xv, key="s", points=[1, 10, 100])
    ev.update({"s": (rng.random((1, 40, 8)) < 0.5)}, 40, 1.0)
    x, y, yerr = ev.curve()
    assert list(x) == [1, 10, 40]


def test_bad_input():
    rng = np.random.default_rng(7)
    Xt = _binary(rng, 10, 8)
    with pytest.raises(ValueError, match="binary"):
        isl.ISLEvaluator(Xt + 0.5, Xt, max_samples=10)
    with pytest.raises(ValueError, match="validation"):
        isl.ISLEvaluator(Xt, None, max_samples=10)
    with pytest.raises(ValueError, match=r"\(0.5, 1\)"):
        isl.ISLEvaluator(Xt, Xt, bandwidths=[0.4], max_samples=10)
    ev = isl.ISLEvaluator(Xt, Xt, key="s", max_samples=10)
    with pytest.raises(ValueError, match="dimensions"):
        ev.update({"s": np.zeros((1, 3, 5), bool)}, 3, 0.0)


def test_speedup_helpers():
    n = np.array([1, 10, 100, 1000])
    y = np.array([-100.0, -90.0, -85.0, -84.0])
    assert isl.samples_to_reach(n, y, -95.0) == pytest.approx(math.sqrt(10))
    assert isl.samples_to_reach(n, y, -80.0) is None
    r = isl.coverage_speedup(n, y, np.array([1, 10]), np.array([-92.0, -85.0]))
    assert r["reached"] and r["speedup"] == pytest.approx(10.0)
    r = isl.coverage_speedup(n, y, np.array([1, 10]), np.array([-92.0, -83.0]))
    assert not r["reached"] and r["lower_bound"] == 100.0


@pytest.mark.parametrize("chunk", [3, 2048])
def test_hist_update_paths_equal_naive(chunk):
    """The histogram path gives the naive ISL whether a GEMM block holds a few centres or
    several record points, including the read-out's window running past a row's end (centres
    far from every evaluation point)."""
    rng = np.random.default_rng(8)
    D = 30
    Xt, Xv = _binary(rng, 20, D, p=0.1), _binary(rng, 10, D, p=0.1)
    S = rng.random((90, D)) < 0.9  # far from the sparse data: large distances
    S[::7] = rng.random((13, D)) < 0.1
    bws = np.array([0.55, 0.7, 0.9, 0.999])
    points = [1, 2, 5, 13, 40, 90]
    ev = isl.ISLEvaluator(Xt, Xv, key="c", bandwidths=bws, points=points, dtype=np.float64,
                          chunk=chunk)
    _feed_in_random_blocks(ev, S, rng)
    t = ev.table()
    for r, N in enumerate(points):
        for j, bw in enumerate(bws):
            assert abs(t["test"][r, j] - isl.isl_naive(Xt, S[:N], bw).mean()) < 1e-9
            assert abs(t["valid"][r, j] - isl.isl_naive(Xv, S[:N], bw).mean()) < 1e-9
