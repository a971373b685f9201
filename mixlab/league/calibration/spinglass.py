"""Spin glass calibration samplers: three correct variants and wrong ones on purpose.

Correct (each leaves ``p(x) ∝ exp(θ(x))`` invariant):

- ``cal-heat-bath-scan``: systematic-scan heat bath, every site in raster order, one at a
  time (the textbook sequential Gibbs sampler); a step is one sweep (n site updates);
- ``cal-metropolis-random-scan``: random-scan single-site Metropolis, n sites drawn uniformly
  with replacement per step, each proposing its flip (accept ``min(1, exp(−2 x_i h_i))``);
- ``cal-gibbs-random-colour``: each chain updates one checkerboard colour, drawn at random
  per step, by heat bath (a random-scan mixture of two Gibbs kernels; n/2 site updates).

Wrong (each is an exact sampler of another model, so what it targets is known):

- ``cal-tempered-gibbs`` (``beta``): checkerboard Gibbs on ``β θ``, i.e. ``p(x)^β``;
- ``cal-tempered-metropolis`` (``beta``): checkerboard Metropolis on ``β θ``;
- ``cal-field-sign``: checkerboard Gibbs with every field's sign flipped (where every field
  is 0 this is the target itself, and :func:`alters` says so: it counts as correct there);
- ``cal-dropped-row``: checkerboard Gibbs without the last row's couplings (the horizontal
  ones inside it and the vertical ones into it).

Every sampler starts from the target's ``init`` (the league's overdispersed starts), draws
``samples (chains, R, C)`` bool and reports ``site_updates``. Registered only when a league
runs with ``calibration: true`` (mixlab.league.calibration).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...compiled.numba_cache import CACHE
from ...plugins.registrations import sampler
from ...spec.schema import Param
from ...spinglass import mcmc
from ...spinglass.model import SpinGlass

_JIT = {"cache": CACHE, "nogil": True, "boundscheck": False, "error_model": "numpy"}
BETA = Param(0.9, float, lo=0, help="inverse temperature: the sampler targets p(x)^beta")


def _padded(model: SpinGlass) -> tuple[np.ndarray, ...]:
    """``(field (R, C), JL, JR, JU, JD)``: each site's coupling to its left, right, up and down
    neighbour (0 off the grid), float64."""
    R, C = model.shape
    JL, JR, JU, JD = (np.zeros((R, C)) for _ in range(4))
    JL[:, 1:] = model.right
    JR[:, :-1] = model.right
    JU[1:, :] = model.down
    JD[:-1, :] = model.down
    return np.asarray(model.field, np.float64), JL, JR, JU, JD


@njit(**_JIT)
def _local(x, r, c, F, JL, JR, JU, JD):
    """``h = θ_i + Σ_j θ_ij x_j`` at site (r, c) of one chain's spins ``x (R, C)``."""
    R, C = x.shape
    h = F[r, c]
    if c > 0:
        h += JL[r, c] * x[r, c - 1]
    if c < C - 1:
        h += JR[r, c] * x[r, c + 1]
    if r > 0:
        h += JU[r, c] * x[r - 1, c]
    if r < R - 1:
        h += JD[r, c] * x[r + 1, c]
    return h


@njit(**_JIT)
def _scan_sweep(x, u, F, JL, JR, JU, JD, changed):
    """Heat bath in raster order on every chain of ``x (K, R, C)`` ±1 (in place), ``u (K, R,
    C)`` uniforms: ``x_i = +1`` iff ``u_i < sigmoid(2 h_i)``; ``changed (K,)`` counts flips."""
    K, R, C = x.shape
    for k in range(K):
        n = 0
        for r in range(R):
            for c in range(C):
                h = _local(x[k], r, c, F, JL, JR, JU, JD)
                new = 1.0 if u[k, r, c] * (1.0 + np.exp(-2.0 * h)) < 1.0 else -1.0
                n += new != x[k, r, c]
                x[k, r, c] = new
        changed[k] = n


@njit(**_JIT)
def _random_scan(x, sites, u, F, JL, JR, JU, JD, changed):
    """Metropolis at the sites ``sites (K, m)`` (flat indices, in order) of every chain of
    ``x (K, R, C)`` (in place): flip accepted iff ``u < exp(−2 x_i h_i)``."""
    K, R, C = x.shape
    m = sites.shape[1]
    for k in range(K):
        n = 0
        for j in range(m):
            r, c = sites[k, j] // C, sites[k, j] % C
            h = _local(x[k], r, c, F, JL, JR, JU, JD)
            if u[k, j] < np.exp(-2.0 * x[k, r, c] * h):
                x[k, r, c] = -x[k, r, c]
                n += 1
        changed[k] = n


