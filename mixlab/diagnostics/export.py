"""Export a run's stream as ArviZ InferenceData: netCDF (``arviz.from_netcdf``) or Zarr.

Groups (ArviZ's schema, dims ``chain`` and ``draw`` first):

- ``posterior``: every draw key of the stream, ``(chain, draw, <key>_dim_0, ...)`` (bit-packed
  booleans unpacked to 0/1 ``int8``), and every per-draw summary ``(chain, draw)``;
- ``sample_stats``: the sampler's per-draw statistics (``accept``, ``data_used``, …) and
  ``time``, the cumulative sampling seconds at each draw (the same for every chain);
- attributes of every group: ``mixlab_run`` (the run directory), ``mixlab_stream``,
  ``mixlab_spec`` (the resolved spec, YAML), ``mixlab_provenance`` (JSON: versions, git commit,
  seed, plugins, created).

netCDF is written with h5netcdf, draw key by draw key and :data:`CHUNK_DRAWS` draws at a time;
Zarr (format 2: one group per InferenceData group, consolidated metadata) with xarray,
:data:`CHUNK_DRAWS` draws at a time appended along ``draw``. Either way a stream larger than
memory is exported without holding it whole, and the output appears complete or not at all.
Zarr format 2 is read by zarr 2 and 3 alike; with zarr 3, ArviZ 0.23 reads it through
``arviz.InferenceData.from_datatree(xarray.open_datatree(DIR, engine="zarr"))``.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import numpy as np

from ..errors import MixlabError, UsageError
from ..runfile.atomic import WriteFailure, atomic_write, describe_os_error, temporary_name
from ..runfile.check import read_bound
from ..runfile.store import RunReader

CHUNK_DRAWS = 20_000
PROVENANCE = ("mixlab_version", "git_commit", "git_dirty", "packages", "created", "python",
              "seed_entropy", "seed_key", "experiment", "plugins", "status")


def pick_stream(run: RunReader, stream: str | None) -> str:
    names = run.stream_names()
    if stream is None:
        if len(names) != 1:
            raise UsageError(f"run {run.run_dir} has {len(names)} streams ({', '.join(names)}); "
                             f"name one with --stream (InferenceData holds one set of chains)")
        return names[0]
    if stream not in names:
        raise UsageError(f"run {run.run_dir} has no stream '{stream}'; its streams: "
                         f"{', '.join(names) or 'none'}")
    return stream


def _attrs(run: RunReader, stream: str) -> dict:
    prov = {k: str(run.attrs[k]) for k in PROVENANCE if k in run.attrs}
    return {"mixlab_run": str(run.run_dir), "mixlab_stream": stream,
            "mixlab_spec": str(run.attrs.get("spec", "")),
            "mixlab_provenance": json.dumps(prov)}


class _Layout:
    """What an export of stream ``name`` holds: its draw keys, summaries (name -> (chain, draw)),
    statistics (name -> (draw, chain)), cumulative time (draw,), chains and draws."""

    def __init__(self, run: RunReader, stream: str | None):
        self.name = name = pick_stream(run, stream)
        self.keys = run.stream_keys(name)
        self.summaries = run.stream_summaries(name)
        self.stats = run.stream_stats(name)
        self.time = run.stream_time(name)
        if self.keys:
            self.chains, self.draws = run.stream_shape(name, self.keys[0])[:2]
        elif self.summaries:
            self.chains, self.draws = next(iter(self.summaries.values())).shape
        else:
            raise MixlabError(f"stream '{name}' of run {run.run_dir} recorded no draws and no "
                              f"summaries: nothing to export")
        self.attrs = _attrs(run, name)

    def var(self, key: str) -> str:
        """A draw key's variable name (``draw_<key>`` where a summary has the same name)."""
        return "draw_" + key if key in self.summaries else key

    def sample_stats(self) -> dict:
        """name -> (draw, chain) array of the per-draw statistics that cover every draw."""
        return {k: v for k, v in ((k, np.asarray(v)) for k, v in self.stats.items())
                if v.ndim == 2 and v.shape[0] >= self.draws}


