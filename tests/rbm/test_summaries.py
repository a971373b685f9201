"""Per-draw summaries of RBM draws (mixlab.rbm.summaries) against hand computations."""

import itertools

import numpy as np
import pytest

from mixlab.errors import MixlabError
from mixlab.rbm.model import RBM
from mixlab.rbm.summaries import free_energy, summarize_draws, summarizer, summary_pixels


def test_free_energy_is_minus_log_of_the_summed_joint():
    """exp(-F(x)) = Σ_h exp(-E(x, h)) by enumerating the 2^H hidden states."""
    rng = np.random.default_rng(0)
    V, H = 5, 3
    W, b, c = rng.standard_normal((V, H)), rng.standard_normal(V), rng.standard_normal(H)
    for x in itertools.product([0, 1], repeat=V):
        x = np.array(x, float)
        total = sum(np.exp(x @ b + np.array(h) @ c + x @ W @ np.array(h))
                    for h in itertools.product([0, 1], repeat=H))
        assert free_energy(x, W, b, c) == pytest.approx(-np.log(total), rel=1e-12)


def test_summaries_of_a_block_by_hand():
    """A (chain=2, n=3, V=16) block: every statistic equals a per-draw hand computation, in
    (chain, draw) order."""
    rng = np.random.default_rng(1)
    V, H = 16, 4
    rbm = RBM(rng.standard_normal((V, H)).astype(np.float32),
              rng.standard_normal(V).astype(np.float32), rng.standard_normal(H).astype(np.float32))
    x = rng.random((2, 3, V)) < 0.5
    out = summarizer(rbm)({"samples": x, "means": x.astype(np.float32)})
    # 4 x 4 images: the centre (2, 2), a quarter across (2, 1), a quarter down (1, 2)
    assert summary_pixels(V) == {"pixel_r2c2": 10, "pixel_r2c1": 9, "pixel_r1c2": 6}
    assert set(out) == {"free_energy", "active_pixels", "pixel_r2c2", "pixel_r2c1", "pixel_r1c2"}
    W, b, c = (np.asarray(a, np.float64) for a in (rbm.W, rbm.b, rbm.c))
    for i in range(2):
        for t in range(3):
            xi = x[i, t].astype(float)
            F = -xi @ b - sum(np.log1p(np.exp(c[j] + xi @ W[:, j])) for j in range(H))
            assert out["free_energy"][i, t] == pytest.approx(F, rel=1e-12)
            assert out["active_pixels"][i, t] == xi.sum()
            assert out["pixel_r2c2"][i, t] == xi[10] and out["pixel_r1c2"][i, t] == xi[6]
    # a count and indicators stored in two bytes and one, not eight
    assert {k: v.dtype for k, v in out.items()} == {
        "free_energy": np.float64, "active_pixels": np.uint16, "pixel_r2c2": np.bool_,
        "pixel_r2c1": np.bool_, "pixel_r1c2": np.bool_}
    assert all(v.shape == (2, 3) for v in out.values())


def test_non_square_inputs_and_missing_samples():
    assert summary_pixels(10) == {"pixel_2": 2, "pixel_5": 5, "pixel_7": 7}
    with pytest.raises(MixlabError, match="'samples'"):
        summarize_draws({"means": np.zeros((1, 2, 4))}, np.zeros((4, 2)), np.zeros(4),
                        np.zeros(2))


def test_tabulated_summaries_equal_the_computed_ones():
    """V <= 16: every state's summaries come from a table indexed by the state's code; they
    equal the block's own computation, for bool and 0/1 uint8 bits and for image-shaped draws
    (chain, n, 4, 4); draws that are not bits are computed directly."""
    rng = np.random.default_rng(2)
    V, H = 16, 6
    rbm = RBM(rng.standard_normal((V, H)).astype(np.float32),
              rng.standard_normal(V).astype(np.float32), rng.standard_normal(H).astype(np.float32))
    W, b, c = (np.asarray(a, np.float64) for a in (rbm.W, rbm.b, rbm.c))
    x = rng.random((3, 200, V)) < 0.4
    want = summarize_draws({"samples": x}, W, b, c)
    summarize = summarizer(rbm)
    for draws in (x, x.astype(np.uint8), x.reshape(3, 200, 4, 4)):
        got = summarize({"samples": draws})
        assert set(got) == set(want)
        np.testing.assert_allclose(got["free_energy"], want["free_energy"], rtol=1e-12)
        for k in set(want) - {"free_energy"}:
            assert np.array_equal(got[k], want[k]), k
    half = np.where(x, 0.5, 0.0)              # not bits: the formula, not a table
    np.testing.assert_allclose(summarize({"samples": half})["free_energy"],
                               summarize_draws({"samples": half}, W, b, c)["free_energy"],
                               rtol=1e-12)


def test_float32_products_give_the_free_energy_to_a_millionth():
    """A float32 model with more than 16 visible units: the summarizer forms the products in
    float32 and sums in float64, within 1e-6 of F's size of the float64 formula; activations
    past the product form's range take the float64 softplus."""
    rng = np.random.default_rng(3)
    V, H = 256, 200
    rbm = RBM((0.3 * rng.standard_normal((V, H))).astype(np.float32),
              rng.standard_normal(V).astype(np.float32), rng.standard_normal(H).astype(np.float32))
    W, b, c = (np.asarray(a, np.float64) for a in (rbm.W, rbm.b, rbm.c))
    x = rng.random((3, 40, V)) < 0.3
    want = free_energy(x, W, b, c)
    got = summarizer(rbm)({"samples": x})["free_energy"]
    assert got.shape == (3, 40) and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert not np.array_equal(got, want)          # the float32 path, not the float64 one
    big = RBM(rbm.W * 40, rbm.b, rbm.c)           # pre-activations past PRODUCT_MAX_ACT
    np.testing.assert_allclose(summarizer(big)({"samples": x})["free_energy"],
                               free_energy(x, np.asarray(big.W, np.float64), b, c), rtol=1e-6)
