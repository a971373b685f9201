"""A data file's declared size, checked against the read bound before anything is allocated.

A few megabytes can declare gigabytes: a gzipped IDX file of zeros whose header names 10^9
images, a ``.npy`` header naming a (10^6, 10^5) array, a CSV with 100,000 columns. Each reader
of a user's data file asks :func:`check_declared` with the bytes its result would hold (from
the IDX header, the ``.npy`` headers inside a file or an archive, or a CSV's columns x lines)
before reading the values; past :func:`mixlab.runfile.check.read_bound` (1 GiB or
``$MIXLAB_MAX_READ_BYTES``, lowered under ``ulimit -v``) the file is refused, naming the file,
the key and both sizes.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import SpecError
from ..runfile.check import read_bound

__all__ = ["check_declared", "check_npy_file", "check_npz_file", "count_lines",
           "npy_declared_bytes"]


def check_declared(path: Path, key: str, nbytes: int, what: str) -> None:
    """A SpecError naming ``key`` and ``path`` when ``nbytes`` (what reading ``path`` would
    allocate for ``what``) is past the read bound."""
    bound = read_bound()
    if nbytes > bound:
        raise SpecError(f"{path}: {what} would take {nbytes:,} bytes, more than the {bound:,} "
                        f"bytes mixlab reads from one file (set MIXLAB_MAX_READ_BYTES to allow "
                        f"more, or give a smaller file)", key)


def npy_declared_bytes(fh: BinaryIO, path: Path, key: str) -> tuple[int, tuple, np.dtype]:
    """``(bytes, shape, dtype)`` a ``.npy`` stream's header declares; a SpecError naming
    ``path`` and ``key`` when the header cannot be read."""
    try:
        version = np.lib.format.read_magic(fh)
        read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                else np.lib.format.read_array_header_2_0)     # 2.0 and 3.0 headers alike
        shape, _, dtype = read(fh)
    except Exception as exc:  # noqa: BLE001 - ValueError, EOFError, tokenize.TokenError ...
        raise SpecError(f"{path}: its .npy header cannot be read ({type(exc).__name__}: "
                        f"{str(exc)[:120]}); write the array with np.save", key) from None
    count = 1
    for d in shape:
        count *= int(d)
    return count * max(1, dtype.itemsize), tuple(shape), dtype


def check_npy_file(path: Path, key: str) -> None:
    """Refuse a ``.npy`` file whose header declares more than the read bound."""
    with open(path, "rb") as fh:
        nbytes, shape, dtype = npy_declared_bytes(fh, path, key)
    check_declared(path, key, nbytes, f"its {dtype} array of shape {shape}")


def check_npz_file(path: Path, key: str) -> None:
    """Refuse a ``.npz`` archive whose members' headers declare, together, more than the read
    bound (each member's header is read, never its values)."""
    total, shapes = 0, []
    try:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with z.open(info) as fh:
                    nbytes, shape, _ = npy_declared_bytes(fh, path, key)
                total += nbytes
                shapes.append(f"{info.filename[:-4]} {shape}")
    except (OSError, zipfile.BadZipFile, EOFError):
        return                                  # unreadable: the loader says why
    check_declared(path, key, total, f"its arrays ({', '.join(shapes[:4])})")


def count_lines(path: Path) -> int:
    """Newline characters in ``path``, read in 1 MiB pieces (no line is held)."""
    n = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            n += chunk.count(b"\n")
    return n
