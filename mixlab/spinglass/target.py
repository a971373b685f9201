"""The spin glass family's target: the model a sampler is built for, a user's model file, and
the exact reference (frontier transfer matrix) when the grid is narrow enough.

A sampler factory of family ``spinglass`` receives a :class:`SpinGlassTarget`: a
:class:`~mixlab.spinglass.model.SpinGlass` (``field (R, C)``, ``right (R, C-1)``, ``down
(R-1, C)``, ``p(x) ∝ exp(θ(x))`` over x ∈ {±1}^(R×C), Eq. 1 of Hazan, Maji & Jaakkola 2013)
that also carries ``init`` (one of mixlab.spinglass.mcmc.INITS: the experiment's ``mcmc.init``,
or a league's starts).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import DataError, SpecError
from ..spec.schema import Param
from .exact import MAX_WIDTH, log_partition
from .exact import marginals as exact_marginals
from .model import SpinGlass, load_npz

MODEL_SCHEMA = {
    "file": Param(None, str, nullable=True,
                  help="a spin glass .npz (arrays field (R,C), right (R,C-1), down (R-1,C), as "
                       "mixlab.spinglass.save_npz writes); null: a random model from grid, "
                       "field, coupling and mixed"),
}


@dataclass
class SpinGlassTarget(SpinGlass):
    """A spin glass plus the chains' initial state (``init``) for samplers that need one."""

    init: str = "random"

    @classmethod
    def of(cls, model: SpinGlass, init: str = "random") -> SpinGlassTarget:
        return cls(model.field, model.right, model.down, init)


def load_user_model(path: str, key: str = "model.file") -> SpinGlass:
    """The model in ``path``: a DataError (exit 1) when the file cannot be read, a SpecError
    (exit 2) naming ``key`` and the file when its arrays are wrong (shapes, NaN or inf)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DataError(f"{key}: spin glass file {path} not found (give the path of an .npz "
                        f"written by mixlab.spinglass.save_npz; relative paths are taken from "
                        f"the working directory)")
    try:
        return load_npz(p)
    except DataError as exc:
        msg = str(exc)
        if "lacks array" in msg or msg.startswith(f"spin glass file {p}:"):
            raise SpecError(f"{msg}; save the model with arrays field (R,C), right (R,C-1), "
                            f"down (R-1,C) (mixlab.spinglass.save_npz)", key) from None
        raise DataError(f"{key}: {msg}") from None


def exact_reference(model: SpinGlass) -> dict | None:
    """``{"log_z": float, "marginals": (R, C) P(x=+1)}`` by the transfer matrix, or None when
    the narrow side of the grid exceeds :data:`~mixlab.spinglass.exact.MAX_WIDTH`."""
    if min(model.shape) > MAX_WIDTH:
        return None
    return {"log_z": float(log_partition(model)), "marginals": exact_marginals(model)}


def require_exact(model: SpinGlass, what: str, key: str) -> dict:
    """:func:`exact_reference`, or a SpecError saying why there is none."""
    check_exact_size(model.rows, model.cols, what, key)
    return exact_reference(model)


def check_exact_size(rows: int, cols: int, what: str, key: str) -> None:
    """A SpecError naming ``key`` when a rows x cols grid is too wide for the transfer matrix
    (the start-up check of :func:`require_exact`)."""
    if min(rows, cols) > MAX_WIDTH:
        raise SpecError(f"{what} needs the exact marginals as its reference, and the transfer "
                        f"matrix needs min(rows, cols) <= {MAX_WIDTH}; this grid is "
                        f"{rows}x{cols}", key)


def coupling_signs(model: SpinGlass) -> str:
    """"attractive" or "mixed (k of m couplings negative)", for logs and results."""
    neg = int(np.sum(model.right < 0) + np.sum(model.down < 0))
    return "attractive" if neg == 0 else (f"mixed ({neg} of {model.right.size + model.down.size}"
                                          f" couplings negative)")
