"""The trained-model file ``mixlab train -o model.h5`` writes, and reading a trained RBM from it
or from the ``rbm.train`` run it came from.

A model file is written from a *complete* ``rbm.train`` run, whole and atomically
(:func:`mixlab.runfile.atomic.atomic_write`), so a model file is never a half-written or half-trained
model. Layout (readable with h5py alone)::

    /W (V, H), /b (V,), /c (H,)      the parameters (float32)
    /monitor/<key> (epochs,)          per-epoch training curves (mixlab.rbm.train.HISTORY_KEYS)
    attrs: format = "mixlab.rbm", format_version, n_visible, n_hidden,
           data, binarize, max_train, seed, trainer, trainer_config (JSON), epochs_done,
           log_z, log_z_se, log_z_method, test_ll, test_ll_se (when evaluated),
           training_spec (the run's resolved spec, YAML), spec_hash, run_dir (where the run was
           written, relative to the model file's directory when below it),
           mixlab_version, git_commit, git_dirty, created, python, packages (JSON): the run's
           provenance

Every value comes from the run file, so writing the model again from the same run gives the same
bytes. Nothing read from a model file or a run is executed; ``describe`` opens no path a file
names.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MixlabError, RunFileError
from .model import FORMAT, FORMAT_VERSION, RBM

EXPERIMENT = "rbm.train"
RUN_SUFFIX = ".run"
PROVENANCE_KEYS = ("mixlab_version", "git_commit", "git_dirty", "created", "python", "packages")
RESULT_KEYS = ("log_z", "log_z_se", "log_z_method", "test_ll", "test_ll_se", "ais_runs",
               "ais_betas")


def default_run_dir(output: Path) -> Path:
    """The run directory of ``mixlab train -o OUTPUT``: ``OUTPUT.run`` beside it."""
    return output.with_name(output.name + RUN_SUFFIX)


def is_training_run(path: str | os.PathLike) -> bool:
    """True when ``path`` is a directory holding a run file (of any kind: the caller checks)."""
    p = Path(path)
    return p.is_dir() and os.path.lexists(p / "run.h5")


def _open_training_run(run_dir: Path):
    from ..runfile.store import RunReader

    run = RunReader(run_dir)
    if run.attrs.get("experiment") != EXPERIMENT:
        run.close()
        raise RunFileError(f"{run_dir} is a run of '{run.attrs.get('experiment')}', not a "
                           f"training ({EXPERIMENT}, made by 'mixlab train')")
    return run


def load_trained(path: str | os.PathLike, key: str = "model_file") -> RBM:
    """The RBM in a model file, or in a complete ``rbm.train`` run directory (its stage
    ``train``)."""
    p = Path(path).expanduser()
    if not p.is_dir():
        return RBM.load(p)
    with _open_training_run(p) as run:
        if run.status != "complete":
            raise MixlabError(f"{key}: the training in {p} is not complete ({run.live_status()})")
        st = run.stage("train")
        return RBM(st["W"], st["b"], st["c"])


def model_file_bytes(run_dir: Path, run_dir_text: str) -> bytes:
    """The model file of the complete training run in ``run_dir``, as bytes (an HDF5 file built
    in memory). ``run_dir_text``: how the model file names its run (its ``run_dir`` attribute)."""
    import h5py

    with _open_training_run(run_dir) as run:
        if run.status != "complete":
            raise MixlabError(f"the training in {run_dir} is not complete ({run.live_status()})")
        a = run.attrs
        spec = run.spec
        st = run.stage("train")
        results = run.results()
    from ..spec.resolver import spec_hash
    from .train import resolve_config, spec_to_config

    d = spec["data"]
    attrs: dict[str, Any] = {
        "data": results.get("data_used", d.get("name") or d.get("file")),
        "binarize": "none" if d.get("binarize") is None else float(d["binarize"]),
        "max_train": "none" if d.get("max_train") is None else int(d["max_train"]),
        "seed": int(spec["seed"]), "trainer": spec["train"]["trainer"],
        "trainer_config": json.dumps(resolve_config(spec_to_config(spec["train"])[1])),
        "epochs_done": int(results.get("epochs_done", 0)),
        **{k: results[k] for k in RESULT_KEYS if k in results},
        "training_spec": a["spec"], "spec_hash": spec_hash(spec), "run_dir": run_dir_text,
    }
    for k in PROVENANCE_KEYS:
        if k in a:
            attrs[k] = a[k] if not isinstance(a[k], dict) else json.dumps(a[k])
    bio = io.BytesIO()
    with h5py.File(bio, "w") as f:
        f.attrs["format"] = FORMAT
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["n_visible"] = int(st["W"].shape[0])
        f.attrs["n_hidden"] = int(st["W"].shape[1])
        for k, v in attrs.items():
            f.attrs[k] = json.dumps(v) if isinstance(v, (list, dict)) else v
        for k in ("W", "b", "c"):
            f.create_dataset(k, data=np.asarray(st[k]))
        g = f.create_group("monitor")
        for k in sorted(st):
            if k.startswith("monitor_"):
                g.create_dataset(k[len("monitor_"):], data=np.asarray(st[k]))
    return bio.getvalue()


def write_model_file(run_dir: Path, output: Path) -> None:
    """Write ``output`` from the complete training run in ``run_dir``, atomically, holding the
    run's writer lock (a training that another process writes is refused with its pid)."""
    from ..runfile.atomic import atomic_write, remove_stray_temporaries
    from ..runfile.lock import RunLock

    with RunLock.acquire(run_dir, "training") as lock:
        data = model_file_bytes(run_dir, run_dir_text(run_dir, output))
        remove_stray_temporaries(output.parent, output.name)
        atomic_write(output, data)
        lock.release(remove=True)


