"""The streams' and stages' input records in a run file, read and discarded as data.

Each stream's group and each computed stage's group carries its ``inputs`` record (the JSON
attribute :func:`write_record` writes; what it holds and how a changed spec
makes it stale: mixlab.run.update). :func:`read_records` walks the file once and gives them as
plain data (:class:`RunRecords`), checked as a record mixlab writes; :func:`discard` deletes
the streams and stages a plan names, and every result, metric and array. No other module walks
or deletes these groups.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import h5py

from ..errors import RunFileError
from .streamfile import checkpoint_complete, has_checkpoint


@dataclass
class RunRecords:
    """A run file's records: ``streams`` ``[(name, record or None, complete)]`` (names may
    nest: 'label/seg00'), ``top`` the names directly under ``/streams``, ``stages`` ``[(path,
    record or None)]`` of every computed stage (paths may nest: 'a/b')."""

    streams: list[tuple[str, dict | None, bool]] = field(default_factory=list)
    top: set[str] = field(default_factory=set)
    stages: list[tuple[str, dict | None]] = field(default_factory=list)


def write_record(group: h5py.Group, record: dict) -> None:
    """Store ``record`` as ``group``'s ``inputs`` attribute: JSON, keys sorted."""
    group.attrs["inputs"] = json.dumps(record, sort_keys=True, default=str)


def read_record(group: h5py.Group) -> dict | None:
    """``group``'s ``inputs`` record (None when absent or not a JSON object); a record whose
    values are not of the types mixlab writes is a RunFileError naming the group."""
    text = group.attrs.get("inputs")
    if text is None:
        return None
    try:
        rec = json.loads(text if isinstance(text, str) else bytes(text).decode())
    except (TypeError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(rec, dict):
        return None
    bad = _malformed(rec)
    if bad is not None:
        name = group.file.filename                    # a path, unless read from memory
        raise RunFileError(f"{name if isinstance(name, str) else 'run.h5'}: the 'inputs' "
                           f"attribute of '{group.name}' is not a record mixlab writes: its "
                           f"'{bad}' has the wrong type")
    return rec


_SCALAR = (str, int, float, bool, type(None))


def _code_ok(code) -> bool:
    return isinstance(code, dict) and all(isinstance(v, _SCALAR) for v in code.values())


def _malformed(rec: dict) -> str | None:
    """The first key of a stream's or stage's record whose value is not of the type
    mixlab.run.update's ``stream_inputs`` and ``stage_inputs`` write, or None."""
    checks = {
        "common": lambda v: isinstance(v, str), "samplers": lambda v: isinstance(v, str),
        "label": lambda v: isinstance(v, str),
        "code": lambda v: isinstance(v, dict) and all(_code_ok(c) for c in v.values()),
        "sampler": lambda v: isinstance(v, dict) and all(isinstance(x, str)
                                                         for x in v.values()),
        "after": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        "labels": lambda v: isinstance(v, dict) and all(
            isinstance(x, dict) and _code_ok(x.get("code", {})) for x in v.values()),
    }
    for key, ok in checks.items():
        if key in rec and not ok(rec[key]):
            return key
    return None


def read_records(f: h5py.File) -> RunRecords:
    """Every stream's and computed stage's record of the open run file ``f``."""
    out = RunRecords()
    streams = f.get("streams")
    if isinstance(streams, h5py.Group):
        out.top = set(streams)
        out.streams = [(name, read_record(g), checkpoint_complete(g))
                       for name, g in _stream_groups(streams)]
    stages = f.get("stages")
    if isinstance(stages, h5py.Group):
        for name, g in stages.items():
            if isinstance(g, h5py.Group):
                out.stages += list(_stage_groups(name, g))
    return out


def _stream_groups(streams: h5py.Group, prefix: str = ""):
    """``(name, group)`` of every stream under ``streams``: a group that is neither a stream
    (no checkpoint, no record) is a folder of streams."""
    for name, g in streams.items():
        if not isinstance(g, h5py.Group):
            continue
        if has_checkpoint(g) or "inputs" in g.attrs:
            yield prefix + name, g
        else:
            yield from _stream_groups(g, f"{prefix}{name}/")


def _stage_groups(name: str, g: h5py.Group):
    """``(path, record)`` of the computed stages at or under ``g`` (a group without ``done`` is
    a folder of stages)."""
    if "done" in g.attrs:
        yield name, read_record(g)
        return
    for sub, child in g.items():
        if isinstance(child, h5py.Group):
            yield from _stage_groups(f"{name}/{sub}", child)


def discard(f: h5py.File, streams: list[str], stages: list[str]) -> list[str]:
    """Delete ``streams`` and ``stages`` and every result, metric and array (the experiment
    recomputes them) from the open file ``f``; returns the streams deleted."""
    deleted = []
    for name in streams:
        if f"streams/{name}" in f:
            del f[f"streams/{name}"]
            deleted.append(name)
    for name in stages:
        if f"stages/{name}" in f:
            del f[f"stages/{name}"]
    for group in ("results", "metrics", "arrays"):
        if group in f:
            del f[group]
    return deleted
