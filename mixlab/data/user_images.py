"""A user's own image set for the RBM experiments: ``data: {file: images.npy | .npz | IDX}``.

Accepted files (intensities in [0, 1], one image per row):

- ``.npy``: one array (N, D) or (N, rows, cols);
- ``.npz``: arrays ``train`` (required), ``valid`` and ``test`` (the splits as given), or a single
  array of any name (split by fraction, as a ``.npy``);
- IDX (``*-ubyte``, ``*.idx``, optionally gzipped; the MNIST format): unsigned bytes (N, rows,
  cols), scaled by 1/255.

Splits not given in the file are cut from the end of the rows, in file order: the last
``round(test_fraction · N)`` rows are the test set, the ``round(valid_fraction · N)`` before
them the validation set, the rest the training set.  Arrays are read with
``np.load(..., allow_pickle=False)``: nothing in a data file is ever executed.

Errors: a file that is missing or cannot be read raises :class:`DataError` (exit 1); a file whose
content is not what a spec needs (wrong ndim, empty, NaN or inf, values outside [0, 1], splits
of different widths, an empty split) raises :class:`SpecError` naming the file and the spec key
(exit 2).
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import numpy as np

from ..errors import DataError, SpecError
from . import Dataset, Split, transforms
from .declared import check_declared, check_npy_file, check_npz_file
from .parsers import read_idx

SPLITS = ("train", "valid", "test")


def check_image_file(path: str | Path, key: str = "data.file") -> Path:
    """``path`` expanded, or a DataError naming ``key`` when there is no such file (the check
    a run makes before reading it, made by ``--dry-run`` too)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DataError(f"{key}: data file {p} not found (give a path to a .npy, .npz or IDX "
                        "file; relative paths are taken from the working directory)")
    return p


def load_user_images(path: str | Path, *, binarize: float | None = None,
                     valid_fraction: float = 0.1, test_fraction: float = 0.1,
                     max_train: int | None = None, key: str = "data.file") -> Dataset:
    """The image set in ``path`` as a :class:`mixlab.data.Dataset` (X float32 (n, D); labels
    all 0; binarised at ``binarize`` when given; ``shape`` the image shape when the file has
    one or D is a perfect square).  ``key`` is the spec key named in errors."""
    p = check_image_file(path, key)
    arrays, given = _read(p, key)
    shape = None
    for name, A in arrays.items():
        arrays[name], s = _check(A, f"{p}" + (f" (array '{name}')" if given else ""), key)
        shape = shape or s
    widths = {name: A.shape[1] for name, A in arrays.items()}
    if len(set(widths.values())) > 1:
        raise SpecError(f"{p}: the splits have different numbers of pixels {widths}; every "
                        "array must have the same width D", key)
    if given:
        for name in ("valid", "test"):
            if name not in arrays:
                raise SpecError(f"{p} holds 'train' but no '{name}' array: add it (the "
                                "experiments need train, valid and test), or store one array "
                                "and let data.valid_fraction/test_fraction split it", key)
        splits = {name: arrays[name] for name in SPLITS}
    else:
        splits = _split(next(iter(arrays.values())), p, key, valid_fraction, test_fraction)
    if max_train is not None:
        splits["train"] = splits["train"][:max_train]
    if binarize is not None:
        splits = {k: transforms.binarize(v, binarize) for k, v in splits.items()}
    D = splits["train"].shape[1]
    if shape is None:
        side = int(round(D ** 0.5))
        shape = (side, side) if side * side == D else None
    info = {"file": str(p.resolve()), "sha256": _sha256(p),
            "splits": "as given in the file" if given else
            f"last {test_fraction:g} test, the {valid_fraction:g} before valid (file order)",
            "binarize": binarize, "max_train": max_train}
    return Dataset(name=p.name, **{k: Split(v, np.zeros(v.shape[0], np.int64))
                                   for k, v in splits.items()},
                   shape=shape, info=info)


