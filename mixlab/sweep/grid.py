"""A sweep's grid: ``key=a,b,c`` axes, their points in row-major order, each point's resolved
spec and run directory (see :mod:`mixlab.sweep.launch` for how the points run)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from ..errors import SpecError, UsageError
from ..runfile.yaml_text import YamlInvalid, YamlRefused, load_user
from ..spec.resolver import load_yaml, resolve

PENDING, COMPLETE, FAILED = "pending", "complete", "failed"


def parse_grid(items: list[str] | tuple) -> dict[str, list]:
    """``["a.b=1,2", "c=x,y"]`` -> ``{"a.b": [1, 2], "c": ["x", "y"]}`` (values parsed as YAML)."""
    grid: dict[str, list] = {}
    for text in items:
        if "=" not in text:
            raise UsageError(f"sweep axis '{text}' must look like key.sub=a,b,c")
        key, _, raw = text.partition("=")
        key = key.strip()
        if not key:
            raise UsageError(f"sweep axis '{text}' has an empty key")
        values = []
        for part in raw.split(","):
            try:
                values.append(load_user(part) if part.strip() else "")
            except YamlInvalid:
                values.append(part)
            except YamlRefused as exc:
                raise UsageError(f"sweep axis '{key}': the value {part[:40]!r} is refused: "
                                 f"{exc}") from None
        if not values or values == [""]:
            raise UsageError(f"sweep axis '{key}' has no values")
        grid[key] = values
    return grid


def grid_points(grid: dict[str, list]) -> list[dict[str, Any]]:
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def _value_tag(v: Any) -> str:
    s = str(v).replace("/", "_").replace(" ", "")
    return s[:24]


def plan(spec_file: str, grid_items: tuple, *, scale: str, seed: int | None, out: str | None,
         extra_overrides: tuple = ()) -> tuple[Path, list[dict], list[str], dict[str, list]]:
    """Resolve every point's spec up front (all validation errors before any work).

    Returns (sweep dir, [resolved spec per point], summary result keys, grid)."""
    raw = load_yaml(spec_file)
    stem = Path(spec_file).stem
    sweep_cfg = raw.get("sweep") or {}
    if not isinstance(sweep_cfg, dict):
        raise SpecError("must be a mapping {grid: {...}, summary: [...]}", "sweep")
    grid = parse_grid(grid_items) if grid_items else {
        str(k): (v if isinstance(v, list) else [v])
        for k, v in (sweep_cfg.get("grid") or {}).items()}
    if not grid:
        raise UsageError("no grid: give key=a,b,c arguments or a 'sweep: {grid: ...}' section "
                         "in the spec")
    summary = sweep_cfg.get("summary") or []
    if not isinstance(summary, list):
        raise SpecError("must be a list of result keys", "sweep.summary")
    specs = []
    base_seed = raw.get("seed", 0) if seed is None else seed
    for i, point in enumerate(grid_points(grid)):
        point_raw = dict(raw)
        point_raw.pop("sweep", None)
        spec = resolve(point_raw, overrides=extra_overrides, values=point, scale=scale,
                       seed=base_seed, default_name=str(point_raw.get("name") or stem))
        spec["seed_key"] = [i]
        specs.append(spec)
    sweep_dir = Path(out) if out else Path("runs") / f"{specs[0]['name']}-sweep"
    return sweep_dir, specs, [str(s) for s in summary], grid


def point_dir(sweep_dir: Path, i: int, point: dict) -> Path:
    tag = "_".join(f"{k.split('.')[-1]}={_value_tag(v)}" for k, v in point.items())
    return sweep_dir / f"{i:03d}_{tag}"
