"""A synthetic logistic-regression data set drawn from a seed: ``data: {synthetic: {n, d, seed}}``.

The generating model: θ* ~ N(0, (signal² / d) I) (d,), features x_i ~ N(0, I) (d,) float32,
labels y_i ~ Bernoulli(σ(x_i · θ*)), so the logit x_i · θ* has standard deviation about
``signal``.  The parameters that generated the data are known (recorded as ``data/theta_star``),
and at large n the posterior concentrates on them at rate 1/√n: the big-N regime of the
sequential MH test, reproducible by anyone from four numbers.

Rows are drawn in chunks of :data:`CHUNK` rows, chunk j from its own stream
``default_rng([seed, 1, j])`` (test rows from ``[seed, 2, j]``, θ* from ``[seed, 0]``): the first
n rows of a larger data set with the same seed are the data set of size n, and the data depend
only on (seed, d, signal), not on how many rows are asked for.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..errors import SpecError
from ..spec.schema import Param, validate
from .limits import SEED_MAX

__all__ = ["CHUNK", "SYNTHETIC_KEYS", "SyntheticData", "generate", "synthetic_spec"]

CHUNK = 65_536                 # rows per independently seeded stream
N_MAX = 100_000_000            # rows: 100M x 50 float32 = 20 GB, beyond any machine's patience

SYNTHETIC_KEYS = {
    "n": Param(None, int, lo=2, hi=N_MAX, help="training rows"),
    "d": Param(50, int, lo=1, hi=10_000, help="features (no intercept is generated)"),
    "seed": Param(0, int, lo=0, hi=SEED_MAX, help="seed of θ*, the rows and the test rows"),
    "signal": Param(1.0, float, lo=0, help="standard deviation of the logits x·θ* (about)"),
    "test": Param(1000, int, lo=1, hi=10_000_000, help="test rows (the predictive risk's x*)"),
}


class SyntheticData:
    """X (n, d) float32, y (n,) int8 in {0, 1}, X_test (test, d) float32, y_test (test,) int8,
    theta_star (d,) float64: the data and the parameters that generated them."""

    def __init__(self, X, y, X_test, y_test, theta_star):
        self.X, self.y, self.X_test, self.y_test = X, y, X_test, y_test
        self.theta_star = theta_star


def synthetic_spec(value, path: str = "data.synthetic") -> dict:
    """The ``data.synthetic`` mapping validated, defaults filled (``n`` is required)."""
    spec = validate(value, SYNTHETIC_KEYS, path)
    if spec["n"] is None:
        raise SpecError("is required: the number of training rows (e.g. n: 1000000)",
                        f"{path}.n")
    return spec


def theta_star(d: int, seed: int, signal: float) -> np.ndarray:
    """The generating parameters θ* (d,) float64 of the synthetic data with this seed."""
    return np.random.default_rng([seed, 0]).standard_normal(d) * (signal / np.sqrt(d))


def _rows(n: int, d: int, seed: int, stream: int, th: np.ndarray):
    """n rows of stream ``stream``: (X (n, d) float32, y (n,) int8), chunk by chunk."""
    X = np.empty((n, d), np.float32)
    y = np.empty(n, np.int8)
    for j, r0 in enumerate(range(0, n, CHUNK)):
        r1 = min(r0 + CHUNK, n)
        rng = np.random.default_rng([seed, stream, j])
        x = rng.standard_normal((CHUNK, d), dtype=np.float32)[:r1 - r0]
        u = rng.random(CHUNK)[:r1 - r0]
        z = x.astype(np.float64) @ th
        X[r0:r1] = x
        y[r0:r1] = u < 1.0 / (1.0 + np.exp(-z))
    return X, y


def generate(spec: dict) -> SyntheticData:
    """The data set of a validated ``data.synthetic`` spec (:func:`synthetic_spec`)."""
    th = theta_star(spec["d"], spec["seed"], spec["signal"])
    X, y = _rows(spec["n"], spec["d"], spec["seed"], 1, th)
    Xt, yt = _rows(spec["test"], spec["d"], spec["seed"], 2, th)
    return SyntheticData(X, y, Xt, yt, th)


def definition_key(spec: dict, *extra) -> str:
    """A hash of the synthetic data's definition (and ``extra``, e.g. the prior and the truth's
    settings): the data are a function of it, so caches key on it instead of the data's bytes."""
    items = sorted(spec.items())
    return hashlib.sha1(repr(("synthetic-logistic-v1", items, extra)).encode()).hexdigest()
