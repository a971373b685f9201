"""Hostile run directories: each variant turns a copy of a real run directory into what a
stranger could send, pointing at files in an ``outside`` folder that holds a secret token.

A variant is ``build(run_dir, outside)``; :func:`make_outside` fills the outside folder first.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import h5py
import numpy as np

TOKEN = "SECRET-7c1f9e-do-not-print"
OUTSIDE_VALUE = 777.25  # the values of the outside file's draws


def segment(run: Path) -> Path:
    """The first segment file of the run's only stream."""
    return next(run.glob("segments/*/000000.h5"))


def make_outside(outside: Path, base_run: Path) -> None:
    """secret.h5 (a segment file whose draws are OUTSIDE_VALUE, with the token in attributes
    and in /results), secret.txt, victim/ (files a resume must not delete) and figs/."""
    outside.mkdir(parents=True)
    shutil.copyfile(segment(base_run), outside / "secret.h5")
    with h5py.File(outside / "secret.h5", "r+") as f:
        f["samples"][...] = OUTSIDE_VALUE
        f.attrs["api_key"] = TOKEN
        f.create_group("results").attrs["api_key"] = TOKEN
    (outside / "secret.txt").write_text(f"api_key={TOKEN}\n")
    (outside / "victim").mkdir()
    (outside / "victim" / "notes.txt").write_text(TOKEN)
    shutil.copyfile(outside / "secret.h5", outside / "victim" / "000007.h5")
    (outside / "figs").mkdir()
    (outside / "figs" / "toy.mean_error.png").write_bytes(TOKEN.encode())


def _repoint_samples(run: Path, source: str) -> None:
    with h5py.File(run / "run.h5", "r+") as f:
        ds = f["streams/rwm/samples"]
        shape, dtype = ds.shape, ds.dtype
        del f["streams/rwm/samples"]
        lay = h5py.VirtualLayout(shape=shape, dtype=dtype)
        lay[...] = h5py.VirtualSource(source, "samples", shape=shape)
        f.create_virtual_dataset("streams/rwm/samples", lay)


def vds_absolute(run: Path, outside: Path) -> None:
    _repoint_samples(run, str(outside / "secret.h5"))


def vds_relative(run: Path, outside: Path) -> None:
    _repoint_samples(run, os.path.relpath(outside / "secret.h5", run))


def external_link(run: Path, outside: Path) -> None:
    with h5py.File(run / "run.h5", "r+") as f:
        del f["results"]
        f["results"] = h5py.ExternalLink(str(outside / "secret.h5"), "/results")


def segment_symlink(run: Path, outside: Path) -> None:
    seg = segment(run)
    seg.unlink()
    seg.symlink_to(outside / "secret.h5")


def segment_dir_symlink(run: Path, outside: Path) -> None:
    d = segment(run).parent
    for p in d.iterdir():
        shutil.move(p, outside / "victim" / p.name)
    d.rmdir()
    d.symlink_to(outside / "victim", target_is_directory=True)


