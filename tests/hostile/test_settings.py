"""Every MIXLAB_* environment variable is parsed strictly: a bad value ends any command with one
line naming the variable and a valid example, exit code 2 (never silently the default); a
league table that is not what mixlab writes is an error (exit 1), not an empty result."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner

from mixlab.cli import cli

BAD = ["abc", "-1", "1e999", "nan", "²", "0"]
NUMERIC = ["MIXLAB_MAX_READ_BYTES", "MIXLAB_JOBS", "MIXLAB_KERNEL_THREADS",
           "MIXLAB_CHECKPOINT_SECONDS"]


def _show(run, env):
    return CliRunner().invoke(cli, ["show", str(run)], env=env)


@pytest.mark.parametrize("name", NUMERIC)
@pytest.mark.parametrize("bad", BAD)
def test_a_bad_number_is_one_line_exit_2_naming_the_variable(toy_run, name, bad):
    if bad == "0" and name == "MIXLAB_CHECKPOINT_SECONDS":
        bad = "-0.5"                                     # 0 seconds: after every block
    r = _show(toy_run, {name: bad})
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {name} must be "), r.output
    assert f"set e.g. {name}=" in lines[0]


@pytest.mark.parametrize("name, good", [("MIXLAB_MAX_READ_BYTES", "2147483648"),
                                        ("MIXLAB_JOBS", "2"), ("MIXLAB_KERNEL_THREADS", "1"),
                                        ("MIXLAB_CHECKPOINT_SECONDS", "0.5")])
def test_a_good_value_is_taken(toy_run, name, good):
    assert _show(toy_run, {name: good}).exit_code == 0


def test_the_read_bound_is_the_variable_s_value(toy_run, tmp_path):
    """A bound below run.h5's size refuses the run (the variable is used, not ignored)."""
    r = _show(toy_run, {"MIXLAB_MAX_READ_BYTES": "1000"})
    assert r.exit_code == 1 and "more than the 1,000 bytes" in r.output, r.output


def test_paths_and_plugins(toy_run, tmp_path):
    (tmp_path / "a-file").write_text("x")
    for name, value, words in [
            ("MIXLAB_DATA_DIR", str(tmp_path / "a-file"), "a directory, not a file"),
            ("MIXLAB_DATA_MIRROR", str(tmp_path / "absent"), "an existing directory"),
            ("MIXLAB_DATA_MIRROR", str(tmp_path / "a-file"), "a directory, not a file"),
            ("MIXLAB_PLUGINS", "-1", "':'-separated module names"),
            ("MIXLAB_PLUGINS", "²", "':'-separated module names")]:
        r = _show(toy_run, {name: value})
        assert r.exit_code == 2 and f"{name} must be {words}" in r.output, (name, r.output)
        assert len(r.output.strip().splitlines()) == 1


@pytest.mark.parametrize("garbage", ["", "xyz\n", "\x00\x01\x02", "target,sampler\n",
                                     "target,sampler,status\n",
                                     "target,sampler,status\na,b\n",
                                     "target,sampler,status\na,b,c,d\n"])
def test_a_garbage_league_table_is_an_error(tmp_path, garbage):
    d = tmp_path / "league"
    d.mkdir()
    (d / "league.txt").write_text("table\n")
    (d / "league.csv").write_text(garbage)
    r = CliRunner().invoke(cli, ["show", "--json", str(d)])
    assert r.exit_code == 1, r.output
    assert "league.csv is not a league table mixlab writes" in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_a_league_table_mixlab_writes_is_shown(tmp_path):
    d = tmp_path / "league"
    d.mkdir()
    (d / "league.txt").write_text("table\n")
    (d / "league.csv").write_text("target,sampler,status,x\nt,s,complete,1\n")
    r = CliRunner().invoke(cli, ["show", "--json", str(d)])
    assert r.exit_code == 0 and '"sampler": "s"' in r.output, r.output
    shutil.rmtree(d)
