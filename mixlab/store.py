"""The run file ``run.h5``: provenance, draw streams, metric curves, results, cached stages.

Layout (readable with h5py alone; see README "Run-file format")::

    /                       attrs: mixlab_version, git_commit, git_dirty, packages (JSON),
                                   created, seed_entropy, spec (YAML text), status
    /streams/<name>/<key>   (chain, draw, ...) draws; bool draws bit-packed along the last axis
                            (attrs packed=True, shape=the unpacked per-draw shape)
    /streams/<name>/time    (draw,) cumulative sampling seconds
    /streams/<name>/stats/<key>   (chain, draw) or (draw,) per-draw sampler statistics
    /streams/<name>/_checkpoint   sampler state, RNG state and evaluators, for resuming
    /metrics/<metric>/<series>/x, /y, /yerr     curves (attrs x_label, y_label, ...)
    /results                attrs: scalar results
    /arrays/<path>          arrays a figure needs (images, marginals, ...)
    /stages/<name>          outputs of cached experiment stages (``ctx.once``)

All writes happen in short bursts followed by a flush, so a process killed between them leaves
a readable file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from .errors import RunFileError

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
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, np.ndarray):
        return value.tolist() if value.ndim else value.item()
    if isinstance(value, np.generic):
        return value.item()
    if value == "null":
        return None
    return value


def pack_bool(block: np.ndarray) -> np.ndarray:
    """(chain, n, *shape) bool -> (chain, n, ceil(prod(shape)/8)) uint8."""
    c, n = block.shape[:2]
    return np.packbits(block.reshape(c, n, -1), axis=-1)


def unpack_bool(packed: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Inverse of :func:`pack_bool`."""
    size = int(np.prod(shape)) if shape else 1
    flat = np.unpackbits(packed, axis=-1, count=size).astype(bool)
    return flat.reshape(packed.shape[:2] + tuple(shape))


class RunStore:
    """Read/write access to one run file; used by the runner and by experiments (``ctx.store``)."""

    def __init__(self, path: str | os.PathLike, mode: str = "a"):
        self.path = Path(path)
        try:
            self.f = h5py.File(self.path, mode, libver="latest")
        except OSError as exc:
            raise RunFileError(
                f"cannot open run file {self.path}: {exc}. If the file is truncated or corrupt, "
                f"re-run the spec with --force to start the run afresh.") from exc

    # -- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        if self.f.id.valid:
            self.f.flush()
            self.f.close()

    def flush(self) -> None:
        self.f.flush()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def status(self) -> str:
        return str(_from_attr(self.f.attrs.get("status", "running")))

    def set_status(self, status: str) -> None:
        assert status in STATUSES, status
        self.f.attrs["status"] = status
        self.f.flush()

    def set_root_attrs(self, attrs: dict) -> None:
        for k, v in attrs.items():
            self.f.attrs[k] = _to_attr(v)
        self.f.flush()

    # -- results, metrics, arrays ---------------------------------------------------------------
    def set_result(self, key: str, value: Any) -> None:
        """Store a scalar (or small array / string) result as an attribute of ``/results``."""
        g = self.f.require_group("results")
        g.attrs[key] = _to_attr(value)
        self.f.flush()

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
        self.f.flush()

    def write_array(self, path: str, array, **attrs) -> None:
        """Write ``/arrays/<path>`` (replacing an old one)."""
        full = f"arrays/{path}"
        if full in self.f:
            del self.f[full]
        ds = self.f.create_dataset(full, data=np.asarray(array))
        for k, v in attrs.items():
            ds.attrs[k] = _to_attr(v)
        self.f.flush()

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
        """Recorded draws ``(chain, draw, ...)`` of stream ``name`` (booleans unpacked)."""
        ds = self.f[f"streams/{name}/{key}"]
        raw = ds[chains, draws]
        if ds.attrs.get("packed", False):
            return unpack_bool(raw, tuple(int(v) for v in ds.attrs["shape"]))
        return raw

    # -- stages -----------------------------------------------------------------------------------
    def stage_done(self, name: str) -> bool:
        path = f"stages/{name}"
        return path in self.f and bool(self.f[path].attrs.get("done", False))

    def write_stage(self, name: str, values: dict) -> None:
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
        self.f.flush()

    def read_stage(self, name: str) -> dict:
        return read_stage_group(self.f[f"stages/{name}"])


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
        self.path = p / "run.h5" if p.is_dir() else p
        if not self.path.exists():
            raise RunFileError(f"no run file at {self.path}: give a run directory made by "
                               f"'mixlab run' (it holds run.h5)")
        try:
            self.f = h5py.File(self.path, "r")
        except OSError as exc:
            raise RunFileError(
                f"run file {self.path} cannot be read ({exc}); it may be truncated or corrupt. "
                f"Re-run its spec with --force to rebuild it.") from exc
        if "spec" not in self.f.attrs:
            self.f.close()
            raise RunFileError(f"{self.path} is an HDF5 file but not a mixlab run (no 'spec' "
                               f"attribute at its root)")

    def close(self) -> None:
        self.f.close()

    def __enter__(self) -> RunReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def attrs(self) -> dict:
        return {k: _from_attr(v) for k, v in self.f.attrs.items()}

    @property
    def spec(self) -> dict:
        import yaml

        return yaml.safe_load(self.f.attrs["spec"])

    @property
    def status(self) -> str:
        return str(_from_attr(self.f.attrs.get("status", "running")))

    def results(self) -> dict:
        g = self.f.get("results")
        return {} if g is None else {k: _from_attr(v) for k, v in g.attrs.items()}

    def metrics(self) -> dict:
        out: dict = {}
        g = self.f.get("metrics")
        if g is None:
            return out
        for metric, mg in g.items():
            out[metric] = {}
            for series, sg in mg.items():
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
        return [] if g is None else list(g.keys())

    def stream_keys(self, name: str) -> list[str]:
        g = self.f[f"streams/{name}"]
        return [k for k, v in g.items() if isinstance(v, h5py.Dataset) and k != "time"]

    def stream(self, name: str, key: str = "samples", draws: slice | None = None) -> np.ndarray:
        """Draws of stream ``name`` as (chain, draw, ...), bit-packed booleans unpacked."""
        path = f"streams/{name}/{key}"
        if path not in self.f:
            raise RunFileError(f"run {self.run_dir} has no stream '{name}/{key}'")
        ds = self.f[path]
        raw = ds[:, draws] if draws is not None else ds[()]
        if ds.attrs.get("packed", False):
            return unpack_bool(raw, tuple(int(s) for s in ds.attrs["shape"]))
        return raw

    def stream_summaries(self, name: str) -> dict:
        """``{stat: (chain, draw) float64}`` scalar summaries recorded with the stream."""
        g = self.f.get(f"streams/{name}/summary")
        return {} if g is None else {k: v[()] for k, v in g.items()}

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
