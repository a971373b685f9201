"""Fixtures of the hostile-input tests."""
from pathlib import Path

import pytest
from click.testing import CliRunner

from mixlab.cli import cli

TOY_SPEC = str(Path(__file__).resolve().parents[2] / "experiments/toy/gaussian.yaml")


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory) -> Path:
    """A finished 100-draw run of the toy Gaussian spec, made once per test module (copy it
    before editing it)."""
    out = tmp_path_factory.mktemp("toy") / "run"
    r = CliRunner().invoke(cli, ["run", TOY_SPEC, "--out", str(out), "-q", "budget.draws=100"])
    assert r.exit_code == 0, r.output
    return out
