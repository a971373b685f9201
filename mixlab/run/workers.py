"""The independent streams of one run in parallel worker processes (``mixlab run -j N``).

Inside ``with ctx.parallel():`` an experiment's ``ctx.stream`` calls are handed to at most N
worker processes. Each worker is forked when its stream is submitted, so it inherits the sampler,
its target and the data (nothing is pickled), and runs with one BLAS thread. It runs the stream
with the serial runner (mixlab.run.streams: the same blocks and the same RNG, hence the same draws)
and writes the stream's segment files itself; at each checkpoint it writes the stream's
checkpoint group to a hand-off file beside the segments and tells the parent. The parent, the
run's only writer, copies the checkpoint into ``run.h5``, links the segments and publishes, as the
serial runner does. A worker dies with its parent (``PR_SET_PDEATHSIG``) and holds the inherited
writer lock until then, so after a SIGKILL nobody can resume the run before every worker is gone;
the resumed run deletes the segments and hand-off files its last checkpoint does not list.

When a stream finishes, the parent resumes it from its complete checkpoint (mixlab.run.streams does
that without sampling): the evaluators the experiment passed get their final state, the curves are
written and the handle returned by ``ctx.stream`` holds the :class:`StreamResult`. Reading the
handle's ``draws``/``seconds``/``state``/``stats_mean`` before the stream is done waits for it.
"""

from __future__ import annotations

import copy
import io
import json
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import time
import traceback
from pathlib import Path
from typing import Any

import h5py

from ..errors import MixlabError, UsageError
from ..runfile import confined
from ..runfile.atomic import WriteFailure
from ..runfile.check import read_bound
from ..runfile.segments import SEGMENT_DIR, StreamSegments, stream_id
from .streams import StreamResult, _signals_held, run_stream
from .worker_setup import die_with_parent

HANDOFF_PREFIX = "handoff-"     # the hand-off files of a stream's checkpoints, in its segment dir
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
        self.process = None
        self.conn = None
        self.bar = None
        self.slot = -1


