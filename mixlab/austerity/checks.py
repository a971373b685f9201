"""The start-up validation of the austerity experiment kinds (``check(spec)`` of their
registration): every refusal the run would make before its first stage or stream, made before
any work, so that ``mixlab run --dry-run`` and the run agree. Each SpecError names the full
dotted key.

The logistic-regression kinds need θ's dimension d for the coordinate keys (``dims``,
``summary_dims``): it is read from the data set's registry entry (``pca`` when set), the
user's table (read here as the run reads it) or ``data.synthetic``, plus one for ``model.bias``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import SpecError
from .summaries import theta_dims
from .target_logistic import check_data_keys


def _registered(dspec: dict) -> int:
    """Checks of a registered data set's keys; its feature dimension (after PCA)."""
    from ..data import check_load_args
    from ..data.catalogue import DATASETS

    names = ("fashion-mnist", "mnist-5k") if dspec["name"] == "auto" else (dspec["name"],)
    dim = max(check_load_args(n, dspec["classes"], dspec["pca"]) for n in names)
    classes = dspec["classes"]
    two = classes is not None and len(classes) == 2
    if not two and (classes is not None or DATASETS[names[0]].n_classes > 2):
        raise SpecError("logistic regression needs two classes (data.classes: [a, b])",
                        "data.classes")
    return dim


def problem_dim(dspec: dict, mspec: dict) -> int:
    """θ's dimension d for the spec's data (after the start-up checks of the data keys)."""
    check_data_keys(dspec)
    if dspec["synthetic"] is not None:
        from .synthetic import synthetic_spec

        d0 = synthetic_spec(dspec["synthetic"])["d"]
    elif dspec["file"] is not None:
        from ..data.user_tables import read_table, split_and_standardize

        train = read_table(dspec["file"], dspec["label"], dspec["features"], "data.file")
        test = (read_table(dspec["test_file"], dspec["label"], train.columns, "data.test_file")
                if dspec["test_file"] is not None else None)
        frac = dspec["test_fraction"] if dspec["test_fraction"] is not None else 0.2
        split_and_standardize(train, test, frac, dspec["standardize"], dspec["split_seed"])
        d0 = len(train.columns)
        if dspec["pca"] is not None and dspec["pca"] > d0:
            raise SpecError(f"asks for {dspec['pca']} components of the file's {d0} feature "
                            f"column(s)", "data.pca")
        d0 = dspec["pca"] or d0
    else:
        d0 = _registered(dspec)
    return d0 + (1 if mspec["bias"] else 0)


def _series(p: dict, builtin: Callable[[dict], list[str]] | None) -> None:
    own = builtin(p) if builtin is not None else []
    for label in p.get("samplers", {}):
        if label in own:
            raise SpecError(f"'{label}' is a series the experiment already runs; give this "
                            f"sampler another label", f"samplers.{label}")
    if not own and not p.get("samplers"):
        raise SpecError("nothing to run: give eps values or samplers", "samplers")


def logistic(builtin: Callable[[dict], list[str]] | None = None,
             dims: bool = False) -> Callable[[dict], None]:
    """The check of a logistic-regression kind: its data keys, its series labels (``builtin``
    gives the labels of the experiment's own series), ``summary_dims`` and, with ``dims``, the
    two coordinates of the marginals."""

    def check(p: dict) -> None:
        d = problem_dim(p["data"], p["model"])
        if builtin is not None:
            _series(p, builtin)
        if dims:
            if len(p["dims"]) != 2:
                raise SpecError("give exactly two coordinates", "dims")
            if max(p["dims"]) >= d:
                raise SpecError(f"coordinates must be < d = {d}", "dims")
        if "summary_dims" in p:
            theta_dims(p["summary_dims"], d)

    return check


def mrf_budget(p: dict) -> None:
    b = p["budget"]
    if b["sweeps"] is None and b["seconds"] is None:
        raise SpecError("is null and so is budget.sweeps: give budget.seconds or budget.sweeps",
                        "budget.seconds")


