"""A league cell reports what scoring its draws cost beside the sampling: the yardstick's
updates and the per-draw summaries (``evaluation_seconds``), and the bulk ESS
(``ess_seconds``), in all and per stream; the league's table says it in its second line."""

import dataclasses
import time

import pytest

from mixlab.league import targets
from mixlab.league.league import run_league
from mixlab.spec.builtin import resolve_spec
from mixlab.spec.resolver import load_spec
from tests.league.conftest import no_league_figure

PAUSE = 0.002     # seconds each summarized block is made to take


def test_a_cell_counts_the_seconds_its_scoring_takes(tmp_path, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path / "data"))
    calls = []
    build = targets.build

    def slow_summaries(family, definition, init="random"):
        inst = build(family, definition, init)

        def summarize(block):
            calls.append(1)
            time.sleep(PAUSE)
            return inst.summarize(block)
        return dataclasses.replace(inst, summarize=summarize)
    monkeypatch.setattr(targets, "build", slow_summaries)
    spec = load_spec(resolve_spec("league/mrf"), scale="quick", overrides=[
        "targets=[d12-s0.3]", "only_samplers=[exact]", "seeds=2", "chains=4",
        "seconds=0.05", "work=2e5"])
    with no_league_figure():
        text, (cell,) = run_league(spec, tmp_path / "league", workers=1)
    r = cell.results
    streams = ["s0_time", "s0_work", "s1_time", "s1_work"]
    assert r["evaluation_seconds"] == pytest.approx(
        sum(r[f"evaluation_seconds/{s}"] for s in streams))
    assert r["ess_seconds"] == pytest.approx(sum(r[f"ess_seconds/{s}"] for s in streams))
    assert r["ess_seconds"] > 0
    # every summarized block's pause is counted, and none of it as sampling
    assert r["evaluation_seconds"] >= len(calls) * PAUSE > 0
    assert r["sampling_seconds"] < 2 * 0.05 + 0.5
    line = text.splitlines()[1]
    total = r["evaluation_seconds"] + r["ess_seconds"]
    assert total < 10 and f"{total:.2g} s scoring the draws (yardstick and summaries" in line
    assert " 0 s scoring" not in line                     # a sub-second total keeps its digits
