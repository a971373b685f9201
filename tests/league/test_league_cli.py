"""The league end to end through the CLI (subprocesses: plugins stay out of this process)."""

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.league.conftest import no_league_figure
from tests.plugins.conftest import mixlab_env, run_mixlab

HERE = Path(__file__).resolve().parent
PLUGIN = HERE / "hot_gibbs.py"
TINY = ["seconds=0.15", "work=6e4", "block=10", "time_points=8"]


def _rows(league_dir):
    with open(Path(league_dir) / "league.csv") as fh:
        return {(r["target"], r["sampler"]): r for r in csv.DictReader(fh)}


@pytest.fixture(scope="module")
def hot_league(tmp_path_factory, example_site):
    """Gibbs, Gibbs at beta = 0.5 and a failing sampler (a --plugin file), and the installed
    example plugin's houdayer, on an easy target."""
    out = tmp_path_factory.mktemp("league") / "hot"
    env = mixlab_env(example_site, MIXLAB_DATA_DIR=out.parent / "data")
    r = run_mixlab("league", "spinglass", "--plugin", PLUGIN, "--targets", "attractive-c0.5",
                   "--samplers", "gibbs,hot,always-fails,houdayer",
                   "samplers.hot.method=tempered-gibbs",
                   "samplers.hot.beta=0.5", *TINY, "-o", out, env=env)
    # every output is written, and the exit status says that a cell failed (as a sweep's does)
    assert r.returncode == 1, r.stderr
    assert "1 of 4 league cell(s) did not complete" in r.stderr
    assert "Traceback" not in r.stderr
    return out, r


def test_plugin_file_sampler_is_in_the_table_and_biased_one_is_flagged(hot_league):
    out, r = hot_league
    rows = _rows(out)
    hot, gibbs = rows[("attractive-c0.5", "hot")], rows[("attractive-c0.5", "gibbs")]
    assert "hot" in r.stdout and "biased at equal" in r.stdout
    assert hot["bias_flag"] == "1" and gibbs["bias_flag"] == "0"
    assert hot["verdict"] == "biased" and gibbs["verdict"] in ("ok", "not mixed")
    assert hot["verdict_clock"] in ("time", "work") and float(hot["rhat"]) > 0.9
    # the wrong stationary distribution never ranks first, at either clock
    hou = rows[("attractive-c0.5", "houdayer")]
    assert hou["bias_flag"] == "0"
    for clock in ("work", "time"):
        assert gibbs[f"{clock}_rank"] == "1" or hou[f"{clock}_rank"] == "1"
        assert int(hot[f"{clock}_rank"]) == 3      # after both unbiased samplers


def test_failing_sampler_fills_its_cell_with_its_reason(hot_league):
    out, r = hot_league
    bad = _rows(out)[("attractive-c0.5", "always-fails")]
    assert bad["status"] == "failed"
    assert "this sampler always fails" in bad["error"]
    # named as a plugin's failure, with its file and step (the league's cost probe takes it)
    assert "hot_gibbs.py" in bad["error"] and "at step 1" in bad["error"]
    assert bad["time_rank"] == "" and "always fails" in r.stdout


def _cli(*args):
    from click.testing import CliRunner

    from mixlab.cli import cli

    return CliRunner().invoke(cli, [str(a) for a in args])


def test_cells_are_ordinary_runs_and_show_reads_the_league(hot_league):
    out, _ = hot_league
    cell = next(p for p in out.iterdir() if p.name.endswith("sampler=gibbs"))
    r = _cli("show", cell)
    assert r.exit_code == 0 and "work/error/median" in r.output
    from mixlab.runfile.store import RunReader

    with RunReader(cell) as run:                    # equal-time blocks: 0.15 s / 8 each
        curves = run.metrics()["error_vs_seconds"]
    times = [c["x"] for name, c in curves.items() if name.endswith("_time")]
    assert len(times) == 3 and all(2 <= len(x) <= 9 for x in times)
    r = _cli("diagnose", cell)
    assert r.exit_code == 0 and "s0_work" in r.output and "energy" in r.output
    r = _cli("show", out)
    assert r.exit_code == 0 and "attractive-c0.5" in r.output and "hot" in r.output
    assert (out / "league.md").read_text().count("| hot |") == 1
    assert (out / "league.png").stat().st_size > 10_000


