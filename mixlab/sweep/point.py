"""One point of a sweep: run or resume it in its directory, what its directory already holds,
and the portable form a Dask worker runs (the run directory travels as tar bytes)."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
import uuid
from pathlib import Path

from ..errors import MixlabError
from ..runfile import confined
from ..spec.resolver import dump
from .grid import COMPLETE, FAILED


def one_line(exc: BaseException) -> str:
    """A failure's reason on one line: a MixlabError's own message, else 'Type: message'."""
    text = str(exc) if isinstance(exc, MixlabError) else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split()) or type(exc).__name__


def run_point(spec: dict, run_dir: str, quiet: bool = True) -> dict:
    """Run (or resume) one grid point in ``run_dir``; never raises for the point's own failure.

    Returns ``{"status": "complete"|"failed", "error": one-line reason or "", "results":
    {key: value}, "happened": "ran"|"resumed"|"complete"|""}``."""
    from ..run.context import execute
    from ..runfile.store import RunReader

    try:
        run_dir = confined.check(Path(run_dir).parent, Path(run_dir).name, directory=True)
        # one process per point: the sweep's own -j spreads the points over the cores
        _, happened = execute(spec, run_dir, quiet=quiet, jobs=1)
        with RunReader(run_dir) as r:
            results = r.results()
    except Exception as exc:  # the point failed; the sweep goes on and lists it
        return {"status": FAILED, "error": one_line(exc), "results": {}, "happened": ""}
    return {"status": COMPLETE, "error": "", "results": results, "happened": happened}


def existing_run(spec: dict, run_dir: Path) -> tuple[str, dict]:
    """What ``run_dir`` already holds for ``spec``: ``("complete", results)`` for a complete
    run of this very spec, ``("other", {})`` for a run of another spec (the sweep's spec or
    its --set overrides changed since), else ``("todo", {})`` (nothing, unfinished, failed or
    unreadable: running the point resumes it or says what is wrong)."""
    try:  # a point is a real directory of the sweep, never a link out of it
        confined.check(run_dir.parent, run_dir.name, directory=True)
    except MixlabError:
        return "todo", {}  # running the point says what is wrong
    if not os.path.lexists(run_dir / "run.h5"):
        return "todo", {}
    from ..runfile.store import RunReader

    try:
        with RunReader(run_dir) as r:
            if r.attrs.get("spec") != dump(spec):
                return "other", {}
            if r.status == COMPLETE:
                return COMPLETE, r.results()
    except Exception:  # unreadable: the point runs and says what is wrong
        return "todo", {}
    return "todo", {}


def pack_dir(run_dir: Path) -> bytes:
    """The files of ``run_dir`` as an uncompressed tar archive (names relative to it)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in sorted(run_dir.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(run_dir)), recursive=False)
    return buf.getvalue()


def unpack_dir(archive: bytes, dest: Path) -> None:
    """Unpack a :func:`pack_dir` archive into the new directory ``dest`` (regular files and
    directories only, every name inside ``dest``: tarfile's 'data' filter)."""
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r") as tar:
        tar.extractall(dest, filter="data")


def _fsync_tree(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            with open(path, "rb") as fh:
                os.fsync(fh.fileno())


def install_archive(archive: bytes, run_dir: Path) -> None:
    """Replace ``run_dir`` by the archived run directory, never leaving a half-unpacked one:
    unpack next to it, fsync, then swap it in with renames."""
    incoming = run_dir.with_name(f".{run_dir.name}.incoming-{uuid.uuid4().hex[:8]}")
    confined.check(run_dir.parent, run_dir.name, directory=True)  # never a link out
    try:
        unpack_dir(archive, incoming)
        _fsync_tree(incoming)
        if os.path.lexists(run_dir):
            old = run_dir.with_name(f".{run_dir.name}.old-{uuid.uuid4().hex[:8]}")
            run_dir.rename(old)
            incoming.rename(run_dir)
            confined.remove_run_dir(old.parent, old.name)
        else:
            incoming.rename(run_dir)
    finally:
        if os.path.lexists(incoming):
            shutil.rmtree(incoming, ignore_errors=True)  # unpacked here: regular files only


SCRATCH_PREFIX = "mixlab-point-"   # + the worker's pid + "-" + a random suffix


def remove_stale_scratch(tmp_root: Path) -> list[Path]:
    """Remove the temporary point directories under ``tmp_root`` whose worker process is gone
    (named ``mixlab-point-<pid>-*``; a live or unknown pid's directory is kept). Returns them."""
    removed = []
    for path in tmp_root.glob(f"{SCRATCH_PREFIX}*-*"):
        pid = path.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or path.is_symlink() or not path.is_dir():
            continue
        try:
            os.kill(int(pid), 0)
            continue                          # alive (maybe another worker's point)
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError):
            continue                          # someone else's live process
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def run_point_portable(spec: dict, archive: bytes | None, quiet: bool = True) -> dict:
    """A Dask task: run one point in a temporary directory of the worker (starting from the
    client's partial run directory ``archive``, if any) and return :func:`run_point`'s answer
    plus ``"archive"``, the point's run directory as tar bytes (None if nothing was written).

    The worker needs no access to the client's files: everything travels in the task. The
    temporary directory goes when the point ends or fails; one left by a worker process that was
    killed is removed by the next point run on the same machine."""
    remove_stale_scratch(Path(tempfile.gettempdir()))
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-",
                                     ignore_cleanup_errors=True) as tmp:
        run_dir = Path(tmp) / "run"
        if archive:
            unpack_dir(archive, run_dir)
        out = run_point(spec, str(run_dir), quiet)
        out["archive"] = pack_dir(run_dir) if run_dir.is_dir() else None
    return out


def _failed(reason: str) -> dict:
    return {"status": FAILED, "error": reason, "results": {}, "happened": ""}
