"""The independent streams of one run in parallel worker processes (``mixlab run -j N``).

Inside ``with ctx.parallel():`` an experiment's ``ctx.stream`` calls are handed to at most N
worker processes, as tasks of the launcher (mixlab.launch). Each worker is forked when its stream
is submitted, so it inherits the sampler, its target and the data (nothing is pickled), and is
set up as every worker is (mixlab.launch.worker: one BLAS thread, parent death, signals). It runs the stream
with the serial runner (mixlab.run.streams: the same blocks and the same RNG, hence the same draws)
and writes the stream's segment files itself; at each checkpoint it writes the stream's
checkpoint group to a hand-off file beside the segments and tells the parent. The parent, the
run's only writer, copies the checkpoint into ``run.h5``, links the segments and publishes, as the
serial runner does. A worker dies with its parent (``PR_SET_PDEATHSIG``) and holds no writer lock;
the resumed run deletes the segments and hand-off files its last checkpoint does not list.

When a stream finishes, the parent resumes it from its complete checkpoint (mixlab.run.streams does
that without sampling): the evaluators the experiment passed get their final state, the curves are
written and the handle returned by ``ctx.stream`` holds the :class:`StreamResult`. Reading the
handle's ``draws``/``seconds``/``state``/``stats_mean`` before the stream is done waits for it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ..errors import MixlabError, UsageError
from ..launch.launchers import Ended, Launcher, ProcessLauncher, Task
from ..launch.worker import report
from ..runfile import confined
from ..runfile.check import read_bound
from ..runfile.segments import SEGMENT_DIR, stream_id
from ..runfile.streamfile import StreamImage
from .remote import land_chunk, stream_chunk
from .streams import StreamResult, _signals_held, run_stream

HANDOFF_PREFIX = "handoff-"     # the hand-off files of a stream's checkpoints, in its segment dir
SERVE_SECONDS = 0.1             # the longest SIGINT/SIGTERM waits while the parent takes messages
_PROGRESS_SECONDS = 0.25        # a worker reports its draw count at most this often


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def resolve_jobs(cli: int | None, spec: dict) -> int:
    """Worker processes for a run: ``-j`` if given, else the spec's ``jobs``, else the
    environment's ``MIXLAB_JOBS``, else 1."""
    if cli is not None:
        jobs, where = cli, "-j"
    elif spec.get("jobs") is not None:
        jobs, where = spec["jobs"], "spec key 'jobs'"
    elif os.environ.get("MIXLAB_JOBS", "").strip():
        text = os.environ["MIXLAB_JOBS"].strip()
        try:
            jobs = int(text)
        except ValueError:
            raise UsageError(f"MIXLAB_JOBS must be a whole number of worker processes (>= 1), "
                             f"got '{text}'; unset it or set e.g. MIXLAB_JOBS=4") from None
        where = "MIXLAB_JOBS"
    else:
        return 1
    if int(jobs) < 1:
        raise UsageError(f"{where} must be at least 1 worker process, got {jobs}")
    return int(jobs)


class PendingStream:
    """What ``ctx.stream`` returns inside ``ctx.parallel()``: the stream's :class:`StreamResult`
    once it is done; reading ``draws``, ``seconds``, ``state`` or ``stats_mean`` waits for it."""

    def __init__(self, pool: StreamPool, name: str):
        self._pool, self.name = pool, name
        self._result: StreamResult | None = None

    def result(self) -> StreamResult:
        if self._result is None:
            self._pool.wait_for(self)
        assert self._result is not None
        return self._result

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self.result(), attr)


class _Job:
    """One submitted stream: its arguments in the parent, and its worker once started."""

    def __init__(self, handle, sampler, rng, evaluators, kwargs, desc, log):
        self.handle, self.sampler, self.rng = handle, sampler, rng
        self.evaluators, self.kwargs, self.desc, self.log = evaluators, kwargs, desc, log
        self.bar = None
        self.slot = -1


