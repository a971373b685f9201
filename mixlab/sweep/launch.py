"""Grid sweeps: every point of ``key=a,b,c`` grids becomes a run of its own.

Point ``i`` (in row-major order of the grid) gets the spec's seed with spawn key ``[i]``, so its
result does not depend on which worker ran it, nor on how many workers there were. Points run in
this process, on a local process pool, or on a Dask distributed cluster given its address.

Nothing is lost, whatever happens to a point:

- a point that fails (an error in the experiment, a full disk, a worker that died) is recorded
  in ``sweep.csv`` with ``status = failed`` and its one-line reason in ``error``; the other
  points go on; the sweep command then exits 1;
- ``sweep.csv`` is rewritten atomically as each point ends, so even a sweep that is itself
  killed leaves a table of what finished (unfinished points are ``pending``);
- running the same sweep again skips the complete points (a complete run of the same spec is
  left untouched) and runs the failed or unfinished ones, resuming from their checkpoints.

On Dask, a point does not need a file system shared with the client: the task receives the
point's resolved spec (and the point's partial run directory, if any, as tar bytes), runs it in
a temporary directory on the worker and returns the run directory as tar bytes, which the
client unpacks into the sweep directory. A worker that dies mid-point loses only that attempt:
the scheduler re-runs the task on another worker.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from ..errors import MixlabError, SpecError, UsageError
from ..run.worker_setup import pool_worker_init, stop_pool_on_interrupt
from ..runfile.lock import directory_lock
from ..spec.resolver import dump
from .grid import COMPLETE, FAILED, grid_points, point_dir
from .point import (
    _failed,
    existing_run,
    install_archive,
    one_line,
    pack_dir,
    run_point,
    run_point_portable,
)
from .table import SweepOutcome, _Table, _write_bookkeeping


class OtherSpecPoints(MixlabError):
    """Points whose directories hold runs of another spec (``dirs``), when the caller asked
    :func:`run_sweep` to refuse them rather than list them as failed."""

    def __init__(self, dirs: list[Path]):
        self.dirs = dirs
        super().__init__(f"{len(dirs)} point(s) hold runs of a different spec: "
                         f"{', '.join(map(str, dirs[:3]))}{' …' if len(dirs) > 3 else ''}")


#: ``order(left, took, running)``: the points ``left`` to start, reordered, given the wall
#: seconds of the points finished (``took``) and of those running so far (``running``)
PointOrder = Callable[[list[int], dict[int, float], dict[int, float]], list[int]]


def run_sweep(sweep_dir: Path, specs: list[dict], grid: dict, summary: list[str], *,
              workers: int = 1, scheduler: str | None = None,
              quiet: bool = True, start_method: str = "spawn",
              on_point: Callable[[int, Path, str], None] | None = None,
              locked: bool = False, refuse_other: bool = False,
              before_run: Callable[[], None] | None = None,
              order: PointOrder | None = None,
              when_idle: Callable[[], None] | None = None) -> SweepOutcome:
    """Run every point not yet complete; returns what happened (failed points included).

    ``on_point(i, run_dir, status)`` is called in this process as each point this call runs
    ends (with a pool: while the others still run, so keep it short: the next point starts
    only after it). ``when_idle()`` is called in this process each time a point ends with no
    point left to start and a worker of the pool without one (on Dask: as each point ends),
    so that it can take up the core that worker leaves.

    ``start_method``: how the pool's worker processes start (``multiprocessing``): "spawn",
    fresh interpreters that import what they need, or "fork", copies of this process that
    inherit its imported modules (the league: its cells would each re-import seconds of
    modules in a fresh interpreter).

    The sweep holds its directory's writer lock (mixlab.runfile.lock.directory_lock) while it runs,
    unless the caller holds it already (``locked``: a league).

    A point whose directory holds a run of another spec is listed as failed, or with
    ``refuse_other`` raises :class:`OtherSpecPoints` before anything is run or written.
    ``before_run()`` is called once that is settled, before the first point runs (not at all
    when every point is complete): a league's warm-up. ``order(left, took, running)`` is asked,
    each time a point is to start, for the order of the points ``left`` to start (their
    indices), given the wall seconds of each point this call finished, ``took`` ({index:
    seconds}), and of each running so far, ``running``; the first is started (on Dask, where
    every point is submitted at once: asked once). Default: index order. A league starts its
    cells so that its workers finish together (mixlab.league.schedule).

    Raises only for the sweep's own failures (no Dask, the sweep directory cannot be written);
    a point's failure is in the outcome and in ``sweep.csv``."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.nullcontext() if locked else directory_lock(sweep_dir, "sweep"):
        return _run_points(sweep_dir, specs, grid, summary, workers, scheduler, quiet,
                           start_method, on_point, refuse_other, before_run, order, when_idle)


