"""The user's own images (mixlab.data.user_images) and ``data: {file: ...}`` in the RBM
experiments: splits, formats, and a clear message for each bad file."""

import gzip
import json
import struct

import numpy as np
import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.data.user_images import load_user_images
from mixlab.errors import DataError, SpecError
from mixlab.run.context import execute
from mixlab.runfile.store import RunReader
from mixlab.spec.resolver import resolve


def _images(n=200, side=6, seed=0):
    """(n, side*side) float32 in [0, 1]: noisy vertical or horizontal bars."""
    rng = np.random.default_rng(seed)
    X = np.zeros((n, side, side), np.float32)
    for i in range(n):
        j = rng.integers(side)
        if i % 2:
            X[i, :, j] = 1.0
        else:
            X[i, j, :] = 1.0
    X = np.clip(X + 0.3 * rng.random(X.shape, dtype=np.float32), 0, 1)
    return X.reshape(n, -1)


def test_npy_split_by_fraction_in_file_order(tmp_path):
    X = _images(100)
    np.save(tmp_path / "x.npy", X)
    ds = load_user_images(tmp_path / "x.npy", valid_fraction=0.2, test_fraction=0.1)
    assert (ds.train.n, ds.valid.n, ds.test.n) == (70, 20, 10)
    np.testing.assert_array_equal(ds.train.X, X[:70])
    np.testing.assert_array_equal(ds.valid.X, X[70:90])
    np.testing.assert_array_equal(ds.test.X, X[90:])
    assert ds.shape == (6, 6) and ds.name == "x.npy" and len(ds.info["sha256"]) == 64
    b = load_user_images(tmp_path / "x.npy", binarize=0.5, max_train=30)
    assert b.train.n == 30
    np.testing.assert_array_equal(b.train.X, (X[:30] > 0.5).astype(np.float32))


def test_npz_splits_and_3d_images(tmp_path):
    X = _images(60).reshape(60, 6, 6)
    np.savez(tmp_path / "s.npz", train=X[:40], valid=X[40:50], test=X[50:])
    ds = load_user_images(tmp_path / "s.npz")
    assert (ds.train.n, ds.valid.n, ds.test.n) == (40, 10, 10) and ds.dim == 36
    np.testing.assert_array_equal(ds.test.X, X[50:].reshape(10, 36))
    np.savez(tmp_path / "one.npz", images=X)  # one array of any name: split by fraction
    assert load_user_images(tmp_path / "one.npz").test.n == 6


def test_idx_bytes_are_scaled(tmp_path):
    B = (np.arange(20 * 4 * 4) % 256).astype(np.uint8).reshape(20, 4, 4)
    raw = struct.pack(">BBBB3I", 0, 0, 8, 3, 20, 4, 4) + B.tobytes()
    (tmp_path / "img-idx3-ubyte.gz").write_bytes(gzip.compress(raw))
    ds = load_user_images(tmp_path / "img-idx3-ubyte.gz", valid_fraction=0.25,
                          test_fraction=0.25)
    assert ds.shape == (4, 4) and ds.train.n == 10
    np.testing.assert_allclose(ds.train.X, B[:10].reshape(10, 16) / 255.0, rtol=1e-6)


@pytest.mark.parametrize("content, match", [
    (np.full((5, 4), np.nan, np.float32), "NaN or infinite"),
    (np.full((5, 4), 3.0), r"values in \[3, 3\].*divide by 255"),
    (np.zeros(5), r"shape \(5,\)"),
    (np.zeros((0, 4)), "empty"),
    (np.array([[1, "a"]], dtype=object), "Python objects"),
])
def test_bad_content_is_a_spec_error_naming_file_and_key(tmp_path, content, match):
    f = tmp_path / "bad.npy"
    np.save(f, content, allow_pickle=True)
    with pytest.raises(SpecError, match=match) as e:
        load_user_images(f)
    assert e.value.key == "data.file" and str(f) in str(e.value)


