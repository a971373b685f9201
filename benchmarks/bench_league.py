"""The league's overhead: its wall time against the sampling time its cells were given.

``ratio = wall time / (sum of the cells' sampling seconds / j)`` with ``-j 2``: 1 would be a
league that does nothing but sample on both cores; set-up, worker start-up, truth (cached in a
fresh data directory here, so computed once inside the figure), evaluation, ESS and the tables
are all inside it. Both modes run the quick spin glass league as ``mixlab league spinglass``
runs it (every registered sampler on its six targets, 30 cells, about 2 minutes): a smaller
league would measure the league's fixed costs (its start, its figure) more than its cells. The
detail gives the CPU seconds (user + system, this process and its workers) beside the wall
time: on a shared machine the wall time also counts the other jobs' share of the cores."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path


def run(quick: bool) -> list[dict]:      # the same league in both modes
    from mixlab.builtin_specs import resolve_spec
    from mixlab.league.league import run_league
    from mixlab.spec import load_spec

    spec = load_spec(resolve_spec("league/spinglass"), scale="quick")
    with tempfile.TemporaryDirectory() as tmp:
        old = os.environ.get("MIXLAB_DATA_DIR")
        os.environ["MIXLAB_DATA_DIR"] = str(Path(tmp) / "data")
        try:
            t0, cpu0 = time.perf_counter(), _cpu_seconds()
            _, entries = run_league(spec, Path(tmp) / "league", workers=2)
            wall, cpu = time.perf_counter() - t0, _cpu_seconds() - cpu0
        finally:
            if old is None:
                os.environ.pop("MIXLAB_DATA_DIR", None)
            else:
                os.environ["MIXLAB_DATA_DIR"] = old
    done = [e for e in entries if e.status == "complete"]
    sampling = sum(e.get("sampling_seconds") for e in done)
    ratio = wall / (sampling / 2)
    return [{"name": "league (the quick spin glass league, 30 cells): wall time / (cells' "
                     "sampling seconds / 2), -j 2",
             "ratio": ratio, "target": "<= 1.25", "ok": ratio <= 1.25 and len(done) == len(entries),
             "detail": f"{len(done)} of {len(entries)} cells, sampling {sampling:.1f} s, "
                       f"wall {wall:.1f} s, CPU {cpu:.1f} s"}]


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its waited-for children."""
    import resource

    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                  resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
