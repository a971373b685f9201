"""The power table (mixlab.league.power): fractions flagged per target and beta, and the
smallest |1 - beta| flagged in at least 95% of the repeats."""

import math

from mixlab.league.power import power_raw, report, smallest_flagged


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
    assert table.splitlines()[1] == "a,0.75,1.0,0.4"


def test_power_league_runs_the_tempered_sampler_alone_over_the_grid():
    raw = power_raw({"family": "spinglass", "samplers": {"mine": {"method": "gibbs"}}},
                    "spinglass")
    assert raw["calibration"] is True
    assert raw["only_samplers"] == list(raw["samplers"])
    assert [e["beta"] for e in raw["samplers"].values()] == [0.99, 0.97, 0.95, 0.9, 0.8, 0.6]
    assert {e["method"] for e in raw["samplers"].values()} == {"cal-tempered-gibbs"}
