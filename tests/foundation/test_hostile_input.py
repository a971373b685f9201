"""Names are names, numbers fit what holds them, warnings are one line, nothing is unpickled."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.plugins import registry
from mixlab.run.context import execute
from mixlab.spec.resolver import resolve
from mixlab.spec.schema import Param

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["../../escaped", "a/b", "..", ".", "a b", "x" * 101, "é"])
def test_a_name_that_is_not_one_path_component_is_refused_and_nothing_is_written(
        name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(f"name: {name!r}\nexperiment: toy.gaussian\n")
    r = CliRunner().invoke(cli, ["run", "s.yaml"])
    assert r.exit_code == 2, r.output
    assert "spec key 'name'" in r.output and "one file-name component" in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]
    assert not (tmp_path.parent.parent / "escaped").exists()


@pytest.mark.parametrize("spec, override", [
    ("austerity/fig8.yaml", "minibatch=1e30"),
    ("austerity/fig8.yaml", "model.seed=1e30"),
    ("toy/gaussian.yaml", "budget.draws=1e30"),
    ("austerity/fig3.yaml", "hmc.samples=1e30"),
    ("toy/gaussian.yaml", "seed=9223372036854775808"),
])
def test_integers_beyond_int64_are_refused_at_dry_run(spec, override):
    r = CliRunner().invoke(cli, ["run", str(ROOT / "experiments" / spec), override, "--dry-run"])
    assert r.exit_code == 2, r.output
    key = override.split("=")[0]
    assert f"spec key '{key}'" in r.output and "64-bit integer" in r.output
    assert "Traceback" not in r.output


@registry.experiment("test.overflow", schema={"scale_x": Param(1.0, float)})
def _overflowing(ctx) -> None:
    ctx.store.set_result("y", float(np.exp(np.float64(ctx.params["scale_x"]))))
    ctx.store.set_result("z", float(np.exp(np.float64(ctx.params["scale_x"]) * 2)))


def test_an_overflow_is_reported_once_in_one_line_naming_the_key(tmp_path, capfd):
    spec = resolve({"experiment": "test.overflow", "scale_x": 1e30}, default_name="ovf")
    execute(spec, tmp_path / "run", quiet=True, render=False)
    err = capfd.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines == ["warning (RuntimeWarning): overflow encountered in exp (at 2 places); "
                     "values this large in the spec may cause it: scale_x=1e+30"]
    assert "np.exp" not in err  # numpy's raw warning shows the source line


def test_no_code_reads_pickles_or_evaluates_text():
    pattern = re.compile(r"pickle\.loads?\(|\beval\(|\bexec\(|allow_pickle=True|yaml\.load\(|"
                         r"yaml\.unsafe_load|marshal\.loads")
    hits = [f"{p}:{i}" for p in (ROOT / "mixlab").rglob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert hits == []
