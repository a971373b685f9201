"""The streaming ESS of a league stream's summaries (mixlab.league.ess_stream): AR(1) chains'
closed form, ArviZ's numbers on the same draws, independence from the blocks the draws arrive
in, the coarse lags and the batch-means fallback for slowly mixing chains, a checkpointed
state that resumes to the same numbers, and the thinned record."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from scipy.signal import lfilter

from mixlab.league import ess_stream
from mixlab.league.ess import _ess, _split
from mixlab.league.ess_stream import StreamingESS
from mixlab.runfile.checkpoint import read_state, write_state


def ar1(rho: float, chains: int, n: int, seed: int) -> np.ndarray:
    """``(chains, n)`` AR(1) chains ``x_i = ρ x_{i−1} + ε_i`` started from the stationary law."""
    rng = np.random.default_rng(seed)
    e = rng.normal(size=(chains, n))
    e[:, 0] /= np.sqrt(1 - rho ** 2)
    return lfilter([1.0], [1.0, -rho], e, axis=1)


def fed(blocks, **kwargs) -> StreamingESS:
    """A StreamingESS fed ``blocks``: ``[{stat: (chains, n_b)}]``."""
    es = StreamingESS(**kwargs)
    for i, b in enumerate(blocks):
        es.update({f"summary/{k}": v for k, v in b.items()}, i, float(i))
    return es


def cut(x: dict, pieces: int) -> list[dict]:
    """``x {stat: (chains, n)}`` in ``pieces`` blocks of uneven sizes."""
    n = next(iter(x.values())).shape[1]
    edges = np.unique(np.r_[0, np.sort(np.random.default_rng(pieces).choice(
        np.arange(1, n), pieces - 1, replace=False)), n])
    return [{k: v[:, a:b] for k, v in x.items()} for a, b in zip(edges[:-1], edges[1:])]


@pytest.mark.parametrize("rho", [-0.4, 0.0, 0.5, 0.8, 0.97])
def test_ar1_chains_ess_is_the_closed_form(rho):
    """ESS of C AR(1) chains of n draws: C n (1 − ρ)/(1 + ρ); the median over 6 repetitions
    within 3% (ρ = 0.97, τ = 66, needs the coarse lags: within 6%)."""
    C, n = 16, 25_000
    want = C * n * (1 - rho) / (1 + rho)
    got, methods = [], set()
    for seed in range(6):
        est = fed([{"a": ar1(rho, C, n, seed)}]).estimates()["a"]
        got.append(est["ess"] / want)
        methods.add(est["method"])
    assert methods == ({"coarse"} if rho == 0.97 else {"stream"})
    assert np.median(got) == pytest.approx(1.0, abs=0.06 if rho == 0.97 else 0.03), got


@pytest.mark.parametrize("rho", [0.3, 0.9, 0.99])
def test_streaming_ess_is_arvizs_split_ess_of_the_raw_draws(rho):
    """On the same draws, the streamed ESS is ArviZ's split-chain ESS of the raw values (the
    split a batch away from the middle, the straddling pairs kept: within 0.5%); from the
    coarse lags (ρ = 0.99: τ = 199, past lag 64), within 3%."""
    x = ar1(rho, 8, 40_000, 7)
    want = _ess(_split(x)[:, :, None])[0]
    est = fed(cut({"a": x}, 5)).estimates()["a"]
    assert est["method"] == ("coarse" if rho == 0.99 else "stream")
    assert est["ess"] == pytest.approx(want, rel=0.03 if rho == 0.99 else 0.005)


def test_the_numbers_do_not_depend_on_the_blocks():
    """Fed in 1 block or in 37 uneven ones: the same ESS, MCSE and record (float rounding
    apart), and the same state but for rounding."""
    x = {"a": ar1(0.6, 6, 30_001, 1), "b": (ar1(0.95, 6, 30_001, 2) > 0).astype(np.uint8)}
    one, many = fed([x]), fed(cut(x, 37))
    e1, e37 = one.estimates(), many.estimates()
    for k in x:
        assert e1[k]["method"] == e37[k]["method"]
        assert e37[k]["ess"] == pytest.approx(e1[k]["ess"], rel=1e-9)
        assert e37[k]["mcse"] == pytest.approx(e1[k]["mcse"], rel=1e-9)
        np.testing.assert_array_equal(one.record()[k], many.record()[k])
    s1, s37 = one.state(), many.state()
    assert set(s1) == set(s37)
    for k, v in s1.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_allclose(s37[k], v, rtol=1e-9, atol=1e-6, err_msg=k)
        else:
            assert s37[k] == v, k


def test_the_record_keeps_evenly_spaced_draws_in_their_own_type():
    """At most RECORD draws per chain, every stride-th from draw 0, in the summary's type;
    every draw while there are at most RECORD, and then the ESS is the record's bulk ESS."""
    C, n = 3, 10_000
    idx = np.broadcast_to(np.arange(n, dtype=np.float64), (C, n))
    es = fed(cut({"i": idx, "u": (idx % 7).astype(np.uint8)}, 13))
    rec = es.record()
    assert es.stride == 8 and rec["i"].shape == (C, 1250)
    np.testing.assert_array_equal(rec["i"][0], np.arange(0, n, 8))
    assert rec["u"].dtype == np.uint8
    np.testing.assert_array_equal(rec["u"][1], np.arange(0, n, 8) % 7)
    short = fed([{"a": ar1(0.5, 4, 2048, 3)}])
    assert short.stride == 1
    from mixlab.league.ess import ess_bulk

    est = short.estimates()["a"]
    assert est["method"] == "record"
    assert est["ess"] == ess_bulk(short.record()["a"])


