"""The report without a browser: verdicts read from either league table, long values cut with
a marker, claims judged from run files, the figures index, notes below a figure's axes, and a
page that names nothing outside itself."""

from __future__ import annotations

import re
from pathlib import Path

import h5py
import pytest

from mixlab.report import claims as claims_mod
from mixlab.report.league_page import verdict_of
from mixlab.report.values import clip
from tests.report.fixtures import mixlab, toy_run

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("row, want", [
    ({"verdict": "not mixed", "bias_flag": "1"}, "not mixed"),   # the verdict column wins
    ({"verdict": "", "bias_flag": "1"}, ""),
    ({"bias_flag": "1"}, "biased"), ({"bias_flag": "0"}, "ok"),
    ({"bias_flag": "-1"}, ""), ({"bias_flag": ""}, "")])
def test_the_verdict_comes_from_the_verdict_column_else_from_bias_flag(row, want):
    assert verdict_of(row) == want


def test_a_long_value_is_cut_with_a_marker_and_escaped():
    out = str(clip("<b>" + "x" * 2100))
    assert out.startswith("&lt;b&gt;") and "<b>" not in out
    assert out.endswith('<span class="cut">… [cut: 103 more characters]</span>')
    assert str(clip("<i>short</i>")) == "&lt;i&gt;short&lt;/i&gt;"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A runs directory holding one 'figure run' whose results carry the numbers of the
    rates-FPCD claims (a toy run with results written in)."""
    root = tmp_path_factory.mktemp("runs")
    run = toy_run(root / "fig-rates-fpcd-2")
    with h5py.File(run / "run.h5", "r+") as f:
        r = f["results"].attrs
        r["isl_final/rates-fpcd"], r["isl_final/gibbs"] = -75.4, -117.0
        r["isl_train_set"] = -85.6
        r["speedup@100/rates-fpcd"] = "not reached within budget (> 120x: gibbs never reaches -80)"
    return root


def test_claims_are_judged_from_the_run_files(runs):
    paper, claims = claims_mod.load(REPO / "claims" / "rates_fpcd.yaml")
    results = claims_mod.Results(runs)
    got = {c.claim: claims_mod.judge(c, results) for c in claims}
    far = got["Gibbs far below rates-FPCD (USPS, Fig 2)"]
    assert far.verdict == claims_mod.REPRODUCED
    assert far.numbers == [("rates-FPCD", "-75.4"), ("Gibbs", "-117")]
    assert got["the training-set line"].verdict == claims_mod.NOT_REPRODUCED  # −85.6 vs −80 ± 1
    coverage = got["coverage at least 20× faster than Gibbs"]    # a string: no verdict
    assert coverage.verdict == claims_mod.NOT_MEASURED
    assert "not reached within budget" in coverage.numbers[0][1]
    assert "as text, a lower bound" in coverage.why                   # the claim's note
    fig3 = got["no decay (α = 1) beats α = 0.95 (Fig 3 left)"]      # its run is not there
    assert fig3.verdict == claims_mod.NO_RUN and "make fig-rates-fpcd-3-left" in fig3.why
    herding = got["rates-herding rises fastest early"]
    assert herding.verdict == claims_mod.NOT_MEASURED and "isl curve" in herding.why


def test_every_shipped_claims_table_loads_and_names_a_figure_target():
    targets = set(re.findall(r"figure_rule,([\w-]+),", "".join(
        p.read_text() for p in (REPO / "experiments").glob("*/figures.mk"))))
    files = claims_mod.find(REPO / "claims")
    assert {p.stem for p in files} == {"austerity", "perturb_map", "rates_fpcd"}
    for path in files:
        _, claims = claims_mod.load(path)
        assert claims and {c.figure for c in claims} <= targets, path


def test_a_claims_table_with_an_unknown_operand_is_refused(tmp_path):
    (tmp_path / "p.yaml").write_text(
        "paper: p\nclaims:\n- {claim: c, figure: f, paper: '1', measure: {a: k},"
        " rule: {greater: [a, b]}}\n")
    with pytest.raises(Exception, match="operand 'b' is neither a number nor a measure"):
        claims_mod.load(tmp_path / "p.yaml")


def test_the_figures_index_shows_claims_numbers_and_figures(runs, tmp_path):
    out = mixlab("report", "--figures", tmp_path / "figs", runs, "--claims", REPO / "claims")
    page = (tmp_path / "figs" / "index.html").read_text()
    assert "figures index" in out
    assert "rates-FPCD -75.4, Gibbs -117" in page and "not measured by a run" in page
    assert page.count('<img src="data:image/png;base64,') >= 1      # the run's figure
    assert "not run at this scale (make fig-austerity-7)" in page


def test_a_page_names_nothing_outside_itself(tmp_path):
    run = toy_run(tmp_path / "run")
    mixlab("report", run, "-o", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    links = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert links and all(v.startswith(("data:image/png;base64,", "#")) for v in links), links
    assert "default-src &#39;none&#39;" in page and page.count("<script>") == 1


def test_a_run_page_is_written_from_a_directory_without_claims(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from mixlab.cli import cli

    run = toy_run(tmp_path / "run")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")          # no claims/ here, as after pip install
    mixlab("report", run, "-o", tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text().startswith("<!doctype html>")
    r = CliRunner().invoke(cli, ["report", "--figures", str(tmp_path / "f"), str(run)])
    assert r.exit_code == 2 and "--claims: claims is not a directory" in r.output


def test_notes_go_below_the_axes_not_over_them():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from mixlab.figure_notes import draw_below, note, notes_of

    fig = Figure(figsize=(6.4, 4.8))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1])
    note(fig, *[f"sampler {i}: not reached within budget" for i in range(9)])
    note(fig, "a long note, " * 40)                    # wrapped to the figure's width
    assert len(notes_of(fig)) == 10
    height = ax.get_window_extent().height
    draw_below(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    text = fig.texts[-1].get_window_extent(renderer)
    axes = ax.get_tightbbox(renderer)                  # with its tick labels
    assert text.y1 < axes.y0                           # below everything the axes draw
    assert 0 <= text.x0 and text.x1 <= fig.bbox.width  # and inside the figure
    assert ax.get_window_extent().height == pytest.approx(height)   # the axes kept their size
    assert fig.get_size_inches()[1] > 4.8


def _league_dir(tmp_path: Path, rows: list[dict]) -> Path:
    import csv
    import json

    d = tmp_path / "league"
    d.mkdir()
    with open(d / "league.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (d / "league.json").write_text(json.dumps({
        "family": "mrf", "scale": "quick", "seeds": 3, "seconds": 1.0, "work": 1e5,
        "unit": "pair terms read", "reach_error": None, "truth": {"t1": "exact joints"},
        "yardsticks": {"t1": "L1"}, "reach_errors": {"t1": 0.01}}))
    return d


ROW = {"target": "t1", "method": "m", "status": "complete", "error": "", "bias_flag": "0",
       "time_error_median": "0.1", "time_error_min": "0.09", "time_error_max": "0.2",
       "time_rank": "1", "time_tied": "0", "work_error_median": "0.3",
       "work_error_min": "0.2", "work_error_max": "0.4", "work_rank": "2", "work_tied": "1",
       "time_reach_seconds": "inf", "work_reach_work": "12", "time_ess_per_s": "5",
       "work_ess_per_munit": "", "note": ""}


def test_a_league_table_with_verdict_columns_marks_each_cell_by_its_verdict(tmp_path):
    """The verdict columns of the rewritten league table: 'not mixed' at equal work only
    (verdict_clock) marks that clock's cells; R-hat and the budget needed get columns."""
    from mixlab.report import league_page

    rows = [{**ROW, "sampler": "a", "verdict": "not mixed", "verdict_clock": "work",
             "verdict_note": "R-hat 1.4", "rhat": "1.4", "budget_needed": "3e5"},
            {**ROW, "sampler": "b", "bias_flag": "1", "verdict": "", "verdict_clock": "",
             "verdict_note": "", "rhat": "1.01", "budget_needed": ""}]
    ctx = league_page.context(_league_dir(tmp_path, rows))
    assert [h for h, _ in ctx["head"]][-3:] == ["R-hat", "budget needed", "note"]
    board = ctx["boards"][0]["rows"]
    a, b = ({c["text"]: c for c in row} for row in board)
    assert a["not mixed"]["cls"] == "v-notmixed"                 # the verdict cell
    assert "v-notmixed" in a["0.3 [0.2–0.4]"]["cls"]             # equal work: marked
    assert "v-notmixed" not in a["0.1 [0.09–0.2]"]["cls"]        # equal time: not
    assert a["2="]["badge"] == "not mixed" and a["1"]["badge"] == ""
    assert a["1.4"]["sort"] == "1.4" and a["3e+05"]["sort"] == "300000.0"
    assert "R-hat 1.4" in a["R-hat 1.4"]["text"]
    assert b["no verdict"]["cls"] == "v-none"     # an empty verdict column: no verdict,
    assert ctx["has_verdict_column"]              # whatever bias_flag says


