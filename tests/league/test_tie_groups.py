"""The hash grouping of equal values behind the ESS's ranking (mixlab.league.tie_groups)."""

import numpy as np

from mixlab.league.tie_groups import group_values


def test_codes_distinct_and_counts_describe_the_values():
    rng = np.random.default_rng(0)
    v = rng.standard_normal(3000)[rng.integers(0, 3000, 50_000)]
    codes, distinct, counts = group_values(v)
    np.testing.assert_array_equal(distinct[codes], v)
    assert len(np.unique(distinct)) == len(distinct) == len(np.unique(v))
    np.testing.assert_array_equal(counts, np.bincount(codes, minlength=len(distinct)))
    # numbered in order of first appearance
    np.testing.assert_array_equal(distinct, v[np.sort(np.unique(v, return_index=True)[1])])


def test_signed_zeros_are_one_value():
    codes, distinct, counts = group_values(np.array([-0.0, 1.0, 0.0, -0.0, 1.0]))
    assert list(codes) == [0, 1, 0, 0, 1] and list(counts) == [3, 2]
    assert distinct[0] == 0.0 and not np.signbit(distinct[0])


def test_gives_up_past_the_cap_and_on_nan():
    v = np.repeat(np.arange(10) / 7.0, 3)
    assert group_values(v, cap=10) is not None
    assert group_values(v, cap=9) is None
    assert group_values(np.array([1.0, np.nan, 1.0])) is None
    assert group_values(np.full(10, np.nan)) is None
