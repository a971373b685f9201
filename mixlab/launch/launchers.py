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
  kill) ends its own task only.
- :class:`DaskLauncher` submits every task to a Dask cluster at once; the workers need no file
  system shared with this process (``shares_files`` False): a task receives its inputs and
  returns its outputs as data, and this process writes them.
"""

from __future__ import annotations

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


def _process_main(conn, parent: int, task: Task) -> None:
    """A worker process: set up, run the task, send its end (see ProcessLauncher)."""
    setup_worker(parent)
    try:
        with reporting_to(lambda m: conn.send(("message", m))):
            value = task.fn(*task.args)
        conn.send(("done", value))
    except KeyboardInterrupt:
        conn.send(("interrupted", None))
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent
        conn.send(("error", portable(exc, task.key)))
    finally:
        conn.close()


class ProcessLauncher(Launcher):
    """Each task in a worker process of its own, forked or spawned (``start_method``)."""

    def __init__(self, slots: int, start_method: str = "fork"):
        self.slots = slots
        self._mp = multiprocessing.get_context(start_method)
        self._running: dict = {}         # connection -> (task, process, start time)

    def submit(self, task: Task) -> None:
        here, there = self._mp.Pipe(duplex=False)
        proc = self._mp.Process(target=_process_main, args=(there, os.getpid(), task),
                                name=f"mixlab {task.key}", daemon=False)
        with thread_environment():
            proc.start()
        there.close()
        self._running[here] = (task, proc, time.perf_counter())

    def running(self) -> int:
        return len(self._running)

    def wait(self, timeout: float | None = None) -> list[Message | Ended]:
        events: list[Message | Ended] = []
        for conn in multiprocessing.connection.wait(list(self._running), timeout=timeout):
            task, proc, t0 = self._running[conn]
            try:
                kind, payload = conn.recv()
            except (EOFError, OSError):
                proc.join()
                kind, payload = "died", death(proc.exitcode)
            if kind == "message":
                events.append(Message(task.key, payload))
                continue
            del self._running[conn]
            conn.close()
            proc.join()
            events.append(Ended(task.key, kind, payload, time.perf_counter() - t0))
        return events

    def interrupt(self) -> None:
        for _, proc, _ in self._running.values():
            if proc.is_alive():
                os.kill(proc.pid, signal.SIGTERM)

    def kill(self) -> None:
        for conn, (_, proc, _) in list(self._running.items()):
            proc.kill()
            proc.join()
            conn.close()
        self._running.clear()


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
           start_method: str = "spawn") -> Launcher:
    """The launcher for ``-j jobs`` and ``--scheduler``: Dask given a scheduler's address, else
    worker processes (``start_method``) given more than one job, else this process."""
    if scheduler:
        return DaskLauncher(scheduler)
    if jobs > 1:
        return ProcessLauncher(jobs, start_method)
    return SerialLauncher()