class _Sequential:
    """State ``x (chains, R, C)`` float64 ±1 from the target's ``init``."""

    def __init__(self, model, chains: int, init: str):
        self.model, self.chains, self.init_mode = model, *mcmc._check_chains_init(chains, init)
        self.n = model.rows * model.cols
        self.terms = _padded(model)
        self._compile()

    def init(self, rng: np.random.Generator) -> dict:
        return {"x": mcmc.init_spins((self.chains, *self.model.shape), self.init_mode, rng)}

    def _stats(self, changed: np.ndarray, updates: int) -> dict:
        return {"accept": changed / updates, "site_updates": np.full(self.chains,
                                                                     float(updates))}


class HeatBathScan(_Sequential):
    """Systematic-scan heat bath (see the module doc)."""

    def _compile(self):
        x = np.ones((1, *self.model.shape))
        _scan_sweep(x, np.zeros_like(x), *self.terms, np.zeros(1, np.int64))

    def step(self, state: dict, rng: np.random.Generator):
        x = state["x"]
        u = rng.random(x.shape)
        changed = np.zeros(self.chains, np.int64)
        _scan_sweep(x, u, *self.terms, changed)
        return state, {"samples": x > 0}, self._stats(changed, self.n)


class RandomScanMetropolis(_Sequential):
    """Random-scan single-site Metropolis (see the module doc)."""

    def _compile(self):
        x = np.ones((1, *self.model.shape))
        _random_scan(x, np.zeros((1, 1), np.int64), np.ones((1, 1)), *self.terms,
                     np.zeros(1, np.int64))

    def step(self, state: dict, rng: np.random.Generator):
        x = state["x"]
        sites = rng.integers(0, self.n, (self.chains, self.n))
        u = rng.random((self.chains, self.n))
        changed = np.zeros(self.chains, np.int64)
        _random_scan(x, sites, u, *self.terms, changed)
        return state, {"samples": x > 0}, self._stats(changed, self.n)


class RandomColourGibbs(mcmc.Gibbs):
    """Heat bath on one checkerboard colour per chain, drawn at random each step."""

    def step(self, state: dict, rng: np.random.Generator):
        X = state["x"]
        R, C = self.model.shape
        u = rng.random((R, C, self.chains), dtype=np.float32)
        colour = rng.random(self.chains) < 0.5                  # True: red, False: black
        changed = np.zeros(self.chains)
        one, mone = self.dtype.type(1), self.dtype.type(-1)
        for pick, subs in zip((colour, ~colour), self.blocks):
            for idx, J in subs:
                h = self._field(X, idx, J)
                h *= -2.0
                np.minimum(h, 80.0, out=h)
                np.exp(h, out=h)
                h += 1.0
                h *= u[idx["u"]]
                centre = X[idx["centre"]]
                new = np.where(pick, np.where(h < 1.0, one, mone), centre)
                changed += np.count_nonzero(new != centre, axis=(0, 1))
                centre[...] = new
        samples = np.ascontiguousarray(X[1:-1, 1:-1].transpose(2, 0, 1) > 0)
        updates = np.where(colour, *self._colour_sites)
        return state, {"samples": samples}, {"accept": changed / self.n,
                                             "site_updates": updates.astype(np.float64)}

    @property
    def _colour_sites(self) -> tuple[int, int]:
        """Sites of each colour: red ``(r + c)`` even, black odd."""
        R, C = self.model.shape
        red = int(np.count_nonzero(np.indices((R, C)).sum(axis=0) % 2 == 0))
        return red, R * C - red


def tempered(model: SpinGlass, beta: float) -> SpinGlass:
    """The model ``β θ``: its distribution is ``p(x)^β`` normalised."""
    return SpinGlass(beta * model.field, beta * model.right, beta * model.down)


def field_flipped(model: SpinGlass) -> SpinGlass:
    return SpinGlass(-model.field, model.right.copy(), model.down.copy())