class StreamPool:
    """At most ``jobs`` streams of one run sampling at once, in forked workers (see module)."""

    def __init__(self, store, jobs: int, make_bar):
        self.store, self.jobs, self.make_bar = store, jobs, make_bar
        self.waiting: list[_Job] = []
        self.running: list[_Job] = []
        self._fork = multiprocessing.get_context("fork")

    # -- the experiment's side ----------------------------------------------------------------------
    def submit(self, name: str, sampler, rng, evaluators, kwargs: dict, desc: str,
               log) -> PendingStream:
        """Queue a stream; it starts as soon as a worker slot is free."""
        handle = PendingStream(self, name)
        job = _Job(handle, sampler, rng, list(evaluators), kwargs, desc, log)
        if any(j.handle.name == name for j in self.waiting + self.running):
            raise MixlabError(f"stream {name} was started twice in one ctx.parallel() block")
        ck = self.store.stream_group(name).get("_checkpoint")
        if ck is not None and ck.attrs.get("complete", False):
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
        for job in self.running:
            if job.process.is_alive():
                os.kill(job.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while self.running and time.monotonic() < deadline:
            self._serve(timeout=0.5, stopping=True)
        for job in self.running:              # a worker that ignored SIGTERM for 30 s
            job.process.kill()
            job.process.join()
            self._close(job)
        self.running.clear()

    # -- workers -------------------------------------------------------------------------------------
    def _start_waiting(self) -> None:
        while self.waiting and len(self.running) < self.jobs:
            job = self.waiting.pop(0)
            used = {j.slot for j in self.running}
            job.slot = min(set(range(self.jobs)) - used)
            total = job.kwargs.get("draws")
            job.bar = self.make_bar(total, job.desc, job.slot)
            seed = _stream_seed(self.store.stream_group(job.handle.name))
            parent_end, child_end = self._fork.Pipe(duplex=False)
            job.process = self._fork.Process(
                target=_worker, name=f"mixlab stream {job.handle.name}", daemon=False,
                args=(child_end, os.getpid(), self.store.run_dir, job.handle.name, job.sampler,
                      job.rng, job.evaluators, job.kwargs, seed, not job.bar.disable))
            job.process.start()
            child_end.close()
            job.conn = parent_end
            self.running.append(job)

    def _serve(self, timeout: float | None = None, stopping: bool = False) -> None:
        """Handle the workers' messages (checkpoints, progress, ends) until one arrives."""
        conns = {job.conn: job for job in self.running}
        for conn in multiprocessing.connection.wait(list(conns), timeout=timeout):
            with _signals_held():         # a message taken is handled: no checkpoint is lost
                self._handle(conns[conn], stopping)

    def _handle(self, job: _Job, stopping: bool) -> None:
        try:
            kind, payload = job.conn.recv()
        except (EOFError, OSError):
            job.process.join()
            kind, payload = "died", _death(job.process.exitcode)
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
        else:
            self._finish(job, kind, payload, stopping)

    def _ingest(self, name: str, handoff: str) -> None:
        """Copy a worker's checkpoint into ``run.h5``, link its segments and publish."""
        rel = f"{SEGMENT_DIR}/{stream_id(name)}/{handoff}"
        data = confined.read_bytes(self.store.run_dir, rel, read_bound())
        with h5py.File(io.BytesIO(data), "r") as src:
            g = self.store.stream_group(name)
            if "_checkpoint" in g:
                del g["_checkpoint"]
            src.copy(src["_checkpoint"], g, "_checkpoint")
            for k, v in src.attrs.items():
                g.attrs[k] = v
        ck = g["_checkpoint"].attrs
        StreamSegments(self.store.run_dir, name, *_listing(ck)).link(g)
        self.store.publish()
        self.store.safe_draws[name] = int(ck["count"])
        confined.remove(self.store.run_dir, rel)

    def _finish(self, job: _Job, kind: str, payload, stopping: bool) -> None:
        job.process.join()
        self._close(job)
        self.running.remove(job)
        if kind == "done":
            self._resolve(job)
            return
        if stopping:
            return
        self.stop()
        if kind == "error":
            raise payload
        if kind == "interrupted":
            raise KeyboardInterrupt
        raise MixlabError(f"stream {job.handle.name}: its worker process {payload}; run the same "
                          f"command again to resume from the last checkpoint")

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
        if job.conn is not None:
            job.conn.close()


def _listing(ck_attrs) -> tuple[list, dict]:
    """The segment list and layout a checkpoint records."""
    return json.loads(ck_attrs["segments"]), json.loads(ck_attrs["layout"])


def _stream_seed(group: h5py.Group) -> bytes:
    """An HDF5 image holding the stream's checkpoint (if any) and attributes, for its worker."""
    bio = io.BytesIO()
    with h5py.File(bio, "w") as f:
        g = f.create_group("stream")
        if "_checkpoint" in group:
            group.file.copy(group["_checkpoint"], g, "_checkpoint")
        for k, v in group.attrs.items():
            g.attrs[k] = v
    return bio.getvalue()


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"ended without a result (exit code {exitcode})"


# -- the worker's side ------------------------------------------------------------------------------

class _WorkerStore:
    """The store :func:`mixlab.run.streams.run_stream` writes to in a worker: the stream's group in
    memory; ``publish`` hands its checkpoint to the parent instead of writing ``run.h5``."""

    def __init__(self, run_dir: Path, name: str, seed: bytes, conn):
        self.run_dir, self.name, self.conn = run_dir, name, conn
        self._bio = io.BytesIO(seed)
        self.f = h5py.File(self._bio, "r+")
        self.safe_draws: dict[str, int] = {}
        self._handoffs = 0

    def stream_group(self, name: str) -> h5py.Group:
        assert name == self.name, (name, self.name)
        return self.f["stream"]

    def stream_segments(self, name: str) -> StreamSegments:
        ck = self.stream_group(name).get("_checkpoint")
        return StreamSegments.open(self.run_dir, name, None if ck is None else ck.attrs)

    def publish(self) -> None:
        g = self.f["stream"]
        bio = io.BytesIO()
        with h5py.File(bio, "w") as out:
            self.f.copy(g["_checkpoint"], out, "_checkpoint")
            for k, v in g.attrs.items():
                out.attrs[k] = v
        name = f"{HANDOFF_PREFIX}{self._handoffs:06d}.h5"
        self._handoffs += 1
        confined.write_atomic(self.run_dir, f"{SEGMENT_DIR}/{stream_id(self.name)}/{name}",
                              bio.getvalue())
        self.conn.send(("checkpoint", name))

    def write_metric(self, *args, **kwargs) -> None:
        """Curves are written by the parent, from the evaluators' final state."""


class _RemoteBar:
    """The progress bar interface the runner uses, reported to the parent's bar."""

    def __init__(self, conn):
        self.conn, self.n, self.postfix, self._last = conn, 0, None, 0.0

    def reset(self, total=None) -> None:
        self.n = 0
        self.conn.send(("total", total))

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self._last >= _PROGRESS_SECONDS:
            self._last = now
            self.conn.send(("progress", (self.n, self.postfix)))

    def set_postfix(self, postfix: dict, refresh: bool = False) -> None:
        self.postfix = dict(postfix)


def _one_thread() -> None:
    """One BLAS thread, one numba thread and one thread in mixlab's own threaded kernels (the
    ISL's Hamming counts): every worker has a core of its own."""
    os.environ["NUMBA_NUM_THREADS"] = "1"
    os.environ["MIXLAB_KERNEL_THREADS"] = "1"
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    try:
        from numba.np.ufunc import parallel as numba_parallel
    except ImportError:
        return
    if getattr(numba_parallel, "_is_initialized", False):
        import numba

        numba.set_num_threads(1)


def _worker(conn, parent: int, run_dir: Path, name: str, sampler, rng, evaluators,
            kwargs: dict, seed: bytes, show_progress: bool) -> None:
    die_with_parent(parent)
    _one_thread()
    try:
        store = _WorkerStore(run_dir, name, seed, conn)
        run_stream(store, name, sampler, rng, evaluators=evaluators,
                   progress=_RemoteBar(conn) if show_progress else None, **kwargs)
        conn.send(("done", None))
    except KeyboardInterrupt:
        conn.send(("interrupted", None))
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent
        conn.send(("error", _portable(exc, f"stream {name}")))


def _portable(exc: BaseException, what: str) -> BaseException:
    """``exc`` if it survives pickling, else an exception of the same meaning that does."""
    if isinstance(exc, WriteFailure):
        return _WriteFailureCarrier(str(exc), str(exc.path), exc.errno)
    try:
        pickle.dumps(exc)   # its arguments serialise ...
        copy.copy(exc)      # ... and it rebuilds from them, as unpickling in the parent does
        return exc
    except Exception:  # noqa: BLE001 - unpicklable exceptions are common
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return MixlabError(f"{what} failed in its worker process: {text}")


class _WriteFailureCarrier(WriteFailure):
    """A WriteFailure that pickles (its constructor takes the message, path and errno)."""

    def __init__(self, message: str, path: str, err: int | None):
        super().__init__(message, Path(path), err)
        self.args = (message, path, err)
