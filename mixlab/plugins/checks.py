"""Checks that what a plugin registered can work: no name taken from someone else, callables
where callables belong, parameter schemas made of schema nodes, no reserved spec key redefined.

:mod:`mixlab.plugins.discovery` runs them after each plugin's import (and undoes the import when one
fails).
"""

from __future__ import annotations

from typing import Any

from ..spec.keys import RESERVED
from ..spec.nodes import ListOf, MapOf, Param, SamplerEntry
from . import registrations
from .registrations import RegistrationError


def check_registrations(added: list[tuple[str, str]], snap: dict) -> None:
    """Raise RegistrationError for an entry of ``added`` that replaces someone else's or that
    cannot work (a schema that is not one, a reserved key, a factory that is not callable)."""
    now = registrations.snapshot()
    for kind, name in added:
        if kind == "family":
            continue        # checked when registered (mixlab.plugins.families.register_family)
        if kind == "sampler":
            family, _, short = name.partition("/")
            old, new = snap["sampler"].get(family, {}).get(short), now["sampler"][family][short]
        elif kind == "experiment":
            old, new = snap["experiment"].get(name), now["experiment"][name]
        else:
            old, new = snap["figure"].get(name), now["figure"][name]
        where = f"{kind} '{name}'"
        if old is not None:
            src = getattr(old, "module", None) or getattr(getattr(old, "run", None) or
                                                          getattr(old, "draw", None),
                                                          "__module__", "?")
            raise RegistrationError(f"{where} is already registered by {src}; choose another "
                                    f"name")
        if kind == "sampler":
            if not callable(new.factory):
                raise RegistrationError(f"{where}: the factory is not callable")
            if "method" in new.params:
                raise RegistrationError(f"{where}: 'method' is reserved (it names the sampler); "
                                        f"rename that parameter")
            schema = new.params
        elif kind == "experiment":
            if not callable(new.run):
                raise RegistrationError(f"{where}: run is not callable")
            if new.check is not None and not callable(new.check):
                raise RegistrationError(f"{where}: check is not callable")
            if not isinstance(new.schema, dict):
                raise RegistrationError(f"{where}: schema must be a dict of spec keys")
            clash = set(new.schema) & (set(RESERVED) | {"scales", "plugins"})
            if clash:
                raise RegistrationError(f"{where}: schema redefines the reserved key(s) "
                                        f"{', '.join(sorted(clash))}")
            schema = new.schema
        else:
            if not callable(new.draw):
                raise RegistrationError(f"{where}: the draw function is not callable")
            if not isinstance(new.experiment, str):
                raise RegistrationError(f"{where}: experiment must be an experiment kind's name")
            continue
        bad = _not_a_schema(schema)
        if bad is not None:
            raise RegistrationError(f"{where}: its parameter schema is not made of Param, "
                                    f"MapOf, ListOf, SamplerEntry and dicts ({bad})")


def _not_a_schema(schema: Any, path: str = "") -> str | None:
    """Where ``schema`` holds something that is not a schema node (None when it is one)."""
    if isinstance(schema, (Param, SamplerEntry)):
        return None
    if isinstance(schema, (MapOf, ListOf)):
        return _not_a_schema(schema.schema, path + "[]")
    if isinstance(schema, dict):
        for k, v in schema.items():
            if not isinstance(k, str):
                return f"key {k!r} is not a string"
            bad = _not_a_schema(v, f"{path}.{k}" if path else k)
            if bad is not None:
                return bad
        return None
    return f"{path or 'the schema'} is {type(schema).__name__} {schema!r}"
