"""The league's overhead: its wall time against the sampling time its cells were given.

``ratio = wall time / (sum of the cells' sampling seconds / j)`` with ``-j 2``: 1 would be a
league that does nothing but sample on both cores; set-up, worker start-up, truth (cached in a
fresh data directory here, so computed once inside the figure), evaluation, ESS and the tables
are all inside it. Both modes run three quick leagues as ``mixlab league FAMILY`` runs them:
spin glass (48 cells on eight targets, about 2 minutes), MRF and RBM (12 cells each, about 45 s; the RBM
league reads USPS through ``MIXLAB_DATA_MIRROR`` or the data directory's copy). The logistic
league is left out: in a fresh data directory its figure would be its HMC truths' (minutes),
not the league's. What each cell and stream costs once (opening and publishing the run file,
per-stream ESS, 64 evaluated blocks a stream) weighs against 1 s of sampling per stream in the
spin glass cells and 2 s in the MRF and RBM cells (docs/league.md, "Overhead"). The detail
gives the CPU seconds (user + system, this process and its workers) beside the wall time: on
a shared machine the wall time also counts the other jobs' share of the cores.

Each league also gets a floor row: ``(sampling + scoring) / sampling`` from the cells' own
timings (``evaluation_seconds``: the yardstick's updates and the per-draw summaries; and
``ess_seconds``), the ratio a league would have if it did nothing on both cores but sample and
score its draws. Where the floor is above 1.25, no bookkeeping could meet the target without
scoring fewer draws."""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

#: family -> what its row says of the league
LEAGUES = {"spinglass": "the quick spin glass league, 48 cells",
           "mrf": "the quick MRF league, 12 cells",
           "rbm": "the quick RBM league, 12 cells"}


def run(quick: bool) -> list[dict]:      # the same leagues in both modes
    return [row for family, what in LEAGUES.items() for row in _league_rows(family, what)]


def _league_rows(family: str, what: str) -> list[dict]:
    from mixlab.data.cache import data_dir
    from mixlab.league.league import run_league
    from mixlab.spec.builtin import resolve_spec
    from mixlab.spec.resolver import load_spec

    spec = load_spec(resolve_spec(f"league/{family}"), scale="quick")
    with tempfile.TemporaryDirectory() as tmp:
        env = {"MIXLAB_DATA_DIR": str(Path(tmp) / "data")}
        if family == "rbm":          # USPS from the mirror, else from the data sets already here
            env["MIXLAB_DATA_MIRROR"] = os.environ.get("MIXLAB_DATA_MIRROR") or str(data_dir())
        with _environment(env):
            t0, cpu0 = time.perf_counter(), _cpu_seconds()
            _, entries = run_league(spec, Path(tmp) / "league", workers=2)
            wall, cpu = time.perf_counter() - t0, _cpu_seconds() - cpu0
    done = [e for e in entries if e.status == "complete"]
    if not done:          # nothing sampled: no ratio to give (e.g. USPS missing for the RBMs)
        reasons = sorted({e.error for e in entries if e.error})
        return [{"name": f"league ({what}): wall time / (cells' sampling seconds / 2), -j 2",
                 "ratio": float("nan"), "target": "<= 1.25", "ok": False,
                 "detail": f"no cell of {len(entries)} completed: {'; '.join(reasons)[:300]}"}]
    sampling = sum(e.get("sampling_seconds") for e in done)
    evaluation = sum(e.get("evaluation_seconds") for e in done)
    ess = sum(e.get("ess_seconds") for e in done)
    ratio = wall / (sampling / 2)
    floor = (sampling + evaluation + ess) / sampling
    return [{"name": f"league ({what}): wall time / (cells' sampling seconds / 2), -j 2",
             "ratio": ratio, "target": "<= 1.25",
             "ok": ratio <= 1.25 and len(done) == len(entries),
             "detail": f"{len(done)} of {len(entries)} cells, sampling {sampling:.1f} s, "
                       f"wall {wall:.1f} s, CPU {cpu:.1f} s"},
            {"name": f"league ({what}): (sampling + scoring the draws) / sampling, the cells' "
                     f"own timings",
             "ratio": floor, "target": "floor", "ok": True,
             "detail": f"scoring {evaluation + ess:.1f} s (yardstick and summaries "
                       f"{evaluation:.1f} s, ESS {ess:.1f} s) beside {sampling:.1f} s of "
                       f"sampling: the ratio of a league that did nothing else on both cores; "
                       f"the rest of the wall time, {ratio / floor:.2f}x this floor, is the "
                       f"runner's bookkeeping, the run files, set-up and the outputs"}]


@contextmanager
def _environment(values: dict):
    """Environment variables set inside the block, restored after it."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its waited-for children."""
    import resource

    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                  resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
