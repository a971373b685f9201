"""Ranking the samplers of each target, per clock (equal time, equal work).

The key of a sampler on a target at a clock is its median error over the seeds at the full
budget. Rules, in order:

1. A cell that failed, or has no number at this clock (equal work for a sampler that reports no
   cost statistic), gets no rank at that clock.
2. Three groups, in order, whatever the errors, by the cell's verdict
   (mixlab.league.verdict): ``ok``; ``not mixed`` and samplers without a verdict (too few
   draws, or a target whose truth is not exact: no verdict is no evidence of being
   unbiased); ``biased``. A sampler the league finds biased never ranks ahead of one that is
   ``ok`` or ``not mixed``.
3. Within each group, samplers are sorted by median error (then by the worst seed's error).
   Walking down the sorted list, a sampler **ties** with the leader of the current tie group
   when the seeds' ranges overlap (its best seed's error <= the leader's worst seed's error);
   tied samplers share the leader's rank. Otherwise it starts a new group whose rank is its
   position (1-based: competition ranking, "1, 1, 3").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Entry:
    """One cell as the ranking sees it (``results`` = the cell run's results)."""

    target: str
    sampler: str
    status: str
    error: str
    results: dict = field(default_factory=dict)
    run_dir: str = ""
    rank: dict = field(default_factory=dict)      # clock -> int rank or None
    tied: dict = field(default_factory=dict)      # clock -> bool

    def get(self, key: str) -> float:
        v = self.results.get(key, math.nan)
        try:
            return float(v)
        except (TypeError, ValueError):
            return math.nan

    @property
    def verdict(self) -> str:
        """``ok``, ``not mixed``, ``biased`` or ``""`` (none); a cell without a verdict
        result (written before verdicts existed) reads its bias flag."""
        v = self.results.get("verdict/verdict")
        if isinstance(v, str):
            return v
        return {0: "ok", 1: "biased"}.get(self.get("bias/flag"), "")

    @property
    def biased(self) -> bool:
        return self.verdict == "biased"

    @property
    def not_mixed(self) -> bool:
        return self.verdict == "not mixed"

    @property
    def unchecked(self) -> bool:
        """No verdict at all."""
        return self.verdict == ""

    @property
    def has_work(self) -> bool:
        return self.get("has_work") == 1


def rank_target(entries: list[Entry], clock: str) -> None:
    """Set ``rank[clock]`` and ``tied[clock]`` of every entry of one target."""
    ok = [e for e in entries if e.status == "complete"
          and math.isfinite(e.get(f"{clock}/error/median"))]
    for e in entries:
        e.rank[clock], e.tied[clock] = None, False
    groups = [[e for e in ok if e.verdict == "ok"],
              [e for e in ok if e.verdict in ("", "not mixed")],
              [e for e in ok if e.biased]]
    pos = 0
    for group in groups:
        group.sort(key=lambda e: (e.get(f"{clock}/error/median"), e.get(f"{clock}/error/max"),
                                  e.sampler))
        leader = None
        members: list[Entry] = []
        for e in group:
            pos += 1
            if leader is not None and e.get(f"{clock}/error/min") <= \
                    leader.get(f"{clock}/error/max"):
                e.rank[clock] = leader.rank[clock]
                members.append(e)
            else:
                if len(members) > 1:
                    for m in members:
                        m.tied[clock] = True
                leader, members = e, [e]
                e.rank[clock] = pos
        if len(members) > 1:
            for m in members:
                m.tied[clock] = True


def rank_all(entries: list[Entry], clocks=("time", "work")) -> None:
    by_target: dict[str, list[Entry]] = {}
    for e in entries:
        by_target.setdefault(e.target, []).append(e)
    for group in by_target.values():
        for clock in clocks:
            rank_target(group, clock)