def alters(method: str, definition: dict) -> bool:
    """Whether the wrong-on-purpose sampler ``method`` samples another model than the target
    of ``definition``: flipping the fields' signs changes nothing where every field is 0 (the
    critical ferromagnet and the ±J glass), so there ``cal-field-sign`` is Gibbs itself."""
    if method != "cal-field-sign":
        return True
    from ..target_spinglass import spinglass_model

    return bool(np.any(spinglass_model(definition).field != 0))


def dropped_row(model: SpinGlass) -> SpinGlass:
    """The model without the last row's couplings (within it and into it)."""
    right, down = model.right.copy(), model.down.copy()
    right[-1] = 0.0
    down[-1] = 0.0
    return SpinGlass(model.field.copy(), right, down)


INIT = {"init": Param(None, str, nullable=True, choices=mcmc.INITS,
                      help="initial spins; null: the league's starts")}


def _init(target, params) -> str:
    return params.get("init") or target.init


@sampler("spinglass", "cal-heat-bath-scan", params=dict(INIT),
         help="calibration, correct: systematic-scan heat bath")
def _heat_bath_scan(target, params, chains):
    return HeatBathScan(target, chains, _init(target, params))


@sampler("spinglass", "cal-metropolis-random-scan", params=dict(INIT),
         help="calibration, correct: random-scan single-site Metropolis")
def _metropolis_random_scan(target, params, chains):
    return RandomScanMetropolis(target, chains, _init(target, params))


@sampler("spinglass", "cal-gibbs-random-colour", params=dict(INIT),
         help="calibration, correct: heat bath on one random checkerboard colour per step")
def _gibbs_random_colour(target, params, chains):
    return RandomColourGibbs(target, chains=chains, init=_init(target, params))


@sampler("spinglass", "cal-tempered-gibbs", params={"beta": BETA, **INIT},
         help="calibration, wrong unless beta = 1: checkerboard Gibbs on p(x)^beta")
def _tempered_gibbs(target, params, chains):
    return mcmc.Gibbs(tempered(target, params["beta"]), chains=chains,
                      init=_init(target, params))


@sampler("spinglass", "cal-tempered-metropolis", params={"beta": BETA, **INIT},
         help="calibration, wrong unless beta = 1: checkerboard Metropolis on p(x)^beta")
def _tempered_metropolis(target, params, chains):
    return mcmc.Metropolis(tempered(target, params["beta"]), chains=chains,
                           init=_init(target, params))


@sampler("spinglass", "cal-field-sign", params=dict(INIT),
         help="calibration, wrong: checkerboard Gibbs with the fields' sign flipped")
def _field_sign(target, params, chains):
    return mcmc.Gibbs(field_flipped(target), chains=chains, init=_init(target, params))


@sampler("spinglass", "cal-dropped-row", params=dict(INIT),
         help="calibration, wrong: checkerboard Gibbs without the last row's couplings")
def _dropped_row(target, params, chains):
    return mcmc.Gibbs(dropped_row(target), chains=chains, init=_init(target, params))


#: the calibration set: label -> (sampler entry, expected)
SET = {
    "gibbs": ({"method": "gibbs"}, "correct"),
    "metropolis": ({"method": "metropolis"}, "correct"),
    "swendsen_wang": ({"method": "swendsen_wang"}, "correct"),
    "heat_bath_scan": ({"method": "cal-heat-bath-scan"}, "correct"),
    "metropolis_random_scan": ({"method": "cal-metropolis-random-scan"}, "correct"),
    "gibbs_random_colour": ({"method": "cal-gibbs-random-colour"}, "correct"),
    "gibbs_beta0.9": ({"method": "cal-tempered-gibbs", "beta": 0.9}, "wrong"),
    "gibbs_beta0.6": ({"method": "cal-tempered-gibbs", "beta": 0.6}, "wrong"),
    "metropolis_beta0.6": ({"method": "cal-tempered-metropolis", "beta": 0.6}, "wrong"),
    "field_sign": ({"method": "cal-field-sign"}, "wrong"),
    "dropped_row": ({"method": "cal-dropped-row"}, "wrong"),
    "local": ({"method": "local"}, "wrong"),
    "pairwise": ({"method": "pairwise"}, "wrong"),
}

#: the power grid: tempered heat bath at these inverse temperatures
POWER_BETAS = (0.99, 0.97, 0.95, 0.9, 0.8, 0.6)


def power_entry(beta: float) -> dict:
    return {"method": "cal-tempered-gibbs", "beta": float(beta)}