def run_dir_text(run_dir: Path, output: Path) -> str:
    """How the model file ``output`` names its run: relative to the model file's directory when
    below it, else absolute."""
    text = os.path.relpath(run_dir.resolve(), output.resolve().parent)
    return str(run_dir.resolve()) if text.startswith("..") else text


def written_from(attrs: dict, output: Path, run_dir: Path) -> bool:
    """True when the model file ``output`` (root attributes ``attrs``) names ``run_dir`` as its
    run (compared as paths; nothing is opened)."""
    return attrs.get("run_dir") == run_dir_text(run_dir, output)


def model_attrs(path: Path) -> dict | None:
    """The root attributes of a mixlab model file (plain values), or None when ``path`` is not
    one (not a regular file, not HDF5, or not ``format = mixlab.rbm``)."""
    import h5py

    try:
        st = os.lstat(path)
    except OSError:
        return None
    import stat

    from ..runfile.check import read_bound

    if not stat.S_ISREG(st.st_mode) or st.st_size > read_bound():
        return None                  # a link, a FIFO, or larger than mixlab reads: not opened
    try:
        with h5py.File(path, "r", locking=False) as f:
            if f.attrs.get("format") not in (FORMAT, FORMAT.encode()):
                return None
            return {k: _plain(v) for k, v in f.attrs.items()}
    except OSError:
        return None


def _plain(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


def describe(path: Path, attrs: dict) -> dict:
    """What ``mixlab show MODEL`` prints: the model's shape, its training, its provenance, the
    training spec it stores and its run directory (named, never opened)."""
    def jsonish(v: Any) -> Any:
        try:
            return json.loads(v) if isinstance(v, str) else v
        except ValueError:
            return v

    training = {k: jsonish(attrs[k]) if k == "trainer_config" else attrs[k]
                for k in ("data", "binarize", "max_train", "seed", "trainer", "trainer_config",
                          "epochs_done") if k in attrs}
    results = {k: attrs[k] for k in RESULT_KEYS if k in attrs}
    prov = {k: jsonish(attrs[k]) if k == "packages" else attrs[k]
            for k in PROVENANCE_KEYS if k in attrs}
    run = attrs.get("run_dir")
    beside = None
    if isinstance(run, str) and run:
        where = Path(run) if os.path.isabs(run) else path.parent / run
        beside = str(where) if os.path.lexists(where / "run.h5") else None
    return {"model": str(path), "format": attrs.get("format"),
            "n_visible": attrs.get("n_visible"), "n_hidden": attrs.get("n_hidden"),
            "training": training, "results": results, "provenance": prov,
            "spec": attrs.get("training_spec"), "spec_hash": attrs.get("spec_hash"),
            "run_dir": run, "run_dir_found": beside}