def export_netcdf(run: RunReader, stream: str | None, out: str | Path) -> tuple[str, Path]:
    """Write stream ``stream`` of ``run`` to ``out`` (netCDF-4 / HDF5); returns (stream, path).

    The file appears complete or not at all, and a full disk is one :class:`WriteFailure`:
    the HDF5 library cannot be trusted to fail cleanly when the file it writes cannot grow, so
    the netCDF file is built in memory (or, past :func:`mixlab.runfile.check.read_bound`, in a
    temporary file whose whole estimated size is reserved first) and then written in one
    atomic write (mixlab.runfile.atomic); an earlier ``out`` stays until the new one is complete."""
    lay = _Layout(run, stream)
    out = Path(out)
    estimate = _estimated_bytes(run, lay)
    if estimate <= read_bound():
        bio = io.BytesIO()
        _write_netcdf(run, lay, bio)
        atomic_write(out, bio.getbuffer())
        return lay.name, out
    tmp = temporary_name(out)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            os.posix_fallocate(fd, 0, estimate + estimate // 8 + (4 << 20))
        finally:
            os.close(fd)
        _write_netcdf(run, lay, tmp)
        os.replace(tmp, out)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        _raise_write_failure(exc, out)
        raise
    return lay.name, out


def _estimated_bytes(run: RunReader, lay: _Layout) -> int:
    """The bytes of the export's variables (the netCDF file adds its metadata)."""
    n = 0
    for key in lay.keys:
        n += run.stream_nbytes(lay.name, key)
    n += sum(np.asarray(v).nbytes for v in lay.summaries.values())
    n += sum(v.nbytes for v in lay.sample_stats().values())
    return n + lay.chains * lay.draws * 8 + (1 << 16)


def _write_netcdf(run: RunReader, lay: _Layout, target) -> None:
    """The netCDF file of ``lay`` into ``target`` (a path or a binary file object)."""
    import h5netcdf

    name, keys, summaries, chains, draws = (lay.name, lay.keys, lay.summaries, lay.chains,
                                            lay.draws)
    attrs, time = lay.attrs, lay.time
    with h5netcdf.File(target, "w") as f:
        post = f.create_group("posterior")
        post.dimensions = {"chain": chains, "draw": draws}
        post.create_variable("chain", ("chain",), data=np.arange(chains))
        post.create_variable("draw", ("draw",), data=np.arange(draws))
        for key in keys:
            _write_key(run, post, name, key, chains, draws, lay.var(key))
        for stat, v in summaries.items():
            post.create_variable(stat, ("chain", "draw"), data=np.asarray(v[:, :draws]))
        post.attrs.update(attrs)
        ss = f.create_group("sample_stats")
        ss.dimensions = {"chain": chains, "draw": draws}
        ss.create_variable("chain", ("chain",), data=np.arange(chains))
        ss.create_variable("draw", ("draw",), data=np.arange(draws))
        for k, v in lay.sample_stats().items():          # stored (draw, chain)
            ss.create_variable(k, ("chain", "draw"), data=v[:draws].T)
        ss.create_variable("time", ("chain", "draw"),
                           data=np.broadcast_to(time[:draws], (chains, draws)).copy())
        ss.attrs.update(attrs)
        f.attrs.update(attrs)


def _write_key(run: RunReader, group, stream: str, key: str, chains: int, draws: int,
               var: str) -> None:
    """Draw key ``key`` as variable ``var`` (chain, draw, ...), CHUNK_DRAWS draws at a time."""
    first = run.stream(stream, key, draws=slice(0, 1))
    event = first.shape[2:]
    dims = ("chain", "draw") + tuple(f"{var}_dim_{i}" for i in range(len(event)))
    for d, n in zip(dims[2:], event):
        group.dimensions[d] = n
    dtype = np.int8 if first.dtype == bool else first.dtype
    v = group.create_variable(var, dims, dtype=dtype,
                              chunks=(chains, min(draws, 1024)) + tuple(event))
    for a in range(0, draws, CHUNK_DRAWS):
        b = min(draws, a + CHUNK_DRAWS)
        v[:, a:b] = run.stream(stream, key, draws=slice(a, b)).astype(dtype, copy=False)


def export_zarr(run: RunReader, stream: str | None, out: str | Path) -> tuple[str, Path]:
    """Write stream ``stream`` of ``run`` as a Zarr (format 2) directory ``out``, which must not
    exist yet; returns (stream, path). Written under a temporary name, then renamed."""
    import xarray as xr
    try:
        import zarr
    except ImportError:
        raise MixlabError("Zarr export needs the zarr package: pip install 'mixlab[zarr]' "
                          "(or use --format netcdf)") from None

    lay = _Layout(run, stream)
    out = Path(out)
    if out.exists():
        raise UsageError(f"{out} exists; remove it or give another -o (mixlab does not delete "
                         f"a directory it did not write)")
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    stats = lay.sample_stats()
    try:
        zarr.open_group(str(tmp), mode="w", zarr_format=2).attrs.update(lay.attrs)
        for a in range(0, lay.draws, CHUNK_DRAWS):
            b = min(lay.draws, a + CHUNK_DRAWS)
            coords = {"chain": np.arange(lay.chains), "draw": np.arange(a, b)}
            post = {}
            for key in lay.keys:
                x = run.stream(lay.name, key, draws=slice(a, b))
                var = lay.var(key)
                post[var] = (("chain", "draw") + tuple(f"{var}_dim_{i}"
                                                       for i in range(x.ndim - 2)),
                             x.astype(np.int8) if x.dtype == bool else x)
            for stat, v in lay.summaries.items():
                post[stat] = (("chain", "draw"), np.asarray(v[:, a:b]))
            ss = {k: (("chain", "draw"), v[a:b].T) for k, v in stats.items()}
            ss["time"] = (("chain", "draw"),
                          np.broadcast_to(lay.time[a:b], (lay.chains, b - a)).copy())
            more = {"mode": "w-"} if a == 0 else {"mode": "a", "append_dim": "draw"}
            for group, data in (("posterior", post), ("sample_stats", ss)):
                xr.Dataset(data, coords=coords, attrs=lay.attrs).to_zarr(
                    str(tmp), group=group, zarr_format=2, consolidated=False, **more)
        zarr.consolidate_metadata(str(tmp), zarr_format=2)
        os.rename(tmp, out)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        _raise_write_failure(exc, out)
        raise
    return lay.name, out


def _raise_write_failure(exc: BaseException, out: Path) -> None:
    """A write that failed for want of space (or any OS error) as one true message."""
    if isinstance(exc, OSError):
        raise WriteFailure(f"cannot write {out}: {describe_os_error(exc)}; nothing was written "
                           f"(the partial export was removed): free space and run the same "
                           f"command again", out, exc.errno) from None
