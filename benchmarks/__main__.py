"""``python -m benchmarks [--mode quick|full] [--only NAME]``: run every benchmarks/bench_*.py,
print a table of ratios measured side by side, and write benchmarks/results.json."""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks")
    ap.add_argument("--mode", choices=["quick", "full"], default="quick")
    ap.add_argument("--only", default=None, help="substring of the module names to run")
    ap.add_argument("--out", default=str(HERE / "results.json"))
    args = ap.parse_args()
    rows, failures = [], []
    for path in sorted(HERE.glob("bench_*.py")):
        if args.only and args.only not in path.stem:
            continue
        t0 = time.perf_counter()
        try:
            mod = importlib.import_module(f"benchmarks.{path.stem}")
            for row in mod.run(quick=args.mode == "quick"):
                rows.append({"module": path.stem, **row})
        except Exception:  # one broken benchmark must not hide the others
            failures.append(path.stem)
            traceback.print_exc()
        print(f"[{path.stem}: {time.perf_counter() - t0:.1f} s]", file=sys.stderr)
    width = max([len(r["name"]) for r in rows] + [10])
    print(f"{'benchmark':{width}s}  {'ratio':>9s}  {'target':>8s}  ok   detail")
    for r in rows:
        ok = "yes" if r.get("ok") else "NO"
        print(f"{r['name']:{width}s}  {r['ratio']:9.3g}  {r.get('target', ''):>8s}  {ok:4s} "
              f"{r.get('detail', '')}")
    Path(args.out).write_text(json.dumps({
        "mode": args.mode, "machine": platform.platform(), "python": platform.python_version(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "failed_modules": failures,
        "results": rows}, indent=1))
    print(f"wrote {args.out}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
