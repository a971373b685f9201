"""mixlab's data sets: registry, install (mirror / download), parsed cache, transforms.

>>> from mixlab.data import load
>>> ds = load("usps", binarize=0.5)           # Dataset
>>> ds.train.X.shape, ds.train.X.dtype         # ((6291, 256), float32)
>>> ds.valid.y.dtype                           # int64

- Cache: ``$MIXLAB_DATA_DIR`` (default ``~/.cache/mixlab``) holds the source files as
  ``<cache>/<folder>/<file>`` and the parsed arrays as ``<cache>/parsed/<name>-<key>.npz``
  (``key`` hashes the source checksums and the parser version), so loads after the first are
  a single ``np.load``.
- ``MIXLAB_DATA_MIRROR=<dir>``: install from a local directory laid out like the cache
  (``usps/``, ``mnist/``, ``kdd99/``, ``fashion-mnist/``) instead of downloading. ``load``
  installs from the mirror (or from a system directory such as Debian's
  ``/usr/share/datasets/fashion-mnist``) automatically; it never downloads -- that is
  ``mixlab data fetch NAME`` (or :func:`fetch`).
- Spec keys shared by every paper: :data:`DATA_SCHEMA` / :func:`data_schema`, then
  :func:`load_from_spec`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..errors import DataError, SpecError
from ..spec.schema import REQUIRED, Param
from . import transforms
from .cache import (
    cache_path,
    data_dir,
    fetch_spec,
    get_spec,
    installed_alternative,
    local_alternative,
    make_temp,
    md5sum,
    mirror_dir,
    missing_error,
)
from .catalogue import DATASETS, NAMES, DatasetSpec, FileSpec

__all__ = [
    "DATASETS",
    "DATA_SCHEMA",
    "NAMES",
    "Dataset",
    "Split",
    "data_dir",
    "check_load_args",
    "data_schema",
    "fetch",
    "info",
    "load",
    "load_from_spec",
    "mirror_dir",
]

PARSED_FORMAT = 1  # bump when the layout of the parsed .npz files changes


class Split(NamedTuple):
    """One split: X (n, d) float32, y (n,) int64."""

    X: np.ndarray
    y: np.ndarray

    @property
    def n(self) -> int:
        """Number of examples."""
        return int(self.y.shape[0])


@dataclass
class Dataset:
    """A loaded data set. ``shape`` is the image shape (e.g. (16, 16)) or None (tabular data or
    after PCA); ``info`` records the source files, checksums, cache paths, split rule and the
    transforms applied (with fitted PCA parameters)."""

    name: str
    train: Split
    valid: Split
    test: Split
    shape: tuple[int, ...] | None
    info: dict = field(default_factory=dict)

    @property
    def dim(self) -> int:
        return int(self.train.X.shape[1])

    def splits(self) -> dict[str, Split]:
        return {"train": self.train, "valid": self.valid, "test": self.test}


# --- spec keys ----------------------------------------------------------------------------------

DATA_SCHEMA = {
    "name": Param(type=str, choices=NAMES, help="data set: " + ", ".join(NAMES)),
    "binarize": Param(None, float, lo=0, hi=1, nullable=True,
                      help="threshold t: pixels become 1 where intensity > t, else 0"),
    "classes": Param(None, list, item=int, lo=0, min_len=1, nullable=True,
                     help="keep only these labels (two: relabelled 0/1 in the given order)"),
    "pca": Param(None, int, lo=1, nullable=True,
                 help="project onto k principal components fitted on the training split"),
    "max_train": Param(None, int, lo=1, nullable=True,
                       help="keep only the first n training examples"),
}


def data_schema(name: Any = REQUIRED, **defaults: Any) -> dict:
    """A copy of :data:`DATA_SCHEMA` with other defaults, e.g. ``data_schema("usps",
    binarize=0.5)``; ``name`` may also narrow the choices: ``data_schema("mnist",
    choices=("mnist", "mnist-5k"))``."""
    choices = defaults.pop("choices", None)
    unknown = set(defaults) - set(DATA_SCHEMA)
    if unknown:
        raise TypeError(f"unknown data keys {sorted(unknown)}")
    out = dict(DATA_SCHEMA)
    out["name"] = dataclasses.replace(DATA_SCHEMA["name"], default=name,
                                      **({"choices": tuple(choices)} if choices else {}))
    for k, v in defaults.items():
        out[k] = dataclasses.replace(DATA_SCHEMA[k], default=v)
    return out


def check_load_args(name: str, classes=None, pca: int | None = None,
                    path: str = "data") -> int:
    """The checks :func:`load` makes of ``classes`` and ``pca`` that need only the registry
    (made at a run's start, before any data is read); a SpecError names ``<path>.<key>``.
    Returns the data's dimension after PCA."""
    spec = get_spec(name)
    if classes is not None:
        classes = [int(c) for c in classes]
        if len(set(classes)) != len(classes):
            raise SpecError(f"repeats a class: {classes}", f"{path}.classes")
        bad = [c for c in classes if not 0 <= c < spec.n_classes]
        if bad:
            raise SpecError(f"class(es) {bad} not in this data set (labels "
                            f"0..{spec.n_classes - 1})", f"{path}.classes")
    if pca is not None and int(pca) > spec.dim:
        raise SpecError(f"asks for {pca} components of {name}, whose examples have dimension "
                        f"{spec.dim}", f"{path}.pca")
    return int(pca) if pca is not None else spec.dim


def load_from_spec(d: dict, path: str = "data") -> Dataset:
    """``load(**d)`` for a validated ``data`` section of a spec; a SpecError names
    ``<path>.<key>``."""
    try:
        return load(d["name"], binarize=d.get("binarize"), classes=d.get("classes"),
                    pca=d.get("pca"), max_train=d.get("max_train"))
    except SpecError as exc:
        if exc.key is None:
            raise
        msg = str(exc).split(": ", 1)[1] if str(exc).startswith("spec key") else str(exc)
        raise SpecError(msg, f"{path}.{exc.key}") from None


# --- installing ---------------------------------------------------------------------------------


def fetch(name: str, force: bool = False, log=None) -> dict:
    """Install data set ``name`` into the cache (mirror, system dir, then download).

    ``force`` re-installs every file (a failed re-install keeps the previous copy). Returns
    :func:`info`. Raises DataError when no source works."""
    fetch_spec(get_spec(name), force=force, network=True, log=log)
    return info(name)


def _file_md5(f: FileSpec) -> str:
    return f.md5 if f.md5 is not None else md5sum(cache_path(f))


def _parsed_path(spec: DatasetSpec, alt: int) -> Path:
    h = hashlib.sha1(f"{spec.name}|{spec.version}|{PARSED_FORMAT}|{alt}".encode())
    for f in spec.alternatives[alt]:
        h.update(f"|{f.relpath}={_file_md5(f)}".encode())
    return data_dir() / "parsed" / f"{spec.name}-{h.hexdigest()[:16]}.npz"


def info(name: str) -> dict:
    """What is known about ``name``: split sizes, dims, files (URL, md5, cache path, installed),
    cache paths and whether it is installed."""
    spec = get_spec(name)
    alt = installed_alternative(spec)
    files = []
    for i, a in enumerate(spec.alternatives):
        for f in a:
            files.append({"file": f.relpath, "alternative": i, "url": f.url, "md5": f.md5,
                          "raw_md5": f.raw_md5, "note": f.note, "path": str(cache_path(f)),
                          "installed": cache_path(f).is_file()})
    parsed = _parsed_path(spec, alt) if alt is not None else None
    m = mirror_dir()
    return {
        "name": spec.name, "description": spec.description, "splits": dict(spec.splits),
        "dim": spec.dim, "shape": list(spec.shape) if spec.shape else None,
        "n_classes": spec.n_classes, "split_rule": spec.split_note,
        "installed": alt is not None, "alternative": alt,
        "installable_offline": local_alternative(spec) is not None,
        "files": files, "cache_dir": str(data_dir()),
        "parsed_cache": str(parsed) if parsed is not None else None,
        "parsed_cached": bool(parsed is not None and parsed.is_file()),
        "mirror": str(m) if m is not None else None, "system_dirs": list(spec.system_dirs),
        **spec.extra,
    }


# --- loading ------------------------------------------------------------------------------------

_SPLITS = ("train", "valid", "test")


def _check_arrays(spec: DatasetSpec, arrays: dict, where: str) -> None:
    for s in _SPLITS:
        X, y = arrays[f"X_{s}"], arrays[f"y_{s}"]
        if X.shape != (spec.splits[s], spec.dim) or y.shape != (spec.splits[s],):
            raise DataError(f"{where}: split '{s}' has shape {X.shape}/{y.shape}, expected "
                            f"({spec.splits[s]}, {spec.dim})")


def _read_parsed(spec: DatasetSpec, path: Path) -> dict | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        _check_arrays(spec, arrays, str(path))
        return arrays
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, DataError):
        return None  # unreadable or stale: parse again