def _replace_by_link(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    path.symlink_to(target)


def lock_symlink(run: Path, outside: Path) -> None:
    _replace_by_link(run / "writer.lock", outside / "secret.txt")


def log_symlink(run: Path, outside: Path) -> None:
    _replace_by_link(run / "log.txt", outside / "secret.txt")


def figures_symlink(run: Path, outside: Path) -> None:
    _replace_by_link(run / "figures", outside / "figs")


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def fifo_run_file(run: Path, outside: Path) -> None:
    _fifo(run / "run.h5")


def fifo_lock(run: Path, outside: Path) -> None:
    _fifo(run / "writer.lock")


def fifo_segment(run: Path, outside: Path) -> None:
    _fifo(segment(run))


def size_bomb_2_5e8(run: Path, outside: Path) -> None:
    """The metric's x and y declare 2.5e8 float64 each (2 GB) in a file of a few KB."""
    with h5py.File(run / "run.h5", "r+") as f:
        g = f["metrics/mean_error/rwm"]
        for k in ("x", "y"):
            del g[k]
            g.create_dataset(k, shape=(250_000_000,), dtype="f8")


def size_bomb_1e12(run: Path, outside: Path) -> None:
    with h5py.File(run / "run.h5", "r+") as f:
        del f["streams/rwm/time"]
        f.create_dataset("streams/rwm/time", shape=(10**12,), dtype="f8", chunks=(1 << 16,))


def attribute_100mb(run: Path, outside: Path) -> None:
    with h5py.File(run / "run.h5", "r+") as f:
        f["results"].attrs["note"] = "A" * 100_000_000


def alias_bomb_text(levels: int = 8) -> str:
    """Under 1 KB of YAML whose aliases expand to 10**levels elements."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]"
              for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def _set_spec(run: Path, text: str) -> None:
    with h5py.File(run / "run.h5", "r+") as f:
        f.attrs["spec"] = text


def spec_alias_bomb(run: Path, outside: Path) -> None:
    """The stored spec: 10^8 elements in under 1 KB of aliases."""
    _set_spec(run, alias_bomb_text(8))


def spec_self_alias(run: Path, outside: Path) -> None:
    """The stored spec: a mapping that contains itself through an alias."""
    _set_spec(run, "name: loop\nexperiment: &x {inner: *x}\n")


def spec_over_bound(run: Path, outside: Path) -> None:
    """The stored spec: valid YAML of 2 MB (a 'description' past the 1 MiB stored-text bound)."""
    with h5py.File(run / "run.h5", "r") as f:
        text = f.attrs["spec"]
    _set_spec(run, text + "description: " + "d" * 2_000_000 + "\n")


def spec_python_tag(run: Path, outside: Path) -> None:
    """The stored spec: a tag that names Python code (never constructed)."""
    _set_spec(run, "name: !!python/object/apply:os.system ['echo pwned']\n")


def intact(run: Path, outside: Path) -> None:
    """No change: the control, on which every command must succeed."""


RUN_VARIANTS = {f.__name__: f for f in (
    intact, vds_absolute, vds_relative, external_link, segment_symlink, segment_dir_symlink,
    lock_symlink, log_symlink, figures_symlink, fifo_run_file, fifo_lock, fifo_segment,
    size_bomb_2_5e8, size_bomb_1e12, attribute_100mb, spec_alias_bomb, spec_self_alias,
    spec_over_bound, spec_python_tag)}
SPEC_VARIANTS = ("spec_alias_bomb", "spec_self_alias", "spec_over_bound", "spec_python_tag")


# -- variants of the sweep directory itself ---------------------------------------------------

def sweep_table_symlink(sweep: Path, outside: Path) -> None:
    _replace_by_link(sweep / "sweep.csv", outside / "secret.txt")


def sweep_point_symlink(sweep: Path, outside: Path) -> None:
    """The first point's run directory moved outside and replaced by a link to it."""
    point = sorted(p for p in sweep.iterdir() if p.is_dir())[0]
    shutil.move(point, outside / "point")
    with h5py.File(outside / "point" / "run.h5", "r+") as f:
        f["results"].attrs["api_key"] = TOKEN
    point.symlink_to(outside / "point", target_is_directory=True)


def sweep_table_points_outside(sweep: Path, outside: Path) -> None:
    """sweep.csv names an absolute run directory outside the sweep."""
    point = sorted(p for p in sweep.iterdir() if p.is_dir())[0]
    shutil.copytree(point, outside / "point")
    with h5py.File(outside / "point" / "run.h5", "r+") as f:
        f["results"].attrs["api_key"] = TOKEN
    text = (sweep / "sweep.csv").read_text()
    (sweep / "sweep.csv").write_text(text.replace(str(point), str(outside / "point"))
                                     .replace(point.name + ",", str(outside / "point") + ","))


SWEEP_VARIANTS = {f.__name__: f for f in (
    sweep_table_symlink, sweep_point_symlink, sweep_table_points_outside)}


def set_status(run: Path, status: str) -> None:
    with h5py.File(run / "run.h5", "r+") as f:
        f.attrs["status"] = status


def touch_values(run: Path) -> np.ndarray:
    with h5py.File(segment(run), "r") as f:
        return f["samples"][()]
