"""The object an experiment's ``run(ctx)`` receives, and the function that runs a spec.

``execute(spec, run_dir)`` takes the run's writer lock, creates (or resumes) the run directory,
records provenance, calls the experiment kind's ``run(ctx)``, renders its figures and marks the run
complete. Interrupting it (Ctrl-C, SIGTERM, SIGKILL, a full disk) leaves the last checkpoint;
running it again resumes from there.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import sys
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..env_settings import env_float
from ..errors import MixlabError, RunFileError, interruption  # noqa: F401  (re-exported)
from ..launch.worker import sigterm_as_interrupt
from ..plugins import discovery as plugins
from ..plugins import registry
from ..plugins.contract import checked
from ..plugins.sampler_builds import build_log, built_record
from ..runfile import confined
from ..runfile.lock import RunLock
from ..runfile.store import RUN_FILE, RunStore
from ..spec.resolver import check_startup, check_stored_text, spec_hash
from .lifecycle import (
    LogFile,
    apply_update,
    final_status,
    open_run,
    record_provenance,
    report_warnings,
    store_diagnostics,
)
from .streams import StreamResult, run_stream
from .update import stage_inputs, stream_inputs

PACKAGES = ("numpy", "scipy", "h5py", "matplotlib", "click", "pyyaml", "tqdm", "PyMaxflow",
            "numba", "arviz")


def name_key(name: Any) -> int:
    """A stable 32-bit integer for a name (SeedSequence spawn keys must be integers)."""
    if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
        return int(name) & 0xFFFFFFFF
    return int.from_bytes(hashlib.sha256(str(name).encode()).digest()[:4], "little")


class Context:
    """Handed to ``run(ctx)``; see docs/PLUGIN_API.md for the contract."""

    def __init__(self, spec: dict, run_dir: Path, store: RunStore, quiet: bool = False,
                 log_file=None, jobs: int = 1, scheduler: str | None = None):
        self.params = spec
        self.spec = spec
        self.scale = spec["scale"]
        self.run_dir = run_dir
        self.store = store
        self.quiet = quiet
        self._log_file = log_file
        self._root = np.random.SeedSequence(spec["seed"], spawn_key=tuple(spec["seed_key"]))
        self.jobs = jobs
        self.scheduler = scheduler   # a Dask scheduler's address (mixlab run --scheduler)
        self._pool = None   # a StreamPool inside ``parallel()`` when jobs > 1 or on Dask
        kind = registry.find_experiment(spec.get("experiment"))
        self._experiment_module = getattr(getattr(kind, "run", None), "__module__", None)

    def __getstate__(self) -> dict:
        """What a stage or a stream sent to a Dask worker takes of the context: the spec and
        the seeds (``rng``, ``seed_sequence``, ``params``), never the run's store or log."""
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("store", "_log_file", "_pool")}
        return {**state, "store": _WritersOnly(), "_log_file": None, "_pool": None,
                "quiet": True}

    def _distributed(self) -> bool:
        return self.jobs > 1 or bool(self.scheduler)

    # -- randomness ---------------------------------------------------------------------------------
    def seed_sequence(self, *names: Any) -> np.random.SeedSequence:
        """Child of the run's SeedSequence keyed by ``names`` (independent of call order)."""
        return np.random.SeedSequence(self._root.entropy,
                                      spawn_key=self._root.spawn_key
                                      + tuple(name_key(n) for n in names))

    def rng(self, *names: Any) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(self.seed_sequence(*names)))

    # -- stages and streams -------------------------------------------------------------------------
    def once(self, name: str, fn: Callable[[], dict]) -> dict:
        """Run ``fn()`` once per run and cache its flat dict of arrays under ``/stages/<name>``."""
        if self.store.stage_done(name):
            return self.store.read_stage(name)
        after = self._streams_so_far()
        with build_log() as built:
            values = fn()
        self._write_stage(name, values, built, after)
        return self.store.read_stage(name)

    def once_each(self, stages: list[tuple[str, Callable[[], dict]]]) -> list[dict]:
        """:meth:`once` for each ``(name, fn)`` of ``stages``, which must not depend on each
        other (each draws its randomness from :meth:`rng` keyed by its own names): with
        ``jobs`` > 1 the stages not done yet are computed in worker processes, ``jobs`` at a
        time (mixlab.run.stages), and written in the given order, so the run file holds
        the same values as with one job. Returns each stage's dict, in order."""
        todo = [(n, fn) for n, fn in stages if not self.store.stage_done(n)]
        if self._distributed() and len(todo) > 1:
            from ..launch.launchers import choose
            from .stages import compute

            after = self._streams_so_far()
            compute(todo, self.jobs, lambda n, values, built: self._write_stage(n, values,
                                                                                built, after),
                    launcher=choose(self.jobs, self.scheduler, "fork"))
        return [self.once(n, fn) for n, fn in stages]

    def save_state(self, name: str, values: dict) -> None:
        """Replace the stage ``name`` with ``values`` (a flat dict of arrays and strings) and
        publish it: the resumable state of a long computation that is not a stream (a trainer
        after each epoch). Read it back with :meth:`saved_state`; :meth:`drop_state` once the
        computation's result is a stage of its own."""
        self._write_stage(name, values, [], self._streams_so_far())

    def saved_state(self, name: str) -> dict | None:
        """The values last given to :meth:`save_state` under ``name``, or None."""
        return self.store.read_stage(name) if self.store.stage_done(name) else None

    def drop_state(self, name: str) -> None:
        """Forget the state ``name`` (published with the run's next checkpoint)."""
        self.store.drop_stage(name)

    def _streams_so_far(self) -> list[str]:
        return self.store.stream_names()

    def _write_stage(self, name: str, values: Any, built: list, after: list[str]) -> None:
        if not isinstance(values, dict):
            raise TypeError(f"stage {name}: fn must return a dict, got {type(values).__name__}")
        self.store.write_stage(name, values)
        # what the stage depends on, for 'mixlab run --update' (mixlab.run.update)
        self.store.set_inputs("stages", name,
                              stage_inputs(self.spec, self._experiment_module, built, after))
        self.store.publish()  # an expensive stage survives a kill

    def stream(self, name: str, sampler: Any, *, draws: int | None = None,
               seconds: float | None = None, thin: int = 1, evaluators=(),
               record: bool | tuple = True, record_stats: bool = True,
               rng: np.random.Generator | None = None,
               block: int | None = None, desc: str | None = None,
               summarize: Callable | None = None,
               block_seconds: float | None = None,
               after_block: Callable | None = None,
               record_summaries: bool = True) -> StreamResult:
        """Run a sampler under a budget into ``/streams/<name>`` (resumable); see runner."""
        rng = rng if rng is not None else self.rng("stream", name)
        self._record_inputs(name, sampler)
        sampler = checked(sampler, name)  # the first init/step checked against the contract
        if self._pool is not None:
            kwargs = dict(draws=draws, seconds=seconds, thin=thin, record=record,
                          record_stats=record_stats, block=block,
                          checkpoint_seconds=checkpoint_seconds(), summarize=summarize,
                          block_seconds=block_seconds, after_block=after_block,
                          record_summaries=record_summaries)
            return self._pool.submit(name, sampler, rng, evaluators, kwargs, desc or name,
                                     self.log)
        with self.progress(total=draws, desc=desc or name, unit="draw") as bar:
            result = run_stream(self.store, name, sampler, rng, draws=draws, seconds=seconds,
                                thin=thin, evaluators=evaluators, record=record,
                                record_stats=record_stats, block=block,
                                progress=bar, checkpoint_seconds=checkpoint_seconds(),
                                summarize=summarize, block_seconds=block_seconds,
                                after_block=after_block, record_summaries=record_summaries)
        self.log(f"stream {name}: {result.draws} draws/chain in {result.seconds:.2f} s")
        return result

    @contextmanager
    def parallel(self):
        """Declare the streams started inside the block independent of each other: with
        ``jobs`` > 1 they sample at once in worker processes (mixlab.run.workers), and
        ``ctx.stream`` returns a handle whose ``draws``/``seconds``/``state``/``stats_mean`` wait
        for the stream. The evaluators given to a stream hold its final state once it is done;
        every stream is done when the block exits. Streams that read another stream's result
        (its final state, its evaluators) belong outside the block, or after reading the
        handle of the stream they need. With one job this does nothing."""
        if self._pool is not None or not self._distributed():
            yield
            return
        from ..launch.launchers import choose
        from .workers import StreamPool

        with choose(self.jobs, self.scheduler, "fork") as launcher:
            self._pool = StreamPool(self.store, self.jobs, self._stream_bar, launcher)
            try:
                yield
                self._pool.wait_all()
            except BaseException:
                self._pool.stop()
                raise
            finally:
                self._pool = None

    def _stream_bar(self, total: int | None, desc: str, position: int):
        from tqdm import tqdm

        disable = self.quiet or not sys.stderr.isatty()
        return tqdm(total=total, desc=desc, unit="draw", disable=disable, leave=False,
                    file=sys.stderr, dynamic_ncols=True, position=position)

    def _record_inputs(self, name: str, sampler: Any) -> None:
        """Record what stream ``name`` depends on (mixlab.run.update), unless it is complete."""
        if self.store.stream_done(name):
            return
        self.store.set_inputs("streams", name, stream_inputs(self.spec, self._experiment_module,
                                                              built_record(sampler)))

    # -- output -------------------------------------------------------------------------------------
    def log(self, msg: str, always: bool = False) -> None:
        """Append ``msg`` to log.txt and print it on stderr (unless quiet and not ``always``)."""
        stamp = _dt.datetime.now().strftime("%H:%M:%S")
        if self._log_file is not None:
            self._log_file.write(f"{stamp} {msg}\n")
            self._log_file.flush()
        if always or not self.quiet:
            print(msg, file=sys.stderr)

    def bar(self, total: int | None = None, desc: str = "", unit: str = "it"):
        """A tqdm bar on stderr (disabled when quiet or stderr is not a terminal); the caller
        closes it. Use :meth:`progress` for a bar that closes itself."""
        from tqdm import tqdm

        disable = self.quiet or not sys.stderr.isatty()
        return tqdm(total=total, desc=desc, unit=unit, disable=disable, leave=False,
                    file=sys.stderr, dynamic_ncols=True)

    @contextmanager
    def progress(self, total: int | None = None, desc: str = "", unit: str = "it"):
        bar = self.bar(total=total, desc=desc, unit=unit)
        try:
            yield bar
        finally:
            bar.close()