def _run_points(sweep_dir: Path, specs: list[dict], grid: dict, summary: list[str],
                workers: int, scheduler: str | None, quiet: bool, start_method: str,
                on_point: Callable[[int, Path, str], None] | None,
                refuse_other: bool = False,
                before_run: Callable[[], None] | None = None,
                order: PointOrder | None = None,
                when_idle: Callable[[], None] | None = None) -> SweepOutcome:
    points = grid_points(grid)
    dirs = [point_dir(sweep_dir, i, p) for i, p in enumerate(points)]
    found = [existing_run(s, d) for s, d in zip(specs, dirs)]
    if refuse_other and any(state == "other" for state, _ in found):
        raise OtherSpecPoints([d for (state, _), d in zip(found, dirs) if state == "other"])
    _write_bookkeeping(sweep_dir / "sweep.yaml", dump({"grid": grid, "summary": summary,
                                                        "points": [str(d) for d in dirs]}))
    table = _Table(sweep_dir, grid, summary, dirs, on_point)
    todo = []
    for i, (d, (state, results)) in enumerate(zip(dirs, found)):
        if state == COMPLETE:
            table.status[i], table.results[i], table.happened[i] = COMPLETE, results, "complete"
        elif state == "other":
            table.status[i] = FAILED
            table.error[i] = (f"{d} holds a run of a different spec (the sweep's spec or its "
                              f"--set values changed since it ran); give this sweep another "
                              f"--out directory, or move the old one away")
        else:
            todo.append(i)
    table.write()
    starts = _Starts(todo, order)
    if todo and before_run is not None:
        before_run()
    if todo and scheduler:
        _run_on_dask(scheduler, specs, dirs, starts.all_at_once(), table, when_idle)
    elif todo and workers > 1:
        _run_on_pool(workers, specs, dirs, starts, table, start_method, when_idle)
    else:
        while starts:
            i = starts.next()
            table.record(i, run_point(specs[i], str(dirs[i]), quiet))
            starts.finished(i)
    missing = sorted({k for i, r in enumerate(table.results) if table.status[i] == COMPLETE
                      for k in summary if k not in r})
    if missing:
        raise SpecError(f"the points' runs have no result(s) {', '.join(missing)} (results "
                        f"there: {', '.join(sorted({k for r in table.results for k in r})) or 'none'}"
                        f"); see {table.path}", "sweep.summary")
    return table.outcome()


class _Starts:
    """The points left to start, handed out one at a time in the order ``order(left, took,
    running)`` gives (index order without it), with the wall seconds of each point finished so
    far and of each running."""

    def __init__(self, todo: list[int], order: PointOrder | None = None):
        self.left, self.order = list(todo), order
        self.took: dict[int, float] = {}
        self.started: dict[int, float] = {}

    def __bool__(self) -> bool:
        return bool(self.left)

    def _ordered(self) -> list[int]:
        if self.order is None:
            return list(self.left)
        now = time.perf_counter()
        running = {i: now - t for i, t in self.started.items()}
        out = list(self.order(list(self.left), dict(self.took), running))
        if sorted(out) != sorted(self.left):
            raise ValueError("order(left, took, running) must return the points left, "
                             "reordered")
        return out

    def next(self) -> int:
        i = self._ordered()[0]
        self.left.remove(i)
        self.started[i] = time.perf_counter()
        return i

    def finished(self, i: int) -> None:
        self.took[i] = time.perf_counter() - self.started.pop(i)

    def all_at_once(self) -> list[int]:
        out = self._ordered()
        self.left = []
        return out


def _run_on_pool(workers: int, specs: list[dict], dirs: list[Path], starts: _Starts,
                 table: _Table, start_method: str = "spawn",
                 when_idle: Callable[[], None] | None = None) -> None:
    """Worker processes (fresh, spawned, unless ``start_method`` says otherwise) with one BLAS
    thread and one thread of mixlab's threaded kernels each, unless the user chose otherwise: N
    workers x N threads on N cores is slower than either alone, and in a league a cell's
    evaluation threads would take sampling time from the cell beside it.

    A worker that dies (a crash, the OOM killer, a kill) breaks the whole pool and every point
    still in it; those points are then run again one at a time, each in a pool of its own, so
    that only the point whose process dies is failed."""
    thread_vars = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                   "MIXLAB_KERNEL_THREADS")      # and mixlab's own threaded kernels (rbm.kernels)
    saved = {v: os.environ.get(v) for v in thread_vars}
    for v in thread_vars:
        os.environ.setdefault(v, "1")
    try:
        broken = _pool_pass(workers, specs, dirs, starts, table, start_method=start_method,
                            when_idle=when_idle)
        for i in broken:  # isolate the point that kills its process
            _pool_pass(1, specs, dirs, _Starts([i]), table, last_chance=True,
                       start_method=start_method)
    finally:
        for v, old in saved.items():
            if old is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = old


