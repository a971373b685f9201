"""The shared numerics: binary-state codes."""

import numpy as np
import pytest

from mixlab.numerics import state_codes


@pytest.mark.parametrize("D", [1, 8, 9, 17, 62])
def test_state_codes_are_the_bits_read_little_endian(D):
    rng = np.random.default_rng(D)
    X = rng.random((4, 7, D)) < 0.5
    want = np.array([[sum(int(b) << i for i, b in enumerate(x)) for x in row] for row in X])
    for bits in (X, X.astype(np.uint8)):
        got = state_codes(bits)
        assert got.dtype == np.int64 and np.array_equal(got, want)
    with pytest.raises(ValueError, match="D <= 62"):
        state_codes(np.zeros((2, 63), bool))
