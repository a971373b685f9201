"""The order a league's cells start in, so that its workers finish together.

A league's wall time is its busiest worker's: the cells' lengths summed over the workers, plus
the time one worker waits with no cell left while another finishes its last. A quick league has
a dozen cells of 6-10 s on two workers, so that wait is several percent of the league.
:class:`StartOrder` is the launcher's ordering policy (mixlab.launch.order) for the cells:

1. first one cell of each target not yet started (its first in table order), so that N workers
   compute N targets' truths side by side (the other cells of a target wait for its truth);
2. then the cells of targets with a finished cell or none running, longest expected first
   (a length unknown, when the target has no cell finished, counting as longest), and last
   those of targets whose only started cells are still running: their first cell may still
   be computing the truth, which they would wait for while another cell could run;
3. once every waiting cell has an expected length (and at most :data:`LOOKAHEAD_MAX` wait),
   the cell whose start now gives the earliest expected end of the whole league, the rest
   following longest first on whichever worker frees first (ties: the longest).

A cell's expected length is its sampling budget (seeds x seconds, the same for every cell)
plus an excess, its target's factor times its sampler's: ``log excess = α_target + φ_sampler``,
fitted to the finished cells' excesses by alternating means (the samplers' φ centred on 0, so
a sampler with none finished counts as the average one). The excess is what a cell costs
beyond its equal-time sampling: its truth, its equal-work streams, scoring its draws (a fast
sampler has more to score on every target) and its fixed costs. A product fits it better than
a sum: on the quick RBM league, Gibbs's excess over the fast-weight samplers' is some 3x on
every target, 1.4 s on the small RBMs and 2.6 s on the ISL one. It is a guess, good enough to
keep the long cells from coming last and to even out the workers' ends. The order changes no
number (each cell's seeds come from its place in the table), only when each cell runs.
"""

from __future__ import annotations

import heapq
import json
import math

from ..launch.order import Order

#: at most this many cells waiting for the earliest-end choice (each choice simulates the rest
#: once per distinct expected length); a longer queue starts longest expected first
LOOKAHEAD_MAX = 64
#: rounds of alternating means fitting the targets' and samplers' factors, at most (the fit
#: stops once no sampler's factor moves by 1e-9)
FIT_ROUNDS = 100


class StartOrder(Order):
    """The order of the cells ``cells`` (each with ``target`` and
    ``label``) on ``workers`` workers: ``left`` the indices of the cells not started, ``took``
    {index: wall seconds} of the cells finished, ``running`` {index: seconds so far} of the
    cells running; returns ``left`` reordered, the cell to start first."""

    def __init__(self, cells: list[dict], workers: int):
        self.workers = max(int(workers), 1)
        self.budget = [float(c.get("seeds", 1)) * float(c.get("seconds", 0.0)) for c in cells]
        self.target = [json.dumps(c["target"], sort_keys=True, default=str) for c in cells]
        self.sampler = [str(c["label"]) for c in cells]
        self.opening: dict[str, int] = {}
        for i, t in enumerate(self.target):
            self.opening.setdefault(t, i)

    def order(self, left: list[int], took: dict[int, float],
              running: dict[int, float] | None = None) -> list[int]:
        running = running or {}
        waiting = set(left)
        started = {self.target[i] for i in range(len(self.target)) if i not in waiting}
        openers = [i for i in left if self.target[i] not in started
                   and i == self.opening[self.target[i]]]
        expect = self.expected(took)
        finished = {self.target[i] for i in took}
        busy = {self.target[i] for i in running} - finished

        def key(i: int) -> tuple:   # a target whose truth may still be computing: after the rest
            return (self.target[i] in busy, -expect(i), self.opening[self.target[i]], i)
        rest = sorted((i for i in left if i not in openers), key=key)
        if openers or not rest or len(rest) > LOOKAHEAD_MAX \
                or any(math.isinf(expect(i)) for i in rest):
            return sorted(openers) + rest
        first = self._earliest_end(rest, expect, running)
        return [first] + [i for i in rest if i != first]

    def expected(self, took: dict[int, float]):
        """``expect(i)``: the expected wall seconds of cell ``i`` from the cells finished
        ``took`` (budget + target factor x sampler factor; inf when its target has none
        finished)."""
        # log excess of each finished cell (at least 1% of its budget, or 10 ms: a cell that
        # failed at once still counts, as a sampler or target that costs little)
        logs = {i: math.log(max(s - self.budget[i], 0.01 * self.budget[i], 0.01))
                for i, s in took.items()}
        alpha: dict[str, float] = {}
        phi: dict[str, float] = {}
        for _ in range(FIT_ROUNDS):
            alpha = _means((self.target[i], v - phi.get(self.sampler[i], 0.0))
                           for i, v in logs.items())
            new = _means((self.sampler[i], v - alpha[self.target[i]]) for i, v in logs.items())
            centre = sum(new.values()) / len(new) if new else 0.0
            new = {k: v - centre for k, v in new.items()}
            moved = max((abs(v - phi.get(k, 0.0)) for k, v in new.items()), default=0.0)
            phi = new
            if moved < 1e-9:
                break

        def expect(i: int) -> float:
            t = self.target[i]
            if t not in alpha:
                return math.inf
            return self.budget[i] + math.exp(alpha[t] + phi.get(self.sampler[i], 0.0))
        return expect

    def _earliest_end(self, rest: list[int], expect, running: dict[int, float]) -> int:
        """The cell of ``rest`` (longest expected first, every one finite) whose start now
        gives the earliest expected end of the league, the others then started longest first
        on the first worker free; the running cells end at their expected lengths (or now,
        past them; a running cell of a target with none finished: the longest waiting one's
        length)."""
        lengths = [expect(i) for i in rest]
        others = [max((expect(r) if math.isfinite(expect(r)) else lengths[0]) - s, 0.0)
                  for r, s in running.items()]
        others += [0.0] * max(self.workers - 1 - len(others), 0)
        best, best_end, tried = rest[0], math.inf, set()
        for k, i in enumerate(rest):
            if lengths[k] in tried:            # the same length: the same league end
                continue
            tried.add(lengths[k])
            free = others + [lengths[k]]
            heapq.heapify(free)
            for j, d in enumerate(lengths):
                if j != k:
                    heapq.heappush(free, heapq.heappop(free) + d)
            end = max(free)
            if end < best_end * (1 - 1e-9):
                best, best_end = i, end
        return best


def _means(pairs) -> dict[str, float]:
    """{key: mean of its values} of ``(key, value)`` pairs."""
    sums: dict[str, list[float]] = {}
    for k, v in pairs:
        sums.setdefault(k, []).append(v)
    return {k: sum(v) / len(v) for k, v in sums.items()}
