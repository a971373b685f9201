"""Export a run's stream as ArviZ InferenceData in netCDF (readable by ``arviz.from_netcdf``).

Groups (ArviZ's schema, dims ``chain`` and ``draw`` first):

- ``posterior``: every draw key of the stream, ``(chain, draw, <key>_dim_0, ...)`` (bit-packed
  booleans unpacked to 0/1 ``int8``), and every per-draw summary ``(chain, draw)``;
- ``sample_stats``: the sampler's per-draw statistics (``accept``, ``data_used``, …) and
  ``time``, the cumulative sampling seconds at each draw (the same for every chain);
- attributes of every group: ``mixlab_run`` (the run directory), ``mixlab_stream``,
  ``mixlab_spec`` (the resolved spec, YAML), ``mixlab_provenance`` (JSON: versions, git commit,
  seed, plugins, created).

The file is written with h5netcdf, draw key by draw key and :data:`CHUNK_DRAWS` draws at a time,
so a stream larger than memory is exported without holding it whole.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..errors import MixlabError, UsageError
from ..store import RunReader

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


def export_netcdf(run: RunReader, stream: str | None, out: str | Path) -> tuple[str, Path]:
    """Write stream ``stream`` of ``run`` to ``out`` (netCDF-4 / HDF5); returns (stream, path).
    The file appears complete or not at all (written under a temporary name, then renamed)."""
    import h5netcdf

    name = pick_stream(run, stream)
    out = Path(out)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    keys = run.stream_keys(name)
    summaries = run.stream_summaries(name)
    stats = run.stream_stats(name)
    time = run.stream_time(name)
    ds0 = run.f[f"streams/{name}/{keys[0]}"] if keys else None
    if ds0 is not None:
        chains, draws = int(ds0.shape[0]), int(ds0.shape[1])
    elif summaries:
        chains, draws = next(iter(summaries.values())).shape
    else:
        raise MixlabError(f"stream '{name}' of run {run.run_dir} recorded no draws and no "
                          f"summaries: nothing to export")
    attrs = _attrs(run, name)
    try:
        with h5netcdf.File(tmp, "w") as f:
            post = f.create_group("posterior")
            post.dimensions = {"chain": chains, "draw": draws}
            post.create_variable("chain", ("chain",), data=np.arange(chains))
            post.create_variable("draw", ("draw",), data=np.arange(draws))
            for key in keys:
                _write_key(run, post, name, key, chains, draws,
                           "draw_" + key if key in summaries else key)
            for stat, v in summaries.items():
                post.create_variable(stat, ("chain", "draw"), data=np.asarray(v[:, :draws]))
            post.attrs.update(attrs)
            ss = f.create_group("sample_stats")
            ss.dimensions = {"chain": chains, "draw": draws}
            ss.create_variable("chain", ("chain",), data=np.arange(chains))
            ss.create_variable("draw", ("draw",), data=np.arange(draws))
            for k, v in stats.items():
                v = np.asarray(v)
                if v.ndim == 2 and v.shape[0] >= draws:       # stored (draw, chain)
                    ss.create_variable(k, ("chain", "draw"), data=v[:draws].T)
            ss.create_variable("time", ("chain", "draw"),
                               data=np.broadcast_to(time[:draws], (chains, draws)).copy())
            ss.attrs.update(attrs)
            f.attrs.update(attrs)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return name, out


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
