"""The compiled lagged products of the streaming ESS (mixlab.league.lag_products) are each
lag's dot product of the block with itself shifted, for every lag count (the eight-lag passes
and the lags left over), block length and layout."""

from __future__ import annotations

import numpy as np
import pytest

from mixlab.league.lag_products import lag_products


def by_definition(e: np.ndarray, L: int) -> np.ndarray:
    """``Σ_u e[..., L+u] e[..., L+u−t]``, ``t = 0..L``, one dot product per lag and series."""
    C, S, W = e.shape
    out = np.zeros((C, S, L + 1))
    for c in range(C):
        for s in range(S):
            row = e[c, s]
            for t in range(L + 1):
                out[c, s, t] = float(np.dot(row[L:], row[L - t:W - t]))
    return out


@pytest.mark.parametrize("L, B", [(64, 300), (0, 5), (7, 1), (8, 20), (13, 40), (64, 0)])
def test_equals_each_lag_s_dot_product(L, B):
    e = np.random.default_rng(L * 100 + B).normal(size=(3, 2, L + B))
    got = lag_products(e, L)
    assert got.shape == (3, 2, L + 1)
    np.testing.assert_allclose(got, by_definition(e, L), rtol=1e-12, atol=1e-12)


def test_a_strided_or_integer_block_is_read_as_its_values():
    x = np.random.default_rng(1).integers(-3, 4, size=(2, 3, 2 * 80))
    view = x[:, :, ::2]                                     # not contiguous, int64
    np.testing.assert_allclose(lag_products(view, 16), by_definition(view.astype(float), 16),
                               rtol=1e-12)


def test_a_known_series():
    """1, 2, 3 after the two predecessors 0, 0: lag 0 is 1+4+9, lag 1 is 2·1+3·2, lag 2 is 3·1."""
    e = np.array([[[0.0, 0.0, 1.0, 2.0, 3.0]]])
    assert lag_products(e, 2).tolist() == [[[14.0, 8.0, 3.0]]]


def test_too_short_a_block_is_refused():
    with pytest.raises(ValueError, match="cannot hold 4 predecessors"):
        lag_products(np.zeros((1, 1, 3)), 4)
