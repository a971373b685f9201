"""Ising spin glass on an ``R x C`` grid with spins ``x in {-1, +1}``.

Potential (log of the unnormalised probability, ``p(x) ∝ exp θ(x)``)::

    θ(x) = Σ_rc field[r,c] x[r,c]
         + Σ_rc right[r,c] x[r,c] x[r,c+1]      right: (R, C-1), edge to the right neighbour
         + Σ_rc down[r,c]  x[r,c] x[r+1,c]      down:  (R-1, C), edge to the neighbour below

Couplings ``>= 0`` everywhere make the model attractive (ferromagnetic), in which case MAP is a
graph cut. Spin arrays are ``(..., R, C)`` with values ±1 (any real dtype) or bool (True = +1).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import DataError, SpecError
from ..spec.magnitude import check_potential

__all__ = ["SpinGlass", "random_spin_glass", "load_npz", "save_npz", "as_spins"]


def as_spins(x: np.ndarray) -> np.ndarray:
    """``x`` as float64 ±1 spins; bool input maps True -> +1, False -> -1."""
    x = np.asarray(x)
    if x.dtype == bool:
        return np.where(x, 1.0, -1.0)
    return x.astype(np.float64, copy=False)


@dataclass
class SpinGlass:
    """Grid spin glass. ``field (R, C)``, ``right (R, C-1)``, ``down (R-1, C)``, all float64."""

    field: np.ndarray
    right: np.ndarray
    down: np.ndarray

    def __post_init__(self) -> None:
        self.field = np.ascontiguousarray(self.field, dtype=np.float64)
        self.right = np.ascontiguousarray(self.right, dtype=np.float64)
        self.down = np.ascontiguousarray(self.down, dtype=np.float64)
        if self.field.ndim != 2 or self.field.size == 0:
            raise SpecError(f"spin glass field must be a non-empty (R, C) array, got shape "
                            f"{self.field.shape}")
        R, C = self.field.shape
        if self.right.shape != (R, C - 1):
            raise SpecError(f"spin glass 'right' couplings must have shape {(R, C - 1)} for a "
                            f"{R}x{C} grid, got {self.right.shape}")
        if self.down.shape != (R - 1, C):
            raise SpecError(f"spin glass 'down' couplings must have shape {(R - 1, C)} for a "
                            f"{R}x{C} grid, got {self.down.shape}")
        for name in ("field", "right", "down"):
            if not np.all(np.isfinite(getattr(self, name))):
                raise SpecError(f"spin glass '{name}' has non-finite entries")
        check_potential({"field": self.field, "right": self.right, "down": self.down},
                        "spin glass")

    @property
    def rows(self) -> int:
        return self.field.shape[0]

    @property
    def cols(self) -> int:
        return self.field.shape[1]

    @property
    def shape(self) -> tuple[int, int]:
        return self.field.shape

    @property
    def n(self) -> int:
        return self.field.size

    @property
    def attractive(self) -> bool:
        """True when every coupling is >= 0 (MAP is then a graph cut)."""
        return bool(np.all(self.right >= 0) and np.all(self.down >= 0))

    def score(self, x: np.ndarray) -> np.ndarray:
        """θ(x) for spins ``x (..., R, C)`` (±1 or bool) -> ``(...)`` float64."""
        x = as_spins(x)
        if x.shape[-2:] != self.shape:
            raise ValueError(f"spins of shape {x.shape} do not fit a {self.rows}x{self.cols} grid")
        s = np.einsum("...rc,rc->...", x, self.field)
        s = s + np.einsum("...rc,rc->...", x[..., :, :-1] * x[..., :, 1:], self.right)
        s = s + np.einsum("...rc,rc->...", x[..., :-1, :] * x[..., 1:, :], self.down)
        return s

    def transpose(self) -> SpinGlass:
        """The same model on the transposed grid (``C x R``): rows become columns."""
        return SpinGlass(self.field.T, self.down.T, self.right.T)

    def with_field(self, field: np.ndarray) -> SpinGlass:
        """A copy with a different field (couplings shared)."""
        return SpinGlass(field, self.right, self.down)


def random_spin_glass(rows: int, cols: int, field: float = 1.0, coupling: float = 1.0,
                      mixed: bool = False, rng: np.random.Generator | None = None) -> SpinGlass:
    """Random grid model as in Hazan, Maji & Jaakkola (2013).

    Fields ``θ_i ~ U[-field, field]``; couplings ``θ_ij ~ U[0, coupling]`` (attractive) or
    ``U[-coupling, coupling]`` when ``mixed``. Draw order: field, right, down."""
    if rows < 1 or cols < 1:
        raise SpecError(f"grid must be at least 1x1, got {rows}x{cols}")
    rng = np.random.default_rng() if rng is None else rng
    f = rng.uniform(-field, field, size=(rows, cols))
    lo = -coupling if mixed else 0.0
    r = rng.uniform(lo, coupling, size=(rows, cols - 1))
    d = rng.uniform(lo, coupling, size=(rows - 1, cols))
    return SpinGlass(f, r, d)


def save_npz(path: str | os.PathLike, model: SpinGlass) -> None:
    """Write ``field``, ``right``, ``down`` to an ``.npz`` file."""
    np.savez(path, field=model.field, right=model.right, down=model.down)


def load_npz(path: str | os.PathLike) -> SpinGlass:
    """Read a model written by :func:`save_npz` (arrays ``field``, ``right``, ``down``).

    Raises DataError for a missing/unreadable file or a missing array, and names the file and
    the array for a wrong shape."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise DataError(f"spin glass file not found: {path}") from None
    except Exception as exc:  # zipfile.BadZipFile, ValueError, OSError ...
        raise DataError(f"cannot read spin glass file {path}: {exc}") from None
    missing = [k for k in ("field", "right", "down") if k not in arrays]
    if missing:
        raise DataError(f"spin glass file {path} lacks array(s) {', '.join(missing)} "
                        f"(has: {', '.join(sorted(arrays)) or 'none'})")
    try:
        return SpinGlass(arrays["field"], arrays["right"], arrays["down"])
    except SpecError as exc:
        raise DataError(f"spin glass file {path}: {exc}") from None
