"""``python -m benchmarks [--mode quick|full] [--only NAME] [--render]``: run every
benchmarks/bench_*.py, print a table of ratios measured side by side, write
benchmarks/results.json, add the run to benchmarks/history.json and regenerate
docs/benchmarks.md from the two (:mod:`benchmarks.report`).

With ``--only`` the file keeps the rows of the modules not run (when it holds the same mode)
and replaces those of the modules run; every row says when it was measured, and the history
records only the rows measured.  ``--render`` runs nothing: it regenerates docs/benchmarks.md
from the stored files."""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
import traceback
from pathlib import Path

from benchmarks import report

HERE = Path(__file__).resolve().parent
DOC = HERE.parent / "docs" / "benchmarks.md"


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks")
    ap.add_argument("--mode", choices=["quick", "full"], default="quick")
    ap.add_argument("--only", default=None, help="substring of the module names to run")
    ap.add_argument("--out", default=str(HERE / "results.json"))
    ap.add_argument("--history", default=str(HERE / "history.json"))
    ap.add_argument("--doc", default=str(DOC))
    ap.add_argument("--render", action="store_true",
                    help="run nothing: regenerate --doc from --out and --history")
    args = ap.parse_args()
    if args.render:
        print(f"wrote {report.write_doc(args.out, args.history, args.doc)}", file=sys.stderr)
        return 0
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
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
    results = {
        "mode": args.mode, "machine": report.machine_description(),
        "python": platform.python_version(), "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "failed_modules": failures, "results": rows}
    out.write_text(json.dumps(results, indent=1))
    history = report.append_run(report.load_history(Path(args.history)),
                                report.run_entry(results, measured_since=started))
    Path(args.history).write_text(json.dumps(history, indent=1))
    report.write_doc(out, args.history, args.doc)
    print(f"wrote {args.out}, {args.history}, {args.doc}", file=sys.stderr)
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
