"""The verdict in a real league on a c = 3 spin glass: a correct sampler whose budget is too
short to mix is `not mixed`, never `biased`; heat bath at beta = 0.6 is `biased`; the ranking
puts the biased one last."""

import csv

import pytest

from mixlab.league.league import run_league
from mixlab.spec.builtin import resolve_spec
from mixlab.spec.resolver import load_spec
from tests.league.conftest import no_league_figure


@pytest.fixture(scope="module")
def c3_league(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("league-c3")
    mp = pytest.MonkeyPatch()
    mp.setenv("MIXLAB_DATA_DIR", str(tmp / "data"))
    # equal work: 3,000 sweeps of 10 chains (draw-determined, and longer than the 0.2 s of
    # equal time, so the verdict is decided on it)
    spec = load_spec(resolve_spec("league/spinglass"), scale="quick", overrides=[
        "calibration=true", "targets=[mixed-c3]", "only_samplers=[gibbs,gibbs_beta0.6]",
        "seconds=0.2", "work=3e7", "work_max_seconds=60"])
    with no_league_figure():
        _, entries = run_league(spec, tmp / "c3", workers=1)
    yield {e.sampler: e for e in entries}, tmp / "c3"
    mp.undo()


def test_gibbs_too_short_to_mix_on_c3_is_not_mixed(c3_league):
    entries, _ = c3_league
    g = entries["gibbs"]
    assert g.verdict == "not mixed" and g.results["verdict/clock"] == "work"
    assert g.get("verdict/rhat") > g.get("verdict/rhat_threshold")
    assert g.get("verdict/budget_needed") > 1


def test_a_cells_ess_bound_flags_reach_league_csv(c3_league):
    """Each clock's ``<clock>/ess_upper`` is 1 exactly when a seed's stream stored
    ``ess_upper/<stream>`` 1, and league.csv carries it."""
    entries, out = c3_league
    with open(out / "league.csv") as fh:
        table = {r["sampler"]: r for r in csv.DictReader(fh)}
    for name, e in entries.items():
        for clock in ("time", "work"):
            seeds = [v for k, v in e.results.items()
                     if k.startswith("ess_upper/") and k.endswith(f"_{clock}")]
            assert len(seeds) == 3 and set(seeds) <= {0, 1}
            assert e.get(f"{clock}/ess_upper") == int(any(seeds))
            assert table[name][f"{clock}_ess_upper_bound"] == str(int(any(seeds)))


def test_tempered_gibbs_on_c3_is_biased_and_ranked_last(c3_league):
    entries, out = c3_league
    hot, g = entries["gibbs_beta0.6"], entries["gibbs"]
    assert hot.verdict == "biased"
    assert hot.get("verdict/rhat") <= hot.get("verdict/rhat_threshold")
    for clock in ("time", "work"):
        assert hot.rank[clock] > g.rank[clock]
    with open(out / "league.csv") as fh:
        rows = {r["sampler"]: r for r in csv.DictReader(fh)}
    assert rows["gibbs_beta0.6"]["verdict"] == "biased"
    assert rows["gibbs"]["verdict"] == "not mixed" and rows["gibbs"]["verdict_clock"] == "work"
    assert float(rows["gibbs"]["budget_needed"]) > 1
    assert (out / "calibration.md").read_text().count("mixed-c3") == 1