def _read(p: Path, key: str) -> tuple[dict[str, np.ndarray], bool]:
    """({name: array}, whether the file gives the splits)."""
    suffix = p.suffix.lower()
    if suffix in (".npy", ".npz"):
        magic = b"\x93NUMPY" if suffix == ".npy" else b"PK"
        try:
            with open(p, "rb") as fh:
                head = fh.read(len(magic))
        except OSError as exc:
            raise DataError(f"cannot read {p}: {exc}") from None
        if head != magic:
            raise DataError(f"cannot read {p}: not a {suffix} file (it does not start like one; "
                            f"write it with np.{'save' if suffix == '.npy' else 'savez'})")
        (check_npy_file if suffix == ".npy" else check_npz_file)(p, key)   # before allocating
        try:
            obj = np.load(p, allow_pickle=False)
        except ValueError as exc:
            if "pickle" in str(exc).lower():
                raise SpecError(f"{p} holds Python objects (a pickled array), which mixlab never "
                                "loads: save a numeric array (np.save(file, X.astype("
                                "np.float32)))", key) from None
            raise DataError(f"cannot read {p}: {exc}") from None
        except (OSError, EOFError, zipfile.BadZipFile) as exc:
            raise DataError(f"cannot read {p}: {exc}") from None
        if isinstance(obj, np.ndarray):
            return {"array": obj}, False
        with obj:
            try:
                arrays = {name: obj[name] for name in obj.files}
            except ValueError:
                raise SpecError(f"{p} holds Python objects (a pickled array), which mixlab "
                                "never loads: save numeric arrays", key) from None
            except (OSError, EOFError, zipfile.BadZipFile) as exc:
                raise DataError(f"cannot read {p}: {exc}") from None
        if not arrays:
            raise SpecError(f"{p} holds no arrays", key)
        if any(name in arrays for name in SPLITS):
            if "train" not in arrays:
                raise SpecError(f"{p} holds {', '.join(sorted(arrays))} but no 'train' array",
                                key)
            extra = sorted(set(arrays) - set(SPLITS))
            if extra:
                raise SpecError(f"{p}: unexpected arrays {', '.join(extra)} beside the splits "
                                "(expected train, valid, test)", key)
            return arrays, True
        if len(arrays) > 1:
            raise SpecError(f"{p} holds several arrays ({', '.join(sorted(arrays))}): name them "
                            "train, valid and test, or store a single array", key)
        return arrays, False
    # anything else: an IDX file of unsigned bytes (MNIST format), maybe gzipped
    try:
        X = read_idx(p, key)
    except DataError as exc:
        raise SpecError(f"{exc}: data.file takes a .npy, a .npz or an IDX file of unsigned "
                        "bytes", key) from None
    check_declared(p, key, X.size * 4, "its images as float32")
    return {"array": X.astype(np.float32) / np.float32(255.0)}, False


def _check(A: np.ndarray, p: str, key: str) -> tuple[np.ndarray, tuple | None]:
    """(N, D) float32 from (N, D) or (N, rows, cols) intensities in [0, 1], and the image shape."""
    if A.dtype.kind not in "biuf":
        raise SpecError(f"{p}: array of dtype {A.dtype}; expected numbers in [0, 1]", key)
    if A.ndim not in (2, 3):
        raise SpecError(f"{p}: array of shape {A.shape}; expected (N, D) images as rows, or "
                        "(N, rows, cols)", key)
    if A.shape[0] == 0 or A.size == 0:
        raise SpecError(f"{p}: the array {A.shape} is empty", key)
    shape = tuple(int(s) for s in A.shape[1:]) if A.ndim == 3 else None
    X = np.asarray(A, np.float32).reshape(A.shape[0], -1)
    bad = ~np.isfinite(X)
    if bad.any():
        row = int(np.argwhere(bad)[0][0])
        raise SpecError(f"{p}: {int(bad.sum())} NaN or infinite value(s) (first in row {row}); "
                        "every pixel must be a number in [0, 1]", key)
    lo, hi = float(X.min()), float(X.max())
    if lo < 0 or hi > 1:
        hint = " (bytes 0-255? divide by 255)" if hi <= 255 and lo >= 0 else ""
        raise SpecError(f"{p}: values in [{lo:g}, {hi:g}]; pixels must lie in [0, 1]{hint}", key)
    return X, shape


def _split(X: np.ndarray, p: Path, key: str, valid_fraction: float, test_fraction: float
           ) -> dict[str, np.ndarray]:
    N = X.shape[0]
    n_test = int(round(test_fraction * N))
    n_valid = int(round(valid_fraction * N))
    n_train = N - n_valid - n_test
    if n_test < 1 or n_valid < 1 or n_train < 1:
        raise SpecError(f"{p} has {N} rows: valid_fraction {valid_fraction:g} and test_fraction "
                        f"{test_fraction:g} leave {n_train} train, {n_valid} valid, {n_test} "
                        "test rows; every split needs at least one (change the fractions or "
                        "give train/valid/test arrays in a .npz)", key.rsplit(".", 1)[0])
    return {"train": X[:n_train], "valid": X[n_train:n_train + n_valid],
            "test": X[n_train + n_valid:]}


def _sha256(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
