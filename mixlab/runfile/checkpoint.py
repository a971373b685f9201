"""Resumable state as data: named arrays and JSON scalars, never pickles.

Samplers keep their state in a ``dict[str, np.ndarray]`` (written array by array). Evaluators
declare theirs with ``state() -> dict`` and ``load_state(dict)``; the values may be numpy arrays,
Python numbers, strings, booleans, None, and lists or dicts of those (anything ``json`` writes).
Arrays become datasets, everything else one JSON attribute, so reading a checkpoint back can
only ever produce numbers and strings: nothing in a run file is executed or imported.
"""

from __future__ import annotations

import json
from typing import Any

import h5py
import numpy as np

from ..errors import MixlabError

_JSON_ATTR = "__json__"


class StateError(MixlabError):
    """An object's declared state cannot be stored as data (exit code 1)."""


def _jsonable(value: Any, where: str) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, where) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v, where) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise StateError(f"{where}: a {type(value).__name__} cannot be checkpointed; state() must "
                     f"return arrays, numbers, strings or lists/dicts of those")


def write_state(group: h5py.Group, state: dict, where: str) -> None:
    """Store ``state`` in the (empty) ``group``: arrays as datasets, the rest as one JSON attr."""
    if not isinstance(state, dict):
        raise StateError(f"{where}: state() must return a dict, got {type(state).__name__}")
    rest = {}
    for key, value in state.items():
        key = str(key)
        if "/" in key or key == _JSON_ATTR:
            raise StateError(f"{where}: state key {key!r} must not contain '/'")
        if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
            group.create_dataset(key, data=value)
        else:
            rest[key] = _jsonable(value, f"{where}.{key}")
    group.attrs[_JSON_ATTR] = json.dumps(rest, allow_nan=True)


def read_state(group: h5py.Group) -> dict:
    """Inverse of :func:`write_state`: ``{key: np.ndarray | JSON value}``."""
    out: dict[str, Any] = {}
    for key, ds in group.items():
        if isinstance(ds, h5py.Dataset) and ds.dtype.kind in "biufc":
            out[key] = ds[()]
    raw = group.attrs.get(_JSON_ATTR, "{}")
    if isinstance(raw, bytes):
        raw = raw.decode()
    loaded = json.loads(str(raw))
    if not isinstance(loaded, dict):
        raise StateError(f"checkpoint group {group.name} holds malformed state")
    out.update(loaded)
    return out


def evaluator_state(ev: Any) -> dict:
    """An evaluator's declared state (``ev.state()``)."""
    if not hasattr(ev, "state") or not hasattr(ev, "load_state"):
        raise StateError(f"evaluator {type(ev).__module__}.{type(ev).__qualname__} must define "
                         f"state() -> dict and load_state(dict) so that runs can resume (see "
                         f"docs/plugins.md)")
    return ev.state()


class AttributeState:
    """Mixin: ``state()``/``load_state()`` over the attributes named in ``state_attrs``.

    For accumulators whose state is a few arrays, counters and lists of numbers; tuples come
    back as lists."""

    state_attrs: tuple[str, ...] = ()

    def state(self) -> dict:
        return {name: getattr(self, name) for name in self.state_attrs}

    def load_state(self, state: dict) -> None:
        for name in self.state_attrs:
            if name not in state:
                raise StateError(f"{type(self).__name__}: checkpoint lacks state '{name}'")
            setattr(self, name, state[name])
