"""The run directory's data: ``run.h5`` (provenance, streams, metrics, results, stages).

Layout (readable with h5py alone; see README "Run-file format")::

    /                       attrs: format_version, mixlab_version, git_commit, git_dirty,
                                   packages (JSON), created, seed_entropy, spec (YAML), status
    /streams/<name>/<key>   (chain, draw, ...) draws; bool draws bit-packed along the last axis
                            (attrs packed=True, shape=the unpacked per-draw shape)
    /streams/<name>/time    (draw,) cumulative sampling seconds
    /streams/<name>/stats/<key>     (draw, ...) per-draw sampler statistics
    /streams/<name>/summary/<stat>  (chain, draw) scalar summaries (mixing diagnostics):
                                    float64, or integers of at most 16 bits (indicators as
                                    uint8); readers get float64. A league stream keeps a
                                    thinned record instead (group attrs ``stride``: draws
                                    0, stride, 2 stride, ... of each chain; ``draws``: of
                                    how many)
    /streams/<name>/_checkpoint     sampler state, RNG state, evaluator state (data only)
    /metrics/<metric>/<series>/x, /y, /yerr     curves (attrs x_label, y_label, ...)
    /results                attrs: scalar results
    /arrays/<path>          arrays a figure needs (images, marginals, ...)
    /stages/<name>          outputs of cached experiment stages (``ctx.once``)

Crash safety: ``run.h5`` is only ever replaced whole, atomically (:class:`RunStore`), and a
stream's draws live in immutable segment files that its datasets link (mixlab.runfile.segments). One
process writes a run at a time (mixlab.runfile.lock). Nothing read from a run file is executed.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import RunFileError
from . import confined
from .atomic import WriteFailure
from .check import check_run_file, declared_bytes, open_run_file, read_bound, refuse_vds_prefix
from .lock import RunLock, last_writer, live_writer
from .records import discard, read_records, write_record
from .segments import missing_sources
from .segments import pack_bool as pack_bool  # re-exported: readers unpack with store.unpack_bool
from .streamfile import StreamCheckpoints
from .yaml_text import YamlRefused, load_stored

STATUSES = ("running", "complete", "failed", "interrupted")


def _to_attr(value: Any) -> Any:
    if isinstance(value, (str, bytes, bool, int, float, np.generic)):
        return value
    if value is None:
        return "null"
    if isinstance(value, (list, tuple, np.ndarray)):
        arr = np.asarray(value)
        if arr.dtype.kind in "biuf":
            return arr
        return json.dumps(np.asarray(value).tolist())
    if isinstance(value, dict):
        return json.dumps(value, default=str)
    return str(value)


def _from_attr(value: Any) -> Any:
    """An attribute as a plain value; opaque bytes stay opaque (described, never decoded)."""
    if isinstance(value, np.void):
        return f"<{value.nbytes} opaque bytes>"
    if isinstance(value, bytes):
        try:
            value = value.decode()
        except UnicodeDecodeError:
            return f"<{len(value)} opaque bytes>"
    if isinstance(value, np.ndarray):
        return value.tolist() if value.ndim else value.item()
    if isinstance(value, np.generic):
        return value.item()
    if value == "null":
        return None
    return value


def unpack_bool(packed: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Inverse of :func:`pack_bool`."""
    size = int(np.prod(shape)) if shape else 1
    flat = np.unpackbits(packed, axis=-1, count=size).astype(bool)
    return flat.reshape(packed.shape[:2] + tuple(shape))


FORMAT_VERSION = 2  # run-file format: 2 = crash-safe (segments + atomic snapshots, no pickles)
RUN_FILE = "run.h5"


