"""Built-in spec names: `mixlab run rates_fpcd/fig2`, `mixlab specs list|show|copy`; a path
that exists wins over a name."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.errors import SpecError
from mixlab.spec.builtin import SPECS_DIR, builtin_specs, find_builtin, resolve_spec

REPO = Path(__file__).resolve().parents[2]


def test_every_repository_spec_is_a_builtin():
    names = {s.name for s in builtin_specs()}
    want = {p.relative_to(REPO / "experiments").with_suffix("").as_posix()
            for p in (REPO / "experiments").glob("*/*.yaml")}
    assert names == want and "rates_fpcd/fig2" in names
    assert SPECS_DIR.resolve() == (REPO / "experiments").resolve()  # one copy, in experiments/


@pytest.mark.parametrize("name", ["rates_fpcd/fig2", "rates_fpcd/fig2.yaml",
                                  "experiments/rates_fpcd/fig2.yaml"])
def test_name_forms(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # experiments/... does not exist here: a name, not a path
    assert Path(resolve_spec(name)).read_text() == (
        REPO / "experiments/rates_fpcd/fig2.yaml").read_text()


def test_existing_path_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rates_fpcd").mkdir()
    (tmp_path / "rates_fpcd" / "fig2").write_text("experiment: toy.gaussian\nname: mine\n")
    assert resolve_spec("rates_fpcd/fig2") == "rates_fpcd/fig2"
    r = CliRunner().invoke(cli, ["run", "rates_fpcd/fig2", "--dry-run"])
    assert r.exit_code == 0 and "experiment: toy.gaussian" in r.output


def test_run_and_sweep_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["run", "rates_fpcd/fig2", "--dry-run"])
    assert r.exit_code == 0 and "experiment: rates_fpcd.isl" in r.output
    assert "runs/rates-fpcd-fig2/" in r.output
    r = CliRunner().invoke(cli, ["run", "toy/gaussian", "budget.draws=100", "--out", "toy",
                                 "-q"])
    assert r.exit_code == 0 and "complete: toy" in r.output
    r = CliRunner().invoke(cli, ["sweep", "toy/gaussian", "step=0.5,1",
                                 "--set", "budget.draws=50", "-o", "sw", "-q", "--dry-run"])
    assert r.exit_code == 0 and "000_step=0.5" in r.output


def test_unknown_name_is_a_spec_error_with_suggestions():
    with pytest.raises(SpecError, match="rates_fpcd/fig2"):
        resolve_spec("rates_fpcd/fig9")
    r = CliRunner().invoke(cli, ["run", "rates_fpcd/fig9"])
    assert r.exit_code == 2 and "mixlab specs list" in r.output
    assert "Traceback" not in r.output


def test_specs_list_show_copy(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["specs", "list"])
    assert r.exit_code == 0
    line = next(x for x in r.output.splitlines() if x.startswith("rates_fpcd/fig2 "))
    assert "Figure 2" in line
    text = (REPO / "experiments/rates_fpcd/fig2.yaml").read_text()
    r = CliRunner().invoke(cli, ["specs", "show", "rates_fpcd/fig2"])
    assert r.exit_code == 0 and r.output == text
    r = CliRunner().invoke(cli, ["specs", "copy", "rates_fpcd/fig2"])
    assert r.exit_code == 0 and (tmp_path / "fig2.yaml").read_text() == text
    r = CliRunner().invoke(cli, ["specs", "copy", "rates_fpcd/fig2"])
    assert r.exit_code == 2 and "--force" in r.output  # never overwrites silently
    (tmp_path / "edit").mkdir()
    r = CliRunner().invoke(cli, ["specs", "copy", "rates_fpcd/fig2", "edit"])
    assert r.exit_code == 0 and (tmp_path / "edit" / "fig2.yaml").read_text() == text
    r = CliRunner().invoke(cli, ["specs", "copy", "nope/fig2", "x.yaml"])
    assert r.exit_code == 2 and not (tmp_path / "x.yaml").exists()
    assert find_builtin("nope/fig2") is None


def test_spec_comments_work_without_a_clone():
    """What 'mixlab specs show' prints is what a pip user can run: no path into the source tree,
    and every 'mixlab run|sweep SPEC' in a comment names a built-in spec."""
    for spec in builtin_specs():
        comments = [line for line in spec.path.read_text().splitlines()
                    if line.lstrip().startswith("#")]
        for line in comments:
            assert "experiments/" not in line, f"{spec.name}: {line}"
            for command in re.findall(r"mixlab (?:run|sweep) (\S+)", line):
                assert find_builtin(command) is not None, f"{spec.name}: {line}"


def test_make_data_installs_fashion_mnist():
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = subprocess.run(["make", "-n", "data", "STAMP="], cwd=REPO, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    fetched = {line.split()[-1] for line in out.splitlines() if " data fetch " in line}
    assert {"usps", "mnist-5k", "kdd99", "fashion-mnist"} <= fetched
