"""The power table (mixlab.league.power): fractions flagged per target and beta, and the
smallest |1 - beta| flagged in at least 95% of the repeats."""

import math

from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.league.power import power_raw, report, smallest_flagged
from mixlab.league.rank import Entry


def test_smallest_flagged_needs_the_level():
    assert math.isclose(smallest_flagged({0.99: 0.0, 0.95: 1.0, 0.9: 1.0, 0.6: 1.0}), 0.05)
    assert math.isclose(smallest_flagged({0.99: 0.9, 0.9: 0.94, 0.6: 0.95}), 0.4)
    assert math.isnan(smallest_flagged({0.9: 0.5, 0.6: 0.9}))


def test_report_counts_the_repeats():
    flagged = {("a", 0.9): [1, 1, 0, 1], ("a", 0.6): [1, 1, 1, 1],
               ("b", 0.9): [0, 0, 0, 0], ("b", 0.6): [0, 1, 1, 1]}
    specs = [{"family": "spinglass", "scale": "quick", "seed": 29 + r} for r in range(4)]
    md, table = report(flagged, specs)
    assert "R = 4 repeats" in md and "29, 30, 31, 32" in md
    assert "| a | 0.75 | 1.00 | 0.4 |" in md
    assert "| b | 0.00 | 0.75 | none |" in md
    assert table.splitlines()[1] == "a,0.75,1.0,0.4,0"
    assert "Incomplete" not in md


def test_a_beta_with_a_cell_that_did_not_complete_is_marked_and_not_counted():
    """Three of four repeats flagged beta = 0.9 and the fourth did not complete: 3 of 3 is not
    a statement about 4 leagues, so the smallest |1 - beta| falls back to 0.4."""
    flagged = {("a", 0.9): [1, 1, None, 1], ("a", 0.6): [1, 1, 1, 1],
               ("b", 0.9): [None] * 4, ("b", 0.6): [0, 1, 1, 1]}
    specs = [{"family": "spinglass", "scale": "paper", "seed": 29 + r} for r in range(4)]
    md, table = report(flagged, specs)
    assert "| a | 1.00 of 3 | 1.00 | 0.4 |" in md
    assert "| b | none complete | 0.75 | none |" in md
    assert "**Incomplete:** 5 cell(s) did not complete" in md
    rows = table.splitlines()
    assert rows[0].endswith("smallest_flagged_1_minus_beta,incomplete_cells")
    assert rows[1:] == ["a,1.0,1.0,0.4,1", "b,,0.75,,4"]


def test_power_command_exits_1_after_writing_when_a_cell_did_not_complete(monkeypatch,
                                                                           tmp_path):
    from mixlab.league import league

    def one_league(spec, out, **kw):     # beta0.6 fails in the second repeat
        fails = spec["seed"] == 30
        return "", [Entry("mixed-c1.5", "beta0.9", "complete", "", {"verdict/verdict": "biased"}),
                    Entry("mixed-c1.5", "beta0.6", "failed" if fails else "complete",
                          "boom" if fails else "", {"verdict/verdict": "biased"})]

    monkeypatch.setattr(league, "run_league", one_league)
    r = CliRunner().invoke(cli, ["league", "spinglass", "--power", "2", "--targets",
                                 "mixed-c1.5", "-o", str(tmp_path / "p")])
    assert r.exit_code == 1, r.output
    assert "1 power league cell(s) did not complete" in r.output
    md = (tmp_path / "p" / "power.md").read_text()
    assert "| mixed-c1.5 | 1.00 | 1.00 of 1 | 0.1 |" in md and "**Incomplete:** 1 cell" in md


def test_power_league_runs_the_tempered_sampler_alone_over_the_grid():
    raw = power_raw({"family": "spinglass", "samplers": {"mine": {"method": "gibbs"}}},
                    "spinglass")
    assert raw["calibration"] is True
    assert raw["only_samplers"] == list(raw["samplers"])
    assert [e["beta"] for e in raw["samplers"].values()] == [0.99, 0.97, 0.95, 0.9, 0.8, 0.6]
    assert {e["method"] for e in raw["samplers"].values()} == {"cal-tempered-gibbs"}
