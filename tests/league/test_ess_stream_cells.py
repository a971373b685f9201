"""The streaming ESS in real league cells: within 10% of ``arviz.ess(method="bulk")`` on the
same cells' full draws (kept with ``every_draw``), the thinned record a cell keeps instead,
the fallback reported in a cell's results, and a killed stream resumed to the same numbers."""

from __future__ import annotations

import numpy as np
import pytest

from mixlab.league import ess_stream
from mixlab.league.ess import MIN_DRAWS
from mixlab.league.league import run_league
from mixlab.run.streams import run_stream
from mixlab.runfile.store import RunReader, RunStore
from mixlab.spec.builtin import resolve_spec
from mixlab.spec.resolver import load_spec
from tests.league.conftest import no_league_figure

#: (family, target, samplers, work): spin glass, MRF and RBM cells whose equal-work streams
#: (a budget in draws, whatever the host's load) are long enough to be streamed, past the
#: record's 2,048 draws per chain (some 2,600 to 6,000)
CELLS = [("spinglass", "attractive-c0.5", "gibbs", 2.6e6),
         ("mrf", "d12-s0.1", "exact_lookup,approx", 1.8e7),
         ("rbm", "usps4x4-h8", "gibbs", 8e5)]


def _league(tmp_path, family, target, samplers, *extra):
    spec = load_spec(resolve_spec(f"league/{family}"), scale="quick", overrides=[
        f"targets=[{target}]", f"only_samplers=[{samplers}]", "seeds=2", "seconds=0.2",
        "work_max_seconds=60", *extra])
    with no_league_figure():
        _, cells = run_league(spec, tmp_path / family, workers=1)
    return cells


@pytest.mark.parametrize("family, target, samplers, work", CELLS)
def test_a_cells_streaming_ess_is_within_10_percent_of_arviz_on_its_full_draws(
        tmp_path, monkeypatch, family, target, samplers, work):
    from mixlab.diagnostics.arviz_quiet import arviz

    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path / "data"))
    az = arviz()
    streamed = 0
    for cell in _league(tmp_path, family, target, samplers, "every_draw=true", f"work={work}"):
        assert cell.status == "complete", cell
        with RunReader(cell.run_dir) as run:
            res = run.results()
            for name in run.stream_names():
                summ = run.stream_summaries(name)
                assert run.summary_thinning(name) is None      # every draw kept
                if res[f"ess_method/{name}"] == "none":
                    # an equal-time stream a loaded host left with too few draws for an ESS
                    assert name.endswith("_time"), (cell.run_dir, name)
                    assert run.stream_attrs(name)["draws"] < MIN_DRAWS, (cell.run_dir, name)
                    continue
                want = min(float(az.ess(v, method="bulk")) for v in summ.values())
                got = res[f"ess/{name}"]
                assert got == pytest.approx(want, rel=0.10), (cell.run_dir, name)
                streamed += res[f"ess_method/{name}"] != "record"
    # the comparison is of streamed estimates (at least the equal-work streams'), not the
    # record's
    assert streamed >= 2


def test_a_cell_keeps_a_thinned_record_with_the_streaming_ess(tmp_path, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path / "data"))
    (cell,) = _league(tmp_path, "mrf", "d12-s0.3", "exact_lookup", "work=1.8e7")
    with RunReader(cell.run_dir) as run:
        res = run.results()
        thin = run.summary_thinning("s0_work")
        rec = run.stream_summaries("s0_work")
        n = run.stream_attrs("s0_work")["draws"]
        ds = run.f["streams/s0_work/summary/energy"]
        assert thin["draws"] == n > ess_stream.RECORD and thin["stride"] > 1
        assert rec["energy"].shape == (10, len(range(0, n, thin["stride"])))
        assert rec["energy"].shape[1] <= ess_stream.RECORD
        assert run.f["streams/s0_work/summary/subset_0"].dtype == np.uint8
        assert ds.attrs["ess_method"] in ("stream", "coarse", "fallback")
        assert res["ess/s0_work"] <= ds.attrs["ess_stream"]
        assert res["ess_seconds"] > 0
    from click.testing import CliRunner

    from mixlab.cli import cli

    r = CliRunner().invoke(cli, ["diagnose", str(cell.run_dir)])
    assert r.exit_code == 0, r.output
    assert "thinned records" in r.output and f"s0_work every {thin['stride']}" in r.output


def test_a_cell_reports_the_fallback(tmp_path, monkeypatch):
    """With a lag bound of 2 (coarse lags over pairs of draws) a Gibbs chain's summaries run
    past both: the batch-means fallback, said in the cell's results."""
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(ess_stream, "LAGS", 2)
    monkeypatch.setattr(ess_stream, "RECORD", 64)
    (cell,) = _league(tmp_path, "mrf", "d12-s0.3", "exact")
    res = cell.results
    methods = {k: v for k, v in res.items() if k.startswith("ess_method/")}
    assert res["ess_fallback"] == sum(v == "fallback" for v in methods.values()) >= 1


class _AR1:
    """Two chains of an AR(1) walk; ``fail_at``: the step that raises (a killed process)."""

    chains = 2

    def __init__(self, fail_at=None):
        self.fail_at, self.steps = fail_at, 0

    def init(self, rng):
        return {"x": np.zeros(2)}

    def step(self, state, rng):
        self.steps += 1
        if self.steps == self.fail_at:
            raise KeyboardInterrupt
        x = 0.9 * state["x"] + rng.normal(size=2)
        return {"x": x}, {"x": x}, {}


def _stream(run_dir, sampler) -> dict:
    """Stream 's' of 9,000 draws in blocks of 700, checkpointed after every block, with the
    streaming ESS; its estimates and thinned record."""
    run_dir.mkdir(exist_ok=True)
    store = RunStore(run_dir)
    try:
        store.f.attrs["spec"] = "{}"
        es = ess_stream.StreamingESS()
        run_stream(store, "s", sampler, np.random.default_rng(3), draws=9000, block=700,
                   record=False, evaluators=[es], checkpoint_seconds=0.0,
                   summarize=lambda b: {"x": b["x"], "up": b["x"] > 0},
                   record_summaries=False)
        return {"estimates": es.estimates(), "record": es.record(), "state": es.state()}
    finally:
        store.close()


def test_a_killed_stream_resumes_to_the_same_streaming_ess(tmp_path):
    whole = _stream(tmp_path / "whole", _AR1())
    with pytest.raises(KeyboardInterrupt):
        _stream(tmp_path / "cut", _AR1(fail_at=5000))
    resumed = _stream(tmp_path / "cut", _AR1())
    assert resumed["estimates"] == whole["estimates"]
    assert whole["estimates"]["x"]["method"] == "stream"
    for k, v in whole["record"].items():
        np.testing.assert_array_equal(resumed["record"][k], v)
    for k, v in whole["state"].items():
        np.testing.assert_array_equal(resumed["state"][k], v, err_msg=k)
    with RunReader(tmp_path / "cut") as run:      # no summary stored with every draw
        assert run.stream_summaries("s") == {}
