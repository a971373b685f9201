"""Declarative spec schemas: every key an experiment accepts, its type, range and default.

A schema is a nested ``dict`` whose leaves are :class:`Param`; :class:`MapOf` is a mapping from
user-chosen names (e.g. sampler labels) to a sub-schema, :class:`ListOf` a list of sub-schemas
(the nodes live in :mod:`mixlab.spec.nodes`). :func:`validate` fills defaults and rejects
anything else with a :class:`SpecError` that names the dotted key path, and for an unknown key
the closest valid one. A :class:`SamplerEntry` is validated against the sampler that
:mod:`mixlab.plugins.registry` finds for its ``method``.
"""

from __future__ import annotations

import difflib
from typing import Any

from ..errors import SpecError
from ..plugins import registry
from .nodes import (
    INT64_MAX,
    INT64_MIN,
    REQUIRED,
    ListOf,
    MapOf,
    Param,
    SamplerEntry,
)

__all__ = ["INT64_MAX", "INT64_MIN", "REQUIRED", "ListOf", "MapOf", "Param", "SamplerEntry",
           "describe", "validate"]


def _validate_sampler_entry(value: Any, schema: SamplerEntry, path: str) -> dict:
    if not isinstance(value, dict):
        raise SpecError(f"must be a mapping with a 'method' key, got {value!r}", path)
    if "method" not in value:
        names = ", ".join(sorted(registry.samplers_for(schema.family)))
        raise SpecError(f"is required: a registered {schema.family} sampler ({names})",
                        _join(path, "method"))
    kind = registry.get_sampler(schema.family, value["method"], _join(path, "method"))
    full = {"method": Param(type=str), **schema.common, **kind.params}
    return validate(value, full, path)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def validate(value: Any, schema: Any, path: str = "") -> Any:
    """Check ``value`` against ``schema``, fill defaults, return the resolved value.

    Raises :class:`SpecError` naming the dotted key path of the first problem."""
    if isinstance(schema, Param):
        return schema.check(value, path or "<root>")
    if isinstance(schema, MapOf):
        if value is None:
            value = schema.default
        if (isinstance(schema.schema, SamplerEntry) and isinstance(value, list)
                and all(isinstance(v, str) for v in value)):
            # shorthand: [gibbs, swendsen_wang] is {gibbs: {method: gibbs}, ...}
            if len(set(value)) != len(value):
                raise SpecError(f"names a sampler twice: {value!r}; give each its own label "
                                f"(label: {{method: NAME, ...}})", path)
            value = {v: {"method": v} for v in value}
        if not isinstance(value, dict):
            raise SpecError(f"must be a mapping of names to settings, got {value!r}", path)
        if len(value) < schema.min_len:
            raise SpecError(f"needs at least {schema.min_len} entry(ies)", path)
        return {str(k): validate(v, schema.schema, _join(path, str(k))) for k, v in value.items()}
    if isinstance(schema, SamplerEntry):
        return _validate_sampler_entry(value, schema, path)
    if isinstance(schema, ListOf):
        if value is None:
            value = schema.default
        if not isinstance(value, list):
            raise SpecError(f"must be a list, got {value!r}", path)
        if len(value) < schema.min_len:
            raise SpecError(f"needs at least {schema.min_len} item(s)", path)
        return [validate(v, schema.schema, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(schema, dict):
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise SpecError(f"must be a mapping with keys {', '.join(schema)}; got {value!r}",
                            path or "<root>")
        for key in value:
            if key not in schema:
                raise SpecError(_unknown_key_message(str(key), schema), _join(path, str(key)))
        out = {}
        for key, sub in schema.items():
            if key in value:
                out[key] = validate(value[key], sub, _join(path, key))
            else:
                out[key] = _default(sub, _join(path, key))
        return out
    raise TypeError(f"bad schema node at {path}: {schema!r}")


def _default(schema: Any, path: str) -> Any:
    if isinstance(schema, Param):
        if schema.default is REQUIRED:
            raise SpecError("is required" + (f" ({schema.help})" if schema.help else ""), path)
        return schema.default
    if isinstance(schema, (MapOf, ListOf)):
        return validate(None, schema, path)
    if isinstance(schema, dict):
        return validate({}, schema, path)
    raise TypeError(f"bad schema node at {path}: {schema!r}")


def _unknown_key_message(key: str, schema: dict) -> str:
    valid = sorted(schema)
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return f"unknown key; {hint}valid keys here: {', '.join(valid)}"


def describe(schema: Any, path: str = "") -> list[tuple[str, str, str]]:
    """Flatten a schema into (dotted key, default, help) rows, for ``mixlab run --help-spec``."""
    rows: list[tuple[str, str, str]] = []
    if isinstance(schema, Param):
        d = "required" if schema.default is REQUIRED else repr(schema.default)
        rows.append((path, d, schema.help))
    elif isinstance(schema, (MapOf, ListOf)):
        rows.append((path, repr(schema.default), schema.help))
        rows.extend(describe(schema.schema, path + ".<name>" if isinstance(schema, MapOf)
                             else path + "[i]"))
    elif isinstance(schema, SamplerEntry):
        kinds = registry.samplers_for(schema.family)
        rows.append((_join(path, "method"), "required",
                     f"a registered {schema.family} sampler: {', '.join(sorted(kinds))}"))
        for k, v in schema.common.items():
            rows.extend(describe(v, _join(path, k)))
        for name, kind in sorted(kinds.items()):
            for key, default, text in describe(kind.params, path):
                rows.append((key, default, f"[{name}] {text}".strip()))
    elif isinstance(schema, dict):
        for k, v in schema.items():
            rows.extend(describe(v, _join(path, k)))
    return rows
