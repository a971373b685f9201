"""Which page a ``mixlab report`` command asks for, and the page itself."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import UsageError
from ..runfile.store import RUN_FILE
from . import page


def kind_of(paths: list[str]) -> str:
    """``run``, ``league``, ``sweep`` or ``comparison`` (several paths)."""
    from .compare_page import is_sweep
    from .league_page import is_league

    if len(paths) > 1:
        return "comparison"
    p = Path(paths[0])
    if is_league(p):
        return "league"
    if is_sweep(p):
        return "sweep"
    if os.path.lexists(p / RUN_FILE):
        return "run"
    raise UsageError(f"{p} is neither a run directory (no {RUN_FILE}), a sweep (no sweep.csv) "
                     f"nor a league (no league.csv and league.json); give one of those, or "
                     f"several runs to compare")


def report_html(paths: list[str]) -> tuple[str, str]:
    """``(kind, html)`` of the page for ``paths``."""
    kind = kind_of(paths)
    if kind == "run":
        from .run_page import context
        return kind, page.render("run.html", **context(paths[0]))
    if kind == "league":
        from .league_page import context
        return kind, page.render("league.html", **context(paths[0]))
    from .compare_page import context
    return kind, page.render("compare.html", **context(paths))


def figures_html(figures_dir: str, runs_dir: str, claims_dir: str) -> str:
    """The figures index page (mixlab.report.figures_page)."""
    from .figures_page import context

    return page.render("figures.html", **context(figures_dir, runs_dir, claims_dir))