def test_a_slowly_mixing_chain_falls_back_to_batch_means_and_says_so():
    """τ ≈ 4,000: past the coarse lags too (64 x 64 draws): the batch-means ESS, method
    ``fallback``, within 35% of the closed form (few batches long against τ)."""
    rho, C, n = 0.9995, 10, 400_000
    want = C * n * (1 - rho) / (1 + rho)
    got = []
    for seed in range(3):
        est = fed([{"a": ar1(rho, C, n, seed)}]).estimates()["a"]
        assert est["method"] == "fallback"
        got.append(est["ess"] / want)
    assert np.median(got) == pytest.approx(1.0, abs=0.35), got


def test_chains_stuck_apart_give_the_fallbacks_floor_marked_as_an_upper_bound():
    """C chains each frozen near its own level (i.i.d. noise about a level drawn once): the
    mean's ESS is about C, but every batch mean of a chain is that chain's level, so the
    batch-means ESS sits at its floor ``C · batches`` (never below it: s²_b ≤ σ²), some
    ``batches`` times too high, and is marked ``upper``."""
    C, n = 8, 60_000
    rng = np.random.default_rng(11)
    x = rng.normal(size=(C, 1)) + 0.01 * rng.normal(size=(C, n))
    es = fed([{"a": x}])
    est = es.estimates()["a"]
    assert est["method"] == "fallback" and est["upper"] is True
    floor = C * es.nb
    assert 16 <= es.nb <= 32
    assert floor <= est["ess"] < 1.01 * floor


def test_a_fallback_on_batches_long_against_tau_is_an_estimate_not_a_bound():
    """τ ≈ 4,000 over 1.3 million draws a chain: past the coarse lags (batch means), but
    each batch some 16 autocorrelation times long, so the batch-means ESS is within 12% of
    the closed form C n (1 − ρ)/(1 + ρ) and not marked ``upper``; the same chains cut to
    200,000 draws (batches about two τ long) are."""
    rho, C, n = 0.9995, 4, 1_300_000
    want = C * n * (1 - rho) / (1 + rho)
    x = ar1(rho, C, n, 12)
    est = fed([{"a": x}]).estimates()["a"]
    assert est["method"] == "fallback" and est["upper"] is False
    assert est["ess"] / want == pytest.approx(1.0, abs=0.12)
    short = fed([{"a": x[:, :200_000]}]).estimates()["a"]
    assert short["method"] == "fallback" and short["upper"] is True


def test_mcse_is_sd_over_root_ess():
    x = ar1(0.5, 8, 20_000, 4)
    est = fed([{"a": x}]).estimates()["a"]
    assert est["mcse"] == pytest.approx(np.std(x, ddof=1) / np.sqrt(est["ess"]), rel=1e-9)


def test_a_checkpointed_state_resumes_to_the_same_numbers(tmp_path):
    """State written after 5 of 9 blocks (as data, an HDF5 group), loaded into a fresh
    estimator and fed the rest: the same state, ESS and record as never interrupted."""
    x = {"a": ar1(0.7, 5, 20_000, 5), "b": (ar1(0.2, 5, 20_000, 6) > 0.5).astype(np.uint8)}
    blocks = cut(x, 9)
    whole = fed(blocks)
    first = fed(blocks[:5])
    with h5py.File(tmp_path / "ck.h5", "w") as f:
        write_state(f.create_group("ev"), first.state(), "ev")
    with h5py.File(tmp_path / "ck.h5", "r") as f:
        resumed = StreamingESS()
        resumed.load_state(read_state(f["ev"]))
    for i, b in enumerate(blocks[5:]):
        resumed.update({f"summary/{k}": v for k, v in b.items()}, 0, 0.0)
    assert resumed.estimates() == whole.estimates()
    for k, v in whole.state().items():
        np.testing.assert_array_equal(resumed.state()[k], v, err_msg=k)


def test_the_lag_bound_sets_which_chains_stream(monkeypatch):
    """With a lag bound of 8 an AR(1) chain with τ = 9 runs past it (coarse lags or batch
    means then), with the default 64 it does not."""
    x = {"a": ar1(0.8, 6, 20_000, 8)}
    assert fed([x]).estimates()["a"]["method"] == "stream"
    monkeypatch.setattr(ess_stream, "LAGS", 8)
    monkeypatch.setattr(ess_stream, "RECORD", 256)
    assert fed([x]).estimates()["a"]["method"] in ("coarse", "fallback")
