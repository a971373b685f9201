"""What the variational methods share: ``last_info``, the warning, the edge order and entropies."""

from __future__ import annotations

import warnings

import numpy as np

from ..model import SpinGlass

SPIN = np.array([-1.0, 1.0])
last_info: dict = {}


class VariationalWarning(RuntimeWarning):
    """An iterative variational method stopped before meeting its tolerance."""


def set_info(**kw) -> None:
    last_info.clear()
    last_info.update(kw)


def warn_unconverged(name: str, it: int, residual: float, tol: float) -> None:
    warnings.warn(f"{name} did not converge in {it} iterations (residual {residual:.3g} > tol "
                  f"{tol:.3g}); its value is not a guaranteed bound", VariationalWarning,
                  stacklevel=3)


def edges(model: SpinGlass):
    """``(src, dst, J)`` of the undirected edges: right edges row-major, then down edges."""
    R, C = model.shape
    idx = np.arange(R * C).reshape(R, C)
    src = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    dst = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    J = np.concatenate([model.right.ravel(), model.down.ravel()])
    return src, dst, J


def entropy2(p: np.ndarray) -> np.ndarray:
    """Entropy (nats) of the last axis' distributions."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.sum(np.where(p > 0, p * np.log(p), 0.0), axis=-1)


def binary_entropy(p1: np.ndarray) -> np.ndarray:
    return entropy2(np.stack([1.0 - p1, p1], axis=-1))
