"""Install mechanics: checksums, atomic replace, mirror, download, missing data, parsed cache."""

from __future__ import annotations

import gzip
import io
import urllib.error

import numpy as np
import pytest

from mixlab import data
from mixlab.data import cache as store
from mixlab.data.catalogue import DATASETS, DatasetSpec, FileSpec
from mixlab.errors import DataError, UsageError


def _listing(d):
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def test_fetch_from_mirror_installs_verified_copy(fake, isolated_cache, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_MIRROR", str(fake.mirror))
    d = data.fetch("fake")
    assert d["installed"]
    assert (isolated_cache / "fake" / "fake.npz").read_bytes() == fake.good


def test_checksum_mismatch_keeps_previous_good_copy(fake, isolated_cache, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_MIRROR", str(fake.mirror))
    data.fetch("fake")
    installed = isolated_cache / "fake" / "fake.npz"
    bad = bytearray(fake.good)
    bad[-1] ^= 0xFF
    (fake.mirror / "fake" / "fake.npz").write_bytes(bytes(bad))
    with pytest.raises(DataError, match="checksum mismatch") as exc:
        data.fetch("fake", force=True)
    assert "previous copy" in str(exc.value)
    assert installed.read_bytes() == fake.good          # previous good copy kept
    assert _listing(installed.parent) == ["fake.npz"]   # no partial/temporary file left
    assert data.load("fake").train.X.shape == (40, 4)   # and it still loads


def test_first_install_with_bad_checksum_leaves_nothing(fake, isolated_cache, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_MIRROR", str(fake.mirror))
    (fake.mirror / "fake" / "fake.npz").write_bytes(fake.good[:-10])  # truncated
    with pytest.raises(DataError, match="checksum mismatch"):
        data.load("fake")                                 # load auto-installs from a mirror
    assert _listing(isolated_cache / "fake") == []
    assert not data.info("fake")["installed"]


def test_load_without_mirror_never_downloads(fake, monkeypatch):
    spec = DATASETS["fake"]
    url_file = FileSpec("fake", "fake.npz", "https://example.invalid/fake.npz", spec.files[0].md5)
    monkeypatch.setitem(DATASETS, "fake", DatasetSpec(**{**spec.__dict__,
                                                          "alternatives": ((url_file,),)}))

    def no_network(*a, **k):
        raise AssertionError("load must not download")
    monkeypatch.setattr(store, "urlopen", no_network)
    with pytest.raises(DataError) as exc:
        data.load("fake")
    msg = str(exc.value)
    assert "`mixlab data fetch fake`" in msg and "MIXLAB_DATA_MIRROR" in msg


def test_missing_real_dataset_names_the_fetch_command():
    for name in ("mnist", "usps", "kdd99"):
        with pytest.raises(DataError) as exc:
            data.load(name)
        assert f"mixlab data fetch {name}" in str(exc.value)
        assert "MIXLAB_DATA_MIRROR" in str(exc.value)


def test_download_through_file_url(fake, tmp_path, isolated_cache, monkeypatch):
    src = tmp_path / "site" / "fake.npz"
    src.parent.mkdir()
    src.write_bytes(fake.good)
    f = FileSpec("fake", "fake.npz", src.as_uri(), fake.md5(fake.good))
    monkeypatch.setitem(DATASETS, "fake", DatasetSpec(**{**fake.spec.__dict__,
                                                          "alternatives": ((f,),)}))
    data.fetch("fake")                                    # no mirror: downloads via urllib
    assert (isolated_cache / "fake" / "fake.npz").read_bytes() == fake.good
    np.testing.assert_array_equal(data.load("fake").test.X, fake.arrays["X_test"])


def test_download_with_wrong_bytes_is_rejected(fake, isolated_cache, monkeypatch):
    f = FileSpec("fake", "fake.npz", "https://example.invalid/fake.npz", fake.md5(fake.good))
    monkeypatch.setitem(DATASETS, "fake", DatasetSpec(**{**fake.spec.__dict__,
                                                          "alternatives": ((f,),)}))
    monkeypatch.setattr(store, "urlopen", lambda url, timeout=None: io.BytesIO(b"<html>"))
    with pytest.raises(DataError, match="checksum mismatch.*example.invalid"):
        data.fetch("fake")
    assert _listing(isolated_cache / "fake") == []


def test_download_failure_suggests_a_mirror(fake, isolated_cache, monkeypatch):
    f = FileSpec("fake", "fake.npz", "https://example.invalid/fake.npz", fake.md5(fake.good))
    monkeypatch.setitem(DATASETS, "fake", DatasetSpec(**{**fake.spec.__dict__,
                                                          "alternatives": ((f,),)}))

    def fail(url, timeout=None):
        raise urllib.error.URLError("no route to host")
    monkeypatch.setattr(store, "urlopen", fail)
    with pytest.raises(DataError, match="could not download.*MIXLAB_DATA_MIRROR"):
        data.fetch("fake")
    assert _listing(isolated_cache / "fake") == []


def test_relative_mirror_resolved_against_cwd(fake, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MIXLAB_DATA_MIRROR", "mirror")   # = tmp_path/mirror
    assert data.load("fake").valid.X.shape == (10, 4)


def test_recompressed_gzip_accepted_by_content_md5(fake, tmp_path):
    payload = bytes(range(256)) * 50
    original = gzip.compress(payload, mtime=1)
    recompressed = gzip.compress(payload, compresslevel=1, mtime=2)
    assert fake.md5(original) != fake.md5(recompressed)
    f = FileSpec("gz", "x.gz", None, fake.md5(original), raw_md5=fake.md5(payload))
    p = tmp_path / "x.gz"
    p.write_bytes(recompressed)
    store.verify(f, p)                                     # same content: accepted
    p.write_bytes(gzip.compress(payload[:-1]))
    with pytest.raises(DataError, match="checksum mismatch"):
        store.verify(f, p)


def test_parsed_cache_is_reused_and_rebuilt_when_corrupt(fake, isolated_cache, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_MIRROR", str(fake.mirror))
    before = fake.parse_calls()
    a = data.load("fake")
    assert fake.parse_calls() == before + 1
    b = data.load("fake")
    assert fake.parse_calls() == before + 1                  # second load: from the .npz cache
    np.testing.assert_array_equal(a.train.X, b.train.X)
    parsed = list((isolated_cache / "parsed").glob("fake-*.npz"))
    assert len(parsed) == 1 and data.info("fake")["parsed_cache"] == str(parsed[0])
    parsed[0].write_bytes(b"garbage")
    c = data.load("fake")
    assert fake.parse_calls() == before + 2
    np.testing.assert_array_equal(a.train.X, c.train.X)


def test_parsed_cache_keyed_by_source_checksum(fake, isolated_cache, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_MIRROR", str(fake.mirror))
    data.load("fake")
    fake.register(fake.make_arrays(seed=1))                     # new file, new md5
    data.fetch("fake", force=True)
    ds = data.load("fake")
    np.testing.assert_array_equal(ds.train.X, fake.arrays["X_train"])
    assert len(list((isolated_cache / "parsed").glob("fake-*.npz"))) == 2


def test_dtypes_and_info(fake, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_MIRROR", str(fake.mirror))
    ds = data.load("fake")
    for s in ds.splits().values():
        assert s.X.dtype == np.float32 and s.y.dtype == np.int64
    assert ds.info["files"]["fake/fake.npz"]["md5"] == fake.md5(fake.good)


def test_unknown_dataset_is_a_usage_error():
    with pytest.raises(UsageError, match="did you mean 'usps'"):
        data.load("ups")