def test_a_league_row_shows_each_part_of_its_note_once_and_an_infinite_rhat_as_such(tmp_path):
    """league.csv's note repeats the verdict note (mixlab.league.report.note), and a failed
    cell's note holds its error: the page shows each once. R-hat inf (chains that never meet)
    is ∞, not "not reached"."""
    from mixlab.report import league_page

    said = "not mixed at equal work: chains disagree (R-hat inf > 1.02)"
    rows = [{**ROW, "sampler": "a", "verdict": "not mixed", "verdict_clock": "work",
             "verdict_note": said, "note": f"{said}; reference truth: no bias test",
             "rhat": "inf", "budget_needed": "3.4"},
            {**ROW, "sampler": "b", "status": "failed", "error": "ValueError: x",
             "note": "failed: ValueError: x", "verdict": "", "verdict_clock": "",
             "verdict_note": "", "rhat": "", "budget_needed": ""}]
    board = league_page.context(_league_dir(tmp_path, rows))["boards"][0]["rows"]
    a, b = (row[-1]["text"] for row in board)
    assert a == f"{said}; reference truth: no bias test"
    assert b == "failed: ValueError: x"
    rhat = board[0][-3]
    assert rhat["text"] == "∞" and rhat["sort"] == "inf"
    assert board[0][6]["text"] == "not reached"           # time to reach: inf in ROW