def _write_parsed(path: Path, arrays: dict) -> None:
    """Cache the parsed arrays (temp file, fsync, rename). The cache only saves time: when it
    cannot be written (a full disk, a read-only cache) the load goes on without it and no
    partial file is left behind."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = make_temp(path.parent, path.stem)
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:
        pass
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def _parsed_arrays(spec: DatasetSpec) -> tuple[dict, int, Path]:
    alt = installed_alternative(spec)
    if alt is None:
        if local_alternative(spec) is None:
            raise missing_error(spec)
        alt = fetch_spec(spec, network=False)
    path = _parsed_path(spec, alt)
    arrays = _read_parsed(spec, path) if path.is_file() else None
    if arrays is None:
        files = {f.name: cache_path(f) for f in spec.alternatives[alt]}
        arrays = spec.parse(files, alt)
        _check_arrays(spec, arrays, f"parser of {spec.name}")
        _write_parsed(path, arrays)
    return arrays, alt, path


def pca_fit_cached(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`mixlab.data.transforms.pca_fit` of ``X (n, d)``, kept in the data cache under a
    hash of X's bytes and k (a full SVD of Fashion-MNIST's 10,024 training rows costs some 2.5 s
    of CPU, the hash some 0.05 s): the same mean (d,), components (k, d) and explained variance
    ratio (k,), bit for bit."""
    X = np.ascontiguousarray(X)
    h = hashlib.sha256(f"pca|{transforms.PCA_VERSION}|{k}|{X.dtype.str}|{X.shape}|".encode())
    h.update(X.data)
    path = data_dir() / "pca" / f"{h.hexdigest()[:32]}.npz"
    try:
        with np.load(path, allow_pickle=False) as z:
            mean, comps, ratio = z["mean"], z["components"], z["ratio"]
        if mean.shape == (X.shape[1],) and comps.shape == (k, X.shape[1]) \
                and ratio.shape == (k,):
            return mean, comps, ratio
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        pass                                    # absent, unreadable or stale: fit again
    mean, comps, ratio = transforms.pca_fit(X, k)
    _write_parsed(path, {"mean": mean, "components": comps, "ratio": ratio})
    return mean, comps, ratio


