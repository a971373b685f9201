"""What ``run.h5`` may hold, checked before any of its values is used.

An HDF5 file can point outside itself: an external link names another file, a virtual dataset
reads its values from source files named in it, a dataset can keep its raw data in external
files, and a filter is code loaded from a plugin path. A run file written by mixlab has none of
that except virtual datasets whose sources are this run's segment files, and it declares no
dataset larger than the file that holds it. :func:`check_run_file` refuses anything else, and
:func:`read_bound` is the most one read allocates, so a file that declares 10^12 elements is
refused before memory is asked for.

Rules (the same for ``run.h5`` and for each segment file it names):

- links are hard links to distinct objects: no external links, no soft links, no loops;
- a virtual dataset (``run.h5`` only) reads only ``segments/<16 hex>/<6 digits>.h5`` of this run
  (checked with :func:`mixlab.runfile.confined.check`: regular files, no link on the way), and each of
  those is checked by the same rules (no virtual datasets in it);
- no dataset keeps raw data in external files or goes through a filter;
- a dataset's declared size is at most what its file(s) can hold and at most :func:`read_bound`.
"""

from __future__ import annotations

import os
import re
import resource
from pathlib import Path

import h5py
from h5py import h5d, h5l, h5o

from ..env_settings import env_int
from ..errors import RunFileError
from . import confined

SEGMENT_SOURCE = re.compile(r"^segments/[0-9a-f]{16}/\d{6}\.h5$")
MAX_OBJECTS = 100_000  # groups, datasets and links in one file
DEFAULT_READ_BOUND = 1 << 30


