"""Whole-file writes that either land completely or not at all.

A file is written to a temporary name in its own directory, flushed to disk, then renamed over
the target (``os.replace`` is atomic on POSIX), and the directory entry is flushed too. A process
killed at any instant leaves either the old file or the new one, plus at most a stray
``.<name>.tmp-<pid>`` that :func:`remove_stray_temporaries` clears. A write that fails (full disk,
quota, ``RLIMIT_FSIZE``, an I/O error) removes its temporary file and raises
:class:`WriteFailure`; the old file is untouched.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ..errors import MixlabError


class WriteFailure(MixlabError):
    """A file could not be written (exit code 1); ``path`` and ``errno`` say which and why."""

    def __init__(self, message: str, path: Path, err: int | None):
        super().__init__(message)
        self.path = path
        self.errno = err


def describe_os_error(exc: OSError) -> str:
    """A failed write's cause in words (full disk, quota, file size limit, or the OS's text)."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk (or your quota) is full"
    if exc.errno == errno.EFBIG:
        return "the file size limit was reached (disk full, quota or ulimit -f)"
    return exc.strerror or str(exc)


def temporary_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def atomic_write(path: str | os.PathLike, data: bytes | memoryview) -> None:
    """Write ``data`` to ``path`` atomically and durably (see module docstring)."""
    path = Path(path)
    tmp = temporary_name(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK,
                     0o644)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise WriteFailure(f"cannot write {path}: {describe_os_error(exc)} ([Errno {exc.errno}])",
                           path, exc.errno) from None
    sync_directory(path.parent)


def sync_directory(directory: Path) -> None:
    """Flush a directory's entries (a rename's durability); a no-op where unsupported."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_stray_temporaries(directory: Path, name: str) -> None:
    """Delete ``.<name>.tmp-*`` left by a process killed while writing ``name``."""
    for p in directory.glob(f".{name}.tmp-*"):
        try:
            p.unlink()
        except OSError:
            pass