def test_installed_example_plugin_joins_the_league(hot_league):
    out, r = hot_league
    assert _rows(out)[("attractive-c0.5", "houdayer")]["status"] == "complete"
    assert "houdayer" in r.stdout


def _work_table(league_dir):
    from mixlab.league.report import WORK_COLUMNS

    return {k: tuple(r[c] for c in WORK_COLUMNS) for k, r in _rows(league_dir).items()}


def test_killed_league_resumes_to_the_same_equal_work_table(tmp_path, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path / "data"))
    env = mixlab_env(MIXLAB_DATA_DIR=tmp_path / "data")
    budget = TINY                    # the second cell's 3 x 0.15 s: the window for the kill
    whole = tmp_path / "whole"       # the reference table (its figure is not compared)
    with no_league_figure():
        r = _cli("run", "league/spinglass", "targets=[mixed-c1.5]",
                 "only_samplers=[gibbs,metropolis]", *budget, "-o", whole, "-q")
    assert r.exit_code == 0, r.output
    args = ["--targets", "mixed-c1.5", "--samplers", "gibbs,metropolis", *budget]
    cut = tmp_path / "cut"
    proc = subprocess.Popen([sys.executable, "-m", "mixlab", "league", "spinglass", *args,
                             "-o", str(cut)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        table = cut / "sweep.csv"
        if table.exists() and "complete" in table.read_text():
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the league ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (cut / "league.csv").exists()
    r = _cli("league", "spinglass", *args, "-o", cut, "-q")
    assert r.exit_code == 0, r.output
    assert _work_table(cut) == _work_table(whole)
    assert len(_work_table(cut)) == 2


def test_a_second_league_on_a_running_leagues_directory_stops_naming_the_first(tmp_path):
    """While one process runs a league's directory, a second on it exits 1 at once naming the
    first, and writes nothing there (its cells would otherwise be recorded as locked
    failures in a table that exits 0)."""
    from mixlab.runfile.lock import directory_lock

    out = tmp_path / "league"
    with directory_lock(out, "league"):
        r = run_mixlab("league", "spinglass", "--targets", "attractive-c0.5", "--samplers",
                       "gibbs", *TINY, "-o", out,
                       env=mixlab_env(MIXLAB_DATA_DIR=tmp_path / "data"))
    assert r.returncode == 1, r.stderr
    assert f"league {out} is being written by pid {os.getpid()}" in r.stderr
    assert sorted(p.name for p in out.iterdir()) == []


@pytest.mark.parametrize("option, value, names", [
    ("--samplers", "exact,nosuch", ["nosuch", "--samplers", "exact_lookup"]),
    ("--targets", "d12-s0.3,nosuch", ["nosuch", "--targets", "d12-s0.02"])])
def test_an_unknown_sampler_or_target_is_a_usage_error_naming_the_choices(tmp_path, option,
                                                                         value, names):
    r = _cli("league", "mrf", option, value, "-o", tmp_path / "l")
    assert r.exit_code == 2
    assert all(n in r.output for n in names), r.output
    assert not (tmp_path / "l").exists()                 # nothing started


def test_a_league_of_another_spec_in_the_directory_is_refused_and_kept(tmp_path, monkeypatch):
    """Changed keys (here the budget) into an existing league's directory: exit 1 naming the
    way out, before any truth is computed or any file written; the old tables stay as they
    were, and the old command still finds its league complete."""
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path / "data"))
    out = tmp_path / "league"
    args = ["league", "spinglass", "--targets", "mixed-c1.5", "--samplers", "gibbs,metropolis",
            *TINY, "-o", out, "-q"]
    with no_league_figure():
        assert _cli(*args).exit_code == 0
        before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
        cells = {p: (p / "run.h5").stat().st_mtime_ns for p in out.iterdir() if p.is_dir()}
        r = _cli(*[a if a != "seconds=0.15" else "seconds=0.2" for a in args])
        assert r.exit_code == 1, r.output
        assert "holds a league of a different spec: 2 of its 2 cells" in r.output
        assert "another --out directory" in r.output
        assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
        assert {p: (p / "run.h5").stat().st_mtime_ns for p in cells} == cells
        r = _cli(*args)                                     # the old league, untouched
    assert r.exit_code == 0 and "gibbs" in r.output
