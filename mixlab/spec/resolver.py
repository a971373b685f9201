"""Experiment specs: YAML files + dotted overrides + scale presets -> one validated dict.

Resolution order: the spec file, then its ``scales[<scale>]`` overrides, then command-line
``key.sub=value`` overrides, then ``--seed``. The result is validated against the experiment
kind's schema (mixlab.plugins.registry) plus the reserved keys below.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..plugins import discovery as plugins
from ..plugins import registry
from ..runfile.yaml_text import (
    STORED_TEXT_BYTES,
    YamlInvalid,
    YamlRefused,
    load_stored,
    load_user,
    text_bytes,
)
from ..runfile.yaml_text import dump as dump_yaml
from .keys import RESERVED, SCALES
from .schema import validate

__all__ = ["RESERVED", "SCALES", "check_path_component", "check_startup", "check_stored_text",
           "drop", "dump", "load_spec", "resolve", "spec_hash"]

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def check_path_component(value: Any, key: str) -> str:
    """``value`` if it can be one path component (letters, digits, '.', '_', '-'; not '.' or
    '..'; at most 100 characters), else a SpecError naming ``key``."""
    text = str(value)
    bad = sorted(set(text) - _NAME_CHARS)
    if not text or text in (".", "..") or bad or len(text) > 100:
        why = (f"contains {', '.join(repr(c) for c in bad[:5])}" if bad else
               "is too long" if len(text) > 100 else f"is {text!r}")
        raise SpecError(f"must be one file-name component (letters, digits, '.', '_', '-'; not "
                        f"'.' or '..'; at most 100 characters), but {why}: it names the run's "
                        f"directory", key)
    return text


def load_yaml(path: str | Path) -> dict:
    p = Path(path)
    if not p.exists():
        raise SpecError(f"spec file {p} does not exist")
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read spec file {p}: {exc}") from exc
    data = parse_yaml(text, str(p))
    if "plugins" in data:  # relative .py paths are relative to the spec file's directory
        data["plugins"] = plugins.absolute_spec_entries(data["plugins"], p.parent)
    return data


def parse_yaml(text: str, where: str = "<spec>") -> dict:
    try:
        data = load_user(text)
    except YamlRefused as exc:
        raise SpecError(f"{where} is refused: {exc}") from None
    if data is None:
        raise SpecError(f"{where} is empty; a spec needs at least an 'experiment:' key")
    if not isinstance(data, dict):
        raise SpecError(f"{where} must be a YAML mapping (key: value lines), got "
                        f"{type(data).__name__}")
    return data


def parse_override(text: str) -> tuple[str, Any]:
    """``"a.b=1e-3"`` -> ``("a.b", 0.001)``; values are parsed as YAML scalars/lists."""
    if "=" not in text:
        raise SpecError(f"override '{text}' must look like key.sub=value")
    key, _, raw = text.partition("=")
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise SpecError(f"override '{text}' has an empty key")
    try:
        value = load_user(raw) if raw.strip() else ""
    except YamlInvalid:
        value = raw
    except YamlRefused as exc:          # an alias bomb is refused, not taken as text
        raise SpecError(f"override '{text[:80]}' is refused: {exc}", key) from None
    if isinstance(value, str):
        try:  # YAML 1.1 reads '1e-3' (no dot) as a string; a number is meant
            value = float(value) if value.strip().lower() not in ("inf", "nan", "-inf") else value
        except ValueError:
            pass
    return key, value


def set_dotted(d: dict, key: str, value: Any) -> None:
    parts = key.split(".")
    cur = d
    for i, part in enumerate(parts[:-1]):
        nxt = cur.get(part)
        if nxt is None:
            nxt = cur[part] = {}
        if not isinstance(nxt, dict):
            raise SpecError(f"cannot set '{key}': '{'.'.join(parts[:i + 1])}' is not a mapping",
                            key)
        cur = nxt
    cur[parts[-1]] = value


def get_dotted(d: dict, key: str) -> Any:
    cur: Any = d
    for part in key.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise KeyError(key)
        cur = cur[part]
    return cur


def resolve(raw: dict, *, overrides: list[str] | tuple = (), scale: str = "quick",
            seed: int | None = None, default_name: str = "run",
            values: dict | None = None) -> dict:
    """Apply scale presets and overrides to a raw spec dict and validate it.

    ``values`` maps dotted keys to already-parsed values, applied after ``overrides`` (sweeps).
    Returns the resolved spec (every default filled in; ``scales`` removed, ``scale`` set)."""
    if scale not in SCALES:
        raise SpecError(f"scale must be one of {', '.join(SCALES)}, got '{scale}'", "scale")
    spec = copy.deepcopy(raw)
    scales = spec.pop("scales", None) or {}
    if not isinstance(scales, dict):
        raise SpecError("must map scale names (quick, paper) to {dotted.key: value} overrides",
                        "scales")
    for name in scales:
        if name not in SCALES:
            raise SpecError(f"unknown scale '{name}'; scales are {', '.join(SCALES)}",
                            f"scales.{name}")
    preset = scales.get(scale) or {}
    if not isinstance(preset, dict):
        raise SpecError("must be a mapping of dotted keys to values", f"scales.{scale}")
    for key, value in preset.items():
        set_dotted(spec, str(key), value)
    given_keys = []
    for text in overrides:
        key, value = parse_override(text)
        set_dotted(spec, key, value)
        given_keys.append(key)
    for key, value in (values or {}).items():
        set_dotted(spec, key, value)
        given_keys.append(str(key))
    if seed is not None:
        spec["seed"] = seed
    spec["scale"] = scale
    spec.setdefault("name", default_name)
    # the spec's plugins first: the experiment and samplers it names may be theirs
    plugins.load_spec_plugins(spec.get("plugins"))
    if "experiment" not in spec:
        raise SpecError("is required: name the experiment kind "
                        f"(one of {', '.join(sorted(registry.experiments()))})", "experiment")
    kind = registry.get_experiment(spec["experiment"])
    clash = set(kind.schema) & set(RESERVED)
    assert not clash, f"experiment {kind.name} redefines reserved keys {clash}"
    schema = {**RESERVED, **kind.schema}
    resolved = validate(spec, schema)
    if not resolved["name"]:
        resolved["name"] = default_name
    resolved.pop("dropped", None)   # mixlab's own record, made afresh below
    dropped = kind.adapt(resolved, _given(given_keys)) if kind.adapt is not None else {}
    if dropped:
        resolved["dropped"] = dict(dropped)
    check_path_component(resolved["name"], "name")
    return resolved


def _given(keys: list[str]):
    """``given(key)``: True when the user set ``key``, a mapping holding it or a key inside it
    on the command line or as a sweep axis."""
    def given(key: str) -> bool:
        return any(key == k or key.startswith(k + ".") or k.startswith(key + ".")
                   for k in keys)

    return given


def drop(spec: dict, key: str, value: Any, why: str, given, dropped: dict) -> None:
    """Set ``key`` to ``value`` (its value when it does not apply) and note ``why`` in
    ``dropped``, unless the user gave it (then the start-up check refuses it, by name) or it
    already holds ``value``."""
    if given(key) or get_dotted(spec, key) == value:
        return
    set_dotted(spec, key, value)
    dropped[key] = why


def check_startup(spec: dict) -> None:
    """The start-up validation of a resolved spec beyond its schema: the experiment kind's
    ``check(spec)`` (cross-key rules, the files and data sets the spec names). ``mixlab run
    --dry-run`` and :func:`mixlab.run.context.execute` both call it before any work, so a dry run
    refuses exactly what the run would refuse at start; a SpecError names the full dotted key."""
    check_stored_text(spec)
    kind = registry.get_experiment(spec["experiment"])
    if kind.check is not None:
        kind.check(spec)


def load_spec(path: str | Path, **kwargs) -> dict:
    """Load, resolve and validate a spec file (see :func:`resolve`)."""
    raw = load_yaml(path)
    return resolve(raw, default_name=Path(path).stem, **kwargs)


# keys that say how to run a spec, not what it computes: left out of its hash and its text
EXECUTION_KEYS = ("jobs",)


def _identity(spec: dict) -> dict:
    return {k: v for k, v in spec.items() if k not in EXECUTION_KEYS}


def spec_hash(spec: dict) -> str:
    """Short stable hash of a resolved spec (names its default run directory)."""
    text = json.dumps(_identity(spec), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def dump(spec: dict) -> str:
    """The spec as YAML, without its execution keys (the run file's and spec.yaml's text); a
    value the spec shares between keys (a YAML anchor of its file) is written out in full at
    each, so the text holds no alias (mixlab.runfile.yaml_text)."""
    return dump_yaml(_identity(spec), sort_keys=False, default_flow_style=None)


def check_stored_text(spec: dict) -> str:
    """The spec's stored text (:func:`dump`), or a SpecError when mixlab could not read it back
    (:func:`mixlab.runfile.yaml_text.load_stored`): past its size bound (naming the largest key) or
    holding a value outside YAML's core types."""
    text = dump(spec)
    size = text_bytes(text)
    if size > STORED_TEXT_BYTES:
        key, value, largest = "", _identity(spec), size
        while isinstance(value, dict) and value:      # down to the key that holds the bulk
            sizes = {k: text_bytes(dump_yaml({k: v})) for k, v in value.items()}
            k = max(sizes, key=sizes.get)
            key, value, largest = f"{key}.{k}" if key else str(k), value[k], sizes[k]
        raise SpecError(f"holds {largest:,} bytes of YAML, and the whole spec "
                        f"{size:,}: more than the {STORED_TEXT_BYTES:,} bytes (1 MiB) a run "
                        f"file stores its spec in; shorten it", key)
    try:
        load_stored(text)
    except YamlRefused as exc:
        raise SpecError(f"the spec cannot be stored as a run file's data: {exc}") from None
    return text


def closest_key(key: str, spec: dict) -> str | None:
    flat: list[str] = []

    def walk(d: dict, prefix: str) -> None:
        for k, v in d.items():
            path = f"{prefix}.{k}" if prefix else k
            flat.append(path)
            if isinstance(v, dict):
                walk(v, path)

    walk(spec, "")
    close = difflib.get_close_matches(key, flat, n=1)
    return close[0] if close else None
