"""The generated benchmark page (benchmarks/report.py, ``python -m benchmarks --render``) on a
small fixture whose medians, ranges and statuses are known by hand."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_report", REPO / "benchmarks" / "report.py")
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)

RESULTS = {
    "mode": "quick", "machine": "test-box, 2 cores", "python": "3.11.7",
    "created": "2026-01-03T10:00:00", "failed_modules": [],
    "results": [
        {"module": "bench_a", "name": "a / bare", "ratio": 1.4, "target": "<= 1.5", "ok": True,
         "detail": "a 1.4 ms, bare 1.0 ms", "measured": "2026-01-03T09:59:00"},
        {"module": "bench_b", "name": "b samples/s", "ratio": 1.2, "target": ">= 1.49",
         "ok": False, "detail": "b | with a pipe", "measured": "2026-01-03T09:59:30"},
        {"module": "bench_b", "name": "b floor", "ratio": 1.1, "target": "info", "ok": True,
         "measured": "2026-01-02T08:00:00"},
    ]}
HISTORY = {"runs": [
    {"date": "2026-01-01T10:00:00", "machine": "test-box, 2 cores", "mode": "quick",
     "ratios": {"a / bare": 1.6, "b samples/s": 1.5}},
    {"date": "2026-01-02T08:00:00", "machine": "test-box, 2 cores", "mode": "quick",
     "ratios": {"a / bare": 1.2, "b samples/s": 1.3, "b floor": 1.1}},
    {"date": "2026-01-02T09:00:00", "machine": "other", "mode": "full",
     "ratios": {"a / bare": 99.0}},
]}


def _row(text, name):
    return next(line for line in text.splitlines() if line.startswith(f"| {name} |"))


def test_meets_reads_the_bound_and_its_direction():
    assert report.meets(1.5, "<= 1.5") and not report.meets(1.51, "<= 1.5")
    assert report.meets(1.49, ">= 1.49") and not report.meets(1.48, ">= 1.49")
    assert report.meets(0.99, "< 1") and not report.meets(1.0, "< 1")
    assert report.meets(2.0, "info") is None and report.meets(2.0, "") is None
    assert report.meets(float("nan"), "<= 1") is None


def test_run_entry_counts_only_the_rows_measured_in_this_run():
    entry = report.run_entry(RESULTS, measured_since="2026-01-03T09:00:00")
    assert entry["ratios"] == {"a / bare": 1.4, "b samples/s": 1.2}   # 'b floor' was kept
    assert entry["date"] == "2026-01-03T10:00:00" and entry["mode"] == "quick"
    assert report.run_entry(RESULTS)["ratios"]["b floor"] == 1.1
    assert report.append_run(HISTORY, {"ratios": {}}) is HISTORY     # empty runs not stored


def test_render_gives_this_run_median_range_and_status_over_the_same_mode():
    history = report.append_run(HISTORY, report.run_entry(RESULTS, "2026-01-03T09:00:00"))
    text = report.render(RESULTS, history)
    # a: quick runs 1.6, 1.2, 1.4 (the full-mode 99 is another mode): median 1.4, two of three met
    assert _row(text, "a / bare") == \
        "| a / bare | 1.4 | 1.4 [1.2–1.6] | 3 | <= 1.5 | met (met in 2 of 3 runs) |"
    assert _row(text, "b samples/s") == ("| b samples/s | 1.2 | 1.3 [1.2–1.5] | 3 | >= 1.49 | "
                                        "**missed** (met in 1 of 3 runs) |")
    assert _row(text, "b floor") == "| b floor | 1.1 | 1.1 [1.1–1.1] | 1 | info | info |"
    assert "3 stored quick-mode run(s) from 2026-01-01 to 2026-01-03" in text
    assert "- **a / bare** (bench_a): a 1.4 ms, bare 1.0 ms" in text
    assert "- **b samples/s** (bench_b): b | with a pipe" in text       # details: a list


def test_a_pipe_in_a_name_does_not_break_the_table():
    results = {**RESULTS, "results": [{**RESULTS["results"][0], "name": "x | y"}]}
    assert "| x \\| y | 1.4 |" in report.render(results, {"runs": []})


def test_render_without_history_and_with_a_failed_module():
    text = report.render({**RESULTS, "failed_modules": ["bench_c"]}, {"runs": []})
    assert _row(text, "a / bare") == "| a / bare | 1.4 | — | 0 | <= 1.5 | met |"
    assert "Modules that failed in this run (no rows): bench_c." in text


def test_python_m_benchmarks_render_writes_the_page_and_runs_nothing(tmp_path):
    results, history, doc = tmp_path / "r.json", tmp_path / "h.json", tmp_path / "b.md"
    results.write_text(json.dumps(RESULTS))
    history.write_text(json.dumps(HISTORY))
    subprocess.run([sys.executable, "-m", "benchmarks", "--render", "--out", str(results),
                    "--history", str(history), "--doc", str(doc)], cwd=REPO, check=True,
                   capture_output=True, timeout=60)
    assert doc.read_text() == report.render(RESULTS, HISTORY)
    assert json.loads(results.read_text()) == RESULTS                  # nothing re-measured


def test_a_malformed_history_is_refused(tmp_path):
    (tmp_path / "h.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="runs"):
        report.load_history(tmp_path / "h.json")


def test_the_committed_page_is_rendered_from_the_committed_data():
    results = json.loads((REPO / "benchmarks" / "results.json").read_text())
    history = report.load_history(REPO / "benchmarks" / "history.json")
    assert (REPO / "docs" / "benchmarks.md").read_text() == report.render(results, history), \
        "docs/benchmarks.md is stale: run `python -m benchmarks --render`"
