"""What every worker process mixlab starts does first, and how a pool of them is stopped.

Every worker (a stream of ``run -j``, a stage of ``run -j``, a point of a sweep, a cell of a
league) calls :func:`die_with_parent` before anything else: Linux then kills it when the process
that started it dies, however that dies (SIGKILL included). A worker holds a run's writer lock
(mixlab.runfile.lock) while it writes, so a worker outliving its parent would keep sampling into a
run nobody reads and make the same command, run again, fail with "being written by pid N".

:func:`stop_pool_on_interrupt` covers the parent ending gracefully: on Ctrl-C or SIGTERM it
sends SIGTERM to each worker of a ``ProcessPoolExecutor`` (a point's run takes it as an
interruption: its last checkpoint stays, its lock is released, its status is "interrupted"),
waits for them, and only then lets the interruption go on.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

__all__ = ["STOP_SECONDS", "die_with_parent", "pool_worker_init", "stop_pool_on_interrupt"]

STOP_SECONDS = 30  # a worker that has not ended this long after SIGTERM is killed
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent (pid ``parent``) dies; end at once if
    it died before the request took effect (no-op where prctl does not exist)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)


def pool_worker_init(parent: int) -> None:
    """A ``ProcessPoolExecutor`` worker's initializer (``initargs=(os.getpid(),)``): dies with
    its parent, and its progress bars lock with a thread lock (tqdm's default is a
    multiprocessing semaphore, registered with the resource tracker the whole pool shares, and a
    worker killed mid-point would leave it registered: the tracker then warns of 'leaked
    semaphore objects' when the pool's parent ends)."""
    die_with_parent(parent)
    import threading

    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())


class _Terminated(KeyboardInterrupt):
    """SIGTERM of a pool's parent, taken as Ctrl-C."""


@contextlib.contextmanager
def stop_pool_on_interrupt(pool: ProcessPoolExecutor) -> Iterator[None]:
    """Inside the block SIGTERM interrupts as Ctrl-C does; an interruption first stops every
    worker of ``pool`` (SIGTERM, then SIGKILL after :data:`STOP_SECONDS`) and waits for it."""
    try:
        old = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:          # not the main thread: the caller's own handling applies
        old = None
    try:
        yield
    except KeyboardInterrupt:
        _stop_workers(pool)
        raise
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


def _raise_terminated(signum, frame) -> None:
    raise _Terminated()


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    # the pool's processes (a mapping pid -> Process, ProcessPoolExecutor's own record of them)
    procs = list((getattr(pool, "_processes", None) or {}).values())
    with _signals_ignored():    # a second Ctrl-C does not leave the workers behind
        for p in procs:
            if p.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGTERM)
        pool.shutdown(wait=False, cancel_futures=True)   # an interrupted worker then ends
        deadline = time.monotonic() + STOP_SECONDS
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
        pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
