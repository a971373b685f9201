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

import tempfile
from pathlib import Path

from ..runfile import confined
from ..runfile.segments import SEGMENT_DIR, stream_id
from ..runfile.store import RunStore
from ..runfile.streamfile import Checkpoint, StreamImage
from .streams import run_stream


class _Checkpointed(Exception):
    """Raised by the chunk store's ``publish``: the task's checkpoint interval is over."""


class ChunkStore(StreamImage):
    """The store :func:`mixlab.run.streams.run_stream` writes to in a remote task: the stream in
    memory (mixlab.runfile.streamfile), in a temporary run directory; its first ``publish``
    ends the task."""

    def __init__(self, run_dir: Path, name: str, seed: bytes):
        super().__init__(run_dir, name, seed)
        self.image: bytes | None = None

    def publish(self) -> None:
        self.image = self.export_stream(self.name)
        raise _Checkpointed()


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


def land_chunk(store: RunStore, name: str, chunk: dict) -> Checkpoint:
    """Write a remote task's segment files into the run directory and take its checkpoint into
    ``run.h5`` (published); returns the checkpoint."""
    rel = f"{SEGMENT_DIR}/{stream_id(name)}"
    for fname, data in sorted(chunk["segments"].items()):
        if not confined.generated(f"{rel}/{fname}"):
            raise ValueError(f"stream {name}: a worker returned a file mixlab does not write "
                             f"({fname!r})")
        confined.write_atomic(store.run_dir, f"{rel}/{fname}", data)
    ck = store.import_stream(name, chunk["checkpoint"])
    store.publish()
    store.safe_draws[name] = ck.count
    return ck
