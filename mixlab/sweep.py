"""Grid sweeps: every point of ``key=a,b,c`` grids becomes a run of its own.

Point ``i`` (in row-major order of the grid) gets the spec's seed with spawn key ``[i]``, so its
result does not depend on which worker ran it, nor on how many workers there were. Points run on
a local process pool by default, or on a Dask distributed cluster given its address.
"""

from __future__ import annotations

import csv
import itertools
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from .errors import MixlabError, SpecError, UsageError
from .spec import dump, load_yaml, resolve


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
                values.append(yaml.safe_load(part) if part.strip() else "")
            except yaml.YAMLError:
                values.append(part)
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


def run_point(spec: dict, run_dir: str, quiet: bool = True) -> dict:
    """Run one grid point (in a worker); returns its /results."""
    from .context import execute
    from .store import RunReader

    execute(spec, Path(run_dir), quiet=quiet)
    with RunReader(run_dir) as r:
        return r.results()


def run_sweep(sweep_dir: Path, specs: list[dict], grid: dict, summary: list[str], *,
              workers: int = 1, scheduler: str | None = None, quiet: bool = True) -> Path:
    points = grid_points(grid)
    dirs = [point_dir(sweep_dir, i, p) for i, p in enumerate(points)]
    sweep_dir.mkdir(parents=True, exist_ok=True)
    (sweep_dir / "sweep.yaml").write_text(dump({"grid": grid, "summary": summary,
                                                 "points": [str(d) for d in dirs]}))
    if scheduler:
        try:
            from dask.distributed import Client
        except ImportError as exc:
            raise UsageError("--scheduler needs the optional Dask extra: "
                             "pip install 'mixlab[dask]'") from exc
        with Client(scheduler) as client:
            futures = [client.submit(run_point, s, str(d), True, pure=False)
                       for s, d in zip(specs, dirs)]
            results = client.gather(futures)
    elif workers > 1:
        # Fresh (spawned) workers with one BLAS thread each, unless the user chose otherwise:
        # N workers x N BLAS threads on N cores is slower than either alone.
        blas_vars = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
        saved = {v: os.environ.get(v) for v in blas_vars}
        for v in blas_vars:
            os.environ.setdefault(v, "1")
        try:
            with ProcessPoolExecutor(max_workers=workers,
                                     mp_context=multiprocessing.get_context("spawn")) as pool:
                results = list(pool.map(run_point, specs, [str(d) for d in dirs],
                                        [True] * len(specs)))
        finally:
            for v, old in saved.items():
                if old is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = old
    else:
        results = [run_point(s, str(d), quiet) for s, d in zip(specs, dirs)]
    keys = summary or sorted({k for r in results for k in r})
    with open(sweep_dir / "sweep.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["point", *grid.keys(), "run", *keys])
        for i, (p, d, r) in enumerate(zip(points, dirs, results)):
            missing = [k for k in keys if k not in r]
            if summary and missing:
                raise MixlabError(f"sweep point {d} has no result(s) {', '.join(missing)}; "
                                  f"results there: {', '.join(sorted(r)) or 'none'}")
            w.writerow([i, *p.values(), str(d), *(r.get(k, "") for k in keys)])
    return sweep_dir / "sweep.csv"
