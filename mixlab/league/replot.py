"""``mixlab plot LEAGUE``: the league's figure drawn again from what its directory holds.

A league directory is data like a run directory: the cells are read through the same
confined, checked readers (mixlab.runfile.confined, mixlab.runfile.store.RunReader), the cell list comes from
``sweep.csv`` (each row's run directory taken as a directory of the league, whatever the path
the table names), and ``league.json`` gives the figure's labels (checked for the keys and types
the figure uses). The cells' results are ranked again (mixlab.league.rank) and the figure drawn
by :func:`mixlab.league.figure.draw_league`, so an unchanged league redraws the same bytes.
"""

from __future__ import annotations

import csv
import io
import json
import numbers
from pathlib import Path, PurePath

from ..errors import RunFileError
from ..runfile import confined

__all__ = ["FIGURES", "is_league", "redraw"]

FIGURES = ("league",)            # a league's figures (``--figure``)
TABLE_BYTES = 64 << 20
_INFO = {"family": str, "scale": str, "yardstick": str, "unit": str,
         "seeds": numbers.Real, "seconds": numbers.Real, "work": numbers.Real}


def is_league(d: Path) -> bool:
    """A league directory (its league.json and sweep.csv, and no run.h5 of its own)."""
    return all((d / n).exists() or (d / n).is_symlink() for n in ("league.json", "sweep.csv")) \
        and not (d / "run.h5").exists()


def _info(league_dir: Path) -> dict:
    path = league_dir / "league.json"
    try:
        info = json.loads(confined.read_text(league_dir, "league.json", limit=TABLE_BYTES))
    except (ValueError, RecursionError) as exc:
        raise RunFileError(f"{path} is not the JSON mixlab writes: {str(exc)[:100]}") from None
    if not isinstance(info, dict):
        raise RunFileError(f"{path} is not the JSON mixlab writes: not an object")
    for key, kind in _INFO.items():
        if not isinstance(info.get(key), kind) or isinstance(info.get(key), bool):
            raise RunFileError(f"{path}: its '{key}' is missing or not a "
                               f"{'number' if kind is numbers.Real else 'string'}; run the "
                               f"same 'mixlab league' command again to rewrite it")
    return info


def _entries(league_dir: Path) -> list:
    from ..runfile.store import RunReader
    from .rank import Entry, rank_all

    path = league_dir / "sweep.csv"
    reader = csv.DictReader(io.StringIO(confined.read_text(league_dir, "sweep.csv",
                                                           limit=TABLE_BYTES)))
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise RunFileError(f"{path} is not a table mixlab writes: {exc}") from None
    need = [c for c in ("target", "sampler", "run", "status") if c not in (reader.fieldnames or [])]
    if need or not rows:
        raise RunFileError(f"{path} is not a league's table: "
                           + (f"no {', '.join(need)} column" if need else "no rows"))
    entries = []
    for row in rows:
        if None in row or None in row.values():
            raise RunFileError(f"{path}: a row's fields do not match its header")
        name = PurePath(row["run"]).name
        cell = confined.check(league_dir, name or ".", directory=True)
        results = {}
        if row["status"] == "complete":
            with RunReader(cell) as r:
                results = r.results()
        entries.append(Entry(row["target"], row["sampler"], row["status"], row["error"] or "",
                             results, str(cell)))
    rank_all(entries)
    return entries


def redraw(league_dir: Path, output: Path | None = None) -> Path:
    """Draw the league's figure again into ``league_dir/league.png`` (or ``output``)."""
    from .figure import draw_league

    league_dir = Path(league_dir)
    return draw_league(league_dir, _entries(league_dir), _info(league_dir), output=output)
