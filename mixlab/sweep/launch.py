"""Grid sweeps: every point of ``key=a,b,c`` grids becomes a run of its own.

Point ``i`` (in row-major order of the grid) gets the spec's seed with spawn key ``[i]``, so its
result does not depend on which worker ran it, nor on how many workers there were. Points run in
this process, in worker processes, or on a Dask distributed cluster given its address: the
launcher (mixlab.launch) chooses and starts the workers.

Nothing is lost, whatever happens to a point:

- a point whose worker process dies (a crash, the OOM killer, a kill) starts once more, resuming
  from its checkpoint;
- a point that fails (an error in the experiment, a full disk, a worker that died twice) is recorded
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

from pathlib import Path

from ..errors import MixlabError, SpecError
from ..launch.launchers import Ended, Launcher, Task, choose, one_line
from ..launch.order import Order, launch
from ..runfile.lock import directory_lock
from ..spec.resolver import dump
from .grid import COMPLETE, FAILED, grid_points, point_dir
from .point import _failed, existing_run, install_archive, pack_dir, run_point, run_point_portable
from .table import SweepOutcome, _Table, _write_bookkeeping


class OtherSpecPoints(MixlabError):
    """Points whose directories hold runs of another spec (``dirs``), when the caller asked
    :func:`run_points` to refuse them rather than list them as failed."""

    def __init__(self, dirs: list[Path]):
        self.dirs = dirs
        super().__init__(f"{len(dirs)} point(s) hold runs of a different spec: "
                         f"{', '.join(map(str, dirs[:3]))}{' …' if len(dirs) > 3 else ''}")


def run_sweep(sweep_dir: Path, specs: list[dict], grid: dict, summary: list[str], *,
              workers: int = 1, scheduler: str | None = None,
              quiet: bool = True, order: Order | None = None) -> SweepOutcome:
    """Run every point not yet complete, holding the sweep directory's writer lock
    (mixlab.runfile.lock.directory_lock), on the launcher ``workers`` and ``scheduler`` choose
    (spawned worker processes, fresh interpreters that run point after point); see
    :func:`run_points`."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    with (directory_lock(sweep_dir, "sweep"),
          choose(workers, scheduler, "spawn", reuse=True) as launcher):
        return run_points(sweep_dir, specs, grid, summary, launcher, order, quiet=quiet)


def run_points(sweep_dir: Path, specs: list[dict], grid: dict, summary: list[str],
               launcher: Launcher, order: Order | None = None, *, quiet: bool = True,
               refuse_other: bool = False) -> SweepOutcome:
    """Run every point not yet complete on ``launcher``, in ``order``'s order (index order by
    default; mixlab.launch.order); returns what happened (failed points included). The caller
    holds the sweep directory's writer lock.

    A point whose directory holds a run of another spec is listed as failed, or with
    ``refuse_other`` raises :class:`OtherSpecPoints` before anything is run or written.
    Raises only for the sweep's own failures (no Dask, the sweep directory cannot be written);
    a point's failure is in the outcome and in ``sweep.csv``."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    points = grid_points(grid)
    dirs = [point_dir(sweep_dir, i, p) for i, p in enumerate(points)]
    found = [existing_run(s, d) for s, d in zip(specs, dirs)]
    if refuse_other and any(state == "other" for state, _ in found):
        raise OtherSpecPoints([d for (state, _), d in zip(found, dirs) if state == "other"])
    _write_bookkeeping(sweep_dir / "sweep.yaml", dump({"grid": grid, "summary": summary,
                                                        "points": [str(d) for d in dirs]}))
    table = _Table(sweep_dir, grid, summary, dirs)
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
    tasks = [_point_task(launcher, i, specs[i], dirs[i], quiet) for i in todo]
    for k, end in launch(launcher, tasks, _Subset(order or Order(), todo), retry_died=True):
        i = todo[k]
        end.value = _landed(launcher, end, dirs[i])
        table.record(i, end.value)
    missing = sorted({k for i, r in enumerate(table.results) if table.status[i] == COMPLETE
                      for k in summary if k not in r})
    if missing:
        raise SpecError(f"the points' runs have no result(s) {', '.join(missing)} (results "
                        f"there: {', '.join(sorted({k for r in table.results for k in r})) or 'none'}"
                        f"); see {table.path}", "sweep.summary")
    return table.outcome()


def _point_task(launcher: Launcher, i: int, spec: dict, run_dir: Path, quiet: bool) -> Task:
    """Point ``i`` as a task: run in its directory, or, on workers that do not see this
    process's files, from its partial run directory as tar bytes (mixlab.sweep.point)."""
    if launcher.shares_files:
        return Task(f"point {i}", run_point, (spec, str(run_dir), quiet))
    archive = pack_dir(run_dir) if run_dir.is_dir() else None
    return Task(f"point {i:03d}", run_point_portable, (spec, archive, True))


def _landed(launcher: Launcher, end: Ended, run_dir: Path) -> dict:
    """A point's row of the table from its task's end (a remote point's run directory
    installed first)."""
    where = "" if launcher.shares_files else "on Dask: "
    if end.kind == "died":
        return _failed("the point's worker process died (a crash, out of memory or a kill) "
                       "twice before the point completed; run the sweep again to resume it")
    if end.kind == "interrupted":
        raise KeyboardInterrupt
    if end.kind == "error":
        return _failed(f"{where}{one_line(end.value)}")
    out = end.value
    archive = out.pop("archive", None)
    if archive:
        try:
            install_archive(archive, run_dir)
        except Exception as exc:  # e.g. the client's disk is full
            out = _failed(f"the point ran on a Dask worker but its run directory could not be "
                          f"written to {run_dir}: {one_line(exc)}")
    return out


class _Subset(Order):
    """``policy`` over the points ``todo`` (the launcher numbers them 0, 1, ...)."""

    def __init__(self, policy: Order, todo: list[int]):
        self.policy, self.todo = policy, todo

    def order(self, left, took, running):
        back = {p: k for k, p in enumerate(self.todo)}
        out = self.policy.order([self.todo[k] for k in left],
                                {self.todo[k]: v for k, v in took.items()},
                                {self.todo[k]: v for k, v in running.items()})
        return [back.get(p, -1) for p in out]

    def before_start(self) -> None:
        self.policy.before_start()

    def ended(self, k: int, end: Ended) -> None:
        self.policy.ended(self.todo[k], end)

    def idle(self) -> None:
        self.policy.idle()
