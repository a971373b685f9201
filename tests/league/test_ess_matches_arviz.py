"""The league's NumPy ESS and MCSE (mixlab.league.ess) give ArviZ's numbers."""

import warnings

import numpy as np
import pytest

from mixlab.diagnostics.arviz_quiet import arviz
from mixlab.league import ess


def _ar1(rng, chains, draws, phi, n=None):
    shape = (chains, draws) if n is None else (chains, draws, n)
    x = np.empty(shape)
    e = rng.standard_normal(shape)
    x[:, 0] = e[:, 0]
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return x


def _cases():
    rng = np.random.default_rng(11)
    for chains, draws, phi in ((1, 4, 0.0), (1, 5, 0.5), (2, 7, 0.9), (4, 100, 0.3),
                               (10, 37, 0.95), (3, 500, -0.4), (10, 20, 0.99),
                               (3, 300, 0.999), (2, 400, -0.95)):
        yield _ar1(rng, chains, draws, phi)
    yield (rng.random((10, 60)) < 0.2).astype(float)          # binary: many ties
    yield rng.integers(0, 4, size=(5, 33)).astype(float)       # few distinct values
    yield np.ones((4, 30))                                     # constant
    yield _ar1(rng, 4, 3, 0.5)                                 # too few draws: NaN
    x = _ar1(rng, 4, 30, 0.5)
    x[1, 3] = np.nan
    yield x                                                    # a NaN: NaN


@pytest.mark.parametrize("i", range(14))
def test_bulk_ess_is_arviz(i):
    x = list(_cases())[i]
    az = arviz()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = float(az.ess(x, method="bulk"))
    got = ess.ess_bulk(x)
    if np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(want, rel=1e-9)


def test_mcse_of_the_mean_is_arviz_per_site():
    rng = np.random.default_rng(5)
    x = _ar1(rng, 10, 32, 0.7, n=6)
    x[:, :, 2] = 0.25                                          # a constant site
    x[:, :, 4] = (x[:, :, 4] > 0.3)                            # a binary site
    x[:, :, 5] = _ar1(rng, 10, 32, 0.999)                      # Geyer runs to the last lag
    x[3, 7, 1] = np.nan                                        # a NaN: that site alone NaN
    az = arviz()
    for arr in (x, x[:, :4], x[:, :3]):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.asarray(az.mcse(az.convert_to_dataset({"p": arr}), method="mean")["p"],
                              np.float64)
        got = ess.mcse_mean(arr)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)
        assert np.array_equal(np.isnan(got), np.isnan(want))


def _blom(v):
    from scipy.special import ndtri
    from scipy.stats import rankdata

    return ndtri((rankdata(v) - 3 / 8) / (len(v) - 2 * 3 / 8 + 1))


def _values(kind: str, rng, n: int = 20_000) -> np.ndarray:
    """n values of a summary of the given kind."""
    return {"binary": lambda: (rng.random(n) < 0.3).astype(float),
            "counts with gaps": lambda: rng.choice([0, 3, 4, 17, 90], n).astype(float),
            "negative whole numbers": lambda: rng.integers(-40, 5, n).astype(float),
            "whole numbers far from 0": lambda: 1e12 + rng.integers(0, 7, n),
            "wide whole numbers": lambda: rng.integers(0, 10 * n, n).astype(float),
            "halves": lambda: rng.integers(0, 9, n) / 2.0,
            # a value the ranking's sample of every n // 4096-th value never sees
            "halves and a rare third": lambda: np.where(np.arange(n) == 7, 1 / 3,
                                                        rng.integers(0, 9, n) / 2.0),
            # an energy looked up from a table of states: a thousand tied values
            "a table's values": lambda: rng.standard_normal(1000)[rng.integers(0, 1000, n)],
            "signed zeros": lambda: rng.choice([-0.0, 0.0, 0.25, -1.5], n),
            "continuous": lambda: rng.standard_normal(n)}[kind]()


