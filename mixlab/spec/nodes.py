"""The building blocks of spec schemas: :class:`Param` (one key), :class:`MapOf` (names to
sub-schemas), :class:`ListOf` (a list of sub-schemas) and :class:`SamplerEntry` (one sampler's
settings, validated against the sampler's registered parameters).

These nodes only describe keys; :mod:`mixlab.spec.schema` walks a spec through them. They sit below
the registry so that a registration can be checked for being made of them.
"""


import difflib
import math
from dataclasses import dataclass, field
from typing import Any

from ..errors import SpecError

REQUIRED = object()
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # what numpy, HDF5 and the seeds can hold

_TYPE_NAMES = {float: "a number", int: "an integer", str: "a string", bool: "true or false",
               list: "a list", dict: "a mapping"}


@dataclass(frozen=True)
class Param:
    """One leaf of a schema.

    ``type`` is float, int, str, bool, list or dict (dict: free-form mapping, kept as is).
    ``lo``/``hi`` bound numbers (inclusive unless ``lo_open``/``hi_open``); ``choices`` restricts
    values; ``item`` is the type of list items; ``nullable`` admits ``null``.
    """

    default: Any = REQUIRED
    type: type = float
    help: str = ""
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple | None = None
    item: type | None = None
    nullable: bool = False
    min_len: int = 0

    def check(self, value: Any, path: str) -> Any:
        if value is None:
            if self.nullable:
                return None
            raise SpecError(f"must not be null; expected {_TYPE_NAMES.get(self.type, self.type)}",
                            path)
        if self.type is list:
            if isinstance(value, tuple):
                value = list(value)
            if not isinstance(value, list):
                value = [value]  # a scalar where a list is expected: a list of one
            if len(value) < self.min_len:
                raise SpecError(f"needs at least {self.min_len} item(s), got {len(value)}", path)
            if self.item is not None:
                sub = Param(type=self.item, lo=self.lo, hi=self.hi, lo_open=self.lo_open,
                            hi_open=self.hi_open, choices=self.choices)
                value = [sub.check(v, f"{path}[{i}]") for i, v in enumerate(value)]
            return value
        value = _coerce(value, self.type, path)
        if self.type is int and not INT64_MIN <= value <= INT64_MAX:
            raise SpecError(f"must fit a 64-bit integer (between {INT64_MIN} and {INT64_MAX}), "
                            f"got {value}", path)
        if self.type in (int, float):
            if isinstance(value, float) and not math.isfinite(value):
                raise SpecError(f"must be finite, got {value}", path)
            if self.lo is not None and (value < self.lo or (self.lo_open and value == self.lo)):
                op = ">" if self.lo_open else ">="
                raise SpecError(f"must be {op} {self.lo}, got {value}", path)
            if self.hi is not None and (value > self.hi or (self.hi_open and value == self.hi)):
                op = "<" if self.hi_open else "<="
                raise SpecError(f"must be {op} {self.hi}, got {value}", path)
        if self.choices is not None and value not in self.choices:
            close = difflib.get_close_matches(str(value), [str(c) for c in self.choices], n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise SpecError(f"must be one of {', '.join(map(str, self.choices))}; "
                            f"got '{value}'{hint}", path)
        return value


def _coerce(value: Any, typ: type, path: str) -> Any:
    if typ is float:
        if isinstance(value, str):  # YAML 1.1 reads '1e-3' (no dot) as a string
            try:
                return float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(f"must be a number, got {value!r}", path)
        return float(value)
    if typ is int:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(f"must be an integer, got {value!r}", path)
        return int(value)
    if typ is bool:
        if not isinstance(value, bool):
            raise SpecError(f"must be true or false, got {value!r}", path)
        return value
    if typ is str:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            raise SpecError(f"must be a string, got {value!r}", path)
        return value
    if typ is dict:
        if not isinstance(value, dict):
            raise SpecError(f"must be a mapping, got {value!r}", path)
        return value
    raise TypeError(f"unsupported Param type {typ}")


@dataclass(frozen=True)
class MapOf:
    """A mapping from user-chosen names to values of ``schema`` (e.g. ``samplers: {gibbs: {...}}``).

    ``default`` is the mapping used when the key is absent (each entry validated too)."""

    schema: Any
    default: dict = field(default_factory=dict)
    min_len: int = 0
    help: str = ""


@dataclass(frozen=True)
class ListOf:
    """A list whose items each follow ``schema``."""

    schema: Any
    default: list = field(default_factory=list)
    min_len: int = 0
    help: str = ""


@dataclass(frozen=True)
class SamplerEntry:
    """One sampler's settings: ``method`` names a sampler registered for ``family``
    (mixlab.plugins.registry.sampler); the other keys are validated against ``common`` (keys every
    sampler of the experiment takes) plus that sampler's own ``params`` schema."""

    family: str
    common: dict = field(default_factory=dict)
    help: str = ""