class _WritersOnly:
    """``ctx.store`` on a Dask worker: the run file is written by the run's own process alone."""

    def __getattr__(self, attr: str):
        raise MixlabError(f"ctx.store.{attr} on a Dask worker: a stage or stream sent to the "
                          f"cluster returns its values, and the run's own process writes them; "
                          f"use ctx.store outside the stage's function")


def checkpoint_seconds() -> float:
    """Wall seconds between stream checkpoints (``MIXLAB_CHECKPOINT_SECONDS``, default 10)."""
    return env_float("MIXLAB_CHECKPOINT_SECONDS", 10.0, "10")


def default_run_dir(spec: dict, root: str | Path = "runs") -> Path:
    return Path(root) / spec["name"] / spec_hash(spec)


def execute(spec: dict, run_dir: str | Path, *, force: bool = False, quiet: bool = False,
            render: bool = True, replace: bool = False,
            jobs: int | None = None, update: bool = False,
            scheduler: str | None = None) -> tuple[Path, str]:
    """Run (or resume) a resolved spec in ``run_dir``; returns (run_dir, what happened) where
    what happened is 'complete' (nothing to do), 'resumed', 'updated' or 'ran'.

    ``update``: bring an existing run of this or an earlier version of the spec up to date,
    rerunning, adding or removing exactly the streams whose inputs changed (mixlab.run.update).

    The run's writer lock is taken first: a second writer is refused (mixlab.runfile.lock), and
    ``force``/``replace`` never touch a run that another process is writing.
    ``replace``: if ``run_dir`` holds a run of a different spec, move it to
    ``<run_dir>.previous`` (replacing an older one there) and start afresh.
    ``jobs``: worker processes for the run's independent streams (``-j``; None: the spec's
    ``jobs``, else ``MIXLAB_JOBS``, else 1), at most one per available core.
    ``scheduler``: a Dask scheduler's address: the independent streams and stages run on its
    workers (mixlab.run.remote), which need not share this machine's files."""
    from .workers import available_cores, resolve_jobs

    run_dir = Path(run_dir)
    asked = resolve_jobs(jobs, spec)
    jobs = min(asked, available_cores())
    plugins.load_spec_plugins(spec.get("plugins"))  # a no-op unless this process did not resolve
    text = check_stored_text(spec)   # refused here, before the run starts, if past its bound
    confined.check_run_dir(run_dir)
    lock = RunLock.acquire(run_dir)
    try:
        opening = open_run(run_dir, spec, text, lock, force=force, replace=replace,
                           update=update)
        lock = opening.lock
        if opening.happened == "complete":
            lock.release(remove=True)
            return run_dir, "complete"
        confined.write_atomic(run_dir, "spec.yaml", text.encode())
        store = RunStore(run_dir / RUN_FILE, "a", lock=lock)
        with final_status(store):
            summary = None
            if opening.happened == "updated":
                summary = apply_update(store, run_dir, spec, text, opening.status)
                if summary is None:
                    store.close()
                    return run_dir, "complete"
            if opening.happened == "ran":
                record_provenance(store, spec, text)
            store.set_status("running")
            ctx_args = dict(quiet=quiet, jobs=jobs, scheduler=scheduler)
            _run_experiment(spec, run_dir, store, ctx_args, opening.happened, asked, summary)
        store.close(publish=False)
        lock.release(remove=True)  # complete: nobody needs to know who wrote it last
    finally:
        lock.release()
    if render and registry.figures_for(spec["experiment"]):   # none: no need to reopen the run
        from ..plotting import render_all

        render_all(run_dir)
    return run_dir, opening.happened


