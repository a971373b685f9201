"""The compiled fast-weight kernels (mixlab.rbm.fast_weights) against the numpy code they replaced:
every branch (rates or none, decay or none, rank-one or summed statistics, θ⁻ rebuilt or not)
gives the numpy sequence's float32 results bit for bit."""

import numpy as np
import pytest

from mixlab.rbm.fast_weights import sparse_vis_to_hid, update_weights

F32 = np.float32
EMPTY, EMPTY1 = np.empty((0, 0), F32), np.empty(0, F32)


def _arrays(V=37, H=23, seed=0):
    rng = np.random.default_rng(seed)
    T = rng.standard_normal((V, H)).astype(F32)
    E = (0.01 * rng.standard_normal((V, H))).astype(F32)
    W = rng.standard_normal((V, H)).astype(F32)
    x = (rng.random(V) < 0.3).astype(F32)
    h = rng.random(H).astype(F32)
    G = rng.random((V, H)).astype(F32)
    return T, E, W, x, h, G


@pytest.mark.parametrize("alpha", [1.0, 0.95])
@pytest.mark.parametrize("rates", [True, False])
@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("rebuild", [False, True])
def test_update_weights_equals_numpy_sequence(alpha, rates, dense, rebuild):
    T, E, W, x, h, G = _arrays()
    a, s = F32(alpha), F32(0.07)
    ref = T.copy()
    if alpha != 1.0:
        ref *= a
    if rates:
        ref += E
    if dense:
        ref -= s * G
    else:
        rows = np.flatnonzero(x)
        ref[rows] -= s * h
    out = T.copy()
    Weff = np.full_like(T, np.nan) if rebuild else EMPTY
    update_weights(out, a, E if rates else EMPTY, s, EMPTY1 if dense else x,
                   EMPTY1 if dense else h, G if dense else EMPTY, W if rebuild else EMPTY, Weff)
    np.testing.assert_array_equal(out, ref)
    if rebuild:
        np.testing.assert_array_equal(Weff, W + ref)
    assert not np.array_equal(out, T)


def test_update_weights_grayscale_x_weights_its_rows():
    """A non-binary x scales each row's subtraction by x_i (the general rank-one update)."""
    T, E, W, x, h, G = _arrays(seed=1)
    x = np.random.default_rng(2).random(x.size).astype(F32)
    out = T.copy()
    update_weights(out, F32(1), E, F32(0.5), x, h, EMPTY, EMPTY, EMPTY)
    np.testing.assert_allclose(out, T + E - 0.5 * np.outer(x, h), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("density", [0.0, 0.2, 1.0])
def test_sparse_vis_to_hid_equals_product(density):
    T, E, W, x, h, G = _arrays(V=300, H=50, seed=3)
    x = (np.random.default_rng(4).random(300) < density).astype(F32)
    out = np.full(50, np.nan, F32)
    sparse_vis_to_hid(x, W, out)
    np.testing.assert_allclose(out, x.astype(np.float64) @ W.astype(np.float64),
                               rtol=1e-5, atol=1e-4)
