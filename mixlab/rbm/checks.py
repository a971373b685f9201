"""The start-up validation of the rates-FPCD experiment kinds (``check(spec)`` of their
registration): every refusal the run would make before training, made before any work, so that
``mixlab run --dry-run`` and the run agree. Each SpecError names the full dotted key."""

from __future__ import annotations

from pathlib import Path

from ..errors import SpecError


def _sampler_labels(p: dict) -> None:
    for label in p["samplers"]:
        if "/" in label:
            raise SpecError("sampler labels must not contain '/'", f"samplers.{label}")


def _data(p: dict) -> None:
    from ..data import check_load_args
    from ..data.user_images import check_image_file
    from .target import DEFAULT_DATA, _load_file

    d = p["data"]
    if not d.get("file"):
        for name in {d["name"] or DEFAULT_DATA, d.get("fallback") or d["name"] or DEFAULT_DATA}:
            check_load_args(name, d["classes"], d["pca"])
        return
    for k in ("name", "fallback", "classes", "pca"):
        if d.get(k) is not None:
            why = ("the file replaces the registered data set" if k in ("name", "fallback")
                   else "not available for an image file")
            raise SpecError(f"cannot be combined with data.file ({why}): remove one of them",
                            f"data.{k}")
    check_image_file(d["file"], "data.file")
    _load_file(d)       # the file's values and shapes, checked as the run's start checks them


def _model_file(p: dict) -> None:
    from .model_file import is_training_run, load_trained

    path = Path(p["model_file"]).expanduser() if p["model_file"] else None
    if path is not None and not (path.is_file() or is_training_run(path)):
        raise SpecError(f"model file not found: {p['model_file']} (an RBM saved by 'mixlab "
                        f"train', or its run directory; relative paths are from the working "
                        f"directory)", "model_file")
    if path is not None:
        load_trained(path)          # its arrays and magnitudes, as the run's start reads them


def _train(p: dict) -> None:
    """The trainer's combination rules (mixlab.rbm.train.resolve_config), keyed ``train.*``."""
    from .train import resolve_config, spec_to_config

    if p.get("model_file"):
        return                       # no training: the train keys are not used
    try:
        resolve_config(spec_to_config(p["train"])[1])
    except SpecError as exc:
        if exc.key is None or exc.key.startswith("train"):
            raise
        msg = str(exc).split(": ", 1)[1] if str(exc).startswith("spec key") else str(exc)
        raise SpecError(msg, f"train.{exc.key}") from None


def check_common(p: dict) -> None:
    """What every RBM experiment checks: labels, the data file, the model file, the trainer."""
    _sampler_labels(p)
    _data(p)
    _model_file(p)
    _train(p)


def check_isl(p: dict) -> None:
    """``rates_fpcd.isl`` / ``.sequences`` / ``.sample``: the common checks, the ISL reference
    sampler, and a sequence needing recorded draws."""
    check_common(p)
    islp = p["isl"]
    ref = islp.get("reference")
    if islp["enabled"] and ref is not None and ref not in p["samplers"]:
        raise SpecError(f"'{ref}' is not a sampler label of this spec (labels: "
                        f"{', '.join(p['samplers'])})", "isl.reference")
    if p["sequence"]["length"] and not p["record"]:
        raise SpecError("sequence.length needs the draws recorded: set record to [samples] "
                        "or [samples, means]", "record")


def check_train_run(p: dict) -> None:
    """``rbm.train``: the data set or file, and the trainer's combination rules."""
    _data(p)
    _train(p)


def check_bias(p: dict) -> None:
    """``rates_fpcd.bias``: the common checks."""
    check_common(p)


def adapt(p: dict, given) -> dict:
    """With ``data.file`` (the user's images), the spec file's keys that describe its
    registered data set stop applying: ``data.name``, ``data.fallback``, ``data.classes`` and
    ``data.pca`` are set to null. Keys the user gave stay, for the check to refuse by name."""
    from ..spec.resolver import drop

    if not p["data"].get("file"):
        return {}
    out: dict = {}
    for key, why in (("name", "data.file replaces the registered data set"),
                     ("fallback", "data.file replaces the registered data set"),
                     ("classes", "labels of the registered data set; an image file has none"),
                     ("pca", "the PCA of the registered data set; the RBM samples the file's "
                             "binarised pixels")):
        drop(p, f"data.{key}", None, why, given, out)
    return out
