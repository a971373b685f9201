"""What a run's writer does around its experiment: provenance, the run directory's state
(resume, replace, update, force), the status the run file ends with, warnings,
diagnostics and the log file; :func:`mixlab.run.context.execute` calls one function per concern.
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..errors import MixlabError, RunFileError, interruption
from ..plugins import discovery as plugins
from ..runfile import confined
from ..runfile.atomic import WriteFailure
from ..runfile.lock import RunLock, live_writer
from ..runfile.segments import SEGMENT_DIR
from ..runfile.store import RUN_FILE, RunReader, RunStore

PACKAGES = ("numpy", "scipy", "h5py", "matplotlib", "click", "pyyaml", "tqdm", "PyMaxflow",
            "numba", "arviz")


def provenance() -> dict:
    """mixlab version, git commit and dirty flag, package versions, creation time."""
    code = _code_provenance()
    return {**code, "packages": dict(code["packages"]),
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "python": sys.version.split()[0]}


@functools.lru_cache(maxsize=1)
def _code_provenance() -> dict:
    """The installed code's identity, once per process (two git commands and a metadata
    look-up per package: a league's cells would otherwise repeat them in every run)."""
    here = Path(__file__).resolve().parents[2]
    commit, dirty = "unknown", "unknown"
    try:
        commit = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=5).stdout.strip() or "unknown"
        if commit != "unknown":
            st = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--", "mixlab"],
                                capture_output=True, text=True, timeout=5).stdout
            dirty = bool(st.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            versions[pkg] = None
    return {"mixlab_version": __version__, "git_commit": commit, "git_dirty": str(dirty),
            "packages": versions}


def run_state(run_dir: Path) -> str | None:
    """Status of an existing run directory, None if there is no run file."""
    if not confined.exists(run_dir, RUN_FILE):
        return None
    with RunReader(run_dir) as r:
        return r.status


def _discard_run(run_dir: Path) -> None:
    """Remove a run's data (run file, segments, figures); the caller holds its lock. Only files
    mixlab writes are deleted (mixlab.runfile.confined); anything else in the directory stays."""
    for name in (RUN_FILE, "spec.yaml"):
        confined.remove(run_dir, name)
    for name in (SEGMENT_DIR, "figures"):
        confined.remove_generated_in(run_dir, name)


@dataclass
class Opening:
    """What the run directory holds for this spec: ``happened`` is 'ran' (a new run),
    'resumed', 'updated' or 'complete' (nothing to do); ``status`` the old run's; ``lock`` the
    writer lock held (taken again when an old run was moved aside)."""

    happened: str
    status: str | None
    lock: RunLock


def open_run(run_dir: Path, spec: dict, text: str, lock: RunLock, *, force: bool,
             replace: bool, update: bool) -> Opening:
    """Settle what an existing run in ``run_dir`` means for ``spec`` (its YAML ``text``),
    holding its writer ``lock``: refuse a run of another spec unless ``replace`` (moved aside)
    or ``update``; discard it with ``force``; check that a resumed run's plugins are the same."""
    if not confined.exists(run_dir, RUN_FILE) or force:
        if force:
            _discard_run(run_dir)
        return Opening("ran", None, lock)
    try:
        with RunReader(run_dir) as r:
            status, old_spec = r.status, r.attrs.get("spec")
            old_plugins = r.attrs.get("plugins")
            if update:    # its records checked before the run is opened for writing
                from .update import plan
                plan(r.records(), spec)
    except RunFileError as exc:
        raise RunFileError(f"{exc}. Nobody is writing it: start the run afresh with "
                           f"--force (this discards the damaged file), or run into "
                           f"another --out directory") from exc
    if update:
        return Opening("updated", status, lock)
    if old_spec != text and replace:
        previous = run_dir.with_name(run_dir.name + ".previous")
        if live_writer(previous) is not None:
            raise MixlabError(f"cannot move {run_dir} aside: {previous} is being "
                              f"written by {live_writer(previous)}")
        if not confined.remove_run_dir(previous.parent, previous.name):
            raise MixlabError(f"cannot move {run_dir} aside: {previous} holds files "
                              f"mixlab did not write; move it away first")
        run_dir.rename(previous)
        lock.release()
        return Opening("ran", None, RunLock.acquire(run_dir))
    if old_spec != text:
        raise MixlabError(f"{run_dir} holds a run of a different spec; "
                          f"{update_hint(run_dir, spec)}, choose another --out "
                          f"directory, or pass --replace to move it aside to "
                          f"{run_dir.name}.previous")
    if status == "complete":
        return Opening("complete", status, lock)
    try:
        plugins.check_resume(old_plugins, run_dir)
    except MixlabError as exc:
        raise MixlabError(f"{exc}; or {update_hint(run_dir, spec)}") from None
    return Opening("resumed", status, lock)


def record_provenance(store: RunStore, spec: dict, text: str) -> None:
    """A new run's root attributes: versions, commit, spec, seeds, plugins."""
    attrs = provenance()
    attrs.update(spec=text, seed_entropy=str(spec["seed"]),
                 seed_key=str(list(spec["seed_key"])), experiment=spec["experiment"],
                 plugins=json.dumps(plugins.provenance()))
    store.set_root_attrs(attrs)


@contextmanager
def final_status(store: RunStore) -> Iterator[None]:
    """The status a run that stops inside the block ends with: 'interrupted' (Ctrl-C, SIGTERM,
    also when raised inside compiled code), 'failed' with its one-line reason, or, when the
    disk refused a write, the last snapshot as it was (and what it holds, in the message)."""
    try:
        yield
    except WriteFailure as exc:
        store.close(publish=False)  # the disk refused: the last snapshot stays as it was
        raise WriteFailure(f"{exc}. {store.saved_text()}; free space and run the same "
                           f"command again to resume", exc.path, exc.errno) from None
    except KeyboardInterrupt:
        _close_quietly(store, "interrupted")
        raise
    except BaseException as exc:
        stop = interruption(exc)
        if stop is not None:          # a signal that arrived inside compiled code
            _close_quietly(store, "interrupted")
            raise stop from None
        _close_quietly(store, "failed", _one_line(exc))
        raise




def update_hint(run_dir: Path, spec: dict) -> str:
    """'--update would ...' for a run that the same command refuses (mixlab.run.update)."""
    from .update import plan

    try:
        with RunReader(run_dir) as r:
            what = plan(r.records(), spec).summary()
    except (MixlabError, OSError):
        return "pass --update to rerun only the streams whose inputs changed"
    return f"pass --update to {what}"


def apply_update(store: RunStore, run_dir: Path, spec: dict, text: str,
                  status: str) -> str | None:
    """Discard what the spec and the code loaded now make stale (mixlab.run.update) and record the
    new spec; None when the run is complete and nothing is stale."""
    from .update import plan, remove_segments

    todo = plan(store.records(), spec)
    if todo.empty and status == "complete" and store.attrs.get("spec") == text:
        return None
    deleted = store.discard([*todo.rerun, *todo.remove], list(todo.stages))
    store.set_root_attrs({"spec": text, "plugins": json.dumps(plugins.provenance())})
    store.publish()                     # the file no longer links the deleted streams' segments
    remove_segments(run_dir, deleted)
    return todo.summary()


def store_diagnostics(store: RunStore, run_dir: Path, ctx) -> None:
    """The spec's ``diagnostics: true``: ESS, R-hat, MCSE and ESS/s of every stream, read back
    from the published file (its streams are complete), stored as results."""
    from ..diagnostics import diagnose
    from ..diagnostics.mixing import result_items

    store.publish()
    with RunReader(run_dir) as run:
        rows = diagnose(run)
    for k, v in result_items(rows).items():
        store.set_result(k, v)
    ctx.log(f"diagnostics of {len(rows)} statistic(s) stored (ess_bulk/, ess_tail/, rhat/, "
            f"mcse/, ess_per_s/)")


def _large_values(spec: dict, prefix: str = "") -> list[str]:
    """``key=value`` for the spec's real numbers of magnitude 1e6 or more (overflow suspects)."""
    out = []
    for k, v in spec.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out += _large_values(v, key + ".")
        elif isinstance(v, float) and abs(v) >= 1e6:
            out.append(f"{key}={v:g}")
    return out


def report_warnings(caught: list, spec: dict, ctx) -> None:
    """One line per distinct warning of the run (never the raw source line), naming the spec's
    large values when the warning is a numerical overflow."""
    seen: dict[tuple, int] = {}
    for w in caught:
        key = (w.category.__name__, str(w.message).splitlines()[0] if str(w.message) else "")
        seen[key] = seen.get(key, 0) + 1
    for (category, message), n in seen.items():
        hint = ""
        if "overflow" in message:
            large = _large_values(spec)
            hint = (f"; values this large in the spec may cause it: {', '.join(large[:5])}"
                    if large else "")
        ctx.log(f"warning ({category}): {message}"
                f"{f' (at {n} places)' if n > 1 else ''}{hint}", always=True)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:500]


def _close_quietly(store: RunStore, status: str, error: str | None = None) -> None:
    """Record the final status if the disk lets us; the original exception is what matters."""
    try:
        store.set_status(status, error)
        store.close()
    except WriteFailure:
        store.close(publish=False)


class LogFile:
    """``log.txt``, appended to; a failed write (full disk) stops the logging, not the run. A
    ``log.txt`` that is a link or not a regular file is refused (mixlab.runfile.confined)."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / "log.txt"
        try:
            fd = confined.open_fd(run_dir, "log.txt", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except OSError:
            self._fh = None
            return
        self._fh = os.fdopen(fd, "a")

    def write(self, text: str) -> None:
        if self._fh is None:
            return
        try:
            self._fh.write(text)
            self._fh.flush()
        except OSError:
            self._abandon()

    def flush(self) -> None:
        pass

    def _abandon(self) -> None:
        fh, self._fh = self._fh, None
        try:
            fh.close()
        except OSError:
            pass

    def __enter__(self) -> LogFile:
        return self

    def __exit__(self, *exc) -> None:
        if self._fh is not None:
            self._abandon()

