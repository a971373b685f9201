"""A league on forked workers (-j 2) gives the same draw-determined numbers as in one process."""

import csv

from mixlab.builtin_specs import resolve_spec
from mixlab.league.league import _start_method, run_league
from mixlab.league.report import WORK_COLUMNS
from mixlab.spec import load_spec

#: columns that depend only on the draws (the equal-work ones, the ESS of the equal-work
#: streams, the stated error)
SAME = WORK_COLUMNS + ("reach_error", "work_error@0.5_median")


def _table(out):
    with open(out / "league.csv") as fh:
        return {(r["target"], r["sampler"]): tuple(r[c] for c in SAME)
                for r in csv.DictReader(fh)}


def test_forked_workers_give_the_one_process_table(tmp_path, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path / "data"))
    spec = load_spec(resolve_spec("league/spinglass"), scale="quick", overrides=[
        "targets=[attractive-c0.5,mixed-c1.5]", "only_samplers=[gibbs,metropolis]",
        "seeds=2", "chains=4", "seconds=0.1", "work=4e4", "block=10"])
    _, one = run_league(spec, tmp_path / "one", workers=1)
    _, two = run_league(spec, tmp_path / "two", workers=2)
    assert _start_method() == "fork"                    # Linux: the workers are forked
    assert [e.status for e in one + two] == ["complete"] * 8
    assert _table(tmp_path / "one") == _table(tmp_path / "two")
    assert all(e.get("work/ess_per_munit/median") > 0 for e in two)
