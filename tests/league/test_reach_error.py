"""Each target's stated error: the rule (the expected error of 1,000 independent exact draws)
checked against simulation, and the league's 'to reach' columns read at each target's own
value unless the spec sets one."""

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from mixlab.league import reach, targets
from mixlab.runfile.store import RunReader
from mixlab.spec.builtin import resolve_spec
from mixlab.spec.resolver import load_spec
from tests.league.conftest import no_league_figure


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def test_binomial_mad_matches_enumeration():
    from math import comb

    for n, p in ((5, 0.3), (7, 0.5), (4, 0.0), (6, 0.93)):
        brute = sum(comb(n, k) * p ** k * (1 - p) ** (n - k) * abs(k / n - p)
                    for k in range(n + 1))
        assert reach.binomial_mad(np.array([p]), n)[0] == pytest.approx(brute, abs=1e-12)


def test_stated_errors_are_the_expected_errors_of_1000_independent_draws(data_dir):
    rng = np.random.default_rng(3)
    # the 1,000 draws fed as 10 chains of 100: the yardstick pools every chain's draws, so its
    # value is that of the 1,000 draws (fewer draws per chain: fewer batch sums to keep)
    K, B = 10, reach.REACH_DRAWS // 10
    for name in ("attractive-c0.5", "mixed-c3"):
        inst = targets.build("spinglass", targets.standard_targets("spinglass")[name])
        p = inst.truth["marginals"].ravel()
        errs = []
        for _ in range(400):            # 1,000 independent exact draws of every site
            x = rng.random((K, B, p.size)) < p
            ev = inst.yardstick()
            ev.update({"samples": x.reshape(K, B, *inst.truth["marginals"].shape)},
                      B, 1.0)
            errs.append(ev.value())
        # two significant digits, and the simulation's own error (400 replicates)
        assert inst.reach_error == pytest.approx(np.mean(errs), rel=0.06), name
    # the logistic yardstick on 1,000 independent draws of a normal posterior
    from mixlab.league.logistic_targets import MomentYardstick

    m, s = np.array([0.5, -2.0, 1.0]), np.array([1.0, 0.1, 3.0])
    errs = []
    for _ in range(400):
        ev = MomentYardstick(m, s)
        th = m + s * rng.standard_normal((K, B, 3))
        ev.update({"samples": th}, B, 1.0)
        errs.append(ev.value())
    assert reach.moment_reach() == pytest.approx(np.mean(errs), rel=0.06)


def _run(tmp_path, monkeypatch, name, overrides=()):
    """A league of Gibbs on two targets; its tables and text (no figure). The time streams
    are short: the 'to reach' values checked are read from the equal-work curves."""
    from mixlab.league.league import run_league

    spec = load_spec(resolve_spec("league/spinglass"), scale="quick", overrides=[
        "targets=[attractive-c0.5,mixed-c0.5]", "only_samplers=[gibbs]", "seeds=1",
        "chains=4", "seconds=0.05", "work=4e4", "block=10", *overrides])
    out = tmp_path / name
    with no_league_figure():
        _, entries = run_league(spec, out, workers=1)
    with open(out / "league.csv") as fh:
        rows = {r["target"]: r for r in csv.DictReader(fh)}
    return out, entries, rows


def _first_reach(run_dir: str, level: float) -> float:
    """Work at the first block end whose error is <= level in the cell's work curve."""
    with RunReader(Path(run_dir)) as r:
        curve = r.metrics()["error_vs_work"]["s0_work"]
    hit = np.flatnonzero(np.asarray(curve["y"]) <= level)
    return float(curve["x"][hit[0]]) if len(hit) else math.inf


def test_each_target_fills_the_to_reach_columns_at_its_own_stated_error(tmp_path, monkeypatch,
                                                                        data_dir):
    real_build = targets.build
    own = {"attractive-c0.5": 0.3, "mixed-c0.5": 1e-6}   # reached at once; never reached

    def build(family, d, init="random"):
        inst = real_build(family, d, init)
        inst.reach_error = own[[k for k, v in targets.standard_targets(family).items()
                                if v == d][0]]
        return inst

    monkeypatch.setattr(targets, "build", build)
    out, entries, rows = _run(tmp_path, monkeypatch, "own")
    by = {e.target: e for e in entries}
    first = by["attractive-c0.5"]
    assert float(rows["attractive-c0.5"]["reach_error"]) == 0.3
    assert float(rows["mixed-c0.5"]["reach_error"]) == 1e-6
    # reached at the first block end (4 chains x 10 draws x 100 sites), and never
    assert float(rows["attractive-c0.5"]["work_reach_work"]) == 4 * 10 * 100
    assert float(rows["attractive-c0.5"]["time_reach_seconds"]) > 0
    assert first.get("work/reach_work/median") == _first_reach(first.run_dir, 0.3)
    assert math.isinf(float(rows["mixed-c0.5"]["work_reach_work"]))
    assert math.isinf(float(rows["mixed-c0.5"]["time_reach_seconds"]))
    text = (out / "league.txt").read_text()
    assert "stated error: each target's own" in text
    assert "attractive-c0.5  (truth: exact single-site marginals (frontier transfer matrix); " \
           "stated error 0.3)" in text
    assert "stated error 1e-06" in (out / "league.md").read_text()


def test_real_stated_errors_and_the_spec_override(tmp_path, monkeypatch, data_dir):
    out, entries, rows = _run(tmp_path, monkeypatch, "real")
    for e in entries:
        d = targets.standard_targets("spinglass")[e.target]
        stated = targets.build("spinglass", d).reach_error
        assert e.get("reach_error") == stated
        assert e.get("work/reach_work/median") == _first_reach(e.run_dir, stated)
    out, entries, rows = _run(tmp_path, monkeypatch, "override", ["reach_error=0.05"])
    assert {float(r["reach_error"]) for r in rows.values()} == {0.05}
    for e in entries:
        assert e.get("work/reach_work/median") == _first_reach(e.run_dir, 0.05)
    assert "stated error 0.05 (every target)" in (out / "league.txt").read_text()


def test_docs_list_the_stated_errors_the_targets_have(data_dir):
    """docs/league.md's table of stated errors is what the targets compute (the families whose
    truths are quick to compute here)."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "league.md").read_text()
    listed = {}
    for names, values in re.findall(r"^\| \w+ \| (`[^|]+`) \| ([^|]+) \|$", doc, re.M):
        names = re.findall(r"`([^`]+)`", names)
        values = re.findall(r"\d[\d.e-]*", values)
        if len(values) == 1:
            values = values * len(names)
        listed.update({n: float(v) for n, v in zip(names, values)})
    for family in ("spinglass", "mrf"):
        for name, d in targets.standard_targets(family).items():
            assert listed[name] == targets.build(family, d).reach_error, name
    for name in targets.standard_targets("logistic"):
        assert listed[name] == reach.moment_reach(), name