class RunStore(StreamCheckpoints):
    """The writer of one run: holds the run's writer lock and an in-memory copy of ``run.h5``.

    Every change goes to the in-memory file; :meth:`publish` replaces ``run.h5`` on disk with it
    in one atomic write (see mixlab.runfile.atomic), so the file on disk is always a complete snapshot
    and a writer killed at any instant leaves the last one. Streams' draws go to segment files
    (mixlab.runfile.segments) that ``run.h5`` links. Publishing happens at every stream checkpoint, after
    a stage is written, at status changes and on close. A write that fails raises
    :class:`mixlab.runfile.atomic.WriteFailure` and leaves the last snapshot as it was.
    """

    def __init__(self, path: str | os.PathLike, mode: str = "a", lock: RunLock | None = None):
        if mode not in ("a", "w"):
            raise ValueError("RunStore writes runs (mode 'a' or 'w'); read them with RunReader")
        p = Path(path)
        self.path = p / RUN_FILE if p.is_dir() else p
        self.run_dir = self.path.parent
        self._own_lock = lock is None
        self.lock = lock if lock is not None else RunLock.acquire(self.run_dir)
        try:
            confined.remove_temporaries(self.run_dir, None, self.path.name)
            self._bio = io.BytesIO()
            if mode == "a" and confined.exists(self.run_dir, self.path.name):
                data = confined.read_bytes(self.run_dir, self.path.name, read_bound())
                try:
                    self._bio.write(data)
                    self.f = h5py.File(self._bio, "r+")
                except OSError as exc:
                    raise RunFileError(
                        f"run file {self.path} cannot be read ({exc}): it is truncated or "
                        f"corrupt. Move the run directory aside (nothing is deleted) and run "
                        f"the spec again, or run into another --out directory") from exc
                try:
                    check_run_file(self.f, self.run_dir, len(data), self.path)
                except BaseException:
                    self.f.close()
                    raise
                version = int(_from_attr(self.f.attrs.get("format_version", 1)))
                if version != FORMAT_VERSION:
                    self.f.close()
                    raise RunFileError(
                        f"run file {self.path} has run-file format {version}, and this mixlab "
                        f"writes format {FORMAT_VERSION}: it can be shown and plotted but not "
                        f"resumed or extended. Run into another --out directory, or start it "
                        f"afresh with --force (which discards its partial streams)")
            else:
                self.f = h5py.File(self._bio, "w")
                self.f.attrs["format_version"] = FORMAT_VERSION
        except BaseException:
            if self._own_lock:
                self.lock.release()
            raise
        self.safe_draws: dict[str, int] = {}  # per stream: draws per chain in the last snapshot

    # -- lifecycle ------------------------------------------------------------------------------
    def publish(self) -> None:
        """Replace ``run.h5`` on disk with the current state, atomically."""
        self.f.flush()
        confined.write_atomic(self.run_dir, self.path.name, self._bio.getvalue())

    def saved_text(self) -> str:
        """What the last published snapshot holds, for a message after a failed write."""
        if not any(self.safe_draws.values()):
            return "No draws were saved yet"
        parts = ", ".join(f"'{k}': {v:,} draws per chain" for k, v in self.safe_draws.items())
        return f"Saved in the last checkpoint: {parts}"

    def close(self, publish: bool = True) -> None:
        """Publish (unless told not to, e.g. after a failed write) and release the lock (its file
        removed when the published run is complete)."""
        complete = False
        try:
            if publish and self.f.id.valid:
                self.publish()
                complete = self.f.attrs.get("status") == "complete"
        finally:
            if self.f.id.valid:
                self.f.close()
            if self._own_lock:
                self.lock.release(remove=complete)

    def flush(self) -> None:
        self.publish()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(publish=exc_type is None or not issubclass(exc_type, WriteFailure))

    @property
    def status(self) -> str:
        return str(_from_attr(self.f.attrs.get("status", "running")))

    @property
    def attrs(self) -> dict:
        """The run's root attributes (provenance, spec, status) as plain values."""
        return {k: _from_attr(v) for k, v in self.f.attrs.items()}

    def set_status(self, status: str, error: str | None = None) -> None:
        """Set and publish the run's status (with the one-line reason of a failure)."""
        assert status in STATUSES, status
        self.f.attrs["status"] = status
        if error is not None:
            self.f.attrs["error"] = error
        elif "error" in self.f.attrs:
            del self.f.attrs["error"]
        self.publish()

    def set_root_attrs(self, attrs: dict) -> None:
        for k, v in attrs.items():
            self.f.attrs[k] = _to_attr(v)

    # -- streams (their checkpoints: mixlab.runfile.streamfile) -----------------------------------
    def _stream_group(self, name: str) -> h5py.Group:
        """The group ``/streams/<name>`` (created if needed)."""
        return self.f.require_group(f"streams/{name}")

    def stream_names(self) -> list[str]:
        """The streams written so far."""
        g = self.f.get("streams")
        return [] if g is None else list(g)

    def stream_attrs(self, name: str) -> dict:
        """A stream's attributes (draws, seconds, thin once finished) as plain values."""
        g = self.f.get(f"streams/{name}")
        return {} if g is None else {k: _from_attr(v) for k, v in g.attrs.items()}

    def write_summary_record(self, name: str, record: dict, stride: int, draws: int,
                             attrs: dict | None = None) -> None:
        """Write stream ``name``'s thinned record of its summaries: ``record {stat: (chain,
        kept)}``, draws 0, ``stride``, 2 ``stride``, ... of each chain's ``draws``, as
        ``summary/<stat>`` (replacing an old record), with ``attrs {stat: {key: value}}`` on
        each dataset. A stream whose summaries are stored with every draw (its segments) keeps
        them."""
        g = self._stream_group(name)
        if "summary" in g and "stride" not in g["summary"].attrs:
            raise RunFileError(f"stream '{name}' stores every draw's summaries: no thinned "
                               f"record is written over them")
        if "summary" in g:
            del g["summary"]
        sg = g.create_group("summary")
        sg.attrs["stride"] = int(stride)
        sg.attrs["draws"] = int(draws)
        for stat, v in record.items():
            ds = sg.create_dataset(stat, data=np.asarray(v))
            for k, a in (attrs or {}).get(stat, {}).items():
                ds.attrs[k] = _to_attr(a)

    def set_inputs(self, kind: str, name: str, record: dict) -> None:
        """Record what stream or stage ``name`` depends on (``kind`` "streams" or "stages"; the
        record is mixlab.run.update's), as the JSON attribute ``inputs`` of its group."""
        if kind not in ("streams", "stages"):
            raise ValueError(f"inputs are recorded for streams or stages, not {kind!r}")
        write_record(self.f.require_group(f"{kind}/{name}"), record)

    # -- results, metrics, arrays ---------------------------------------------------------------
    def set_result(self, key: str, value: Any) -> None:
        """Store a scalar (or small array / string) result as an attribute of ``/results``."""
        g = self.f.require_group("results")
        g.attrs[key] = _to_attr(value)

    def write_metric(self, metric: str, series: str, x, y, yerr=None, x_label: str = "",
                     y_label: str = "", **attrs) -> None:
        """Write the curve ``/metrics/<metric>/<series>/{x,y,yerr}`` (replacing an old one)."""
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if x.shape[:1] != y.shape[:1]:
            raise ValueError(f"metric {metric}/{series}: x has {x.shape} but y has {y.shape}")
        path = f"metrics/{metric}/{series}"
        if path in self.f:
            del self.f[path]
        g = self.f.create_group(path)
        g.create_dataset("x", data=x)
        g.create_dataset("y", data=y)
        if yerr is not None:
            g.create_dataset("yerr", data=np.asarray(yerr, dtype=np.float64))
        g.attrs["x_label"] = x_label
        g.attrs["y_label"] = y_label
        for k, v in attrs.items():
            g.attrs[k] = _to_attr(v)

    def write_array(self, path: str, array, **attrs) -> None:
        """Write ``/arrays/<path>`` (replacing an old one)."""
        full = f"arrays/{path}"
        if full in self.f:
            del self.f[full]
        ds = self.f.create_dataset(full, data=np.asarray(array))
        for k, v in attrs.items():
            ds.attrs[k] = _to_attr(v)

    # -- reading back what this run wrote (experiments use these, never ``store.f``) ----------------
    def results(self) -> dict:
        """Every scalar result stored so far."""
        g = self.f.get("results")
        return {} if g is None else {k: _from_attr(v) for k, v in g.attrs.items()}

    def metric(self, metric: str, series: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The curve ``(x, y, yerr)`` of ``/metrics/<metric>/<series>`` (yerr None if absent)."""
        g = self.f[f"metrics/{metric}/{series}"]
        return g["x"][()], g["y"][()], (g["yerr"][()] if "yerr" in g else None)

    def stream_keys(self, name: str) -> list[str]:
        """Draw keys recorded for stream ``name`` (not time, stats or summaries)."""
        g = self.f.get(f"streams/{name}")
        return [] if g is None else [k for k, v in g.items()
                                     if isinstance(v, h5py.Dataset) and k != "time"]

    def stream(self, name: str, key: str = "samples", chains=slice(None),
               draws=slice(None)) -> np.ndarray:
        """Recorded draws ``(chain, draw, ...)`` of stream ``name`` up to its last checkpoint
        (booleans unpacked). Read from the published file, whose virtual datasets find their
        segment files next to it."""
        return self.stream_arrays(name, [key], chains, draws)[key]

    def stream_arrays(self, name: str, keys: list[str], chains=slice(None),
                      draws=slice(None), publish: bool = True) -> dict[str, np.ndarray]:
        """``{key: stream(name, key, chains, draws)}`` for several keys, from one snapshot
        (published and opened once). ``publish=False`` reads the last published snapshot as it
        is: enough for a stream that has finished since (its end was published)."""
        if publish:
            self.publish()
        refuse_vds_prefix(self.path)
        out = {}
        with h5py.File(confined.check(self.run_dir, self.path.name, must_exist=True), "r",
                       locking=False) as f:
            for key in keys:
                ds = f[f"streams/{name}/{key}"]
                raw = ds[chains, draws]
                packed = ds.attrs.get("packed", False)
                shape = tuple(int(v) for v in ds.attrs["shape"]) if packed else ()
                out[key] = unpack_bool(raw, shape) if packed else raw
        return out

    def records(self):
        """The streams' and stages' input records (mixlab.runfile.records.RunRecords)."""
        return read_records(self.f)

    def discard(self, streams: list[str], stages: list[str]) -> list[str]:
        """Delete ``streams``, ``stages`` and every result, metric and array (the experiment
        recomputes them); returns the streams deleted (mixlab.runfile.records.discard)."""
        return discard(self.f, streams, stages)

    # -- stages -----------------------------------------------------------------------------------
    def stage_done(self, name: str) -> bool:
        path = f"stages/{name}"
        return path in self.f and bool(self.f[path].attrs.get("done", False))

    def write_stage(self, name: str, values: dict) -> None:
        """Write a stage's values under ``/stages/<name>`` (the caller publishes, once it has
        added the stage's record)."""
        path = f"stages/{name}"
        if path in self.f:
            del self.f[path]
        g = self.f.create_group(path)
        for k, v in values.items():
            arr = np.asarray(v)
            if arr.dtype.kind in "OU":
                g.attrs[k] = json.dumps(v if not isinstance(v, np.ndarray) else v.tolist())
                g.attrs[f"{k}__json"] = True
            else:
                g.create_dataset(k, data=arr)
        g.attrs["done"] = True

    def read_stage(self, name: str) -> dict:
        return read_stage_group(self.f[f"stages/{name}"])

    def drop_stage(self, name: str) -> None:
        """Delete ``/stages/<name>`` if present (the caller publishes)."""
        if f"stages/{name}" in self.f:
            del self.f[f"stages/{name}"]


def read_stage_group(g: h5py.Group) -> dict:
    out: dict[str, Any] = {}
    for k, ds in g.items():
        v = ds[()]
        out[k] = v
    for k, v in g.attrs.items():
        if k == "done" or k.endswith("__json"):
            continue
        if g.attrs.get(f"{k}__json", False):
            out[k] = json.loads(v)
    return out


class RunReader:
    """Read-only view of a finished (or partial) run, for figures, ``show`` and users."""

    def __init__(self, run: str | os.PathLike):
        p = Path(run)
        self.run_dir = p if p.is_dir() else p.parent
        self.path = p / RUN_FILE if p.is_dir() else p
        if not os.path.lexists(self.path):
            raise RunFileError(f"no run file at {self.path}: give a run directory made by "
                               f"'mixlab run' (it holds run.h5)")
        self.f = open_run_file(self.run_dir, self.path.name)
        if "spec" not in self.f.attrs:
            self.f.close()
            raise RunFileError(f"{self.path} is an HDF5 file but not a mixlab run (no 'spec' "
                               f"attribute at its root)")
        try:
            self._spec = self._read_spec()
        except BaseException:
            self.f.close()
            raise

    def close(self) -> None:
        self.f.close()

    def __enter__(self) -> RunReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def attrs(self) -> dict:
        return {k: _from_attr(v) for k, v in self.f.attrs.items()}

    def records(self):
        """The streams' and stages' input records (mixlab.runfile.records.RunRecords)."""
        return read_records(self.f)

    @property
    def spec(self) -> dict:
        """The resolved spec the run stores (checked when the file is opened)."""
        return self._spec

    def _read_spec(self) -> dict:
        """The root 'spec' attribute read as stored YAML (mixlab.runfile.yaml_text.load_stored: no
        aliases, anchors or tags, at most 1 MiB), checked before any command uses the run."""
        text = _from_attr(self.f.attrs["spec"])
        try:
            spec = load_stored(text)
        except YamlRefused as exc:
            raise RunFileError(f"{self.path}: its 'spec' attribute is refused: {exc}; it is "
                               f"not a spec mixlab writes") from None
        if not isinstance(spec, dict):
            raise RunFileError(f"{self.path}: its 'spec' attribute is not a YAML mapping")
        return spec

    @property
    def status(self) -> str:
        """The status in the file: running, complete, failed or interrupted."""
        return str(_from_attr(self.f.attrs.get("status", "running")))

    @property
    def format_version(self) -> int:
        return int(_from_attr(self.f.attrs.get("format_version", 1)))

    def live_status(self) -> str:
        """The status with what is known outside the file: ``running (pid N since T)`` while a
        live writer holds the run, ``interrupted (...)`` for a run whose writer died, and the
        failure's reason for a failed run."""
        status = self.status
        writer = live_writer(self.run_dir)
        if writer is not None:
            return f"running ({writer}); this is its last checkpoint"
        if status == "running":
            return (f"interrupted (its writer, {last_writer(self.run_dir)}, is gone); run the "
                    f"same command again to resume")
        if status == "failed" and self.f.attrs.get("error"):
            return f"failed: {_from_attr(self.f.attrs['error'])}"
        return status

    def results(self) -> dict:
        g = self.f.get("results")
        return {} if g is None else {k: _from_attr(v) for k, v in g.attrs.items()}

    def metrics(self) -> dict:
        out: dict = {}
        g = self.f.get("metrics")
        if g is None:
            return out
        for metric, mg in g.items():
            if not isinstance(mg, h5py.Group):
                continue
            out[metric] = {}
            for series, sg in mg.items():
                if not (isinstance(sg, h5py.Group) and "x" in sg and "y" in sg):
                    continue
                out[metric][series] = {
                    "x": sg["x"][()], "y": sg["y"][()],
                    "yerr": sg["yerr"][()] if "yerr" in sg else None,
                    "attrs": {k: _from_attr(v) for k, v in sg.attrs.items()},
                }
        return out

    def array(self, path: str) -> np.ndarray:
        full = f"arrays/{path}"
        if full not in self.f:
            raise RunFileError(f"run {self.run_dir} has no array '{path}' (status: "
                               f"{self.status}); was the run finished?")
        return self.f[full][()]

    def array_attrs(self, path: str) -> dict:
        return {k: _from_attr(v) for k, v in self.f[f"arrays/{path}"].attrs.items()}

    def array_names(self) -> list[str]:
        names: list[str] = []
        g = self.f.get("arrays")
        if g is not None:
            g.visit(lambda n: names.append(n) if isinstance(g[n], h5py.Dataset) else None)
        return names

    def stream_names(self) -> list[str]:
        g = self.f.get("streams")
        return [] if g is None else [k for k, v in g.items() if isinstance(v, h5py.Group)]

    def stream_keys(self, name: str) -> list[str]:
        g = self.f[f"streams/{name}"]
        return [k for k, v in g.items() if isinstance(v, h5py.Dataset) and k != "time"]

    def stream(self, name: str, key: str = "samples", draws: slice | None = None) -> np.ndarray:
        """Draws of stream ``name`` as (chain, draw, ...), bit-packed booleans unpacked."""
        path = f"streams/{name}/{key}"
        if path not in self.f:
            raise RunFileError(f"run {self.run_dir} has no stream '{name}/{key}'")
        ds = self.f[path]
        lost = missing_sources(ds, self.run_dir)
        if lost:
            raise RunFileError(f"stream '{name}' of run {self.run_dir} reads segment files that "
                               f"are not there ({', '.join(lost[:3])}): copy a run directory "
                               f"whole, with its segments/ folder")
        raw = ds[:, draws] if draws is not None else ds[()]
        if ds.attrs.get("packed", False):
            return unpack_bool(raw, tuple(int(s) for s in ds.attrs["shape"]))
        return raw

    def stream_shape(self, name: str, key: str) -> tuple[int, ...] | None:
        """The shape of ``streams/<name>/<key>`` as :meth:`stream` returns it (booleans
        unpacked), None if the run has no such dataset."""
        ds = self.f.get(f"streams/{name}/{key}")
        if not isinstance(ds, h5py.Dataset):
            return None
        if ds.attrs.get("packed", False):
            return tuple(int(s) for s in ds.shape[:2]) + tuple(int(s) for s in ds.attrs["shape"])
        return tuple(int(s) for s in ds.shape)

    def stream_nbytes(self, name: str, key: str) -> int:
        """The bytes ``streams/<name>/<key>`` takes once read (booleans unpacked, a byte each)."""
        ds = self.f[f"streams/{name}/{key}"]
        return declared_bytes(ds) * (8 if ds.attrs.get("packed", False) else 1)

    def stream_summaries(self, name: str) -> dict:
        """``{stat: (chain, draw) float64}`` scalar summaries recorded with the stream (those
        stored as integers converted)."""
        g = self.f.get(f"streams/{name}/summary")
        return {} if g is None else {k: np.asarray(v[()], np.float64) for k, v in g.items()}

    def summary_thinning(self, name: str) -> dict | None:
        """``{"stride", "draws"}`` of a stream whose summaries are a thinned record (draws 0,
        stride, 2 stride, ... of each chain's ``draws``); None when they hold every draw."""
        g = self.f.get(f"streams/{name}/summary")
        if g is None or "stride" not in g.attrs:
            return None
        try:
            return {"stride": int(g.attrs["stride"]), "draws": int(g.attrs.get("draws", -1))}
        except (TypeError, ValueError):
            raise RunFileError(f"run {self.run_dir}: stream '{name}' states its summaries' "
                               f"thinning as stride {g.attrs['stride']!r}, draws "
                               f"{g.attrs.get('draws')!r}, not whole numbers") from None

    def stream_time(self, name: str) -> np.ndarray:
        return self.f[f"streams/{name}/time"][()]

    def stream_stats(self, name: str) -> dict:
        g = self.f.get(f"streams/{name}/stats")
        return {} if g is None else {k: v[()] for k, v in g.items()}

    def stream_attrs(self, name: str) -> dict:
        return {k: _from_attr(v) for k, v in self.f[f"streams/{name}"].attrs.items()}

    def stage(self, name: str) -> dict:
        if f"stages/{name}" not in self.f:
            raise RunFileError(f"run {self.run_dir} has no stage '{name}'")
        return read_stage_group(self.f[f"stages/{name}"])

    def stage_names(self) -> list[str]:
        names: list[str] = []
        g = self.f.get("stages")
        if g is not None:
            g.visit(lambda n: names.append(n) if g[n].attrs.get("done", False) else None)
        return names
