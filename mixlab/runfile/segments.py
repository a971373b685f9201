"""A stream's draws as immutable segment files, stitched into ``run.h5`` by virtual datasets.

Draws pile up in memory between checkpoints; at a checkpoint (or once ``SEGMENT_BYTES`` have
piled up) they are written as one small HDF5 file ``segments/<stream id>/<k>.h5`` in a single
atomic write, and never touched again. At each checkpoint the stream's datasets in ``run.h5``
(``samples`` (chain, draw, ...), ``time`` (draw,), ``stats/<key>`` (draw, ...),
``summary/<stat>`` (chain, draw)) are rebuilt as HDF5 virtual datasets over the segments listed
in the checkpoint, so h5py alone reads a stream as one array (sources are found relative to
``run.h5``'s directory: keep a run directory whole when copying it). A segment written after the
last published checkpoint is an orphan; :meth:`StreamSegments.open` deletes it, and the resumed
run writes the same draws again.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from pathlib import Path

import h5py
import numpy as np

from ..errors import RunFileError
from . import confined

SEGMENT_DIR = "segments"
SEGMENT_BYTES = 64 << 20  # write a segment early past this many buffered bytes
SEGMENT_NAME = re.compile(r"^\d{6}\.h5$")


def stream_id(name: str) -> str:
    """The directory name of a stream's segments (a hash: stream names are not path-safe)."""
    return hashlib.sha256(name.encode()).hexdigest()[:16]


def _layout_entry(spec) -> bool:
    """Whether ``spec`` is a dataset's layout as :meth:`StreamSegments._declare` writes it: a
    numeric dtype, ``lead`` and ``tail`` lists of sizes, ``attrs`` a mapping."""
    if not (isinstance(spec, dict) and set(spec) == {"dtype", "lead", "tail", "attrs"}
            and isinstance(spec["attrs"], dict) and isinstance(spec["dtype"], str)
            and all(isinstance(d, list) and all(type(n) is int and n >= 0 for n in d)
                    for d in (spec["lead"], spec["tail"]))):
        return False
    try:
        return np.dtype(spec["dtype"]).kind in "biufc"
    except TypeError:
        return False


def pack_bool(block: np.ndarray) -> np.ndarray:
    """(chain, n, *shape) bool -> (chain, n, ceil(prod(shape)/8)) uint8."""
    c, n = block.shape[:2]
    return np.packbits(block.reshape(c, n, -1), axis=-1)


