"""A user's own table for the logistic-regression posterior: ``data: {file: ...}`` in a spec.

Formats (chosen by the file's suffix):

* ``.csv``: a header row of column names, then one row per example, comma-separated numbers.
* ``.npz``: one 1-D numeric array per column, named by the column (``np.savez(f, x1=..., y=...)``).
* ``.npy``: one 2-D numeric array (rows = examples); columns are named by their index
  (``label: 0``, ``features: [1, 2, 3]``).

``label`` names the 0/1 label column; ``features`` the feature columns in order (null: every
other column, in file order).  Files are loaded with ``allow_pickle=False``: nothing in them is
executed.  Problems with what the spec asks for (a missing column, labels that are not 0/1, NaN
or inf, an empty table, wrong shapes, a file that does not exist) raise :class:`SpecError` naming
the file and the key (exit 2); a file that exists but cannot be read or parsed raises
:class:`DataError` (exit 1).
"""

from __future__ import annotations

import csv
import hashlib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import DataError, SpecError
from .declared import check_declared, check_npy_file, check_npz_file, count_lines

SUFFIXES = (".csv", ".npy", ".npz")


@dataclass(frozen=True)
class Table:
    """``X (n, d)`` float64 features in the order of ``columns``, ``y (n,)`` int64 0/1 labels,
    ``path`` and the SHA-256 of the file (recorded with the run)."""

    X: np.ndarray
    y: np.ndarray
    columns: list[str]
    path: Path
    sha256: str


def _columns_csv(path: Path, key: str) -> dict[str, np.ndarray]:
    try:
        with open(path, newline="") as fh:
            width = len(next(csv.reader([fh.readline()]), []))
        lines = count_lines(path)
        # the float64 table its header's columns x its lines declare, before any row is held
        check_declared(path, key, 8 * width * lines,
                       f"a table of {width:,} columns x {lines:,} lines (float64)")
        with open(path, newline="") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"cannot read {path} ({key}): {exc}. Give a readable CSV file with a "
                        f"header row of column names.") from None
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise SpecError(f"{path} is empty: it needs a header row of column names and at least "
                        f"one data row", key)
    header = [c.strip() for c in rows[0]]
    if len(set(header)) != len(header):
        raise SpecError(f"{path}: the header repeats a column name ({header}); give every column "
                        f"a distinct name", key)
    body = rows[1:]
    if not body:
        raise SpecError(f"{path} has a header but no data rows", key)
    for i, r in enumerate(body, start=2):
        if len(r) != len(header):
            raise SpecError(f"{path} line {i} has {len(r)} fields but the header has "
                            f"{len(header)}; every row needs one value per column", key)
    cols: dict[str, np.ndarray] = {}
    for j, name in enumerate(header):
        try:
            cols[name] = np.array([float(r[j]) for r in body], dtype=np.float64)
        except ValueError:
            bad = next(i for i, r in enumerate(body, start=2) if not _is_float(r[j]))
            raise SpecError(f"{path} line {bad}, column '{name}': '{body[bad - 2][j]}' is not a "
                            f"number; the table must hold numbers only (encode categories as "
                            f"0/1 columns)", key) from None
    return cols