def _run_experiment(spec: dict, run_dir: Path, store: RunStore, ctx_args: dict, happened: str,
                    asked: int, summary: str | None) -> None:
    """The experiment's ``run(ctx)`` with the run's log, SIGTERM as an interruption, its
    warnings reported once each, and the spec's diagnostics; the run marked complete."""
    kind = registry.get_experiment(spec["experiment"])
    with LogFile(run_dir) as log, sigterm_as_interrupt():
        ctx = Context(spec, run_dir, store, log_file=log, **ctx_args)
        ctx.log(f"{_VERBS[happened]} {spec['name']} "
                f"({spec['experiment']}, scale {spec['scale']}) in {run_dir}")
        if ctx.scheduler:
            ctx.log(f"independent streams and stages on the Dask cluster at {ctx.scheduler}")
        elif asked > 1:
            ctx.log(f"independent streams in {ctx.jobs} worker processes"
                    + (f" (-j {asked}, {ctx.jobs} cores available)" if ctx.jobs < asked
                       else ""))
        if summary is not None:
            ctx.log(f"update: {summary}", always=True)
        check_startup(spec)   # what --dry-run checks, before any work
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            kind.run(ctx)
        report_warnings(caught, spec, ctx)
        if spec.get("diagnostics"):
            store_diagnostics(store, run_dir, ctx)
        store.set_status("complete")      # published: closing need not publish again
        ctx.log("complete")


_VERBS = {"ran": "starting", "resumed": "resuming", "updated": "updating"}
