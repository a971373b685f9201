"""Transforms (classes, max_train, binarize, PCA) and the spec keys."""

from __future__ import annotations

import numpy as np
import pytest

from mixlab import data
from mixlab.errors import SpecError
from mixlab.spec.schema import validate


@pytest.fixture
def fake_mirror(fake, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_MIRROR", str(fake.mirror))
    return fake


def test_binarize(fake_mirror):
    raw = data.load("fake")
    b = data.load("fake", binarize=0.3)
    for r, s in zip(raw.splits().values(), b.splits().values()):
        assert s.X.dtype == np.float32
        assert set(np.unique(s.X)) <= {0.0, 1.0}
        np.testing.assert_array_equal(s.X, (r.X > 0.3).astype(np.float32))
    assert b.info["transforms"] == {"binarize": 0.3}


def test_binarize_refused_for_standardised_data(fake, monkeypatch):
    fake.register(fake.make_arrays(), intensities=False)
    with pytest.raises(SpecError, match="binarize"):
        data.load("fake", binarize=0.5)
    with pytest.raises(SpecError) as exc:   # checked before any data is needed, key prefixed
        data.load_from_spec({"name": "kdd99", "binarize": 0.5})
    assert exc.value.key == "data.binarize"


def test_classes_two_relabelled_in_given_order(fake_mirror):
    raw = data.load("fake")
    ds = data.load("fake", classes=[7, 3])
    for r, s in zip(raw.splits().values(), ds.splits().values()):
        keep = np.isin(r.y, [7, 3])
        np.testing.assert_array_equal(s.X, r.X[keep])
        np.testing.assert_array_equal(s.y, (r.y[keep] == 3).astype(np.int64))  # 7 -> 0, 3 -> 1
        assert s.y.dtype == np.int64
    ds2 = data.load("fake", classes=[3, 7])
    np.testing.assert_array_equal(ds2.train.y, 1 - ds.train.y)


def test_classes_three_keep_labels_and_errors(fake_mirror):
    ds = data.load("fake", classes=[1, 2, 5])
    assert set(ds.train.y) == {1, 2, 5}
    with pytest.raises(SpecError, match="not in this data set"):
        data.load("fake", classes=[3, 10])
    with pytest.raises(SpecError, match="repeats"):
        data.load("fake", classes=[3, 3])


def test_max_train_keeps_first_examples(fake_mirror):
    raw = data.load("fake")
    ds = data.load("fake", max_train=7)
    np.testing.assert_array_equal(ds.train.X, raw.train.X[:7])
    np.testing.assert_array_equal(ds.test.X, raw.test.X)     # other splits untouched


def test_pca_is_fitted_on_train_only(fake, monkeypatch):
    rng = np.random.default_rng(3)
    arrays = fake.make_arrays(n=(200, 50, 300), d=6)
    # test data lives far away along another direction: fitting on all rows would pick it up
    arrays["X_test"] = arrays["X_test"] + np.float32(5.0) * (rng.random((300, 1)) > 0.5) \
        * np.array([0, 0, 0, 0, 0, 1], np.float32)
    fake.register(arrays)
    monkeypatch.setenv("MIXLAB_DATA_MIRROR", str(fake.mirror))
    ds = data.load("fake", pca=3)
    assert ds.shape is None and ds.train.X.shape == (200, 3) and ds.test.X.shape == (300, 3)
    Xtr = arrays["X_train"].astype(np.float64)
    Z = ds.train.X.astype(np.float64)
    np.testing.assert_allclose(Z.mean(0), 0, atol=1e-5)           # centred on the train mean
    C = np.cov(Z.T)
    np.testing.assert_allclose(C - np.diag(np.diag(C)), 0, atol=1e-5)  # decorrelated on train
    top = np.linalg.eigvalsh(np.cov(Xtr.T))[::-1][:3]              # train's top variances
    np.testing.assert_allclose(np.diag(C), top, rtol=1e-4)
    comps = ds.info["pca"]["components"].astype(np.float64)
    np.testing.assert_allclose(comps @ comps.T, np.eye(3), atol=1e-5)
    np.testing.assert_allclose(ds.test.X, (arrays["X_test"] - Xtr.mean(0)) @ comps.T, atol=1e-4)


def test_pca_fit_is_kept_in_the_data_cache_bit_for_bit(fake_mirror, monkeypatch):
    first = data.load("fake", pca=2)
    fitted = sorted((data.data_dir() / "pca").glob("*.npz"))
    assert len(fitted) == 1

    def no_fit(*a):
        raise AssertionError("fitted again although the data cache holds the fit")

    with monkeypatch.context() as m:
        m.setattr(data.transforms, "pca_fit", no_fit)
        again = data.load("fake", pca=2)
    for a, b in ((first.train.X, again.train.X), (first.test.X, again.test.X),
                 (first.info["pca"]["components"], again.info["pca"]["components"])):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()

    fitted[0].write_bytes(b"not an npz")           # an unreadable fit is fitted again
    assert data.load("fake", pca=2).train.X.tobytes() == first.train.X.tobytes()
    data.load("fake", pca=3)                       # another k (or other rows): another fit
    data.load("fake", pca=2, max_train=20)
    assert len(list((data.data_dir() / "pca").glob("*.npz"))) == 3


def test_pca_after_binarize_and_errors(fake_mirror):
    ds = data.load("fake", binarize=0.5, pca=2)
    b = data.load("fake", binarize=0.5)
    np.testing.assert_allclose(ds.info["pca"]["mean"], b.train.X.mean(0), atol=1e-6)
    with pytest.raises(SpecError, match="components"):
        data.load("fake", pca=5)                   # dimension is 4


def test_data_schema_and_load_from_spec(fake_mirror):
    d = validate({"name": "usps", "binarize": 0.5}, data.DATA_SCHEMA, "data")
    assert d == {"name": "usps", "binarize": 0.5, "classes": None, "pca": None,
                 "max_train": None}
    for bad, key in (({"name": "usp"}, "data.name"), ({"name": "usps", "pca": 0}, "data.pca"),
                     ({"name": "usps", "binarize": 1.5}, "data.binarize"),
                     ({"name": "usps", "classes": ["a"]}, "data.classes[0]"),
                     ({"name": "usps", "max_train": 0}, "data.max_train"),
                     ({"name": "usps", "bnarize": 0.5}, "data.bnarize")):
        with pytest.raises(SpecError) as exc:
            validate(bad, data.DATA_SCHEMA, "data")
        assert exc.value.key == key
    with pytest.raises(SpecError, match="required"):
        validate({}, data.DATA_SCHEMA, "data")
    s = data.data_schema("mnist-5k", binarize=0.5, choices=("mnist", "mnist-5k"))
    assert validate({}, s, "data") == {"name": "mnist-5k", "binarize": 0.5, "classes": None,
                                       "pca": None, "max_train": None}
    with pytest.raises(SpecError):
        validate({"name": "usps"}, s, "data")
    ds = data.load_from_spec({"name": "fake", "classes": [7, 3], "max_train": 2})
    assert ds.train.n == 2 and ds.info["transforms"] == {"classes": [7, 3], "max_train": 2}
    with pytest.raises(SpecError) as exc:
        data.load_from_spec({"name": "fake", "classes": [11]}, path="model.data")
    assert exc.value.key == "model.data.classes"


def test_real_usps_transforms(real):
    real("usps/usps.h5")
    ds = data.load("usps", classes=[7, 9], binarize=0.5, pca=20)
    raw = data.load("usps")
    n79 = np.isin(raw.train.y, [7, 9]).sum()
    assert ds.train.X.shape == (n79, 20) and set(ds.train.y) == {0, 1}
