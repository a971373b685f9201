"""A stream's checkpoint in the run file: its one layout, read and written here alone.

``/streams/<name>/_checkpoint`` holds the sampler's state (numeric datasets under ``state/``),
each evaluator's declared state (``evaluators/<i>/``, data only: mixlab.runfile.checkpoint) and,
as attributes, the RNG state (JSON), the draw count, the sampling seconds, the statistics' sums
and means (JSON), whether the stream is complete, and the segment list and layout that reopen
its segment files (mixlab.runfile.segments).

:class:`StreamCheckpoints` gives a store the methods that read and write it;
:class:`mixlab.runfile.store.RunStore` (``run.h5``) and :class:`StreamImage` (one stream in
memory, the store of a worker that runs a stream for the run's own process) both have them,
so the stream runner (mixlab.run.streams) writes to either through :class:`StreamStore`.
A stream's checkpoint travels between processes as an HDF5 image (:meth:`export_stream`,
:meth:`import_stream`).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import h5py
import numpy as np

from ..errors import RunFileError
from .checkpoint import read_state, write_state
from .segments import StreamSegments

CHECKPOINT = "_checkpoint"
#: names inside a stream's group that are not draw keys: a sampler may not use them for its draws
RESERVED_KEYS = ("time", "stats", "summary", CHECKPOINT)


def has_checkpoint(group: h5py.Group) -> bool:
    """Whether a stream's group holds a checkpoint (mixlab.runfile.records walks the groups)."""
    return isinstance(group.get(CHECKPOINT), h5py.Group)


def checkpoint_complete(group: h5py.Group) -> bool:
    """Whether a stream's group holds a complete checkpoint."""
    ck = group.get(CHECKPOINT)
    return isinstance(ck, h5py.Group) and bool(ck.attrs.get("complete", False))


@dataclass
class Checkpoint:
    """A stream's resumable state: sampler ``state`` {key: array}, the RNG's state as JSON,
    each evaluator's declared state, ``count`` draws per chain, ``seconds`` of sampling, the
    statistics' sums and means, and whether the stream is ``complete``."""

    state: dict
    rng: str
    evaluators: list[dict]
    count: int
    seconds: float
    stat_sums: dict = field(default_factory=dict)
    stats_mean: dict = field(default_factory=dict)
    complete: bool = False


class StreamStore(Protocol):
    """What the stream runner needs of a store (RunStore, a worker's StreamImage)."""

    run_dir: Path
    safe_draws: dict[str, int]

    def checkpoint(self, name: str, evaluators: int = 0) -> Checkpoint | None: ...
    def stream_done(self, name: str) -> bool: ...
    def write_checkpoint(self, name: str, ck: Checkpoint, segments: StreamSegments,
                         evaluator_names: list[str]) -> None: ...
    def finish_stream(self, name: str, draws: int, seconds: float, thin: int) -> None: ...
    def stream_segments(self, name: str) -> StreamSegments: ...
    def publish(self) -> None: ...
    def write_metric(self, metric: str, series: str, x, y, yerr=None, x_label: str = "",
                     y_label: str = "", **attrs) -> None: ...


