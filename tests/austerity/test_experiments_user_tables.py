"""The user's own table as the logistic-regression posterior (data: {file: ...}): readers,
standardisation on the training rows only, clear refusals of bad inputs (exit 2 for spec
problems, 1 for unreadable files), and an end-to-end CLI run whose results hold truth_mean,
truth_sd and mean/<series>."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mixlab.data.user_tables import read_table, split_and_standardize
from mixlab.errors import DataError, SpecError

REPO = Path(__file__).resolve().parents[2]


def _table(rng, n=120):
    X = rng.normal(size=(n, 3)) * [1.0, 3.0, 0.5] + [0.0, 5.0, -1.0]
    logit = X @ [1.5, -0.4, 2.0] + 0.3
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return X, y


def _write_csv(path, X, y, names=("a", "b", "c")):
    lines = [",".join(list(names) + ["y"])]
    lines += [",".join(f"{v:.6f}" for v in row) + f",{t}" for row, t in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_three_formats_read_the_same_table(tmp_path):
    X, y = _table(np.random.default_rng(0))
    a = read_table(_write_csv(tmp_path / "t.csv", X, y), "y", ["c", "a"])
    np.savez(tmp_path / "t.npz", a=X[:, 0], b=X[:, 1], c=X[:, 2], y=y)
    b = read_table(tmp_path / "t.npz", "y", ["c", "a"])
    np.save(tmp_path / "t.npy", np.column_stack([X, y]))
    c = read_table(tmp_path / "t.npy", "3", ["2", "0"])
    for t in (a, b, c):
        assert np.allclose(t.X, X[:, [2, 0]], atol=1e-6) and np.array_equal(t.y, y)
    assert a.columns == ["c", "a"] and read_table(tmp_path / "t.csv", "y", None).columns == \
        ["a", "b", "c"]


def test_standardisation_uses_the_training_rows_only(tmp_path):
    X, y = _table(np.random.default_rng(1))
    t = read_table(_write_csv(tmp_path / "t.csv", X, y), "y", None)
    Xtr, ytr, Xte, yte = split_and_standardize(t, None, 0.25, True, seed=3)
    assert Xtr.shape == (90, 3) and Xte.shape == (30, 3)
    assert np.allclose(Xtr.mean(0), 0, atol=1e-5) and np.allclose(Xtr.std(0), 1, atol=1e-5)
    perm = np.random.default_rng(3).permutation(120)
    tr, te = np.sort(perm[30:]), np.sort(perm[:30])
    mu, sd = X[tr].mean(0), X[tr].std(0)
    assert np.allclose(Xte, (X[te] - mu) / sd, atol=1e-5)      # test rows: training statistics
    assert np.array_equal(ytr, y[tr]) and np.array_equal(yte, y[te])


@pytest.mark.parametrize("content, key, words", [
    ("", "data.file", "empty"),
    ("a,y\n", "data.file", "no data rows"),
    ("a,y\n1,0\n2\n", "data.file", "line 3"),
    ("a,y\n1,0\nx,1\n", "data.file", "not a number"),
    ("a,y\n1,0\nnan,1\n", "data.features", "NaN/inf"),
    ("a,y\n1,0\ninf,1\n", "data.features", "NaN/inf"),
    ("a,y\n1,0\n2,2\n", "data.label", "0/1"),
    ("a,z\n1,0\n2,1\n", "data.label", "no column 'y'"),
])
def test_bad_csv_is_a_spec_error_naming_file_and_key(tmp_path, content, key, words):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(SpecError, match=words) as err:
        read_table(path, "y", None)
    assert err.value.key == key and "bad.csv" in str(err.value)


def test_other_bad_inputs(tmp_path):
    X, y = _table(np.random.default_rng(2))
    good = _write_csv(tmp_path / "t.csv", X, y)
    with pytest.raises(SpecError, match="'nope'") as err:
        read_table(good, "y", ["a", "nope"])
    assert err.value.key == "data.features"
    with pytest.raises(SpecError, match="does not exist"):
        read_table(tmp_path / "missing.csv", "y", None)
    with pytest.raises(SpecError, match="unknown table format"):
        read_table(tmp_path / "t.xlsx", "y", None)
    np.save(tmp_path / "cube.npy", np.zeros((2, 3, 4)))
    with pytest.raises(SpecError, match="2-D numeric"):
        read_table(tmp_path / "cube.npy", "0", None)
    np.savez(tmp_path / "ragged.npz", a=np.zeros(3), y=np.zeros(4))
    with pytest.raises(SpecError, match="different lengths"):
        read_table(tmp_path / "ragged.npz", "y", None)
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(DataError, match="obj.npy"):              # never unpickled
        read_table(tmp_path / "obj.npy", "0", None)
    (tmp_path / "junk.npz").write_bytes(b"not a zip at all")
    with pytest.raises(DataError, match="junk.npz"):
        read_table(tmp_path / "junk.npz", "y", None)


def _cli(args, cwd, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(REPO), **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "mixlab", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


SPEC = """name: my-posterior
experiment: austerity.rw_risk
seed: 1
data: {file: table.csv, label: y, features: [a, b, c], standardize: true, test_fraction: 0.25}
model: {precision: 1.0, bias: true}
sigma: 0.05
m: 30
eps: [0.0, 0.2]
chains: 2
seconds: 0.4
block: 20
hmc: {chains: 2, burn_in: 50, samples: 400, step_size: 0.4, n_leapfrog: 10, keep: 200}
"""


def test_user_csv_end_to_end_through_the_cli(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from mixlab.cli import cli

    X, y = _table(np.random.default_rng(4), n=300)
    _write_csv(tmp_path / "table.csv", X, y)
    (tmp_path / "spec.yaml").write_text(SPEC)
    env = {"MIXLAB_DATA_DIR": str(tmp_path / "cache")}
    # the run and show in this process (the CLI's code, no process start-up); the refusals
    # below are real processes: their exit codes and stderr are what a shell sees
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke(cli, ["run", "-q", "spec.yaml", "--out", "out"], env=env)
    assert run.exit_code == 0, run.output
    show = CliRunner().invoke(cli, ["show", "--json", "out"], env=env)
    assert show.exit_code == 0, show.output
    res = json.loads(show.stdout)["results"]
    cols = res["data/columns"]                  # a list of strings is stored as JSON text
    assert (json.loads(cols) if isinstance(cols, str) else cols) == ["a", "b", "c", "bias"]
    assert res["data/N"] == 225 and res["data/test_points"] == 75
    mean, sd = np.array(res["truth_mean"]), np.array(res["truth_sd"])
    assert mean.shape == (4,) and np.all(sd > 0)
    # the posterior mean points the way the data were made (standardised a, c up; b down)
    assert mean[0] > 0 and mean[2] > 0 and mean[1] < 0
    for lab in ("eps=0", "eps=0.2"):
        est = np.array(res[f"mean/{lab}"])
        assert est.shape == (4,) and np.all(np.isfinite(est))
    # bad inputs through the CLI: a spec problem exits 2, an unreadable file 1, no traceback
    bad = _cli(["run", "-q", "spec.yaml", "--out", "o2", "data.features=[a,zz]"], tmp_path, env)
    assert bad.returncode == 2 and "data.features" in bad.stderr and "zz" in bad.stderr
    assert "Traceback" not in bad.stderr
    (tmp_path / "table.npz").write_bytes(b"garbage")
    bad = _cli(["run", "-q", "spec.yaml", "--out", "o3", "data.file=table.npz"], tmp_path, env)
    assert bad.returncode == 1 and "table.npz" in bad.stderr and "Traceback" not in bad.stderr


def test_a_named_data_set_with_a_file_says_how_to_choose():
    # sgld_variance's data.name defaults to kdd99: a user who gives only data.file must be told
    # to set data.name: auto, not to "remove" a key they never wrote
    from mixlab.austerity.target_logistic import load_user_table

    with pytest.raises(SpecError, match="data.name: auto") as err:
        load_user_table(None, {"name": "kdd99", "file": "t.csv", "classes": None})
    assert err.value.key == "data.name" and "default" in str(err.value)