def _spy_on_grouping(monkeypatch) -> list:
    """The results of every call of the hash grouping the ranking makes, in a list."""
    from mixlab.league import tie_groups

    tried = []
    group = tie_groups.group_values
    monkeypatch.setattr(tie_groups, "group_values",
                        lambda x, cap: tried.append(group(x, cap)) or tried[-1])
    return tried


@pytest.mark.parametrize("kind", ["binary", "counts with gaps", "negative whole numbers",
                                  "whole numbers far from 0", "wide whole numbers",
                                  "halves", "halves and a rare third", "a table's values",
                                  "signed zeros", "continuous"])
def test_normal_scores_are_blom_scores_of_the_average_ranks(kind):
    """Each way of ranking (by offset for whole numbers in a short range, by hashing the values
    of a summary with ties, by sorting otherwise) gives scipy's ranks' scores."""
    v = _values(kind, np.random.default_rng(3))
    np.testing.assert_allclose(ess._normal_scores(v), _blom(v), rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind, grouped", [("a table's values", True),
                                            ("signed zeros", True), ("continuous", False)])
def test_normal_scores_group_ties_by_hash(kind, grouped, monkeypatch):
    """Values with ties (as a sample of them shows) are grouped by the hash table, mostly
    distinct ones are sorted without trying it."""
    v = _values(kind, np.random.default_rng(4))
    tried = _spy_on_grouping(monkeypatch)
    np.testing.assert_allclose(ess._normal_scores(v), _blom(v), rtol=0, atol=1e-12)
    assert len(tried) == int(grouped) and all(t is not None for t in tried)


def test_normal_scores_sort_when_the_ties_outnumber_the_hash_table(monkeypatch):
    """Past TIE_GROUPS distinct values the grouping gives up and the ranking sorts: the same
    scores, and the grouping was tried (the sample of the values shows few distinct ones) and
    declined (the rare values the sample missed are too many)."""
    rng = np.random.default_rng(5)
    v = rng.standard_normal(50)[rng.integers(0, 50, 20_000)] / 3.0
    v[1::40] = rng.standard_normal(500)          # the sample reads every 4th value from 0
    monkeypatch.setattr(ess, "TIE_GROUPS", 100)
    tried = _spy_on_grouping(monkeypatch)
    np.testing.assert_allclose(ess._normal_scores(v), _blom(v), rtol=0, atol=1e-12)
    assert tried == [None]


@pytest.mark.parametrize("phi, stages, by_fft", [(0.0, [(0, 16)], False),
                                                  (0.5, [(0, 16)], False),
                                                  (0.7, [(0, 16), (16, 32)], False),
                                                  (0.99, [(0, 16), (16, 32)], True)])
def test_short_sequences_use_the_direct_lags_and_long_ones_the_fft(phi, stages, by_fft,
                                                                   monkeypatch):
    """Independent and quickly mixing chains end Geyer's sequence within the first 16 directly
    summed lags, a chain mixing a little slower within the next 16, a slowly mixing one runs
    past them and is computed by FFT; every way gives ArviZ's ESS."""
    x = _ar1(np.random.default_rng(7), 4, 2000, phi)
    calls, direct = [], []
    fft, summed = ess._autocov_fft, ess._autocov_direct
    monkeypatch.setattr(ess, "_autocov_fft", lambda y: calls.append(1) or fft(y))
    monkeypatch.setattr(ess, "_autocov_direct",
                        lambda y, lags, first=0: direct.append((first, lags)) or
                        summed(y, lags, first))
    got = ess.ess_bulk(x)
    assert bool(calls) == by_fft
    assert direct == stages
    az = arviz()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = float(az.ess(x, method="bulk"))
    assert got == pytest.approx(want, rel=1e-9)
    # and the two ways give the same autocovariances, to rounding
    y = ess._centred(x[:, :, None])
    np.testing.assert_allclose(ess._autocov_direct(y, 16), fft(y)[:16], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ess._autocov_direct(y, 32, 16), fft(y)[16:32], rtol=1e-9,
                               atol=1e-12)