def _is_float(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _check_magic(path: Path, magic: bytes, what: str, fix: str, key: str) -> None:
    """A file that is not what its suffix says is refused before numpy looks at it (numpy would
    otherwise take it for a pickle, which is never loaded)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(magic))
    except OSError as exc:
        raise DataError(f"cannot read {path} ({key}): {exc}") from None
    if head != magic:
        raise DataError(f"cannot read {path} ({key}): it is not {what}; {fix}, or as a .csv "
                        f"file")


def _columns_npy(path: Path, key: str) -> dict[str, np.ndarray]:
    _check_magic(path, b"\x93NUMPY", "a .npy array",
                 "save the table with np.save as a 2-D numeric array", key)
    check_npy_file(path, key)
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read {path} ({key}) as a .npy array ({str(exc).rstrip('.')}); "
                        f"save it with np.save as a 2-D numeric array (object arrays are never "
                        f"unpickled)") from None
    if arr.ndim != 2 or arr.dtype.kind not in "biuf":
        raise SpecError(f"{path} holds a {arr.ndim}-D {arr.dtype} array; a .npy table must be "
                        f"a 2-D numeric array (rows = examples, columns named 0, 1, ...)", key)
    if arr.shape[0] == 0:
        raise SpecError(f"{path} has no rows", key)
    return {str(j): arr[:, j].astype(np.float64) for j in range(arr.shape[1])}


def _columns_npz(path: Path, key: str) -> dict[str, np.ndarray]:
    _check_magic(path, b"PK", "a .npz archive (a zip file)",
                 "save the table with np.savez, one 1-D array per column", key)
    check_npz_file(path, key)
    try:
        with np.load(path, allow_pickle=False) as z:
            cols = {name: z[name] for name in z.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise DataError(f"cannot read {path} ({key}) as a .npz archive ({str(exc).rstrip('.')}); "
                        f"save it with np.savez, one 1-D numeric array per column (object arrays "
                        f"are never unpickled)") from None
    if not cols:
        raise SpecError(f"{path} holds no arrays; save one 1-D array per column", key)
    lengths = set()
    for name, a in cols.items():
        if a.ndim != 1 or a.dtype.kind not in "biuf":
            raise SpecError(f"{path}: array '{name}' is a {a.ndim}-D {a.dtype} array; a .npz "
                            f"table holds one 1-D numeric array per column", key)
        lengths.add(a.shape[0])
    if len(lengths) != 1:
        raise SpecError(f"{path}: the columns have different lengths {sorted(lengths)}; every "
                        f"column needs one value per example", key)
    if lengths == {0}:
        raise SpecError(f"{path} has no rows", key)
    return {name: a.astype(np.float64) for name, a in cols.items()}


def read_table(file: str | Path, label: str, features: list[str] | None,
               key: str = "data.file") -> Table:
    """Read ``file`` and pick the ``label`` and ``features`` columns (see the module doc)."""
    path = Path(file).expanduser()
    if path.suffix.lower() not in SUFFIXES:
        raise SpecError(f"{path}: unknown table format '{path.suffix}'; give a .csv (with a "
                        f"header row), .npz (one array per column) or .npy (2-D array) file", key)
    if not path.is_file():
        raise SpecError(f"{path} does not exist (relative paths are from the working "
                        f"directory {Path.cwd()})", key)
    reader = {".csv": _columns_csv, ".npy": _columns_npy, ".npz": _columns_npz}
    cols = reader[path.suffix.lower()](path, key)
    label = str(label)
    lkey = key.rsplit(".", 1)[0] + ".label"
    fkey = key.rsplit(".", 1)[0] + ".features"
    if label not in cols:
        raise SpecError(f"{path} has no column '{label}'; its columns: {', '.join(cols)}", lkey)
    names = [c for c in cols if c != label] if features is None else [str(f) for f in features]
    missing = [c for c in names if c not in cols]
    if missing:
        raise SpecError(f"{path} has no column(s) {', '.join(repr(c) for c in missing)}; its "
                        f"columns: {', '.join(cols)}", fkey)
    if label in names:
        raise SpecError(f"the label column '{label}' is also listed as a feature", fkey)
    if not names:
        raise SpecError(f"{path}: no feature columns besides the label '{label}'", fkey)
    if len(set(names)) != len(names):
        raise SpecError(f"lists a column twice: {names}", fkey)
    y = cols[label]
    X = np.stack([cols[c] for c in names], axis=1)
    for what, arr, k in (("label", y[:, None], lkey), ("features", X, fkey)):
        bad = ~np.isfinite(arr)
        if bad.any():
            r, c = map(int, np.argwhere(bad)[0])
            col = label if what == "label" else names[c]
            raise SpecError(f"{path}: {int(bad.sum())} NaN/inf value(s) in the {what}, first in "
                            f"column '{col}' row {r + 1}; remove or impute them", k)
    if not np.isin(y, (0.0, 1.0)).all():
        vals = np.unique(y)
        raise SpecError(f"{path}: the label column '{label}' must hold 0/1 values, found "
                        f"{', '.join(f'{v:g}' for v in vals[:6])}{' ...' if len(vals) > 6 else ''}"
                        f"; recode it to 0/1", lkey)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return Table(X, y.astype(np.int64), names, path, digest)


FEATURE_BOUND = 1e7   # unstandardised features: as the model magnitudes of mixlab.spec.magnitude


def split_and_standardize(train: Table, test: Table | None, test_fraction: float | None,
                          standardize: bool, seed: int, key: str = "data"):
    """Training and test arrays: the test rows are ``test``'s, or a random ``test_fraction`` of
    ``train``'s rows (``seed``).  With ``standardize``, every feature is centred and scaled by the
    mean and standard deviation of the *training* rows (a constant column is only centred).

    Returns X (n, d) float32, y (n,), X_test (m, d) float32, y_test (m,)."""
    X, y = train.X, train.y
    if test is not None:
        if test.columns != train.columns:
            raise SpecError(f"{test.path} has feature columns {test.columns}, {train.path} has "
                            f"{train.columns}: they must match", f"{key}.test_file")
        Xt, yt = test.X, test.y
    else:
        n = X.shape[0]
        m = int(round(test_fraction * n))
        if m < 1 or m >= n:
            raise SpecError(f"{test_fraction} of {n} rows leaves {m} test and {n - m} training "
                            f"rows; each needs at least one", f"{key}.test_fraction")
        perm = np.random.default_rng(seed).permutation(n)
        te, tr = np.sort(perm[:m]), np.sort(perm[m:])
        X, y, Xt, yt = X[tr], y[tr], X[te], y[te]
    if len(np.unique(y)) < 2:
        raise SpecError(f"the training rows of {train.path} hold only label {int(y[0])}; a "
                        f"logistic regression needs both 0 and 1", f"{key}.label")
    if standardize:
        # each column divided by its largest |value| first, so that the squares of a column
        # of 1e200s do not overflow: (x - mean) / sd is unchanged by that scale
        scale = np.max(np.abs(np.concatenate([X, Xt])), axis=0)
        scale = np.where(scale > 0, scale, 1.0)
        Xs, Xts = X / scale, Xt / scale
        mu = Xs.mean(axis=0)
        sd = Xs.std(axis=0)
        sd = np.where(sd > 0, sd, 1.0)
        X, Xt = (Xs - mu) / sd, (Xts - mu) / sd
    else:
        big = float(np.max(np.abs(np.concatenate([X, Xt])), initial=0.0))
        if big > FEATURE_BOUND:
            raise SpecError(f"{train.path}: a feature value of {big:.3g} is past {FEATURE_BOUND:.0e},"
                            f" where the model's logits (features times coefficients, in float32 "
                            f"and float64) lose their accuracy; standardise the features "
                            f"({key}.standardize: true) or scale them down",
                            f"{key}.standardize")
    return X.astype(np.float32), y, Xt.astype(np.float32), yt