def read_bound() -> int:
    """The most bytes one read from a run may allocate: ``$MIXLAB_MAX_READ_BYTES``, else 1 GiB,
    lowered to a quarter of the address-space limit (``ulimit -v``) when one is set."""
    bound = env_int("MIXLAB_MAX_READ_BYTES", DEFAULT_READ_BOUND)
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY:
        bound = min(bound, soft // 4)
    return bound


def open_run_file(run_dir: Path, name: str = "run.h5") -> h5py.File:
    """``run_dir/name`` opened read-only after checking it is a regular file inside the run
    (never a FIFO or a link) and what it holds (:func:`check_run_file`)."""
    path = confined.check(run_dir, name, must_exist=True)
    size = os.lstat(path).st_size
    if size > read_bound():
        raise confined.ConfinementError(
            f"{path}: {size:,} bytes, more than the {read_bound():,} bytes mixlab reads from a run "
            f"file (set MIXLAB_MAX_READ_BYTES to allow more)")
    refuse_vds_prefix(path)
    try:
        f = h5py.File(path, "r", locking=False)
    except OSError as exc:
        raise RunFileError(
            f"run file {path} cannot be read ({exc}): it is truncated or corrupt "
            f"(mixlab replaces run files whole and atomically, so it was damaged after it "
            f"was written, or written by something else)") from exc
    try:
        check_run_file(f, run_dir, size, path)
    except BaseException:
        f.close()
        raise
    return f


def refuse_vds_prefix(path: Path) -> None:
    """Refuse to read a run while ``HDF5_VDS_PREFIX`` is set: the HDF5 library (which reads it
    when it starts) would look for the run's segment files under it first."""
    if os.environ.get("HDF5_VDS_PREFIX"):
        raise RunFileError(f"{path}: HDF5_VDS_PREFIX is set, so the HDF5 library would look for "
                           f"the run's segment files under it before the run directory; unset "
                           f"it to read runs")


def _refuse(path: Path, where: str, reason: str) -> RunFileError:
    return confined.ConfinementError(
        f"{path}: '{where}' is {reason}; mixlab reads a run file only when everything in it "
        f"stays inside the run directory (see docs/trust.md)")


def check_run_file(f: h5py.File, run_dir: Path, size: int, path: Path) -> None:
    """Refuse (:class:`mixlab.runfile.confined.ConfinementError`) a run file ``f`` (``size`` bytes, read
    from ``path``) that reaches outside the run or declares more than it holds; see the module
    docstring."""
    _walk(f, path, size, run_dir, {})


def _walk(f: h5py.File, path: Path, size: int, run_dir: Path | None, checked: dict) -> None:
    """Check every object of ``f`` (``run_dir`` None: a segment file, no virtual datasets).

    One recursive link visit (``H5Lvisit``, which reports soft and external links without
    following them and recurses into each group once) lists every link with its kind and, for a
    hard link, the object's address; only the datasets are then opened."""
    bound = read_bound()
    links: list[tuple[bytes, int, int]] = []

    def visit(name: bytes, info) -> int | None:
        links.append((name, info.type, info.u))
        return 1 if len(links) > MAX_OBJECTS else None   # anything but None stops the visit

    try:
        f.id.links.visit(visit, info=True)
    except (OSError, RuntimeError, ValueError) as exc:
        raise _refuse(path, "/", f"a group whose members cannot be listed ({exc})") from None
    if len(links) > MAX_OBJECTS:
        raise _refuse(path, "/" + links[-1][0].decode("utf-8", "replace"),
                      f"past {MAX_OBJECTS:,} objects (mixlab writes far fewer)")
    seen = {h5o.get_info(f.id).addr}
    for raw, kind, target in links:
        where = "/" + raw.decode("utf-8", "replace")
        if kind == h5l.TYPE_EXTERNAL:
            raise _refuse(path, where, "an external link (to another file)")
        if kind == h5l.TYPE_SOFT:
            raise _refuse(path, where, f"a soft link (to '{_soft_target(f, raw)}')")
        if kind != h5l.TYPE_HARD:
            raise _refuse(path, where, "a link of a kind mixlab does not write")
        if target in seen:
            raise _refuse(path, where, "a second link to an object already linked (a loop "
                                       "or an alias; mixlab writes neither)")
        seen.add(target)
        try:
            obj = h5o.open(f.id, raw)
        except (OSError, RuntimeError, KeyError) as exc:
            raise _refuse(path, where, f"an object that cannot be opened ({exc})") from None
        if isinstance(obj, h5d.DatasetID):
            _check_dataset(obj, where, path, size, run_dir, bound, checked)


def _soft_target(f: h5py.File, raw: bytes) -> str:
    try:
        return f.id.links.get_val(raw).decode("utf-8", "replace")
    except (OSError, RuntimeError, KeyError, AttributeError):
        return "?"


def _check_dataset(ds: h5d.DatasetID, where: str, path: Path, size: int,
                   run_dir: Path | None, bound: int, checked: dict) -> None:
    dcpl = ds.get_create_plist()
    if dcpl.get_external_count():
        raise _refuse(path, where, "a dataset stored in external raw files")
    if dcpl.get_nfilters():
        raise _refuse(path, where, "a filtered (compressed) dataset, which mixlab does not write")
    space = ds.get_space()
    nbytes = space.get_simple_extent_npoints() * ds.get_type().get_size()   # scalar 1, null 0
    holds = size
    if dcpl.get_layout() == h5d.VIRTUAL:
        if run_dir is None:
            raise _refuse(path, where, "a virtual dataset inside a segment file")
        sources = set()
        for j in range(dcpl.get_virtual_count()):
            name = dcpl.get_virtual_filename(j)
            if not SEGMENT_SOURCE.match(name):
                raise _refuse(path, where, f"a virtual dataset reading '{name}', which is not a "
                                           f"segment file of this run")
            if name not in checked:
                checked[name] = _check_segment(run_dir, name)
            sources.add(name)
        holds = sum(checked[name] for name in sources)
    if nbytes > holds:
        raise _refuse(path, where, f"a dataset declaring {nbytes:,} bytes (shape "
                                   f"{space.shape}), more than its file(s) hold "
                                   f"({holds:,} bytes)")
    if nbytes > bound:
        raise _refuse(path, where, f"a dataset of {nbytes:,} bytes, more than the {bound:,} "
                                   f"bytes mixlab reads at once (MIXLAB_MAX_READ_BYTES)")


def declared_bytes(ds: h5py.Dataset) -> int:
    n = 1
    for s in ds.shape or ():
        n *= int(s)
    return n * ds.dtype.itemsize


def _check_segment(run_dir: Path, name: str) -> int:
    """A segment file's size after checking it by the same rules (no virtual datasets)."""
    try:
        path = confined.check(run_dir, name, must_exist=True)
    except confined.ConfinementError as exc:
        if "missing" in str(exc):
            raise RunFileError(f"run {run_dir} reads segment files that are not there ({name}): "
                               f"copy a run directory whole, with its segments/ folder") from None
        raise
    size = os.lstat(path).st_size
    try:
        with h5py.File(path, "r", locking=False) as seg:
            _walk(seg, path, size, None, {})
    except OSError as exc:
        raise RunFileError(f"segment file {path} cannot be read ({exc}): it is truncated or "
                           f"corrupt") from exc
    return size


def recorded_status(run_dir: Path, name: str = "run.h5") -> str | None:
    """The ``status`` attribute of a run file that is refused for what it holds, when the file
    itself is a regular file of the run (a root attribute reads nothing outside the file);
    None when even that cannot be read safely."""
    try:
        path = confined.check(run_dir, name, must_exist=True)
        if os.lstat(path).st_size > read_bound():
            return None
        with h5py.File(path, "r", locking=False) as f:
            value = f.attrs.get("status")
    except (OSError, RunFileError, RuntimeError):
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return None
    return value[:40] + ("..." if len(value) > 40 else "")
