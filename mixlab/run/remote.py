"""A run's streams on workers that do not share its files (``mixlab run --scheduler``).

A stream runs on a Dask worker as a chain of tasks, one per checkpoint interval: a task receives
the stream's sampler, RNG, evaluators and the HDF5 image of its last checkpoint (the client's
copy), runs the stream (mixlab.run.streams) in a temporary directory from that checkpoint up to
the next one, and returns the new checkpoint and the segment files written since, as bytes.
The client, the run's only writer and the holder of its writer lock, writes the segments into
the run directory, takes the checkpoint into ``run.h5`` and publishes, then submits the next
task from there. A stream resumed from a checkpoint gives the same draws as one never stopped,
so the run file holds what ``-j 1`` writes; a worker killed mid-task loses only that task, which
the cluster runs again from the same checkpoint, and a client killed leaves its last checkpoint
to resume from.
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import h5py

from ..runfile import confined
from ..runfile.segments import SEGMENT_DIR, StreamSegments, stream_id
from .streams import run_stream


class _Checkpointed(Exception):
    """Raised by the chunk store's ``publish``: the task's checkpoint interval is over."""


class ChunkStore:
    """The store :func:`mixlab.run.streams.run_stream` writes to in a remote task: the stream's
    group in memory, in a temporary run directory; its first ``publish`` ends the task."""

    def __init__(self, run_dir: Path, name: str, seed: bytes):
        self.run_dir, self.name = run_dir, name
        self._bio = io.BytesIO(seed)
        self._file = h5py.File(self._bio, "r+")
        self.safe_draws: dict[str, int] = {}
        self.image: bytes | None = None

    def stream_group(self, name: str) -> h5py.Group:
        assert name == self.name, (name, self.name)
        return self._file["stream"]

    def stream_segments(self, name: str) -> StreamSegments:
        ck = self.stream_group(name).get("_checkpoint")
        return StreamSegments.open(self.run_dir, name, None if ck is None else ck.attrs)

    def publish(self) -> None:
        self.image = checkpoint_image(self.stream_group(self.name))
        raise _Checkpointed()

    def write_metric(self, *args, **kwargs) -> None:
        """Curves are written by the client, from the evaluators' final state."""

    def close(self) -> None:
        self._file.close()


def checkpoint_image(group: h5py.Group) -> bytes:
    """An HDF5 image holding a stream group's checkpoint and attributes."""
    bio = io.BytesIO()
    with h5py.File(bio, "w") as out:
        group.file.copy(group["_checkpoint"], out, "_checkpoint")
        for k, v in group.attrs.items():
            out.attrs[k] = v
    return bio.getvalue()


def stream_chunk(name: str, sampler, rng, evaluators, kwargs: dict, seed: bytes) -> dict:
    """A Dask task: run stream ``name`` from the checkpoint in ``seed`` to its next one; returns
    ``{"checkpoint": image bytes, "segments": {file name: bytes}}`` (the files written since)."""
    with tempfile.TemporaryDirectory(prefix="mixlab-stream-", ignore_cleanup_errors=True) as tmp:
        store = ChunkStore(Path(tmp), name, seed)
        try:
            run_stream(store, name, sampler, rng, evaluators=evaluators, **kwargs)
        except _Checkpointed:
            pass
        finally:
            store.close()
        if store.image is None:
            raise RuntimeError(f"stream {name} ended without a checkpoint")
        rel = f"{SEGMENT_DIR}/{stream_id(name)}"
        written = {f: confined.read_bytes(tmp, f"{rel}/{f}", 1 << 40)
                   for f in confined.list_dir(tmp, rel)}
    return {"checkpoint": store.image, "segments": written}


def land_chunk(store, name: str, chunk: dict) -> h5py.AttributeManager:
    """Write a remote task's segment files into the run directory and take its checkpoint into
    ``run.h5`` (published); returns the checkpoint's attributes."""
    rel = f"{SEGMENT_DIR}/{stream_id(name)}"
    for fname, data in sorted(chunk["segments"].items()):
        if not confined.generated(f"{rel}/{fname}"):
            raise ValueError(f"stream {name}: a worker returned a file mixlab does not write "
                             f"({fname!r})")
        confined.write_atomic(store.run_dir, f"{rel}/{fname}", data)
    with h5py.File(io.BytesIO(chunk["checkpoint"]), "r") as src:
        g = store.stream_group(name)
        if "_checkpoint" in g:
            del g["_checkpoint"]
        src.copy(src["_checkpoint"], g, "_checkpoint")
        for k, v in src.attrs.items():
            g.attrs[k] = v
    ck = g["_checkpoint"].attrs
    StreamSegments(store.run_dir, name, json.loads(ck["segments"]),
                   json.loads(ck["layout"])).link(g)
    store.publish()
    store.safe_draws[name] = int(ck["count"])
    return ck
