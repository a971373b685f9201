"""Claims tables: a ratio of two results keys, a list of rules that must all hold, the note that
says why a claim is not measured, and the mistakes a table is refused for."""

from __future__ import annotations

from pathlib import Path

import h5py
import pytest

from mixlab.errors import SpecError
from mixlab.report import claims as claims_mod
from tests.report.fixtures import toy_run

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    run = toy_run(root / "fig")
    with h5py.File(run / "run.h5", "r+") as f:
        r = f["results"].attrs
        r["eps=0.05/samples"], r["eps=0/samples"], r["zero"] = 6000, 16000, 0.0
        r["err/a"], r["err/b"], r["sum_var"] = 1.2, 1.5, 1.48
        r["speedup"] = "not reached within budget (> 100x)"
    return claims_mod.Results(root)


def table(tmp_path: Path, body: str) -> list[claims_mod.Claim]:
    (tmp_path / "p.yaml").write_text("paper: p\nclaims:\n" + body)
    return claims_mod.load(tmp_path / "p.yaml")[1]


def test_over_divides_one_results_key_by_another(tmp_path, results):
    c, = table(tmp_path, "- {claim: c, figure: fig, paper: '2.7×', measure: {r: {key: "
               "eps=0.05/samples, over: eps=0/samples}}, rule: {at_least: [r, 1]}}\n")
    o = claims_mod.judge(c, results)
    assert o.numbers == [("r", "0.375")] and o.verdict == claims_mod.NOT_REPRODUCED
    assert o.why == "r ≥ 1 fails"


def test_over_applies_to_the_max_of_a_pattern(tmp_path, results):
    c, = table(tmp_path, "- {claim: c, figure: fig, paper: 'low', measure: {r: {key: 'err/*', "
               "of: max, over: sum_var}}, rule: {at_most: [r, 0.5]}}\n")
    o = claims_mod.judge(c, results)
    assert o.numbers == [("r", f"{1.5 / 1.48:.4g}")] and o.verdict == claims_mod.NOT_REPRODUCED


@pytest.mark.parametrize("over", ["zero", "speedup", "absent"])
def test_a_ratio_over_zero_text_or_a_missing_key_is_not_measured(tmp_path, results, over):
    c, = table(tmp_path, "- {claim: c, figure: fig, paper: '1', measure: {r: {key: err/a, "
               f"over: {over}}}}}, rule: {{at_least: [r, 1]}}}}\n")
    o = claims_mod.judge(c, results)
    assert o.verdict == claims_mod.NOT_MEASURED and (over in o.why)


def test_every_rule_of_a_list_must_hold(tmp_path, results):
    rows = "".join(
        f"- {{claim: c{i}, figure: fig, paper: y, measure: {{a: err/a, b: err/b}}, "
        f"rule: [{{less: [a, b]}}, {{{second}: [b, 1.4]}}]}}\n"
        for i, second in enumerate(["greater", "less"]))
    held, failed = (claims_mod.judge(c, results) for c in table(tmp_path, rows))
    assert held.verdict == claims_mod.REPRODUCED and held.why == "a < b; b > 1.4"
    assert failed.verdict == claims_mod.NOT_REPRODUCED and failed.why == "a < b; b < 1.4 fails"


def test_the_note_says_why_a_claim_is_not_measured(tmp_path, results):
    bare, text = table(tmp_path, (
        "- {claim: c, figure: fig, paper: y, note: only in the isl curve}\n"
        "- {claim: d, figure: fig, paper: 20×, measure: {s: speedup}, rule: {at_least: [s, 20]},"
        " note: the run gives a lower bound as text}\n"))
    o = claims_mod.judge(bare, results)
    assert (o.verdict, o.why) == (claims_mod.NOT_MEASURED, "only in the isl curve")
    o = claims_mod.judge(text, results)
    assert (o.verdict, o.why) == (claims_mod.NOT_MEASURED, "the run gives a lower bound as text")
    assert o.numbers == [("s", "not reached within budget (> 100x)")]


@pytest.mark.parametrize("row, says", [
    ("measure: {a: {key: k, of: mean}}, rule: {at_most: [a, 1]}", "'of' is max or min"),
    ("measure: {a: {key: k, over: [x]}}, rule: {at_most: [a, 1]}", "'over' is a string"),
    ("measure: {a: {key: k, by: x}}, rule: {at_most: [a, 1]}", "unknown by"),
    ("measure: {a: {of: max}}, rule: {at_most: [a, 1]}", "a string 'key'"),
    ("measure: {a: k}", "a 'measure' needs a 'rule'"),
    ("measure: {a: k}, rule: [{at_most: [a, 1]}, {above: [a, 1]}]", "'rule' is one of"),
    ("measure: {a: k}, rule: [{at_most: [a, 1]}, {less: [a, c]}]", "operand 'c'"),
    ("note: [x]", "'note' is a string")])
def test_a_wrong_claims_table_is_refused_naming_the_claim(tmp_path, row, says):
    with pytest.raises(SpecError, match=r"claims\[0\].*" + says.replace("(", r"\(")):
        table(tmp_path, f"- {{claim: c, figure: f, paper: '1', {row}}}\n")


def test_every_shipped_claim_is_measured_or_says_why_not():
    for path in claims_mod.find(REPO / "claims"):
        for c in claims_mod.load(path)[1]:
            assert c.measure or c.note, f"{path}: '{c.claim}' has neither measure nor note"
