"""``--dry-run`` checks the user's data file as the run's start does: for every hostile image
file (NaN, inf, 0-255 values, empty, wrong shape, an object array, truncated, a file of another
kind) the dry run and a real run stopped at its first piece of work end alike: both accepted,
or both refused with the same exit code and the same message."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from tests.foundation.test_dry_run_agrees import _outcome, stop_at_first_work  # noqa: F401

# the real run stops at its first piece of work (the fixture of test_dry_run_agrees.py)
pytestmark = pytest.mark.usefixtures("stop_at_first_work")
SPEC = "rates_fpcd/fig2"


def _images(tmp, name: str):
    rng = np.random.default_rng(0)
    good = (rng.random((60, 16)) > 0.5).astype(np.float32)
    p = tmp / f"{name}.npy"
    if name == "good":
        np.save(p, good)
    elif name == "nan":
        np.save(p, np.full((60, 16), np.nan, np.float32))
    elif name == "inf":
        bad = good.copy()
        bad[3, 4] = np.inf
        np.save(p, bad)
    elif name == "range_0_255":
        np.save(p, (good * 255).astype(np.float32))
    elif name == "negative":
        np.save(p, good - 1)
    elif name == "empty":
        np.save(p, np.zeros((0, 16), np.float32))
    elif name == "one_dimensional":
        np.save(p, good.ravel())
    elif name == "four_dimensional":
        np.save(p, good.reshape(60, 2, 2, 4))
    elif name == "object":
        np.save(p, np.array([[1, "x"]] * 10, dtype=object), allow_pickle=True)
    elif name == "strings":
        np.save(p, np.array([["a", "b"]] * 10))
    elif name == "truncated":
        np.save(p, good)
        p.write_bytes(p.read_bytes()[:300])
    elif name == "not_numpy":
        p.write_text("hello\n")
    elif name == "npz_missing_splits":
        p = tmp / f"{name}.npz"
        np.savez(p, train=good)
    elif name == "npz_widths":
        p = tmp / f"{name}.npz"
        np.savez(p, train=good, valid=good[:, :8], test=good)
    return p


KINDS = ["good", "nan", "inf", "range_0_255", "negative", "empty", "one_dimensional",
         "four_dimensional", "object", "strings", "truncated", "not_numpy",
         "npz_missing_splits", "npz_widths"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_dry_run_refuses_an_image_file_as_the_run_does(kind, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _images(tmp_path, kind)
    _dry_run_judges_as_the_run(["run", SPEC, f"data.file={path}", "data.name=null"], path,
                               kind, tmp_path)


def _dry_run_judges_as_the_run(args: list, path, kind: str, tmp_path) -> None:
    """``args`` with ``--dry-run`` and as a real run: the same outcome, accepted for the good
    file and refused otherwise, with an exit code of 1 or 2 and a message naming ``path``."""
    runner = CliRunner()
    dry = _outcome(runner, [*args, "--dry-run"])
    real = _outcome(runner, [*args, "-o", str(tmp_path / "run")])
    assert dry == real, (dry, real)
    if kind == "good":
        assert dry == ("accepted",)
    else:
        assert dry[0] == "refused" and dry[1] in (1, 2) and str(path) in dry[2][0], dry


def _table(tmp, name: str):
    rng = np.random.default_rng(0)
    rows = [f"{x:.4f},{z:.4f},{int(x + z > 0)}" for x, z in rng.standard_normal((60, 2))]
    p = tmp / f"{name}.csv"
    if name == "good":
        body = rows
    elif name == "nan":
        body = ["nan,0.1,1"] + rows
    elif name == "inf":
        body = ["inf,0.1,1"] + rows
    elif name == "empty":
        body = []
    elif name == "text":
        body = ["x,y,1"] + rows
    elif name == "ragged":
        body = ["0.1,1"] + rows
    elif name == "labels_out_of_range":
        body = ["0.1,0.2,7"] + rows
    elif name == "binary":
        p.write_bytes(b"\x00\x01\x02\xff" * 50)
        return p
    p.write_text("\n".join(["a,b,y"] + body) + "\n")
    return p


TABLES = ["good", "nan", "inf", "empty", "text", "ragged", "labels_out_of_range", "binary"]


@pytest.mark.parametrize("kind", TABLES)
def test_the_dry_run_refuses_a_table_as_the_run_does(kind, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _table(tmp_path, kind)
    _dry_run_judges_as_the_run(["run", "austerity/fig3", f"data.file={path}", "data.label=y",
                                "data.features=[a,b]"], path, kind, tmp_path)
