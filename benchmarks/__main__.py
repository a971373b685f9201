"""``python -m benchmarks [--mode quick|full] [--only NAME]``: run every benchmarks/bench_*.py,
print a table of ratios measured side by side, and write benchmarks/results.json.

With ``--only`` the file keeps the rows of the modules not run (when it holds the same mode)
and replaces those of the modules run; every row says when it was measured."""

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
    rows, failures, ran = [], [], []
    for path in sorted(HERE.glob("bench_*.py")):
        if args.only and args.only not in path.stem:
            continue
        ran.append(path.stem)
        t0 = time.perf_counter()
        try:
            mod = importlib.import_module(f"benchmarks.{path.stem}")
            for row in mod.run(quick=args.mode == "quick"):
                rows.append({"module": path.stem, **row,
                             "measured": time.strftime("%Y-%m-%dT%H:%M:%S")})
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
    out = Path(args.out)
    if args.only:                                      # keep the other modules' rows
        rows, failures = _merged(out, args.mode, ran, rows, failures)
    out.write_text(json.dumps({
        "mode": args.mode, "machine": platform.platform(), "python": platform.python_version(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "failed_modules": failures,
        "results": rows}, indent=1))
    print(f"wrote {args.out}", file=sys.stderr)
    return 1 if failures else 0


def _merged(out: Path, mode: str, ran: list, rows: list, failures: list) -> tuple[list, list]:
    """The rows and failed modules of an earlier results file of the same mode, with the
    modules in ``ran`` replaced by this run's."""
    try:
        old = json.loads(out.read_text())
    except (OSError, ValueError):
        return rows, failures
    if old.get("mode") != mode:
        return rows, failures
    kept = [r for r in old.get("results", []) if r.get("module") not in ran]
    kept_failed = [m for m in old.get("failed_modules", []) if m not in ran]
    return kept + rows, kept_failed + failures


if __name__ == "__main__":
    sys.exit(main())
