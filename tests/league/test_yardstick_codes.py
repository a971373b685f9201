"""The MRF yardstick counts subset codes by ``bincount``: every number it keeps equals the
one-hot features' (the integer sums of the same indicators)."""

from __future__ import annotations

import numpy as np

from mixlab.austerity.mrf import subset_codes
from mixlab.league.cost import WORK_KEY
from mixlab.league.yardstick import MarginalYardstick


def test_codes_keep_what_the_one_hot_features_keep():
    rng = np.random.default_rng(3)
    D, M, k, C = 9, 4, 3, 5
    S = 1 << k
    subsets = np.array([rng.choice(D, k, replace=False) for _ in range(M)])
    truth = rng.dirichlet(np.ones(S), M).ravel()

    def codes(x):
        return subset_codes(x, subsets)

    def one_hot(x):
        return codes(x)[..., None] == np.arange(S)

    kw = dict(work_marks=[150.0, 700.0], second_marks=[0.3, 2.5], scale=S)
    by_codes = MarginalYardstick(truth, codes=codes, **kw)
    by_features = MarginalYardstick(truth, features=one_hot, **kw)
    seconds = 0.0
    for B in (7, 1, 40, 23, 300, 64):          # blocks past full batches: merges happen
        x = rng.random((C, B, D)) < rng.random(D)
        draws = {"samples": x, WORK_KEY: rng.random((C, B))}
        seconds += 0.4
        for y in (by_codes, by_features):
            y.update(draws, 0, seconds)
    assert by_features.blen > 1                 # the batches were merged
    for attr in MarginalYardstick.state_attrs:
        a, b = getattr(by_codes, attr), getattr(by_features, attr)
        np.testing.assert_array_equal(np.asarray(a, float), np.asarray(b, float), err_msg=attr)
    np.testing.assert_array_equal(by_codes.mcse(), by_features.mcse())
