"""The rules of mixlab.runfile.confined and mixlab.runfile.check, one by one, on small files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import h5py
import numpy as np
import pytest

from mixlab.errors import RunFileError
from mixlab.runfile import confined
from mixlab.runfile.check import check_run_file
from mixlab.runfile.segments import StreamSegments


def test_names_that_leave_the_directory_are_refused(tmp_path):
    for rel in ("/etc/passwd", "../x", "a/../../x", ".", ""):
        with pytest.raises(confined.ConfinementError, match="not a name inside"):
            confined.check(tmp_path, rel)


def test_a_link_on_the_way_is_refused_even_when_it_points_inside(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_text("x")
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    with pytest.raises(confined.ConfinementError, match="symbolic link"):
        confined.read_bytes(tmp_path, "alias/f", 100)
    assert confined.read_bytes(tmp_path, "real/f", 100) == b"x"


def test_a_file_larger_than_the_bound_is_not_read(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * 101)
    with pytest.raises(confined.ConfinementError, match="101 bytes"):
        confined.read_bytes(tmp_path, "f", 100)


def test_only_names_mixlab_writes_are_deleted(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(confined.ConfinementError, match="not a name mixlab writes"):
        confined.remove(tmp_path, "notes.txt")
    (tmp_path / "spec.yaml").write_text("x")
    assert confined.remove(tmp_path, "spec.yaml") and not (tmp_path / "spec.yaml").exists()


def test_removing_a_run_directory_keeps_what_mixlab_did_not_write(tmp_path):
    run = tmp_path / "run"
    seg = run / "segments" / ("0" * 16)
    seg.mkdir(parents=True)
    for f in (run / "run.h5", run / "log.txt", run / "writer.lock", seg / "000000.h5",
              run / ".run.h5.tmp-12"):
        f.write_bytes(b"x")
    assert confined.remove_run_dir(tmp_path, "run")
    seg.mkdir(parents=True)
    (seg / "keep.txt").write_text("theirs")
    assert not confined.remove_run_dir(tmp_path, "run")
    assert (seg / "keep.txt").read_text() == "theirs"


def test_a_checkpoint_naming_a_segment_outside_is_refused(tmp_path):
    attrs = {"segments": json.dumps([["../../../x.h5", 10]]), "layout": "{}"}
    with pytest.raises(RunFileError, match="segment files that mixlab does not write"):
        StreamSegments.open(tmp_path, "s", attrs)


_LAYOUT = {"dtype": "<f8", "lead": [2], "tail": [], "attrs": {}}


@pytest.mark.parametrize("layout", [["x"], {"summary/e": ["x"]}, {"summary/e": {**_LAYOUT,
                                                                            "dtype": "O"}},
                                    {"summary/e": {**_LAYOUT, "lead": ["2"]}},
                                    {"summary/e": {**_LAYOUT, "dtype": "no-such-type"}}])
def test_a_checkpoint_with_a_layout_mixlab_does_not_write_is_refused(tmp_path, layout):
    """A hand-made layout (not a dict, an entry of another shape, an object or unknown dtype,
    a size that is not a number) is a RunFileError naming the stream, not a traceback."""
    attrs = {"segments": "[]", "layout": json.dumps(layout)}
    with pytest.raises(RunFileError, match="stream 's' .* a layout that mixlab does not write"):
        StreamSegments.open(tmp_path, "s", attrs)
    attrs["layout"] = json.dumps({"summary/e": _LAYOUT})
    assert StreamSegments.open(tmp_path, "s", attrs).layout == {"summary/e": _LAYOUT}


def _refused(tmp_path: Path, build, match: str) -> None:
    path = tmp_path / "run.h5"
    with h5py.File(path, "w") as f:
        build(f)
    with h5py.File(path, "r") as f, pytest.raises(confined.ConfinementError, match=match):
        check_run_file(f, tmp_path, os.path.getsize(path), path)


def test_soft_links_loops_external_storage_and_filters_are_refused(tmp_path):
    _refused(tmp_path, lambda f: f.__setitem__("a", h5py.SoftLink("/b")), "soft link")

    def loop(f):
        g = f.create_group("g")
        g["up"] = f["g"]
    _refused(tmp_path, loop, "second link")

    def external_raw(f):
        (tmp_path / "raw.bin").write_bytes(np.arange(4.0).tobytes())
        f.create_dataset("d", shape=(4,), dtype="f8",
                         external=[(str(tmp_path / "raw.bin"), 0, 32)])
    _refused(tmp_path, external_raw, "external raw files")
    _refused(tmp_path, lambda f: f.create_dataset("d", data=np.zeros(100), compression="gzip"),
             "filtered")
