"""A data file whose declared size (IDX header, .npy/.npz headers, CSV columns x lines) is past
the read bound is refused before anything is allocated, naming the file and the key (exit 2),
by the dry run as by the run; under the bound the same file is read."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest
from click.testing import CliRunner

from mixlab.cli import cli

IMAGES = ["run", "rates_fpcd/fig2", "data.name=null", "--dry-run"]
TABLE = ["run", "austerity/fig3", "data.label=y", "--dry-run"]


def _idx(path, n, rows=10, cols=10, zipped=True):
    data = struct.pack(">BBBB", 0, 0, 8, 3) + struct.pack(">III", n, rows, cols)
    data += bytes(((np.arange(n * rows * cols) % 2) * 255).astype(np.uint8))
    path.write_bytes(gzip.compress(data) if zipped else data)


def _run(args, bound=None):
    env = {"MIXLAB_MAX_READ_BYTES": str(bound)} if bound else {}
    r = CliRunner().invoke(cli, args, env=env)
    return r.exit_code, r.output


def test_an_idx_header_past_the_bound_is_refused_before_reading(tmp_path):
    p = tmp_path / "big.idx.gz"
    _idx(p, 2000)                                   # 200,000 bytes of images, 1 KB gzipped
    code, out = _run([*IMAGES, f"data.file={p}"], bound=100_000)
    assert code == 2 and "spec key 'data.file'" in out and str(p) in out, out
    assert "200,000 bytes" in out and "more than the 100,000 bytes" in out, out
    code, out = _run([*IMAGES, f"data.file={p}"], bound=10_000_000)
    assert code == 0, out


def test_a_lying_idx_header_asks_for_nothing(tmp_path):
    """The header names 6 GiB; the file holds 300 bytes: refused from the header alone."""
    p = tmp_path / "bomb.idx.gz"
    p.write_bytes(gzip.compress(struct.pack(">BBBBIII", 0, 0, 8, 3, 100_000, 200, 300)
                                + bytes(300)))
    code, out = _run([*IMAGES, f"data.file={p}"])
    assert code == 2 and "6,000,000,000 bytes" in out and "MemoryError" not in out, out


@pytest.mark.parametrize("suffix", [".npy", ".npz"])
def test_a_numpy_header_past_the_bound_is_refused(tmp_path, suffix):
    p = tmp_path / f"big{suffix}"
    X = (np.arange(4000 * 16).reshape(4000, 16) % 2).astype(np.float32)   # 256,000 bytes
    np.save(p, X) if suffix == ".npy" else np.savez(p, array=X)
    code, out = _run([*IMAGES, f"data.file={p}"], bound=100_000)
    assert code == 2 and "spec key 'data.file'" in out and "256,000 bytes" in out, out
    code, out = _run([*IMAGES, f"data.file={p}"], bound=10_000_000)
    assert code == 0, out


@pytest.mark.parametrize("suffix", [".npy", ".npz"])
def test_a_lying_numpy_header_is_refused_from_the_header(tmp_path, suffix):
    """The header names a (10^6, 10^5) float64 array (800 GB); the file holds 48 bytes."""
    one = tmp_path / "one.npy"
    with open(one, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (1_000_000, 100_000)})
        fh.write(bytes(48))
    p = tmp_path / f"bomb{suffix}"
    if suffix == ".npy":
        one.rename(p)
    else:
        import zipfile
        with zipfile.ZipFile(p, "w") as z:
            z.write(one, "array.npy")
    code, out = _run([*IMAGES, f"data.file={p}"])
    assert code == 2 and "800,000,000,000 bytes" in out and str(p) in out, out


def test_a_garbled_npy_header_is_one_line_naming_the_file(tmp_path):
    p = tmp_path / "garbled.npy"
    np.save(p, np.zeros((2, 3)))
    p.write_bytes(p.read_bytes().replace(b"(2, 3)", b"(2, 3 "))
    code, out = _run([*IMAGES, f"data.file={p}"])
    assert code == 2 and "its .npy header cannot be read" in out and str(p) in out, out


def test_a_wide_csv_past_the_bound_is_refused(tmp_path):
    p = tmp_path / "wide.csv"
    width = 20_000
    p.write_text(",".join(["y"] + [f"c{j}" for j in range(width)]) + "\n"
                 + ("1," + ",".join(["0.5"] * width) + "\n") * 3)
    code, out = _run([*TABLE, f"data.file={p}"], bound=100_000)
    assert code == 2 and "spec key 'data.file'" in out and str(p) in out, out
    assert "20,001 columns x 4 lines" in out, out