class StreamCheckpoints:
    """The checkpoint methods of a store whose ``_stream_group(name)`` is the stream's group."""

    def _stream_group(self, name: str) -> h5py.Group:  # pragma: no cover - abstract
        raise NotImplementedError

    def _checkpoint_group(self, name: str) -> h5py.Group | None:
        ck = self._stream_group(name).get(CHECKPOINT)
        return ck if isinstance(ck, h5py.Group) else None

    def stream_done(self, name: str) -> bool:
        """Whether stream ``name`` has a complete checkpoint."""
        return checkpoint_complete(self._stream_group(name))

    def stream_segments(self, name: str) -> StreamSegments:
        """The stream's segment files as of its last checkpoint (orphans deleted)."""
        ck = self._checkpoint_group(name)
        return StreamSegments.open(self.run_dir, name, None if ck is None else ck.attrs)

    def checkpoint(self, name: str, evaluators: int = 0) -> Checkpoint | None:
        """Stream ``name``'s last checkpoint (None without one), with the state of its first
        ``evaluators`` evaluators (a RunFileError if it lacks one)."""
        ck = self._checkpoint_group(name)
        if ck is None:
            return None
        eg = ck.get("evaluators")
        if not isinstance(eg, h5py.Group) or not all(
                isinstance(eg.get(str(i)), h5py.Group) for i in range(evaluators)):
            raise RunFileError(f"checkpoint {ck.name} does not hold the state of the stream's "
                               f"{evaluators} evaluator(s); start the run afresh with --force")
        state = {k: v[()] for k, v in ck["state"].items()
                 if isinstance(v, h5py.Dataset) and v.dtype.kind in "biufc"}
        a = ck.attrs
        return Checkpoint(state=state, rng=str(a["rng"]),
                          evaluators=[read_state(eg[str(i)]) for i in range(evaluators)],
                          count=int(a["count"]), seconds=float(a["seconds"]),
                          stat_sums=json.loads(a.get("stat_sums", "{}")),
                          stats_mean=json.loads(a.get("stats_mean", "{}")),
                          complete=bool(a.get("complete", False)))

    def write_checkpoint(self, name: str, ck: Checkpoint, segments: StreamSegments,
                         evaluator_names: list[str]) -> None:
        """Link the stream's segments and replace its checkpoint (the caller publishes);
        ``evaluator_names`` name each evaluator state in messages."""
        g = self._stream_group(name)
        segments.link(g)
        if CHECKPOINT in g:
            del g[CHECKPOINT]
        cg = g.create_group(CHECKPOINT)
        sg = cg.create_group("state")
        for k, v in ck.state.items():
            sg.create_dataset(k, data=np.asarray(v))
        eg = cg.create_group("evaluators")
        for i, (state, what) in enumerate(zip(ck.evaluators, evaluator_names, strict=True)):
            write_state(eg.create_group(str(i)), state, f"{what} of stream {g.name}")
        cg.attrs["rng"] = ck.rng
        cg.attrs["count"] = ck.count
        cg.attrs["seconds"] = ck.seconds
        cg.attrs["stat_sums"] = json.dumps(ck.stat_sums)
        cg.attrs["stats_mean"] = json.dumps(ck.stats_mean)
        cg.attrs["complete"] = ck.complete
        for k, v in segments.describe().items():
            cg.attrs[k] = v

    def finish_stream(self, name: str, draws: int, seconds: float, thin: int) -> None:
        """Record a finished stream's draws per chain, sampling seconds and thinning."""
        g = self._stream_group(name)
        g.attrs["draws"] = draws
        g.attrs["seconds"] = seconds
        g.attrs["thin"] = thin

    def export_stream(self, name: str) -> bytes:
        """An HDF5 image of the stream's checkpoint (if any) and attributes."""
        g = self._stream_group(name)
        bio = io.BytesIO()
        with h5py.File(bio, "w") as out:
            s = out.create_group("stream")
            if CHECKPOINT in g:
                g.file.copy(g[CHECKPOINT], s, CHECKPOINT)
            for k, v in g.attrs.items():
                s.attrs[k] = v
        return bio.getvalue()

    def import_stream(self, name: str, image: bytes) -> Checkpoint:
        """Take a stream's checkpoint and attributes from an :meth:`export_stream` image (a
        worker's), link the segments it lists (the caller publishes); returns the checkpoint
        (without evaluator states)."""
        g = self._stream_group(name)
        with h5py.File(io.BytesIO(image), "r") as src:
            s = src["stream"]
            if CHECKPOINT not in s:
                raise RunFileError(f"stream {name}: a worker handed over no checkpoint")
            if CHECKPOINT in g:
                del g[CHECKPOINT]
            src.copy(s[CHECKPOINT], g, CHECKPOINT)
            for k, v in s.attrs.items():
                g.attrs[k] = v
        ck = g[CHECKPOINT].attrs
        StreamSegments(self.run_dir, name, json.loads(ck["segments"]),
                       json.loads(ck["layout"])).link(g)
        return self.checkpoint(name)


class StreamImage(StreamCheckpoints):
    """One stream in memory, from an :meth:`StreamCheckpoints.export_stream` image: the store a
    worker runs a stream with, its segment files in ``run_dir``. ``publish`` is the worker's
    to define (hand the checkpoint to the run's own process); curves are not written here."""

    def __init__(self, run_dir: Path, name: str, image: bytes):
        self.run_dir, self.name = Path(run_dir), name
        self._file = h5py.File(io.BytesIO(image), "r+")
        self.safe_draws: dict[str, int] = {}

    def _stream_group(self, name: str) -> h5py.Group:
        if name != self.name:
            raise ValueError(f"this store holds stream {self.name}, not {name}")
        return self._file["stream"]

    def publish(self) -> None:  # pragma: no cover - the worker's
        raise NotImplementedError

    def write_metric(self, *args: Any, **kwargs: Any) -> None:
        """Curves are written by the run's own process, from the evaluators' final state."""

    def close(self) -> None:
        self._file.close()
