"""Files inside a run, sweep or league directory, and nothing outside it.

A directory from a stranger can hold symbolic links, FIFOs or devices where mixlab expects its
own files. Every file mixlab opens, creates, renames or deletes through such a directory goes
through this module, which takes names *relative to the directory* and

- checks every component with ``lstat`` before use: each directory on the way is a real
  directory (not a symbolic link), the file itself a regular file (or absent), and its real
  path stays inside the directory;
- opens with ``O_NOFOLLOW | O_NONBLOCK`` and checks ``fstat`` again, so a file swapped for a
  link between the two checks is refused and a FIFO never blocks;
- deletes only names that match what mixlab writes (:data:`GENERATED`), and only inside.

Anything else is refused with :class:`ConfinementError` (exit code 1), one line naming the path
and the reason. The directory itself is the user's choice and may be reached through a link.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path, PurePosixPath

from ..errors import RunFileError
from .atomic import atomic_write

# Names (relative, POSIX) of the files mixlab writes into a run, sweep or league directory: the
# only names it ever deletes. ``.<name>.tmp-<pid>`` is an atomic write's temporary file.
_TMP = r"(?:/|^)\.[^/]+\.tmp-\d+$"
GENERATED = [re.compile(p) for p in (
    r"^run\.h5$", r"^spec\.yaml$", r"^writer\.lock$",
    r"^segments/[0-9a-f]{16}/(?:handoff-)?\d{6}\.h5$", r"^figures/[\w.+-]+\.png$",
    r"^sweep\.(?:csv|yaml)$", r"^league\.[a-z]+$", _TMP)]

_KINDS = {stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket",
          stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFDIR: "a directory", stat.S_IFREG: "a regular file"}


class ConfinementError(RunFileError):
    """A path in a run directory that mixlab will not follow, open or delete (exit code 1)."""


def _refuse(path: Path, reason: str) -> ConfinementError:
    return ConfinementError(f"{path}: {reason}; mixlab reads and writes only its own regular "
                            f"files and directories inside a run directory (see docs/trust.md)")


def kind_of(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "a special file")


def parts_of(rel: str | os.PathLike) -> tuple[str, ...]:
    """The components of a relative name; absolute names, ``..`` and ``.`` are refused."""
    p = PurePosixPath(os.fspath(rel))
    if p.is_absolute() or any(c in ("..", ".", "") for c in p.parts) or not p.parts:
        raise ConfinementError(f"'{rel}' is not a name inside a directory (absolute, empty or "
                               f"with '..'); mixlab only follows relative names under a run "
                               f"directory (see docs/trust.md)")
    return p.parts


def check(root: str | os.PathLike, rel: str | os.PathLike, *, directory: bool = False,
          must_exist: bool = False) -> Path:
    """``root/rel`` after checking it stays inside ``root``: every component on the way a real
    directory, the last a regular file (a directory if ``directory``) or absent (refused if
    ``must_exist``). Returns the path; raises :class:`ConfinementError`."""
    root = Path(root)
    parts = parts_of(rel)
    path = root
    for i, part in enumerate(parts):
        path = path / part
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            if must_exist:
                raise _refuse(path, "missing") from None
            return root.joinpath(*parts)
        except OSError as exc:
            raise _refuse(path, f"cannot be examined ({exc.strerror})") from None
        want_dir = directory or i < len(parts) - 1
        if stat.S_ISLNK(st.st_mode):
            raise _refuse(path, "a symbolic link, which mixlab does not follow")
        if want_dir and not stat.S_ISDIR(st.st_mode):
            raise _refuse(path, f"{kind_of(st.st_mode)}, not a directory")
        if not want_dir and not stat.S_ISREG(st.st_mode):
            raise _refuse(path, f"{kind_of(st.st_mode)}, not a regular file")
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(path)]) != real_root:
        raise _refuse(path, "its real path leaves the directory")
    return path


def exists(root: str | os.PathLike, rel: str | os.PathLike, *, directory: bool = False) -> bool:
    """Whether ``root/rel`` is there, as a regular file (directory); anything else is refused."""
    path = check(root, rel, directory=directory)
    return os.path.lexists(path)


def open_fd(root: str | os.PathLike, rel: str | os.PathLike, flags: int = os.O_RDONLY,
            mode: int = 0o644) -> int:
    """A descriptor of the regular file ``root/rel`` (see :func:`check`), opened without
    following a link and without blocking; the caller closes it."""
    path = check(root, rel)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError:
        if os.path.islink(path):
            raise _refuse(path, "a symbolic link, which mixlab does not follow") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _refuse(path, f"{kind_of(st.st_mode)}, not a regular file")
    os.set_blocking(fd, True)
    return fd


def read_bytes(root: str | os.PathLike, rel: str | os.PathLike, limit: int) -> bytes:
    """The whole regular file ``root/rel``, refused if it is larger than ``limit`` bytes."""
    fd = open_fd(root, rel)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise _refuse(Path(root, rel), f"{size:,} bytes, more than the {limit:,} bytes "
                                           f"mixlab reads from such a file")
        chunks, left = [], limit + 1
        while left > 0:
            block = os.read(fd, min(left, 1 << 20))
            if not block:
                break
            chunks.append(block)
            left -= len(block)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise _refuse(Path(root, rel), f"more than the {limit:,} bytes mixlab reads from it")
    return data


def read_text(root: str | os.PathLike, rel: str | os.PathLike, limit: int = 1 << 20) -> str:
    return read_bytes(root, rel, limit).decode("utf-8", "replace")


def make_dirs(root: str | os.PathLike, rel: str | os.PathLike) -> Path:
    """Create the directory ``root/rel`` (and the ones on the way) unless there; a link or a
    file on the way is refused."""
    root = Path(root)
    path = root
    for part in parts_of(rel):
        path = path / part
        try:
            os.mkdir(path, 0o755)
        except FileExistsError:
            pass
        check(root, path.relative_to(root), directory=True)
    return path


def write_atomic(root: str | os.PathLike, rel: str | os.PathLike, data: bytes | memoryview) -> Path:
    """Replace the regular file ``root/rel`` whole and atomically (mixlab.runfile.atomic), creating its
    directory if needed; a link at or on the way to the name is refused."""
    parent = PurePosixPath(os.fspath(rel)).parent
    if str(parent) != ".":
        make_dirs(root, parent)
    path = check(root, rel)
    atomic_write(path, data)
    return path


def generated(rel: str | os.PathLike) -> bool:
    """Whether a relative name is one that mixlab writes (so may delete)."""
    name = PurePosixPath(os.fspath(rel)).as_posix()
    return any(p.search(name) for p in GENERATED)


def remove(root: str | os.PathLike, rel: str | os.PathLike) -> bool:
    """Delete the regular file ``root/rel`` if it is there; only names mixlab writes."""
    if not generated(rel):
        raise _refuse(Path(root, rel), "not a name mixlab writes, so it does not delete it")
    path = check(root, rel)
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def list_dir(root: str | os.PathLike, rel: str | os.PathLike | None = None) -> list[str]:
    """The names in the directory ``root/rel`` (empty if it is absent; a link is refused)."""
    path = Path(root) if rel is None else check(root, rel, directory=True)
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []


def remove_generated_in(root: str | os.PathLike, rel: str) -> None:
    """Delete, in the directory ``root/rel``, every file that mixlab writes there, then the
    directory itself if it is left empty. Anything else stays; a link is refused."""
    for name in list_dir(root, rel):
        sub = f"{rel}/{name}"
        st = os.lstat(Path(root, sub))
        if stat.S_ISDIR(st.st_mode):
            remove_generated_in(root, sub)
        elif stat.S_ISREG(st.st_mode) and generated(sub):
            os.unlink(Path(root, sub))
    try:
        os.rmdir(check(root, rel, directory=True))
    except OSError:
        pass  # not empty (something mixlab did not write stays) or already gone


def remove_temporaries(root: str | os.PathLike, rel_dir: str | None, name: str) -> None:
    """Delete ``.<name>.tmp-<pid>`` regular files left in ``root/rel_dir`` by a killed writer."""
    pattern = re.compile(rf"^\.{re.escape(name)}\.tmp-\d+$")
    base = Path(root) if rel_dir is None else check(root, rel_dir, directory=True)
    for entry in list_dir(root, rel_dir):
        if pattern.match(entry) and stat.S_ISREG(os.lstat(base / entry).st_mode):
            try:
                os.unlink(base / entry)
            except OSError:
                pass


RUN_FILES = ("run.h5", "spec.yaml", "log.txt", "writer.lock")
RUN_DIRS = ("segments", "figures")


def check_run_dir(run_dir: str | os.PathLike) -> None:
    """Refuse, before anything is written, a run directory whose own names are taken by a link,
    a FIFO or another kind of file (each file is checked again when it is used)."""
    if not os.path.isdir(run_dir):
        return
    for name in RUN_FILES:
        check(run_dir, name)
    for name in RUN_DIRS:
        check(run_dir, name, directory=True)
    seg = Path(run_dir, "segments")
    if os.path.isdir(seg):
        for sub in list_dir(run_dir, "segments"):
            check(run_dir, f"segments/{sub}", directory=True)


def remove_run_dir(parent: str | os.PathLike, name: str) -> bool:
    """Delete the run directory ``parent/name`` as far as mixlab wrote it: its own files
    (:data:`RUN_FILES`, segments, figures, stray temporaries), then the directory if that left
    it empty. Returns whether it is gone; anything mixlab did not write stays."""
    root = check(parent, name, directory=True)
    if not os.path.lexists(root):
        return True
    for entry in list_dir(root):
        st = os.lstat(root / entry)
        if entry in RUN_DIRS and stat.S_ISDIR(st.st_mode):
            remove_generated_in(root, entry)
        elif stat.S_ISREG(st.st_mode) and (entry in RUN_FILES or generated(entry)):
            os.unlink(root / entry)
    try:
        os.rmdir(root)
    except OSError:
        return False
    return True
