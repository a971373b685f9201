"""One writer per run: an advisory lock on ``<run dir>/writer.lock``.

The writer holds ``fcntl.flock(LOCK_EX)`` on the file for as long as it writes, and records its
pid, host, start time and command line in it. The kernel drops the lock when the process dies,
however it dies (SIGKILL, the OOM killer, a power cut), so a lock is never stale: a run whose
file says ``running`` while nobody holds the lock was interrupted, and its file stays (naming the
last writer) until the next writer takes it.

A run that ends complete removes the file while still holding the lock. A process that opened the
file just before it was removed would lock an unlinked file, so a writer checks after locking that
the path still names the file it locked, and opens it afresh otherwise.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import socket
import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import MixlabError
from . import confined

LOCK_NAME = "writer.lock"
_DESCRIPTION_BYTES = 1024     # the lock file's JSON, padded with spaces to this width


class RunLocked(MixlabError):
    """Another live process writes this run (exit code 1)."""


def _describe(info: dict) -> str:
    who = f"pid {info.get('pid', '?')}"
    if info.get("host") and info.get("host") != socket.gethostname():
        who += f" on host {info['host']}"
    return f"{who} since {info.get('since', '?')}"


def _read(run_dir: Path) -> dict:
    """The lock file's description of its writer; {} when it is unreadable, not JSON, or not a
    regular file inside the run (nothing outside the run is read through it)."""
    try:
        info = json.loads(confined.read_text(run_dir, LOCK_NAME, 4096) or "{}")
        return info if isinstance(info, dict) else {}
    except (OSError, ValueError, MixlabError):
        return {}


def _names(path: Path, fd: int) -> bool:
    """``path`` is the file open as ``fd`` (not removed or replaced since it was opened)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)


class RunLock:
    """The exclusive writer lock of one run directory (see module docstring)."""

    def __init__(self, run_dir: Path, fd: int):
        self.run_dir, self._fd = run_dir, fd
        _HELD.add(self)

    @classmethod
    def acquire(cls, run_dir: str | os.PathLike, what: str = "run") -> RunLock:
        """Take the lock or raise :class:`RunLocked` naming the live writer (``what``: the
        directory's kind in the message: run, sweep, league)."""
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        path = run_dir / LOCK_NAME
        while True:
            fd = confined.open_fd(run_dir, LOCK_NAME, os.O_RDWR | os.O_CREAT)  # never a link
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise RunLocked(f"{what} {run_dir} is being written by "
                                f"{_describe(_read(run_dir))}; "
                                f"wait for it to finish, or run into another --out "
                                f"directory") from None
            if _names(path, fd):
                break
            os.close(fd)  # a finished writer removed the file after we opened it: open afresh
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "since": _dt.datetime.now().isoformat(timespec="seconds"),
                "command": " ".join(sys.argv)[:500]}
        # one write of a fixed width, then the length: a writer killed in between leaves the
        # previous description or this one (JSON ignores the padding), never an empty file
        data = json.dumps(info).encode().ljust(_DESCRIPTION_BYTES)
        try:
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        except OSError:
            pass  # the lock holds without its description (e.g. on a full disk)
        return cls(run_dir, fd)

    def release(self, remove: bool = False) -> None:
        """Drop the lock; ``remove``: delete the lock file first (the run is complete)."""
        if self._fd >= 0:
            if remove and _names(self.run_dir / LOCK_NAME, self._fd):
                try:
                    confined.remove(self.run_dir, LOCK_NAME)
                except (OSError, MixlabError):
                    pass  # the run stays complete; the file is found stale and reused later
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = -1

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


@contextmanager
def directory_lock(directory: str | os.PathLike, what: str) -> Iterator[RunLock]:
    """The writer lock of a sweep's or a league's directory for the block (its file removed
    after): a second process running the same directory stops at once, naming the first,
    instead of finding each point locked and recording it as failed."""
    lock = RunLock.acquire(directory, what)
    try:
        yield lock
    finally:
        lock.release(remove=True)


#: the locks this process holds: a forked child closes its copies of their descriptors, so a
#: child that outlives the holder (a pool worker of a killed league) does not keep the lock
_HELD: weakref.WeakSet[RunLock] = weakref.WeakSet()


def release_inherited() -> None:
    """Close this process's copies of the locks it inherited (a forked worker's hand-off: the
    lock stays its parent's alone)."""
    _close_inherited()


def _close_inherited() -> None:
    for lock in list(_HELD):
        if lock._fd >= 0:
            try:
                os.close(lock._fd)
            except OSError:
                pass
            lock._fd = -1


os.register_at_fork(after_in_child=_close_inherited)


def live_writer(run_dir: str | os.PathLike) -> str | None:
    """``"pid N since T"`` when a live process holds the run's writer lock, else None."""
    try:
        fd = confined.open_fd(run_dir, LOCK_NAME, os.O_RDONLY)
    except (OSError, MixlabError):
        return None  # no lock file, or one that is not a regular file of the run
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _describe(_read(Path(run_dir)))
    finally:
        os.close(fd)
    return None


def last_writer(run_dir: str | os.PathLike) -> str:
    """Who wrote the run last (from the lock file), for messages about interrupted runs."""
    info = _read(Path(run_dir))
    return _describe(info) if info else "an earlier process"
