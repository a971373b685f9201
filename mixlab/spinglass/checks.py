"""The start-up validation of the perturb-and-MAP experiment kinds (``check(spec)`` of their
registration): the refusals the run would make before its first stage, made before any work,
so that ``mixlab run --dry-run`` and the run agree. Each SpecError names the full dotted key."""

from __future__ import annotations

from pathlib import Path

from ..errors import SpecError
from .target import check_exact_size, load_user_model


def logz_of_models(p: dict) -> None:
    """``perturb_map.logz_of_models``: every model file readable, file names distinct."""
    for i, f in enumerate(p["models"]):
        load_user_model(f, f"models[{i}]")
    labels = [Path(f).stem for f in p["models"]]
    if len(set(labels)) != len(labels):
        raise SpecError("two model files have the same name; the file names label the results",
                        "models")


def marginals_vs_coupling(p: dict) -> None:
    """``perturb_map.marginals_vs_coupling``: pairwise perturbations need exact max-product."""
    R, C = p["grid"]["rows"], p["grid"]["cols"]
    if any(e["method"] == "pairwise" for e in p["samplers"].values()) and min(R, C) > 20:
        raise SpecError("pairwise perturbations need exact max-product: the narrow side of the "
                        "grid must be <= 20", "grid")


def marginal_vs_time(p: dict) -> None:
    """``perturb_map.marginal_vs_time``: the model (the user's file or the grid) small enough
    for the exact marginals it is measured against."""
    if p["model"]["file"] is not None:
        model = load_user_model(p["model"]["file"])
        check_exact_size(model.rows, model.cols, "marginal_vs_time", "model.file")
    else:
        check_exact_size(p["grid"]["rows"], p["grid"]["cols"], "marginal_vs_time", "grid")


REPLACED_BY_FILE = ("grid", "field", "coupling", "mixed")


def adapt_marginal_vs_time(p: dict, given) -> dict:
    """With ``model.file``, the random model's keys (grid, field, coupling, mixed) do not
    apply: the file's grid, fields and couplings are used. Those from the spec file are listed
    as dropped (their values are not used); one the user gave is refused by name."""
    if p["model"]["file"] is None:
        return {}
    for key in REPLACED_BY_FILE:
        if given(key):
            raise SpecError("does not apply with model.file (the file's grid, fields and "
                            "couplings are used): drop it, or drop model.file", key)
    return {key: "model.file replaces the random model: its grid, fields and couplings are "
                 "the file's" for key in REPLACED_BY_FILE}