def mrf_calibration(p: dict) -> None:
    """``austerity.mrf_calibration``: a budget."""
    mrf_budget(p)


def mrf_joint_error(p: dict) -> None:
    """``austerity.mrf_joint_error``: a budget, subsets no larger than the model."""
    mrf_budget(p)
    if p["subsets"]["size"] > p["model"]["D"]:
        raise SpecError(f"must be <= model.D ({p['model']['D']})", "subsets.size")


# ----------------------------------------------------------------------------------------------
# the user's data in place of the spec's data set (``adapt`` of the logistic kinds)

def _file_width(dspec: dict) -> int | None:
    """The number of feature columns of ``data.file`` from its header alone (None when the
    file cannot tell: the start-up check then names the problem)."""
    import csv
    from pathlib import Path

    import numpy as np

    if dspec["features"] is not None:
        return len(dspec["features"])
    path = Path(dspec["file"]).expanduser()
    try:
        if path.suffix.lower() == ".csv":
            with open(path, newline="") as fh:
                header = next(csv.reader(fh), [])
            names = [c.strip() for c in header]
        elif path.suffix.lower() == ".npz":
            with np.load(path, allow_pickle=False) as z:
                names = list(z.files)
        elif path.suffix.lower() == ".npy":
            names = [str(j) for j in range(np.load(path, mmap_mode="r").shape[1])]
        else:
            return None
    except (OSError, ValueError, IndexError, UnicodeDecodeError, csv.Error):
        return None
    return len([n for n in names if n != str(dspec["label"])]) or None


def adapt_logistic(p: dict, given) -> dict:
    """With ``data.file`` or ``data.synthetic``, the spec file's keys that describe its
    registered data set stop applying: ``data.name`` (auto), ``data.classes``, ``data.pca``
    (and ``data.subsample`` for synthetic data) are reset, and ``summary_dims`` keeps the
    coordinates that exist for the new d. Keys the user gave stay, for the check to judge."""
    from ..spec.resolver import drop

    d = p["data"]
    src = "data.file" if d["file"] is not None else "data.synthetic"
    if d["file"] is None and d["synthetic"] is None:
        return {}
    out: dict = {}
    drop(p, "data.name", "auto", f"{src} replaces the registered data set", given, out)
    drop(p, "data.classes", None, f"labels of the registered image set; {src} brings its own "
         f"0/1 labels", given, out)
    drop(p, "data.pca", None, f"the PCA of the registered data set; {src} has its own "
         f"features", given, out)
    if d["synthetic"] is not None:
        drop(p, "data.subsample", None, "synthetic data has as many rows as it asks for",
             given, out)
    if "summary_dims" in p and p["summary_dims"] and not given("summary_dims"):
        if d["synthetic"] is not None:
            from .synthetic import synthetic_spec

            try:
                width = synthetic_spec(d["synthetic"])["d"]
            except SpecError:
                width = None
        else:
            width = _file_width(d)
        if width is not None:
            dim = (d["pca"] or width) + (1 if p["model"]["bias"] else 0)
            kept = [j for j in p["summary_dims"] if -dim <= j < dim]
            if kept != p["summary_dims"]:
                gone = [j for j in p["summary_dims"] if j not in kept]
                p["summary_dims"] = kept
                out["summary_dims"] = (f"coordinate(s) {gone} do not exist for d = {dim} "
                                       f"({src}); kept {kept}")
    return out


def big_n(p: dict) -> None:
    """``austerity.big_n``: synthetic data (its ``n`` replaced by each of ``ns``) and the data
    keys that go with it."""
    if p["data"]["synthetic"] is None:
        raise SpecError("is required by austerity.big_n: {n: ROWS, d: 50, seed: 0} (n is "
                        "replaced by each of ns)", "data.synthetic")
    dspec = dict(p["data"], synthetic=dict(p["data"]["synthetic"], n=int(p["ns"][0])))
    problem_dim(dspec, p["model"])
