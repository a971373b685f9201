import csv
from contextlib import contextmanager

import pytest

from tests.plugins.conftest import example_site  # noqa: F401  (the installed example plugin)


@contextmanager
def no_league_figure():
    """Leagues run inside it write every output but league.png: for the tests that read only
    the tables (test_league_cli.py's hot league draws and checks the figure)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("mixlab.league.figure.draw_league", lambda *a, **k: None)
        yield


def draw_determined_table(league_dir):
    """``league.csv``'s columns that depend on the draws alone (the equal-work ones, the ESS
    of the equal-work streams, the stated error), per (target, sampler): equal wherever the
    cells ran."""
    from mixlab.league.report import WORK_COLUMNS

    same = WORK_COLUMNS + ("reach_error", "work_error@0.5_median")
    with open(league_dir / "league.csv") as fh:
        return {(r["target"], r["sampler"]): tuple(r[c] for c in same)
                for r in csv.DictReader(fh)}
