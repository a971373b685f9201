"""Serial, process-pool and Dask launchers behind one interface, and the one place that
chooses between them (:func:`choose`).

A launcher runs :class:`Task` s: ``submit`` starts one at once (the caller keeps at most
``slots`` running: :func:`mixlab.launch.order.launch` or the stream pool of ``mixlab run -j``),
and ``wait`` returns what happened since: the :class:`Message` s tasks sent with
:func:`mixlab.launch.worker.report` and the :class:`Ended` of each task that ended (its value,
its exception, an interruption, or its process's death).

- :class:`SerialLauncher` runs a task in this process when it is waited for, with one BLAS
  thread.
- :class:`ProcessLauncher` runs each task in a process of its own, forked (it inherits the
  closure: nothing is pickled) or spawned (a fresh interpreter; the task is pickled), set up by
  :func:`mixlab.launch.worker.setup_worker`. A process that dies (a crash, the OOM killer, a
  kill) ends its own task only. With ``reuse`` its worker processes stay and run task after
  task (each task pickled to its worker): what one task loaded (a sampler's module, its
  compiled kernels, a truth read from the cache) the next task on that worker finds loaded.
- :class:`DaskLauncher` submits every task to a Dask cluster at once; the workers need no file
  system shared with this process (``shares_files`` False): a task receives its inputs and
  returns its outputs as data, and this process writes them.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import MixlabError, UsageError
from .worker import one_thread_here, portable, reporting_to, setup_worker, thread_environment

#: how long a stopped worker process may take to checkpoint and end before it is killed
STOP_SECONDS = 30.0
#: how long a stopped worker process is left to end by itself before it is sent SIGTERM
NUDGE_SECONDS = 1.0


@dataclass
class Task:
    """``fn(*args)``, named ``key`` in messages and errors (e.g. "stream x", "point 3")."""

    key: str
    fn: Callable[..., Any]
    args: tuple = ()


@dataclass
class Message:
    """What task ``key`` reported while running."""

    key: str
    payload: Any


@dataclass
class Ended:
    """Task ``key`` ended: ``kind`` "done" (``value`` its return value), "error" (``value`` its
    exception), "interrupted" (SIGINT/SIGTERM), or "died" (``value`` how its process ended)."""

    key: str
    kind: str
    value: Any = None
    seconds: float = field(default=0.0)


class Launcher(ABC):
    """Runs tasks; see the module docstring. A context manager: leaving it ends every task."""

    #: tasks the caller may keep running at once (None: no limit, the cluster queues them)
    slots: int | None = 1
    #: whether a task sees this process's files (False: it gets and returns data)
    shares_files: bool = True

    @abstractmethod
    def submit(self, task: Task) -> None:
        """Start ``task``."""

    @abstractmethod
    def running(self) -> int:
        """Tasks submitted and not yet reported ended."""

    @abstractmethod
    def wait(self, timeout: float | None = None) -> list[Message | Ended]:
        """What happened since the last call; blocks until something does (or ``timeout``)."""

    @abstractmethod
    def interrupt(self) -> None:
        """Ask every running task to stop (it may still report and end)."""

    @abstractmethod
    def kill(self) -> None:
        """End every running task now, without its report."""

    def stop(self) -> None:
        """End every running task, letting it checkpoint first where the launcher can (here:
        :meth:`kill`)."""
        self.kill()

    def __enter__(self) -> Launcher:
        return self

    def __exit__(self, *exc) -> None:
        self.kill()


class SerialLauncher(Launcher):
    """Each task in this process, run when it is waited for (one BLAS thread)."""

    def __init__(self):
        self._queue: list[Task] = []

    def submit(self, task: Task) -> None:
        self._queue.append(task)

    def running(self) -> int:
        return len(self._queue)

    def wait(self, timeout: float | None = None) -> list[Message | Ended]:
        if not self._queue:
            return []
        task = self._queue.pop(0)
        events: list[Message | Ended] = []
        t0 = time.perf_counter()
        with reporting_to(lambda m: events.append(Message(task.key, m))), one_thread_here():
            try:
                value, kind = task.fn(*task.args), "done"
            except Exception as exc:  # KeyboardInterrupt stops the caller, here as anywhere
                value, kind = exc, "error"
        events.append(Ended(task.key, kind, value, time.perf_counter() - t0))
        return events

    def interrupt(self) -> None:
        """A task runs in this process: Ctrl-C reaches it directly."""

    def kill(self) -> None:
        self._queue.clear()


def _run_one(conn, task: Task) -> bool:
    """Run ``task`` in this worker and send its end on ``conn``; False if it was interrupted
    (the worker then ends)."""
    try:
        with reporting_to(lambda m: conn.send(("message", m))):
            value = task.fn(*task.args)
        conn.send(("done", value))
    except KeyboardInterrupt:
        conn.send(("interrupted", None))
        return False
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent
        conn.send(("error", portable(exc, task.key)))
    return True


def _process_main(conn, parent: int, task: Task | None) -> None:
    """A worker process: set up, then run ``task``, or (``task`` None: a reused worker) each
    task the parent sends until it sends None (see ProcessLauncher)."""
    setup_worker(parent)
    try:
        if task is not None:
            _run_one(conn, task)
            return
        while True:
            try:
                task = conn.recv()
            except (EOFError, KeyboardInterrupt):
                return
            if task is None or not _run_one(conn, task):
                return
    finally:
        conn.close()


@dataclass
class _Worker:
    """A worker process, its end of the pipe, and the task it runs (None: idle)."""

    proc: Any
    conn: Any
    task: Task | None = None
    t0: float = 0.0


class ProcessLauncher(Launcher):
    """Each task in a worker process, forked or spawned (``start_method``): a process of its
    own per task, or with ``reuse`` up to ``slots`` processes that run task after task (started
    as the first tasks are submitted, so a fork inherits what the parent loaded before them)."""

    def __init__(self, slots: int, start_method: str = "fork", reuse: bool = False):
        self.slots = slots
        self.reuse = reuse
        self._mp = multiprocessing.get_context(start_method)
        self._workers: list[_Worker] = []

    def _start(self, task: Task | None) -> _Worker:
        here, there = self._mp.Pipe(duplex=self.reuse)
        name = f"mixlab {task.key}" if task is not None else "mixlab worker"
        proc = self._mp.Process(target=_process_main, args=(there, os.getpid(), task),
                                name=name, daemon=False)
        with thread_environment():
            proc.start()
        there.close()
        worker = _Worker(proc, here)
        self._workers.append(worker)
        return worker

    def submit(self, task: Task) -> None:
        worker = self._start(task) if not self.reuse else self._hand_over(task)
        worker.task, worker.t0 = task, time.perf_counter()

    def _hand_over(self, task: Task) -> _Worker:
        """Send ``task`` to an idle reused worker (one started if none is idle, or if the idle
        one has died since its last task)."""
        for worker in [w for w in self._workers if w.task is None]:
            try:
                worker.conn.send(task)
                return worker
            except OSError:
                self._drop(worker)
        worker = self._start(None)
        worker.conn.send(task)
        return worker

    def running(self) -> int:
        return sum(w.task is not None for w in self._workers)

    def wait(self, timeout: float | None = None) -> list[Message | Ended]:
        events: list[Message | Ended] = []
        busy = {w.conn: w for w in self._workers if w.task is not None}
        for conn in multiprocessing.connection.wait(list(busy), timeout=timeout):
            worker = busy[conn]
            task = worker.task
            try:
                kind, payload = conn.recv()
            except (EOFError, OSError):
                worker.proc.join()
                kind, payload = "died", death(worker.proc.exitcode)
            if kind == "message":
                events.append(Message(task.key, payload))
                continue
            worker.task = None
            if not self.reuse or kind in ("died", "interrupted"):
                self._drop(worker)
            events.append(Ended(task.key, kind, payload, time.perf_counter() - worker.t0))
        return events

    def _drop(self, worker: _Worker) -> None:
        """Close ``worker``'s pipe and wait for its process (which has ended, or died)."""
        worker.conn.close()
        worker.proc.join()
        self._workers.remove(worker)

    def interrupt(self) -> None:
        for w in self._workers:
            if w.task is not None and w.proc.is_alive():
                os.kill(w.proc.pid, signal.SIGTERM)

    def stop(self, seconds: float | None = None) -> None:
        """End every running task, letting it checkpoint: a task that Ctrl-C reached too (the
        terminal signals the whole process group) ends by itself; those still running after
        :data:`NUDGE_SECONDS` are sent SIGTERM (the signal reached this process alone), and
        those still running after ``seconds`` (default :data:`STOP_SECONDS`) are killed. Their
        ends are dropped."""
        seconds = STOP_SECONDS if seconds is None else seconds
        start = time.monotonic()
        nudged = False
        while self.running() and (left := start + seconds - time.monotonic()) > 0:
            if not nudged and time.monotonic() - start >= NUDGE_SECONDS:
                self.interrupt()
                nudged = True
            self.wait(timeout=min(left, 0.1))
        self.kill()

    def kill(self) -> None:
        for w in self._workers:
            if w.task is not None:
                w.proc.kill()
            else:                             # an idle reused worker ends when told to
                with contextlib.suppress(OSError):
                    w.conn.send(None)
            w.conn.close()
        for w in self._workers:
            w.proc.join(timeout=5)
            if w.proc.is_alive():
                w.proc.kill()
                w.proc.join()
        self._workers.clear()