class StreamPool:
    """At most ``jobs`` streams of one run sampling at once, in forked workers (see module)."""

    def __init__(self, store, jobs: int, make_bar, launcher: Launcher | None = None):
        self.store, self.jobs, self.make_bar = store, jobs, make_bar
        self.launcher = launcher if launcher is not None else ProcessLauncher(jobs, "fork")
        self.remote = not self.launcher.shares_files   # streams in chunks (mixlab.run.remote)
        if self.launcher.slots is None:
            self.jobs = 1 << 30                            # the cluster queues them
        self.waiting: list[_Job] = []
        self.running: dict[str, _Job] = {}

    # -- the experiment's side ----------------------------------------------------------------------
    def submit(self, name: str, sampler, rng, evaluators, kwargs: dict, desc: str,
               log) -> PendingStream:
        """Queue a stream; it starts as soon as a worker slot is free."""
        handle = PendingStream(self, name)
        job = _Job(handle, sampler, rng, list(evaluators), kwargs, desc, log)
        if name in self.running or any(j.handle.name == name for j in self.waiting):
            raise MixlabError(f"stream {name} was started twice in one ctx.parallel() block")
        if self.store.stream_done(name):
            self._resolve(job)            # done in an earlier run: nothing to sample
            return handle
        self.waiting.append(job)
        self._start_waiting()
        return handle

    def wait_for(self, handle: PendingStream) -> None:
        while handle._result is None:
            self._start_waiting()
            self._serve()

    def wait_all(self) -> None:
        while self.waiting or self.running:
            self._start_waiting()
            self._serve()

    def stop(self) -> None:
        """Interrupt every worker, keep the checkpoints they publish while stopping, wait."""
        self.waiting.clear()
        self.launcher.interrupt()
        deadline = time.monotonic() + 30
        while self.running and time.monotonic() < deadline:
            self._serve(timeout=0.5, stopping=True)
        self.launcher.kill()                  # a worker that ignored SIGTERM for 30 s
        for job in self.running.values():
            self._close(job)
        self.running.clear()

    # -- workers -------------------------------------------------------------------------------------
    def _start_waiting(self) -> None:
        while self.waiting and len(self.running) < self.jobs:
            job = self.waiting.pop(0)
            used = {j.slot for j in self.running.values()}
            job.slot = next(i for i in range(len(used) + 1) if i not in used)
            total = job.kwargs.get("draws")
            job.bar = self.make_bar(total, job.desc, job.slot)
            self._submit(job)
            self.running[f"stream {job.handle.name}"] = job

    def _submit(self, job: _Job) -> None:
        """Start the job's stream (on a remote launcher: up to its next checkpoint)."""
        name = job.handle.name
        seed = self.store.export_stream(name)
        if self.remote:
            task = Task(f"stream {name}", stream_chunk,
                        (name, job.sampler, job.rng, job.evaluators, job.kwargs, seed))
        else:
            task = Task(f"stream {name}", _stream_task,
                        (self.store.run_dir, name, job.sampler, job.rng, job.evaluators,
                         job.kwargs, seed, not job.bar.disable))
        self.launcher.submit(task)

    def _serve(self, timeout: float | None = None, stopping: bool = False) -> None:
        """Handle the workers' messages (checkpoints, progress, ends) that arrive within
        ``timeout`` (at most :data:`SERVE_SECONDS`: the callers loop). A message taken is
        handled before SIGINT or SIGTERM is let through, so no hand-off file is left behind."""
        wait = SERVE_SECONDS if timeout is None else min(timeout, SERVE_SECONDS)
        with _signals_held():
            for event in self.launcher.wait(timeout=wait):
                job = self.running[event.key]
                if isinstance(event, Ended):
                    self._finish(job, event, stopping)
                else:
                    self._handle(job, *event.payload)

    def _handle(self, job: _Job, kind: str, payload) -> None:
        if kind == "checkpoint":
            self._ingest(job.handle.name, payload)
        elif kind == "progress":
            count, postfix = payload
            job.bar.n = count
            if postfix:
                job.bar.set_postfix(postfix, refresh=False)
            job.bar.refresh()
        elif kind == "total":
            job.bar.reset(total=payload)

    def _ingest(self, name: str, handoff: str) -> None:
        """Take a worker's checkpoint into ``run.h5`` (its segments linked) and publish."""
        rel = f"{SEGMENT_DIR}/{stream_id(name)}/{handoff}"
        ck = self.store.import_stream(name, confined.read_bytes(self.store.run_dir, rel,
                                                                read_bound()))
        self.store.publish()
        self.store.safe_draws[name] = ck.count
        confined.remove(self.store.run_dir, rel)

    def _finish(self, job: _Job, end: Ended, stopping: bool) -> None:
        if end.kind == "done" and self.remote:     # a checkpoint interval of the stream
            ck = land_chunk(self.store, job.handle.name, end.value)
            job.bar.n = ck.count
            job.bar.refresh()
            if not ck.complete:
                if not stopping:
                    self._submit(job)           # from the checkpoint it just wrote
                    return
                end = Ended(end.key, "interrupted")
        self._close(job)
        del self.running[end.key]
        if end.kind == "done":
            self._resolve(job)
            return
        if stopping:
            return
        self.stop()
        if end.kind == "error":
            raise end.value
        if end.kind == "interrupted":
            raise KeyboardInterrupt
        raise MixlabError(f"stream {job.handle.name}: its worker process {end.value}; run the "
                          f"same command again to resume from the last checkpoint")

    def _resolve(self, job: _Job) -> None:
        """The finished stream's result, evaluator states and curves, from its checkpoint."""
        name = job.handle.name
        job.handle._result = run_stream(self.store, name, job.sampler, job.rng,
                                        evaluators=job.evaluators, **job.kwargs)
        r = job.handle._result
        job.log(f"stream {name}: {r.draws} draws/chain in {r.seconds:.2f} s")

    @staticmethod
    def _close(job: _Job) -> None:
        if job.bar is not None:
            job.bar.close()


