"""Triplet MRF calibration samplers: correct scan orders and wrong models on purpose.

Correct (each leaves the MRF's distribution invariant):

- ``cal-random-scan``: random-scan exact Gibbs, D updates per step at sites drawn uniformly
  with replacement, each from its exact conditional;
- ``cal-partial-sweep``: exact Gibbs over a random half of the variables per step (each chain
  its own half, in index order): a random mixture of compositions of Gibbs kernels.

Wrong (exact Gibbs on another model, so what each targets is known):

- ``cal-tempered-gibbs`` (``beta``): the log-potentials times β, i.e. ``p(x)^β``;
- ``cal-sign-error``: every log-potential's sign flipped, ``p(x)^(−1)``;
- ``cal-dropped-term``: the triplets that contain variable 0 dropped.

Each step reports ``pair_terms_read`` (N per update, as the built-in exact Gibbs). Registered
only when a league runs with ``calibration: true`` (mixlab.league.calibration).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ...austerity.mrf import DenseMRF, ExactGibbs, log_odds_all
from ...plugins.registrations import sampler
from ...spec.schema import Param

BETA = Param(0.9, float, lo=0, help="inverse temperature: the sampler targets p(x)^beta")


class _Partial:
    """Exact Gibbs updates at ``updates (chains, m)`` sites per step (in that order)."""

    def __init__(self, model: DenseMRF, chains: int):
        self.model, self.chains = model, int(chains)

    def init(self, rng: np.random.Generator) -> dict:
        return {"x": (rng.random((self.chains, self.model.D)) < 0.5).astype(np.uint8)}

    def _update(self, X: np.ndarray, sites: np.ndarray, u: np.ndarray) -> None:
        """Heat bath at ``sites (chains, m)`` of ``X (chains, D)``, in place (``-1``: skip)."""
        rows = np.arange(self.chains)
        for j in range(sites.shape[1]):
            s = sites[:, j]
            p = expit(log_odds_all(self.model, X)[rows, np.maximum(s, 0)])  # P(x_s = 1 | rest)
            new = (u[:, j] < p).astype(np.uint8)
            X[rows, np.maximum(s, 0)] = np.where(s >= 0, new, X[rows, np.maximum(s, 0)])

    def _out(self, X: np.ndarray, updates: np.ndarray) -> tuple:
        return ({"x": X}, {"samples": X.astype(bool)},
                {"data_used": np.ones(self.chains),
                 "pair_terms_read": updates.astype(np.float64) * self.model.N})


class RandomScan(_Partial):
    def step(self, state: dict, rng: np.random.Generator):
        X = np.array(state["x"], dtype=np.uint8, copy=True)
        D = self.model.D
        self._update(X, rng.integers(0, D, (self.chains, D)), rng.random((self.chains, D)))
        return self._out(X, np.full(self.chains, D))


class PartialSweep(_Partial):
    def step(self, state: dict, rng: np.random.Generator):
        X = np.array(state["x"], dtype=np.uint8, copy=True)
        D = self.model.D
        keep = np.argsort(rng.random((self.chains, D)), axis=1)[:, :D // 2]
        self._update(X, np.sort(keep, axis=1), rng.random((self.chains, D // 2)))
        return self._out(X, np.full(self.chains, D // 2))


def tempered(model: DenseMRF, beta: float) -> DenseMRF:
    return DenseMRF.from_tables(beta * model.logpsi, model.D)


def dropped_term(model: DenseMRF) -> DenseMRF:
    """The model without the triplets that contain variable 0."""
    logpsi = model.logpsi.copy()
    logpsi[np.any(model.tri == 0, axis=1)] = 0.0
    return DenseMRF.from_tables(logpsi, model.D)


@sampler("mrf", "cal-random-scan", help="calibration, correct: random-scan exact Gibbs")
def _random_scan(model, params, chains):
    return RandomScan(model, chains)


@sampler("mrf", "cal-partial-sweep",
         help="calibration, correct: exact Gibbs over a random half of the variables per step")
def _partial_sweep(model, params, chains):
    return PartialSweep(model, chains)


@sampler("mrf", "cal-tempered-gibbs", params={"beta": BETA},
         help="calibration, wrong unless beta = 1: exact Gibbs on p(x)^beta")
def _tempered_gibbs(model, params, chains):
    return ExactGibbs(tempered(model, params["beta"]), chains)


@sampler("mrf", "cal-sign-error", help="calibration, wrong: the log-potentials' sign flipped")
def _sign_error(model, params, chains):
    return ExactGibbs(tempered(model, -1.0), chains)


@sampler("mrf", "cal-dropped-term",
         help="calibration, wrong: exact Gibbs without the triplets of variable 0")
def _dropped_term(model, params, chains):
    return ExactGibbs(dropped_term(model), chains)


#: the calibration set: label -> (sampler entry, expected)
SET = {
    "exact": ({"method": "exact"}, "correct"),
    "exact_lookup": ({"method": "exact_lookup"}, "correct"),
    "random_scan": ({"method": "cal-random-scan"}, "correct"),
    "partial_sweep": ({"method": "cal-partial-sweep"}, "correct"),
    "gibbs_beta0.9": ({"method": "cal-tempered-gibbs", "beta": 0.9}, "wrong"),
    "gibbs_beta0.6": ({"method": "cal-tempered-gibbs", "beta": 0.6}, "wrong"),
    "sign_error": ({"method": "cal-sign-error"}, "wrong"),
    "dropped_term": ({"method": "cal-dropped-term"}, "wrong"),
}

POWER_BETAS = (0.99, 0.97, 0.95, 0.9, 0.8, 0.6)


def power_entry(beta: float) -> dict:
    return {"method": "cal-tempered-gibbs", "beta": float(beta)}