def test_an_ess_rate_that_is_only_an_upper_bound_is_shown_with_le(tmp_path):
    """league.csv's ``time_ess_upper_bound`` 1 (the batch-means fallback at its floor): the
    page writes ``≤ 5`` and still sorts the column by 5; 0, empty or a stray value: ``5``."""
    from mixlab.report import league_page

    rows = [{**ROW, "sampler": s, "time_ess_upper_bound": flag, "work_ess_upper_bound": ""}
            for s, flag in (("a", "1"), ("b", "0"), ("c", ""), ("d", "11"))]
    board = league_page.context(_league_dir(tmp_path, rows))["boards"][0]["rows"]
    ess = [row[8] for row in board]
    assert [c["text"] for c in ess] == ["≤ 5", "5", "5", "5"]
    assert {c["sort"] for c in ess} == {"5.0"}


def test_a_calibration_league_page_shows_its_false_alarms_and_misses(tmp_path):
    """calibration.csv, as mixlab.league.calibration writes it, becomes a table above the
    leaderboards with the sentence summing it; a league without one has no such section, and
    a hand-edited one is shown without a sum it cannot vouch for."""
    from mixlab.league import calibration
    from mixlab.report import league_page

    d = _league_dir(tmp_path, [{**ROW, "sampler": "a"}])
    assert league_page.context(d)["calibration"] is None
    rows = [("t1", 6, 1, 5, 0, 5, 2, 3, 0, "", "g (not mixed)"),
            ("t2", 6, 6, 0, 0, 7, 7, 0, 0, "", "")]
    (d / "calibration.csv").write_text(calibration.csv_text(rows))
    table = league_page.context(d)["calibration"]
    assert [h for h, _ in table["head"]] == list(calibration.HEAD)
    assert [c["text"] for c in table["rows"][0]][:5] == ["t1", "6", "1", "5", "0"]
    assert table["totals"] == ("All targets: 0 of 12 correct-sampler cells biased; 9 of 12 "
                               "wrong-sampler cells biased, 3 not mixed, 0 ok.")
    for bad in ("t3,x\n", "t3,²,1,1,0,1,1,0,0,,\n", f"t3,{'9' * 5000},1,1,0,1,1,0,0,,\n"):
        (d / "calibration.csv").write_text(calibration.csv_text(rows) + bad)
        table = league_page.context(d)["calibration"]
        assert table["totals"] == "" and len(table["rows"]) == 3
    from mixlab.report.page import render

    html = render("league.html", **league_page.context(d))
    assert html.index('id="calibration"') < html.index('id="target-1"')


def test_report_usage_errors_are_one_line_with_exit_2(tmp_path):
    from click.testing import CliRunner

    from mixlab.cli import cli

    r = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert r.exit_code == 2 and "neither a run directory" in r.output
    r = CliRunner().invoke(cli, ["report", "--figures", str(tmp_path / "f"), str(tmp_path),
                                 str(tmp_path)])
    assert r.exit_code == 2 and "with --figures, give one PATH" in r.output
