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
    from ..data.registry import DATASETS

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
        from ..data.user_tables import read_table

        train = read_table(dspec["file"], dspec["label"], dspec["features"], "data.file")
        if dspec["test_file"] is not None:
            read_table(dspec["test_file"], dspec["label"], train.columns, "data.test_file")
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