def _pool_pass(workers: int, specs: list[dict], dirs: list[Path], starts: _Starts,
               table: _Table, last_chance: bool = False,
               start_method: str = "spawn",
               when_idle: Callable[[], None] | None = None) -> list[int]:
    """Run the points of ``starts`` on a pool, ``workers`` at a time (each started when a
    worker is free, so ``starts`` can order them by the times of those finished); returns the
    points lost to a broken pool (recorded as failed when ``last_chance``). ``when_idle()``
    after the bookkeeping of points that ended with no point left to start."""
    from concurrent.futures import FIRST_COMPLETED, wait

    broken = []
    with ProcessPoolExecutor(max_workers=workers,
                             mp_context=multiprocessing.get_context(start_method),
                             initializer=pool_worker_init, initargs=(os.getpid(),)) as pool, \
            stop_pool_on_interrupt(pool):       # Ctrl-C, SIGTERM: the workers stop first
        futures: dict = {}

        def fill() -> None:              # a point started on every free worker
            while starts and len(futures) < workers:
                i = starts.next()
                try:
                    futures[pool.submit(run_point, specs[i], str(dirs[i]), True)] = i
                except BrokenProcessPool:   # the pool broke: nothing more starts on it
                    broken.append(i)
                    broken.extend(starts.all_at_once())

        fill()
        while futures:
            done, _ = wait(futures, return_when=FIRST_COMPLETED)
            ended = [(fut, futures.pop(fut)) for fut in done]
            for _, i in ended:
                starts.finished(i)
            fill()                       # before the bookkeeping, so no worker waits for it
            for fut, i in ended:
                try:
                    out = fut.result()
                except BrokenProcessPool:
                    if not last_chance:
                        broken.append(i)
                        continue
                    out = _failed("the point's worker process died (a crash, out of memory "
                                  "or a kill) before the point completed; run the sweep "
                                  "again to resume it")
                except Exception as exc:
                    out = _failed(one_line(exc))
                if last_chance and out["happened"] == "complete":
                    out["happened"] = "ran"  # finished by this sweep before its pool broke
                table.record(i, out)
            if when_idle is not None and not starts and len(futures) < workers:
                when_idle()
    return sorted(broken)




def _run_on_dask(scheduler: str, specs: list[dict], dirs: list[Path], todo: list[int],
                 table: _Table, when_idle: Callable[[], None] | None = None) -> None:
    try:
        from dask.distributed import Client, as_completed
    except ImportError as exc:
        raise UsageError("--scheduler needs the optional Dask extra: "
                         "pip install 'mixlab[dask]'") from exc
    try:
        client = Client(scheduler, timeout="30s")
    except (OSError, TimeoutError) as exc:
        raise MixlabError(f"cannot reach the Dask scheduler at {scheduler}: {one_line(exc)}; "
                          f"check the address (e.g. tcp://host:8786) and that it is running") \
            from exc
    with client:
        tag = uuid.uuid4().hex[:8]
        futures = {}
        for i in todo:
            archive = pack_dir(dirs[i]) if dirs[i].is_dir() else None
            fut = client.submit(run_point_portable, specs[i], archive, True, pure=False,
                                key=f"mixlab-point-{i:03d}-{tag}")
            futures[fut] = i
        for fut in as_completed(futures):
            i = futures.pop(fut)
            try:
                out = fut.result()
            except Exception as exc:  # e.g. KilledWorker: the task killed worker after worker
                out = _failed(f"on Dask: {one_line(exc)}")
            else:
                archive = out.pop("archive", None)
                if archive:
                    try:
                        install_archive(archive, dirs[i])
                    except Exception as exc:  # e.g. the client's disk is full
                        out = _failed(f"the point ran on a Dask worker but its run directory "
                                      f"could not be written to {dirs[i]}: {one_line(exc)}")
            table.record(i, out)
            fut.release()
            if when_idle is not None:        # the points run on the cluster, not here
                when_idle()
