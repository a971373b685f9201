"""Fixtures for the data layer: an isolated cache, the real mirror (or a skip), fake data sets."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from mixlab.data import catalogue as registry
from mixlab.data.catalogue import DatasetSpec, FileSpec

# The mirror the test run was started with (CI: MIXLAB_DATA_MIRROR=../shared/data, relative to
# the current directory), captured before the autouse fixture clears the variable.
_MIRROR_ENV = os.environ.get("MIXLAB_DATA_MIRROR")
REAL_MIRROR = Path(_MIRROR_ENV).expanduser().resolve() if _MIRROR_ENV else None


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own empty cache and no mirror (tests never touch ~/.cache)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(cache))
    monkeypatch.delenv("MIXLAB_DATA_MIRROR", raising=False)
    return cache


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory):
    """One cache for the tests that load the real data sets, so each is parsed once."""
    return tmp_path_factory.mktemp("real-cache")


def need_mirror_files(*relpaths: str) -> Path:
    if REAL_MIRROR is None:
        pytest.skip("MIXLAB_DATA_MIRROR is not set (point it at the local data mirror)")
    for rel in relpaths:
        if not (REAL_MIRROR / rel).is_file():
            pytest.skip(f"{REAL_MIRROR / rel} is absent from the mirror")
    return REAL_MIRROR


@pytest.fixture
def real(monkeypatch, shared_cache):
    """Use the real mirror and the session cache; call with the mirror files the test needs."""
    def use(*relpaths: str) -> Path:
        mirror = need_mirror_files(*relpaths)
        monkeypatch.setenv("MIXLAB_DATA_MIRROR", str(mirror))
        monkeypatch.setenv("MIXLAB_DATA_DIR", str(shared_cache))
        return mirror
    return use


def md5_bytes(b: bytes) -> str:
    return hashlib.md5(b).hexdigest()


def parse_fake(paths, alt):
    """Fake data set file: an .npz holding X_train, y_train, ... (X float32 in [0, 1])."""
    parse_fake.calls += 1
    with np.load(paths["fake.npz"]) as z:
        return {k: z[k] for k in z.files}


parse_fake.calls = 0


def fake_arrays(seed=0, n=(40, 10, 20), d=4):
    rng = np.random.default_rng(seed)
    out = {}
    for s, k in zip(("train", "valid", "test"), n):
        out[f"X_{s}"] = rng.random((k, d)).astype(np.float32)
        out[f"y_{s}"] = np.arange(k, dtype=np.int64) % 10
    return out


def npz_bytes(arrays, tmp_path: Path) -> bytes:
    p = tmp_path / "_tmp_fake.npz"
    np.savez(p, **arrays)
    b = p.read_bytes()
    p.unlink()
    return b


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """Register a tiny data set 'fake' (file fake/fake.npz) whose good bytes are in a fake mirror.

    Returns a namespace with: mirror (Path), good (bytes), arrays (dict), spec, file,
    register(arrays, url=None, intensities=True, n_classes=10) to re-register with other arrays,
    make_arrays(seed, n, d), md5(bytes), parse_calls() (how often the parser ran)."""
    class NS:
        pass

    ns = NS()
    ns.mirror = tmp_path / "mirror"
    (ns.mirror / "fake").mkdir(parents=True)

    def register(arrays, url=None, intensities=True, n_classes=10):
        good = npz_bytes(arrays, tmp_path)
        (ns.mirror / "fake" / "fake.npz").write_bytes(good)
        f = FileSpec("fake", "fake.npz", url, md5_bytes(good))
        sizes = {s: int(arrays[f"y_{s}"].shape[0]) for s in ("train", "valid", "test")}
        spec = DatasetSpec(name="fake", description="a fake data set", alternatives=((f,),),
                           parse=parse_fake, splits=sizes, dim=arrays["X_train"].shape[1],
                           shape=None, n_classes=n_classes, intensities=intensities,
                           split_note="fake")
        monkeypatch.setitem(registry.DATASETS, "fake", spec)
        ns.good, ns.arrays, ns.spec, ns.file = good, arrays, spec, f
        return ns

    ns.register = register
    ns.make_arrays = fake_arrays
    ns.md5 = md5_bytes
    ns.parse_calls = lambda: parse_fake.calls
    register(fake_arrays())
    return ns