def one_line(exc: BaseException) -> str:
    """A failure's reason on one line: a MixlabError's own message, else 'Type: message'."""
    text = str(exc) if isinstance(exc, MixlabError) else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split()) or type(exc).__name__


def death(exitcode: int | None) -> str:
    """How a worker process ended without a result, in words."""
    if exitcode is not None and exitcode < 0:
        try:
            return f"was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"ended without a result (exit code {exitcode})"


def _on_dask(fn: Callable, *args):
    """A task on a Dask worker: one thread, then ``fn(*args)``."""
    setup_worker(None)
    return fn(*args)


class DaskLauncher(Launcher):
    """Every task on a Dask cluster at ``scheduler`` (the cluster queues and places them)."""

    slots = None
    shares_files = False

    def __init__(self, scheduler: str):
        try:
            from dask.distributed import Client
        except ImportError as exc:
            raise UsageError("--scheduler needs the optional Dask extra: "
                             "pip install 'mixlab[dask]'") from exc
        try:
            self.client = Client(scheduler, timeout="30s")
        except (OSError, TimeoutError) as exc:
            raise MixlabError(f"cannot reach the Dask scheduler at {scheduler}: "
                              f"{one_line(exc)}; check the address (e.g. "
                              f"tcp://host:8786) and that it is running") from exc
        self._tag = uuid.uuid4().hex[:8]
        self._futures: dict = {}         # future -> (task, submit time)
        self._submitted = 0

    def submit(self, task: Task) -> None:
        key = f"mixlab-{task.key.replace(' ', '-')}-{self._tag}-{self._submitted}"
        self._submitted += 1
        fut = self.client.submit(_on_dask, task.fn, *task.args, pure=False, key=key)
        self._futures[fut] = (task, time.perf_counter())

    def running(self) -> int:
        return len(self._futures)

    def wait(self, timeout: float | None = None) -> list[Message | Ended]:
        from dask.distributed import wait

        if not self._futures:
            return []
        try:
            done, _ = wait(list(self._futures), timeout=timeout, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return []
        events: list[Message | Ended] = []
        for fut in done:
            task, t0 = self._futures.pop(fut)
            try:
                value, kind = fut.result(), "done"
            except Exception as exc:  # e.g. KilledWorker: the task killed worker after worker
                value, kind = exc, "error"
            fut.release()
            events.append(Ended(task.key, kind, value, time.perf_counter() - t0))
        return events

    def interrupt(self) -> None:
        """A task on the cluster runs to its end (or is cancelled by :meth:`kill`)."""

    def kill(self) -> None:
        for fut in self._futures:
            fut.cancel()
        self._futures.clear()
        self.client.close()


def choose(jobs: int = 1, scheduler: str | None = None,
           start_method: str = "spawn", reuse: bool = False) -> Launcher:
    """The launcher for ``-j jobs`` and ``--scheduler``: Dask given a scheduler's address, else
    worker processes (``start_method``; ``reuse``: processes that run task after task, for
    tasks that pickle) given more than one job, else this process."""
    if scheduler:
        return DaskLauncher(scheduler)
    if jobs > 1:
        return ProcessLauncher(jobs, start_method, reuse)
    return SerialLauncher()