class StreamSegments:
    """The segment files of one stream and the datasets of ``run.h5`` that stitch them.

    ``layout`` maps a dataset path inside the stream group to ``{"dtype", "lead", "tail",
    "attrs"}``: its shape is ``lead + [draws] + tail``; ``segments`` lists ``[file, draws]``."""

    def __init__(self, run_dir: Path, name: str, segments: list, layout: dict):
        self.run_dir, self.name = run_dir, name
        self.rel_dir = f"{SEGMENT_DIR}/{stream_id(name)}"
        self.segments = [list(s) for s in segments]
        self.layout = dict(layout)
        self._pending: list[dict[str, np.ndarray]] = []
        self._pending_bytes = 0

    @classmethod
    def open(cls, run_dir: Path, name: str, checkpoint_attrs) -> StreamSegments:
        """Segments as of the stream's last checkpoint (none without one); orphans deleted."""
        segs = json.loads(checkpoint_attrs["segments"]) if checkpoint_attrs is not None else []
        layout = json.loads(checkpoint_attrs["layout"]) if checkpoint_attrs is not None else {}
        if not (isinstance(segs, list) and all(
                isinstance(s, list) and len(s) == 2 and isinstance(s[0], str)
                and SEGMENT_NAME.match(s[0]) and isinstance(s[1], int) and s[1] >= 0
                for s in segs)):
            raise RunFileError(f"stream '{name}' of run {run_dir}: its checkpoint lists segment "
                               f"files that mixlab does not write ({str(segs)[:200]})")
        if not (isinstance(layout, dict) and all(_layout_entry(v) for v in layout.values())):
            raise RunFileError(f"stream '{name}' of run {run_dir}: its checkpoint describes its "
                               f"datasets in a layout that mixlab does not write "
                               f"({str(layout)[:200]}): move the run directory aside "
                               f"(nothing is deleted) and run again, or run into another "
                               f"--out directory")
        self = cls(run_dir, name, segs, layout)
        kept = {f for f, _ in self.segments}
        for fname in confined.list_dir(run_dir, self.rel_dir):  # a link here is refused
            if fname not in kept and confined.generated(f"{self.rel_dir}/{fname}"):
                confined.remove(run_dir, f"{self.rel_dir}/{fname}")
        return self

    # -- writing ----------------------------------------------------------------------------------
    def append(self, draws: dict, stats: dict, times: np.ndarray) -> None:
        """Buffer one block: draws ``{key: (chain, n, ...)}`` (bool bit-packed here), stats
        ``{key: (n, ...)}``, times (n,)."""
        block: dict[str, np.ndarray] = {}
        for k, v in draws.items():
            if v.dtype == np.bool_:
                block[k] = pack_bool(v)
                self._declare(k, block[k], 1, {"packed": True, "shape": list(v.shape[2:])})
            else:
                block[k] = np.ascontiguousarray(v)
                self._declare(k, block[k], 1, {})
        for k, v in stats.items():
            block[f"stats/{k}"] = np.ascontiguousarray(v)
            self._declare(f"stats/{k}", v, 0, {})
        block["time"] = np.ascontiguousarray(times, dtype=np.float64)
        self._declare("time", block["time"], 0,
                      {"units": "seconds of sampling (step calls only), cumulative"})
        self._pending.append(block)
        self._pending_bytes += sum(a.nbytes for a in block.values())
        if self._pending_bytes >= SEGMENT_BYTES:
            self.flush()

    def _declare(self, path: str, a: np.ndarray, axis: int, attrs: dict) -> None:
        spec = {"dtype": a.dtype.str, "lead": list(a.shape[:axis]),
                "tail": list(a.shape[axis + 1:]), "attrs": attrs}
        old = self.layout.setdefault(path, spec)
        if old != spec:
            raise ValueError(f"stream {self.name}: '{path}' changed from dtype {old['dtype']} "
                             f"shape {old['lead']}+[n]+{old['tail']} to {spec['dtype']} "
                             f"{spec['lead']}+[n]+{spec['tail']} between blocks")

    def flush(self) -> None:
        """Write the buffered blocks as one new segment file."""
        if not self._pending:
            return
        bio = io.BytesIO()
        n = 0
        with h5py.File(bio, "w") as f:
            for path, spec in self.layout.items():
                parts = [b[path] for b in self._pending if path in b]
                if not parts:
                    continue
                arr = np.concatenate(parts, axis=len(spec["lead"]))
                f.create_dataset(path, data=arr)
                if path == "time":
                    n = arr.shape[0]
        name = f"{len(self.segments):06d}.h5"
        confined.write_atomic(self.run_dir, f"{self.rel_dir}/{name}", bio.getvalue())
        self.segments.append([name, int(n)])
        self._pending, self._pending_bytes = [], 0

    # -- the stream's view in run.h5 --------------------------------------------------------------
    def link(self, group: h5py.Group) -> None:
        """(Re)build the group's virtual datasets over every segment written so far.

        The mappings go straight to HDF5's property list (one hyperslab of the virtual space
        per segment): h5py's ``VirtualLayout`` builds the same list through its selection
        objects at ~100 µs a mapping, and a checkpoint rebuilds every mapping of the stream."""
        total = sum(n for _, n in self.segments)
        for path, spec in self.layout.items():
            if path in group:
                del group[path]
            lead, tail = spec["lead"], spec["tail"]
            shape = tuple(lead + [total] + tail)
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_layout(h5py.h5d.VIRTUAL)
            space = h5py.h5s.create_simple(shape)
            source_name = path.encode()
            off = 0
            for fname, n in self.segments:
                if n:
                    part = tuple(lead + [n] + tail)
                    start = (0,) * len(lead) + (off,) + (0,) * len(tail)
                    space.select_hyperslab(start, part)
                    dcpl.set_virtual(space, f"{self.rel_dir}/{fname}".encode(), source_name,
                                     h5py.h5s.create_simple(part))
                off += n
            space.select_all()
            parent, _, leaf = path.rpartition("/")
            g = group.require_group(parent) if parent else group
            tid = h5py.h5t.py_create(np.dtype(spec["dtype"]), logical=True)
            ds = h5py.Dataset(h5py.h5d.create(g.id, leaf.encode(), tid, space, dcpl=dcpl))
            for k, v in spec["attrs"].items():
                ds.attrs[k] = np.asarray(v, dtype=np.int64) if k == "shape" else v

    def describe(self) -> dict:
        """What a checkpoint records to reopen these segments: ``segments`` and ``layout``."""
        return {"segments": json.dumps(self.segments), "layout": json.dumps(self.layout)}


def missing_sources(ds: h5py.Dataset, run_dir: Path) -> list[str]:
    """Segment files a virtual dataset reads that are not in ``run_dir`` (empty if none)."""
    if not ds.is_virtual:
        return []
    return sorted({m.file_name for m in ds.virtual_sources()
                   if m.file_name != "." and not (run_dir / m.file_name).exists()})
