"""A sweep's bookkeeping: ``sweep.csv``, one row per point, rewritten atomically as points end,
and the outcome the sweep returns."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MixlabError
from ..runfile import confined
from .grid import COMPLETE, PENDING, grid_points


@dataclass
class SweepOutcome:
    """What a sweep did: per point its status, reason, results and what happened to it."""

    csv_path: Path
    dirs: list[Path]
    status: list[str]
    error: list[str]
    results: list[dict]
    happened: list[str] = field(default_factory=list)  # ran/resumed/complete (no-op)/""

    @property
    def failed(self) -> list[int]:
        return [i for i, s in enumerate(self.status) if s != COMPLETE]

    def count(self, what: str) -> int:
        return sum(h == what for h in self.happened)


def write_csv_atomic(path: Path, header: list, rows: list[list]) -> None:
    """Write ``sweep.csv`` atomically (:func:`mixlab.runfile.atomic.atomic_write`): readers see the
    previous table or the new one, never half of one. A write failure (full disk) is a
    one-line MixlabError saying that the complete points are kept."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    _write_bookkeeping(path, buf.getvalue())


def _write_bookkeeping(path: Path, text: str) -> None:
    from ..runfile.atomic import WriteFailure

    try:
        confined.write_atomic(path.parent, path.name, text.encode())
    except WriteFailure as exc:
        raise MixlabError(f"{exc}; the sweep stopped (the points that completed are kept in "
                          f"their run directories); free space and run the same command again "
                          f"to run the others") from None


class _Table:
    """The sweep's bookkeeping: one row per point, rewritten to sweep.csv as points end."""

    def __init__(self, sweep_dir: Path, grid: dict, summary: list[str], dirs: list[Path]):
        self.path = sweep_dir / "sweep.csv"
        self.grid, self.summary, self.dirs = grid, summary, dirs
        self.points = grid_points(grid)
        n = len(dirs)
        self.status, self.error = [PENDING] * n, [""] * n
        self.results: list[dict] = [{} for _ in range(n)]
        self.happened = [""] * n

    def record(self, i: int, out: dict) -> None:
        self.status[i], self.error[i] = out["status"], out["error"]
        self.results[i], self.happened[i] = out["results"], out["happened"]
        self.write()

    def keys(self) -> list[str]:
        return self.summary or sorted({k for r in self.results for k in r})

    def write(self) -> None:
        keys = self.keys()
        rows = [[i, *p.values(), str(d), self.status[i], self.error[i],
                 *(self.results[i].get(k, "") for k in keys)]
                for i, (p, d) in enumerate(zip(self.points, self.dirs))]
        write_csv_atomic(self.path, ["point", *self.grid.keys(), "run", "status", "error", *keys],
                         rows)

    def outcome(self) -> SweepOutcome:
        return SweepOutcome(self.path, self.dirs, self.status, self.error, self.results,
                            self.happened)


def describe_outcome(out: SweepOutcome) -> str:
    """One line: how many points are complete, how many ran now, how many failed."""
    n = len(out.status)
    done = n - len(out.failed)
    ran = out.count("ran") + out.count("resumed")
    noop = out.count("complete")
    parts = [f"{done} of {n} point(s) complete ({ran} run now, {noop} already complete)"]
    if out.failed:
        parts.append(f"{len(out.failed)} failed")
    return ", ".join(parts) + f"; summary: {out.csv_path}"
