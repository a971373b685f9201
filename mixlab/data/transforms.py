"""Transforms applied by ``load``: keep classes, cap the training set, binarise, PCA.

Applied in this order: ``classes`` (filter every split; relabel 0/1 in the given order when
exactly two classes are kept, otherwise keep the original labels) -> ``max_train`` (keep the
first n training examples) -> ``binarize`` (``X > threshold`` on [0, 1] intensities, as 0/1
float32) -> ``pca`` (k components fitted on the training split only, applied to all splits).
Problems with the requested values raise :class:`mixlab.errors.SpecError` naming the key.
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecError


def keep_classes(splits: dict, classes, n_classes: int) -> dict:
    """``splits``: name -> (X (n, d), y (n,)). Returns the filtered (and relabelled) splits."""
    classes = [int(c) for c in classes]
    if not classes:
        raise SpecError("needs at least one class", "classes")
    if len(set(classes)) != len(classes):
        raise SpecError(f"repeats a class: {classes}", "classes")
    bad = [c for c in classes if not 0 <= c < n_classes]
    if bad:
        raise SpecError(f"class(es) {bad} not in this data set (labels 0..{n_classes - 1})",
                        "classes")
    out = {}
    for k, (X, y) in splits.items():
        keep = np.isin(y, classes)
        X, y = X[keep], y[keep]
        if len(classes) == 2:
            y = (y == classes[1]).astype(np.int64)
        out[k] = (X, y)
    return out


def binarize(X: np.ndarray, threshold: float) -> np.ndarray:
    """(n, d) intensities in [0, 1] -> (n, d) float32 0/1: 1 where X > threshold."""
    return (X > threshold).astype(np.float32)


#: raise when :func:`pca_fit` changes its numbers (the data cache keeps fits under it)
PCA_VERSION = 1


def pca_fit(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fit PCA on X (n, d) by SVD of the centred data (float64).

    Returns mean (d,), components (k, d) with orthonormal rows (sign fixed so the entry of
    largest magnitude in each row is positive), explained variance ratio (k,)."""
    n, d = X.shape
    if k > min(n, d):
        raise SpecError(f"asks for {k} components but the training split has {n} examples "
                        f"of dimension {d}", "pca")
    X64 = X.astype(np.float64)
    mean = X64.mean(axis=0)
    _, s, vt = np.linalg.svd(X64 - mean, full_matrices=False)
    comps = vt[:k]
    sign = np.sign(comps[np.arange(k), np.argmax(np.abs(comps), axis=1)])
    comps = comps * np.where(sign == 0, 1.0, sign)[:, None]
    var = s ** 2
    ratio = var[:k] / var.sum() if var.sum() > 0 else np.zeros(k)
    return mean, comps, ratio


def pca_apply(X: np.ndarray, mean: np.ndarray, comps: np.ndarray) -> np.ndarray:
    """(n, d) -> (n, k) float32 projections onto the components."""
    return ((X.astype(np.float64) - mean) @ comps.T).astype(np.float32)
