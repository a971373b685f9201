"""A league directory reads like a run or a sweep: ``plot LEAGUE`` draws its figure again (the
same bytes as the league wrote), ``--figure`` chooses among its figures, ``compare LEAGUE``
compares its cells, and ``diagnose``/``export`` take ``LEAGUE/CELL`` as a run. A damaged
league.json is one line and exit 1."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.league.league import run_league
from mixlab.spec.builtin import resolve_spec
from mixlab.spec.resolver import load_spec


@pytest.fixture(scope="module")
def league(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("league-reads")
    mp = pytest.MonkeyPatch()
    mp.setenv("MIXLAB_DATA_DIR", str(tmp / "data"))
    spec = load_spec(resolve_spec("league/spinglass"), scale="quick", overrides=[
        "targets=[attractive-c0.5,mixed-c1.5]", "only_samplers=[gibbs,metropolis]",
        "seeds=2", "chains=4", "seconds=0.03", "work=4e4", "block=10"])
    _, entries = run_league(spec, tmp / "lg", workers=1)
    assert [e.status for e in entries] == ["complete"] * 4
    yield tmp / "lg"
    mp.undo()


def _cli(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    return r.exit_code, r.output


def test_plot_draws_the_league_figure_again(league, tmp_path):
    d = tmp_path / "lg"
    shutil.copytree(league, d)
    written = (d / "league.png").read_bytes()
    (d / "league.png").unlink()
    code, out = _cli("plot", d)
    assert code == 0, out
    assert (d / "league.png").read_bytes() == written        # the same figure, byte for byte
    code, out = _cli("plot", d, "--figure", "league", "-o", tmp_path / "x.png")
    assert code == 0 and (tmp_path / "x.png").read_bytes() == written, out
    code, out = _cli("plot", d, "--figure", "rank")
    assert code == 2 and "--figure rank is not one of them" in out, out


def test_compare_diagnose_and_export_take_a_league_and_its_cells(league, tmp_path):
    code, out = _cli("compare", league, "--json")
    assert code == 0 and out.count("_sampler=") >= 4, out
    cell = sorted(p for p in league.iterdir() if p.is_dir())[0]
    code, out = _cli("diagnose", cell)
    assert code == 0 and "ESS" in out, out
    code, out = _cli("export", cell, "--stream", "s0_time", "-o", tmp_path / "c.nc")
    assert code == 0 and (tmp_path / "c.nc").stat().st_size > 0, out


@pytest.mark.parametrize("text", ["", "[1, 2]", "{\"family\": 3}", "[" * 100_000])
def test_a_damaged_league_json_is_one_line_and_exit_1(league, tmp_path, text):
    d = tmp_path / "lg"
    shutil.copytree(league, d)
    (d / "league.json").write_text(text)
    code, out = _cli("plot", d)
    assert code == 1 and "league.json" in out and len(out.strip().splitlines()) == 1, out
