"""The papers' specs take the user's data: keys of the spec file that describe the spec's own
data set (or random model) stop applying when the user points it at their file, and say so;
the same key given on the command line is still refused by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.errors import SpecError
from mixlab.spec.resolver import check_startup, load_spec

REPO = Path(__file__).resolve().parents[2]
FIG3 = REPO / "experiments" / "austerity" / "fig3.yaml"


@pytest.fixture
def two_feature_csv(tmp_path) -> Path:
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 2))
    y = (X @ [1.5, -1.0] + rng.logistic(size=200) > 0).astype(int)
    path = tmp_path / "my.csv"
    path.write_text("a,b,y\n" + "".join(f"{a:.5f},{b:.5f},{t}\n" for (a, b), t in zip(X, y)))
    return path


def file_keys(csv: Path) -> list[str]:
    return [f"data.file={csv}", "data.label=y", "data.features=[a,b]"]


# -- austerity (logistic regression) ---------------------------------------------------------

def test_fig3_on_a_two_feature_csv_drops_the_image_set_keys(two_feature_csv):
    spec = load_spec(FIG3, overrides=file_keys(two_feature_csv))
    check_startup(spec)                                    # accepted at start
    assert spec["data"]["classes"] is None and spec["data"]["pca"] is None
    assert spec["data"]["name"] == "auto"
    # the spec file's [0, 1, 2, 3, 4, -1] resolved for d = 2 features + bias
    assert spec["summary_dims"] == [0, 1, 2, -1]
    assert set(spec["dropped"]) == {"data.classes", "data.pca", "summary_dims"}
    assert "[3, 4]" in spec["dropped"]["summary_dims"] and "d = 3" in spec["dropped"][
        "summary_dims"]


def test_the_paper_spec_without_a_file_drops_nothing():
    spec = load_spec(FIG3)
    assert "dropped" not in spec and spec["data"]["classes"] == [7, 9]


@pytest.mark.parametrize("extra, key", [
    (["data.classes=[7,9]"], "data.classes"),
    (["summary_dims=[0,5]"], "summary_dims"),
    (["data.name=mnist"], "data.name"),
])
def test_a_key_given_on_the_command_line_is_still_refused_by_name(two_feature_csv, extra, key):
    spec = load_spec(FIG3, overrides=file_keys(two_feature_csv) + extra)
    with pytest.raises(SpecError) as err:
        check_startup(spec)
    assert err.value.key == key
    r = CliRunner().invoke(cli, ["run", str(FIG3), *file_keys(two_feature_csv), *extra,
                                 "--dry-run"])
    assert r.exit_code == 2 and f"spec key '{key}'" in r.output, r.output


def test_synthetic_data_drops_them_too():
    spec = load_spec(FIG3, overrides=["data.synthetic={n: 500, d: 3}"])
    check_startup(spec)
    assert spec["summary_dims"] == [0, 1, 2, 3, -1]           # d = 3 + bias
    assert {"data.classes", "data.pca", "summary_dims"} <= set(spec["dropped"])


def test_the_dry_run_lists_the_dropped_keys(two_feature_csv):
    r = CliRunner().invoke(cli, ["run", str(FIG3), *file_keys(two_feature_csv), "--dry-run"])
    assert r.exit_code == 0, r.output
    lines = [x for x in r.output.splitlines() if x.startswith("# dropped ")]
    assert [x.split()[2] for x in lines] == ["data.classes", "data.pca", "summary_dims"]


def test_fig3_runs_first_time_on_the_users_csv_and_show_lists_the_drops(two_feature_csv,
                                                                       tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "mixlab", "run", str(FIG3), *file_keys(two_feature_csv),
           "seconds=0.2", "eps=[0.0,0.1]", "chains=2", "hmc.samples=100", "hmc.burn_in=20",
           "hmc.chains=2", "hmc.keep=100", "-o", str(out), "-q"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "complete" in r.stdout
    # reading the run back needs no process of its own
    r = CliRunner().invoke(cli, ["show", str(out)])
    assert r.exit_code == 0, r.output
    shown = [x.split()[1] for x in r.stdout.splitlines() if x.startswith("dropped ")]
    assert shown == ["data.classes", "data.pca", "summary_dims"]
    assert "data/d" in r.stdout or "data/N" in r.stdout
    r = CliRunner().invoke(cli, ["show", str(out), "--json"])
    assert r.exit_code == 0, r.output
    assert list(json.loads(r.stdout)["dropped"]) == shown


# -- RBM (rates-FPCD): an image file in place of a named set -----------------------------------

def test_an_image_file_replaces_the_named_set(tmp_path):
    imgs = tmp_path / "imgs.npy"
    np.save(imgs, (np.random.default_rng(0).random((60, 16)) > 0.5).astype(np.float32))
    spec = load_spec(REPO / "experiments/rates_fpcd/fig2.yaml", overrides=[f"data.file={imgs}"])
    check_startup(spec)
    assert spec["data"]["name"] is None and "data.name" in spec["dropped"]
    spec = load_spec(REPO / "experiments/rates_fpcd/fig2.yaml",
                     overrides=[f"data.file={imgs}", "data.classes=[1,2]"])
    with pytest.raises(SpecError) as err:
        check_startup(spec)
    assert err.value.key == "data.classes"


# -- spin glass: a model file in place of the random grid --------------------------------------

def test_a_model_file_replaces_grid_field_and_coupling(tmp_path):
    from mixlab.spinglass.model import random_spin_glass, save_npz

    path = tmp_path / "sg.npz"
    save_npz(path, random_spin_glass(4, 5, 1.0, 2.0, False, np.random.default_rng(0)))
    spec_file = REPO / "experiments/perturb_map/marginal_vs_time.yaml"
    spec = load_spec(spec_file, overrides=[f"model.file={path}"])
    check_startup(spec)
    assert set(spec["dropped"]) == {"grid", "field", "coupling", "mixed"}
    r = CliRunner().invoke(cli, ["run", str(spec_file), f"model.file={path}", "--dry-run"])
    assert r.exit_code == 0 and "# dropped grid (from the spec file)" in r.output, r.output
    with pytest.raises(SpecError) as err:
        load_spec(spec_file, overrides=[f"model.file={path}", "grid.rows=6"])
    assert err.value.key == "grid"
