"""Every worker process's set-up, in one place, and the channel a task reports through.

A worker of any launcher (mixlab.launch.launchers) is set up by :func:`setup_worker`:

- **one thread**: one BLAS thread (threadpoolctl), one numba thread and one thread of mixlab's
  own threaded kernels, so that N workers on N cores do not each start N threads;
- **parent death**: a local worker asks Linux to SIGKILL it when its parent dies
  (``PR_SET_PDEATHSIG``), so a killed ``mixlab run``, sweep or league leaves no worker behind;
- **signals**: SIGINT and SIGTERM raise KeyboardInterrupt (a stream checkpoints, then stops);
- **progress bars** lock with a thread lock (:func:`thread_locked_bars`);
- **the writer lock**: a worker writes no run file and holds no writer lock. A forked worker's
  copies of its parent's lock descriptors are closed (mixlab.runfile.lock), so the lock is the
  parent's alone and is released the instant the parent dies.

A task reports to the process that launched it with :func:`report` (a stream's checkpoints and
progress); in the launcher's own process (the serial launcher) the report goes to its queue.
"""

from __future__ import annotations

import contextlib
import copy
import ctypes
import os
import pickle
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import MixlabError
from ..runfile.atomic import WriteFailure
from ..runfile.lock import release_inherited

#: the environment a worker's thread pools read when they start (numpy reads it on import)
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMBA_NUM_THREADS", "MIXLAB_KERNEL_THREADS")

_outbox: Callable[[Any], None] | None = None


def report(message: Any) -> None:
    """Send ``message`` to the process that launched this task (dropped where nobody listens,
    e.g. on a Dask worker)."""
    if _outbox is not None:
        _outbox(message)


@contextlib.contextmanager
def reporting_to(send: Callable[[Any], None] | None) -> Iterator[None]:
    """:func:`report` goes to ``send`` inside the block."""
    global _outbox
    old, _outbox = _outbox, send
    try:
        yield
    finally:
        _outbox = old


def setup_worker(parent: int | None) -> None:
    """Set up this process as a worker (see the module docstring); ``parent``: the pid of the
    process that started it (None on a Dask worker, whose life the cluster manages)."""
    if parent is not None:
        die_with_parent(parent)
        release_inherited()
    interruptible()
    one_thread()
    thread_locked_bars()


def thread_locked_bars() -> None:
    """Progress bars of a worker lock with a thread lock: tqdm's default is a multiprocessing
    semaphore, registered with the resource tracker its process tree shares, and a worker killed
    mid-task would leave it registered (the tracker then warns of 'leaked semaphore objects'
    when the command ends)."""
    import threading

    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())


def die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no-op elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)         # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:                           # it died before prctl took effect
        os._exit(1)


class Terminated(KeyboardInterrupt):
    """SIGTERM, as an interruption: the task checkpoints and stops as on Ctrl-C."""


def _terminated(signum, frame):
    raise Terminated()


@contextlib.contextmanager
def signal_handlers(handlers: dict) -> Iterator[None]:
    """Python handlers ``{signal: handler}`` inside the block, the old ones again after it;
    outside the main thread, where handlers cannot be set, nothing changes."""
    try:
        old = {s: signal.signal(s, h) for s, h in handlers.items()}
    except ValueError:
        yield
        return
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def sigterm_as_interrupt() -> contextlib.AbstractContextManager:
    """SIGTERM raises :class:`Terminated` (a KeyboardInterrupt) inside the block, so a command
    killed politely stops as on Ctrl-C."""
    return signal_handlers({signal.SIGTERM: _terminated})


def interruptible() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt (only the main thread can set handlers: a
    Dask worker's task thread keeps the worker's own)."""
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _terminated)
    except ValueError:
        pass


def one_thread() -> None:
    """One BLAS thread, one numba thread and one thread in mixlab's own threaded kernels (the
    ISL's Hamming counts): every worker has a core of its own."""
    os.environ["NUMBA_NUM_THREADS"] = "1"
    os.environ["MIXLAB_KERNEL_THREADS"] = "1"
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    # numba not imported yet reads NUMBA_NUM_THREADS when it is; importing it here would cost a
    # worker that never uses it a second or more
    numba_parallel = sys.modules.get("numba.np.ufunc.parallel")
    if getattr(numba_parallel, "_is_initialized", False):
        import numba

        numba.set_num_threads(1)


@contextlib.contextmanager
def one_thread_here() -> Iterator[None]:
    """One BLAS thread in this process for the block (a task the serial launcher runs)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


@contextlib.contextmanager
def thread_environment() -> Iterator[None]:
    """Inside the block, a process started inherits one thread per pool in its environment
    (unless the user set a variable), read by a spawned interpreter before any set-up runs;
    this process's environment is restored after."""
    saved = {v: os.environ.get(v) for v in THREAD_VARS}
    for v in THREAD_VARS:
        os.environ.setdefault(v, "1")
    try:
        yield
    finally:
        for v, old in saved.items():
            if old is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = old


def portable(exc: BaseException, what: str) -> BaseException:
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
