"""The real data sets (from the mirror; skipped with a reason when absent) and their parsers."""

from __future__ import annotations

import gzip
import io

import h5py
import numpy as np
import pytest

from mixlab import data
from mixlab.data import parsers
from mixlab.errors import DataError

# --- USPS ---------------------------------------------------------------------------------------


def test_usps_splits_and_ranges(real):
    mirror = real("usps/usps.h5")
    ds = data.load("usps")
    assert (ds.train.n, ds.valid.n, ds.test.n) == (6291, 1000, 2007)
    assert ds.shape == (16, 16) and ds.dim == 256
    with h5py.File(mirror / "usps/usps.h5") as f:
        Xtr, ytr = f["train/data"][:], f["train/target"][:]
        Xte = f["test/data"][:]
    np.testing.assert_array_equal(ds.train.X, Xtr[:6291])      # first 6291 = train
    np.testing.assert_array_equal(ds.valid.X, Xtr[6291:])      # last 1000 = valid
    np.testing.assert_array_equal(ds.valid.y, ytr[6291:])
    np.testing.assert_array_equal(ds.test.X, Xte)
    for s in ds.splits().values():
        assert s.X.dtype == np.float32 and s.y.dtype == np.int64
        assert s.X.min() >= 0 and s.X.max() <= 1
        assert set(np.unique(s.y)) == set(range(10))


def _write_zip(path, X, y):
    """The classic ESL format: 'label v1 ... v256' per line, v in [-1, 1]."""
    M = np.column_stack([y.astype(np.float64), X.astype(np.float64) * 2 - 1])
    buf = io.BytesIO()
    np.savetxt(buf, M, fmt="%.6f", delimiter=" ")
    path.write_bytes(gzip.compress(buf.getvalue(), compresslevel=1))


def test_usps_zip_files_give_the_same_data_as_usps_h5(real, tmp_path, monkeypatch):
    mirror = real("usps/usps.h5")
    h5 = data.load("usps")
    with h5py.File(mirror / "usps/usps.h5") as f:
        Xtr, ytr, Xte, yte = (f[k][:] for k in ("train/data", "train/target", "test/data",
                                                   "test/target"))
    zmirror = tmp_path / "zipmirror"
    (zmirror / "usps").mkdir(parents=True)
    _write_zip(zmirror / "usps/zip.train.gz", Xtr, ytr)
    _write_zip(zmirror / "usps/zip.test.gz", Xte, yte)
    monkeypatch.setenv("MIXLAB_DATA_MIRROR", str(zmirror))
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path / "zipcache"))
    z = data.load("usps")
    assert data.info("usps")["alternative"] == 1
    for a, b in zip(h5.splits().values(), z.splits().values()):
        np.testing.assert_allclose(a.X, b.X, atol=1e-6)
        np.testing.assert_array_equal(a.y, b.y)


def test_usps_zip_with_wrong_row_count_is_rejected(tmp_path, monkeypatch):
    zmirror = tmp_path / "zipmirror"
    (zmirror / "usps").mkdir(parents=True)
    X = np.zeros((10, 256))
    _write_zip(zmirror / "usps/zip.train.gz", X, np.zeros(10))
    _write_zip(zmirror / "usps/zip.test.gz", X, np.zeros(10))
    monkeypatch.setenv("MIXLAB_DATA_MIRROR", str(zmirror))
    with pytest.raises(DataError, match="expected 7291 rows"):
        data.fetch("usps")
    assert not data.info("usps")["installed"]


# --- MNIST 5k -----------------------------------------------------------------------------------


def test_mnist_5k_splits(real):
    mirror = real("mnist/mnist_5k.csv.gz", "mnist/t10k-images-idx3-ubyte.gz",
                  "mnist/t10k-labels-idx1-ubyte.gz")
    ds = data.load("mnist-5k")
    assert (ds.train.n, ds.valid.n, ds.test.n) == (4000, 1000, 10000)
    assert ds.shape == (28, 28) and ds.dim == 784
    assert np.bincount(ds.train.y).tolist() == [400] * 10
    assert np.bincount(ds.valid.y).tolist() == [100] * 10
    np.testing.assert_array_equal(ds.train.y[:20], np.tile(np.arange(10), 2))  # interleaved
    for s in ds.splits().values():
        assert s.X.min() == 0 and s.X.max() == 1
    # valid = the last 100 rows of each class in file order; train/valid disjoint, cover all
    rows = np.loadtxt(mirror / "mnist/mnist_5k.csv.gz", delimiter=",", dtype=np.int64)
    tr, va = ds.info["meta"]["train_rows"], ds.info["meta"]["valid_rows"]
    assert sorted(np.concatenate([tr, va]).tolist()) == list(range(5000))
    for c in range(10):
        idx = np.flatnonzero(rows[:, 784] == c)
        assert sorted(va[ds.valid.y == c].tolist()) == idx[-100:].tolist()
    np.testing.assert_allclose(ds.valid.X * 255, rows[va, :784], atol=1e-4)
    np.testing.assert_array_equal(ds.test.X * 255 // 1,
                                  parsers.read_idx(mirror / "mnist/t10k-images-idx3-ubyte.gz")
                                  .reshape(10000, -1).astype(np.float32) * 1)


