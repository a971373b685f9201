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
