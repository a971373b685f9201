"""An equal-work stream's blocks hold ``max(block, draws / work_points)`` draws: its curve has
at most ``work_points`` points whatever the budget, and every equal-work number (read at the
exact draw of each mark, batch means by draws) is the same whatever the blocks."""

import csv

from mixlab.league.league import run_league
from mixlab.league.report import WORK_COLUMNS
from mixlab.runfile.store import RunReader
from mixlab.spec.builtin import resolve_spec
from mixlab.spec.resolver import load_spec
from tests.league.conftest import no_league_figure


def _league(tmp_path, name, work_points):
    spec = load_spec(resolve_spec("league/mrf"), scale="quick", overrides=[
        "targets=[d12-s0.1]", "only_samplers=[exact]", "seeds=2", "chains=4",
        "seconds=0.02", "work=4e5", "block=5", f"work_points={work_points}"])
    with no_league_figure():
        _, (cell,) = run_league(spec, tmp_path / name, workers=1)
    with open(tmp_path / name / "league.csv") as fh:
        row = next(csv.DictReader(fh))
    with RunReader(cell.run_dir) as r:
        points = len(r.metrics()["error_vs_work"]["s0_work"]["x"])
    return {c: row[c] for c in WORK_COLUMNS}, points


def test_work_points_cap_the_curve_and_change_no_number(tmp_path, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path / "data"))
    fine, fine_points = _league(tmp_path, "fine", 10_000)     # blocks of `block` = 5 draws
    coarse, coarse_points = _league(tmp_path, "coarse", 8)
    assert coarse_points <= 8 < fine_points
    assert coarse == fine