def _as_float(X: np.ndarray) -> np.ndarray:
    if X.dtype == np.uint8:
        return X.astype(np.float32) / np.float32(255.0)
    return np.asarray(X, dtype=np.float32)


def load(name: str, *, binarize: float | None = None, classes=None, pca: int | None = None,
         max_train: int | None = None) -> Dataset:
    """Load data set ``name`` with its standard train/valid/test split.

    X is float32 (n, d) -- intensities in [0, 1] for the image sets, standardised features for
    kdd99 -- and y int64 (n,). Transforms (see :mod:`mixlab.data.transforms`): ``classes``
    (list of labels to keep), ``max_train`` (first n training examples), ``binarize``
    (threshold in [0, 1]), ``pca`` (k components fitted on train). Installs from
    ``MIXLAB_DATA_MIRROR`` (or a system directory) when needed; never downloads. Raises
    DataError (missing / corrupt data) or SpecError (bad transform values)."""
    spec = get_spec(name)
    if binarize is not None and not spec.intensities:
        raise SpecError(f"'{name}' holds standardised features, not [0, 1] intensities; "
                        "binarize applies to image data sets only", "binarize")
    if binarize is not None and not 0 <= binarize <= 1:
        raise SpecError(f"must be in [0, 1], got {binarize}", "binarize")
    if max_train is not None and int(max_train) < 1:
        raise SpecError(f"must be >= 1, got {max_train}", "max_train")
    if pca is not None and int(pca) < 1:
        raise SpecError(f"must be >= 1, got {pca}", "pca")
    arrays, alt, parsed = _parsed_arrays(spec)
    splits = {s: (arrays[f"X_{s}"], arrays[f"y_{s}"].astype(np.int64)) for s in _SPLITS}
    applied: dict[str, Any] = {}
    if classes is not None:
        splits = transforms.keep_classes(splits, classes, spec.n_classes)
        applied["classes"] = [int(c) for c in classes]
    if max_train is not None:
        X, y = splits["train"]
        splits["train"] = (X[:int(max_train)], y[:int(max_train)])
        applied["max_train"] = int(max_train)
    splits = {s: (_as_float(X), y) for s, (X, y) in splits.items()}
    if binarize is not None:
        splits = {s: (transforms.binarize(X, binarize), y) for s, (X, y) in splits.items()}
        applied["binarize"] = float(binarize)
    shape = spec.shape
    pca_info = None
    if pca is not None:
        mean, comps, ratio = pca_fit_cached(splits["train"][0], int(pca))
        splits = {s: (transforms.pca_apply(X, mean, comps), y) for s, (X, y) in splits.items()}
        applied["pca"] = int(pca)
        pca_info = {"mean": mean.astype(np.float32), "components": comps.astype(np.float32),
                    "explained_variance_ratio": ratio}
        shape = None
    files = spec.alternatives[alt]
    meta = {k[5:]: v for k, v in arrays.items() if k.startswith("meta_")}
    ds_info = {
        "name": spec.name, "description": spec.description, "split_rule": spec.split_note,
        "sizes": {s: int(splits[s][1].shape[0]) for s in _SPLITS},
        "files": {f.relpath: {"md5": f.md5 or md5sum(cache_path(f)),
                              "md5_recorded": f.md5 is not None,
                              "path": str(cache_path(f)), "url": f.url} for f in files},
        "parsed_cache": str(parsed), "transforms": applied, "meta": meta,
    }
    if pca_info is not None:
        ds_info["pca"] = pca_info
    if spec.name.startswith("kdd99"):
        from .parsers import KDD_CATEGORIES, KDD_FEATURES

        ds_info["features"] = list(KDD_FEATURES)
        ds_info["categories"] = {KDD_FEATURES[c]: list(v) for c, v in KDD_CATEGORIES.items()}
        ds_info["labels"] = {0: "normal", 1: "attack"}
    return Dataset(spec.name, *(Split(*splits[s]) for s in _SPLITS), shape=shape, info=ds_info)