# --- KDD Cup 99 ---------------------------------------------------------------------------------


def _reference_kdd(text: str):
    """Slow, obviously-correct parser for comparison."""
    X, y = [], []
    for line in text.strip().splitlines():
        f = line.split(",")
        row = []
        for j, v in enumerate(f[:41]):
            row.append(parsers.KDD_CATEGORIES[j].index(v) if j in parsers.KDD_CATEGORIES
                       else float(v))
        X.append(row)
        y.append(0 if f[41] == "normal." else 1)
    return np.array(X), np.array(y)


def _fake_kdd_lines(n, seed=0):
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        proto = rng.choice(parsers.KDD_CATEGORIES[1])
        service = rng.choice(parsers.KDD_CATEGORIES[2])
        flag = rng.choice(parsers.KDD_CATEGORIES[3])
        nums = [f"{rng.integers(0, 5000)}" if j % 3 else f"{rng.random():.2f}" for j in range(37)]
        nums[15] = "0"   # a constant column (num_outbound_cmds is constant in the real file)
        label = rng.choice(["normal.", "smurf.", "neptune."])
        lines.append(",".join([str(rng.integers(0, 100)), proto, service, flag] + nums + [label]))
    return lines


def test_kdd_parser_matches_reference_and_standardises_on_train(tmp_path):
    text = "\n".join(_fake_kdd_lines(57)) + "\n"
    p = tmp_path / "kddcup.data_10_percent.gz"
    p.write_bytes(gzip.compress(text.encode()))
    X, y = parsers.parse_kdd99_raw(p)
    Xr, yr = _reference_kdd(text)
    np.testing.assert_array_equal(X, Xr)
    np.testing.assert_array_equal(y, yr)
    out = parsers.parse_kdd99({p.name: p}, 0, holdout=True)
    test = np.arange(57) % 10 == 9
    assert out["X_train"].shape == (52, 41) and out["X_test"].shape == (5, 41)
    mean, std = Xr[~test].mean(0), Xr[~test].std(0)
    const = std == 0
    assert const[19]                      # the column we made constant
    np.testing.assert_allclose(out["X_train"].mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(out["X_train"].std(0)[~const], 1, atol=1e-5)
    assert np.all(out["X_train"][:, const] == 0) and np.all(out["X_test"][:, const] == 0)
    # the test rows use the train mean/std, not their own
    np.testing.assert_allclose(out["X_test"], (Xr[test] - mean) / np.where(const, 1, std),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out["y_test"], yr[test])
    full = parsers.parse_kdd99({p.name: p}, 0, holdout=False)   # kdd99-full: all rows, in order
    assert full["X_train"].shape == (57, 41) and full["X_test"].shape == (0, 41)
    sd_all = np.where(Xr.std(0) > 0, Xr.std(0), 1.0)
    np.testing.assert_allclose(full["X_train"], (Xr - Xr.mean(0)) / sd_all, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(full["y_train"], yr)


def test_kdd_parser_rejects_unknown_category_and_bad_rows(tmp_path):
    lines = _fake_kdd_lines(3)
    bad = lines[0].split(",")
    bad[2] = "gopherish"
    p = tmp_path / "k.gz"
    p.write_bytes(gzip.compress(("\n".join([",".join(bad)] + lines[1:]) + "\n").encode()))
    with pytest.raises(DataError, match="unknown service"):
        parsers.parse_kdd99_raw(p)
    p.write_bytes(gzip.compress(("\n".join(lines) + ",1\n").encode()))
    with pytest.raises(DataError, match="42 comma-separated"):
        parsers.parse_kdd99_raw(p)
    row = lines[0].split(",")
    row[5] = "1x5"
    p.write_bytes(gzip.compress((",".join(row) + "\n").encode()))
    with pytest.raises(DataError, match="malformed"):
        parsers.parse_kdd99_raw(p)


def _decimal(rng):
    """A plain decimal of 1..15 digits with the '.' anywhere (or none)."""
    digits = "".join(map(str, rng.integers(0, 10, rng.integers(1, 16))))
    dot = int(rng.integers(0, len(digits) + 1))
    return digits if rng.random() < 0.3 else (digits[:dot] + "." + digits[dot:]).strip(".") or "0"


def test_kdd_parser_numbers_equal_float_bit_for_bit_and_row_shapes_are_checked(tmp_path):
    rng = np.random.default_rng(3)
    lines = []
    for line in _fake_kdd_lines(400, seed=1):
        f = line.split(",")
        f[0] = _decimal(rng)
        f[4:41] = [_decimal(rng) for _ in range(37)]
        lines.append(",".join(f))
    text = "\n".join(lines) + "\n"
    p = tmp_path / "k.gz"
    p.write_bytes(gzip.compress(text.encode()))
    X, y = parsers.parse_kdd99_raw(p)
    Xr, yr = _reference_kdd(text)          # float(): correctly rounded
    np.testing.assert_array_equal(X.view(np.int64), Xr.view(np.int64))
    np.testing.assert_array_equal(y, yr)
    short, long = lines[1].rsplit(",", 2)[0] + ",normal.", lines[2] + ",7"
    for rows in ([lines[0], short, long], [lines[0], short]):
        p.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
        with pytest.raises(DataError, match="42 comma-separated"):
            parsers.parse_kdd99_raw(p)
    for col, match in ((7, "malformed numeric data: wrong_fragment field ''"),
                       (1, "empty protocol_type field"), (41, "empty label field")):
        row = lines[0].split(",")
        row[col] = ""
        p.write_bytes(gzip.compress((",".join(row) + "\n" + lines[1] + "\n").encode()))
        with pytest.raises(DataError, match=match):
            parsers.parse_kdd99_raw(p)


def test_kdd99_real(real):
    real("kdd99/kddcup.data_10_percent.gz")
    ds = data.load("kdd99")
    assert (ds.train.n, ds.valid.n, ds.test.n) == (444619, 0, 49402)
    assert ds.shape is None and ds.dim == 41 and ds.valid.X.shape == (0, 41)
    X = ds.train.X.astype(np.float64)
    np.testing.assert_allclose(X.mean(0), 0, atol=1e-4)
    sd = X.std(0)
    assert np.all((np.abs(sd - 1) < 1e-3) | (sd == 0))
    assert (sd == 0).sum() >= 1            # num_outbound_cmds is constant in this file
    # labels: 97,278 normal rows in the 10% file, the other 396,743 are attacks
    assert int(ds.train.y.sum() + ds.test.y.sum()) == 396743
    assert set(np.unique(ds.test.y)) == {0, 1}
    assert ds.info["categories"]["protocol_type"] == ["icmp", "tcp", "udp"]


# --- IDX ----------------------------------------------------------------------------------------


def test_idx_reader_rejects_truncated_files(tmp_path):
    header = bytes([0, 0, 8, 3]) + np.array([2, 3, 3], ">u4").tobytes()
    p = tmp_path / "x-idx3-ubyte.gz"
    p.write_bytes(gzip.compress(header + bytes(range(18))))
    np.testing.assert_array_equal(parsers.read_idx(p), np.arange(18).reshape(2, 3, 3))
    p.write_bytes(gzip.compress(header + bytes(range(17))))
    with pytest.raises(DataError, match="IDX payload"):
        parsers.read_idx(p)
    p.write_bytes(gzip.compress(header + bytes(range(18)))[:-5])
    with pytest.raises(DataError, match="cannot read"):
        parsers.read_idx(p)


def test_fashion_mnist_from_debian_if_installed(monkeypatch, shared_cache):
    import os

    d = "/usr/share/datasets/fashion-mnist"
    if not os.path.isfile(f"{d}/train-images-idx3-ubyte.gz"):
        pytest.skip("Debian package dataset-fashion-mnist is not installed")
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(shared_cache))
    ds = data.load("fashion-mnist")       # installed from the system dir (content md5 verified)
    assert (ds.train.n, ds.valid.n, ds.test.n) == (50000, 10000, 10000)
    assert np.bincount(ds.test.y).tolist() == [1000] * 10
    assert ds.train.X.min() == 0 and ds.train.X.max() == 1