# -- the worker's side ------------------------------------------------------------------------------

class _WorkerStore(StreamImage):
    """The store :func:`mixlab.run.streams.run_stream` writes to in a worker: the stream in
    memory (mixlab.runfile.streamfile); ``publish`` hands its checkpoint to the parent, through
    a hand-off file beside the segments, instead of writing ``run.h5``."""

    def __init__(self, run_dir: Path, name: str, seed: bytes):
        super().__init__(run_dir, name, seed)
        self._handoffs = 0

    def publish(self) -> None:
        name = f"{HANDOFF_PREFIX}{self._handoffs:06d}.h5"
        self._handoffs += 1
        confined.write_atomic(self.run_dir, f"{SEGMENT_DIR}/{stream_id(self.name)}/{name}",
                              self.export_stream(self.name))
        report(("checkpoint", name))


class _RemoteBar:
    """The progress bar interface the runner uses, reported to the parent's bar."""

    def __init__(self):
        self.n, self.postfix, self._last = 0, None, 0.0

    def reset(self, total=None) -> None:
        self.n = 0
        report(("total", total))

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self._last >= _PROGRESS_SECONDS:
            self._last = now
            report(("progress", (self.n, self.postfix)))

    def set_postfix(self, postfix: dict, refresh: bool = False) -> None:
        self.postfix = dict(postfix)


def _stream_task(run_dir: Path, name: str, sampler, rng, evaluators, kwargs: dict, seed: bytes,
                 show_progress: bool) -> None:
    """A stream in its worker: run it, handing each checkpoint to the parent."""
    store = _WorkerStore(run_dir, name, seed)
    run_stream(store, name, sampler, rng, evaluators=evaluators,
               progress=_RemoteBar() if show_progress else None, **kwargs)