def test_bad_npz_layouts_and_fractions(tmp_path):
    X = _images(20)
    np.savez(tmp_path / "a.npz", train=X)
    with pytest.raises(SpecError, match="no 'valid'"):
        load_user_images(tmp_path / "a.npz")
    np.savez(tmp_path / "b.npz", x=X, y=X)
    with pytest.raises(SpecError, match="several arrays"):
        load_user_images(tmp_path / "b.npz")
    np.savez(tmp_path / "c.npz", train=X, valid=X[:, :5], test=X)
    with pytest.raises(SpecError, match="different numbers of pixels"):
        load_user_images(tmp_path / "c.npz")
    np.save(tmp_path / "d.npy", X[:4])
    with pytest.raises(SpecError, match="at least one") as e:
        load_user_images(tmp_path / "d.npy", valid_fraction=0.1, test_fraction=0.1)
    assert e.value.key == "data"


def test_missing_or_unreadable_file_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_user_images(tmp_path / "nope.npy")
    (tmp_path / "junk.npy").write_bytes(b"not an array")
    with pytest.raises(DataError, match="cannot read"):
        load_user_images(tmp_path / "junk.npy")
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(DataError, match="cannot read"):
        load_user_images(tmp_path / "junk.npz")


def _spec(f, **data):
    return {"experiment": "rates_fpcd.isl", "name": "own", "seed": 2,
            "data": {"file": str(f), **data},
            "train": {"trainer": "pcd", "hidden": 6, "epochs": 1, "batch_size": 20,
                      "monitor_size": 20},
            "samplers": {"gibbs": {"method": "gibbs"},
                         "rf": {"method": "rates-fpcd", "eps_f": 0.01}},
            "budget": {"draws": 40}, "isl": {"points": 4, "reference": "gibbs"}}


def test_isl_run_on_own_file(tmp_path):
    X = _images(200)
    np.save(tmp_path / "own.npy", X)
    execute(resolve(_spec(tmp_path / "own.npy")), tmp_path / "r", quiet=True, render=False)
    with RunReader(tmp_path / "r") as r:
        res = r.results()
        assert res["data_used"] == "own.npy"
        assert res["data_sizes"] == "train 160, valid 20, test 20"
        assert res["isl_test_points"] == 20 and np.isfinite(res["isl_final/rf"])
        # the training set the model saw is the binarised first 160 rows
        np.testing.assert_array_equal(r.stream("rf", "samples").shape, (1, 40, 36))
        stored = r.metrics()["isl"]["rf"]
    # a file the run names is opened by evaluate only when the user names it too
    args = ["evaluate", "isl", str(tmp_path / "r"), "--json", "--stream", "rf", "--points", "4"]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 2 and "names the data file" in out.output, out.output
    assert f"{tmp_path / 'own.npy'}" in out.output and "--data-file" in out.output
    out = CliRunner().invoke(cli, [*args, "--data-file", str(tmp_path / "own.npy")])
    assert out.exit_code == 0, out.output
    curve = json.loads(out.output)["rf"]
    np.testing.assert_allclose(curve["samples"], stored["x"])


def test_cli_exit_codes_for_bad_files(tmp_path):
    import yaml

    np.save(tmp_path / "nan.npy", np.full((50, 4), np.nan))
    runner = CliRunner()
    for i, (name, data, code, words) in enumerate((
            ("nan", {}, 2, ["data.file", "nan.npy", "NaN"]),
            ("missing", {}, 1, ["missing.npy", "not found"]),
            # data.name from the spec file no longer applies: the file itself is judged
            ("nan", {"name": "usps"}, 2, ["data.file", "NaN"]))):
        spec = tmp_path / f"{name}.yaml"
        spec.write_text(yaml.safe_dump(_spec(tmp_path / f"{name}.npy", **data)))
        r = runner.invoke(cli, ["run", str(spec), "--out", str(tmp_path / f"out-{i}"), "-q"])
        assert r.exit_code == code, r.output
        assert all(w in r.output for w in words), r.output
        assert "Traceback" not in r.output
    # given on the command line, data.name with data.file is refused by name
    r = runner.invoke(cli, ["run", str(spec), "data.name=usps", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "spec key 'data.name'" in r.output, r.output
