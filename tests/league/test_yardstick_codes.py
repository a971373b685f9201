"""The MRF yardstick counts subset codes by ``bincount``, the RBM's sums its pairwise moments
as xᵀx per chain: every number either keeps equals that of the per-draw features (the integer
sums of the same indicators and products)."""

from __future__ import annotations

import numpy as np

from mixlab.austerity.mrf import subset_codes
from mixlab.league.cost import WORK_KEY
from mixlab.league.yardstick import MarginalYardstick, moment_sums


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


def test_moment_sums_keep_what_the_pairwise_features_keep():
    """The RBM targets' pairwise moments summed as xᵀx per chain (``feature_sums``): every
    number the yardstick keeps equals that of the per-draw products x_i x_j (i < j)."""
    rng = np.random.default_rng(4)
    V, C = 7, 4
    iu = np.triu_indices(V, 1)
    truth = rng.random(V + len(iu[0]))

    def pairwise(x):
        x = np.asarray(x, bool)
        return np.concatenate([x, x[..., iu[0]] & x[..., iu[1]]], axis=-1)

    kw = dict(work_marks=[90.0, 600.0], second_marks=[0.3, 2.5])
    by_sums = MarginalYardstick(truth, feature_sums=moment_sums(V), **kw)
    by_features = MarginalYardstick(truth, features=pairwise, **kw)
    seconds = 0.0
    for B in (5, 1, 33, 80, 250, 19):
        x = rng.random((C, B, V)) < rng.random(V)
        draws = {"samples": x, WORK_KEY: rng.random((C, B))}
        seconds += 0.4
        for y in (by_sums, by_features):
            y.update(draws, 0, seconds)
    assert by_features.blen > 1 and np.isfinite(by_sums.work_marks_err).all()
    for attr in MarginalYardstick.state_attrs:
        a, b = getattr(by_sums, attr), getattr(by_features, attr)
        np.testing.assert_array_equal(np.asarray(a, float), np.asarray(b, float), err_msg=attr)
    np.testing.assert_array_equal(by_sums.mcse(), by_features.mcse())
