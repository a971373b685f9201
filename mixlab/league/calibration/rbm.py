"""RBM calibration samplers: a correct partial sweep and wrong models on purpose.

Correct:

- ``cal-partial-visible``: h ~ P(h | v), then a random half of the visible units (each chain
  its own half) from P(v_i | h), the others kept. Visible units are independent given h, so
  this is a Gibbs update of those units given all the rest: it leaves p(v, h) invariant.

Wrong (block Gibbs on another RBM, so what each targets is known):

- ``cal-tempered-gibbs`` (``beta``): W, b and c times β, i.e. ``p(v, h)^β``;
- ``cal-bias-sign``: the visible biases' sign flipped;
- ``cal-dropped-hidden``: the last hidden unit dropped (its weights and bias set to 0).

Every sampler starts as the built-in Gibbs does (the target's ``init``: random training
rows on the league's targets) and reports ``site_updates``. Registered only when a league runs
with ``calibration: true`` (mixlab.league.calibration).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...plugins.registrations import sampler
from ...rbm.samplers import Gibbs, _bernoulli, _sigmoid_, _start
from ...spec.schema import Param

BETA = Param(0.9, float, lo=0, help="inverse temperature: the sampler targets p(v, h)^beta")


class PartialVisible(Gibbs):
    """Block Gibbs whose visible half-step updates a random half of the units."""

    def step(self, state: dict, rng: np.random.Generator):
        x0 = state["x"]
        a = x0 @ self.W + self._c2
        _sigmoid_(a)
        h = _bernoulli(a, rng)
        px = h @ self.W.T + self._b2
        _sigmoid_(px)
        new = _bernoulli(px, rng)
        V = self.V
        pick = np.argsort(rng.random((self.chains, V)), axis=1)[:, :V // 2]
        mask = np.zeros((self.chains, V), bool)
        np.put_along_axis(mask, pick, True, axis=1)
        x = np.where(mask, new, x0).astype(np.float32)
        state["x"] = x
        flip = np.mean(x != x0, axis=1, dtype=np.float32)
        return state, self._draws(x, px), {
            "flip": flip, "site_updates": np.full(self.chains, float(self.H + V // 2))}


def tempered(target, beta: float):
    return replace(target, W=beta * target.W, b=beta * target.b, c=beta * target.c)


def bias_flipped(target):
    return replace(target, b=-target.b)


def dropped_hidden(target):
    W, c = target.W.copy(), target.c.copy()
    W[:, -1] = 0.0
    c[-1] = 0.0
    return replace(target, W=W, c=c)


@sampler("rbm", "cal-partial-visible",
         help="calibration, correct: block Gibbs updating a random half of the visible units")
def _partial_visible(target, params, chains):
    return PartialVisible(target, chains=chains, **_start(target))


@sampler("rbm", "cal-tempered-gibbs", params={"beta": BETA},
         help="calibration, wrong unless beta = 1: block Gibbs on p(v, h)^beta")
def _tempered_gibbs(target, params, chains):
    return Gibbs(tempered(target, params["beta"]), chains=chains, **_start(target))


@sampler("rbm", "cal-bias-sign", help="calibration, wrong: the visible biases' sign flipped")
def _bias_sign(target, params, chains):
    return Gibbs(bias_flipped(target), chains=chains, **_start(target))


@sampler("rbm", "cal-dropped-hidden", help="calibration, wrong: the last hidden unit dropped")
def _dropped_hidden(target, params, chains):
    return Gibbs(dropped_hidden(target), chains=chains, **_start(target))


#: the calibration set: label -> (sampler entry, expected)
SET = {
    "gibbs": ({"method": "gibbs"}, "correct"),
    "gibbs_k2": ({"method": "gibbs", "k": 2}, "correct"),
    "partial_visible": ({"method": "cal-partial-visible"}, "correct"),
    "gibbs_beta0.9": ({"method": "cal-tempered-gibbs", "beta": 0.9}, "wrong"),
    "gibbs_beta0.6": ({"method": "cal-tempered-gibbs", "beta": 0.6}, "wrong"),
    "bias_sign": ({"method": "cal-bias-sign"}, "wrong"),
    "dropped_hidden": ({"method": "cal-dropped-hidden"}, "wrong"),
}

POWER_BETAS = (0.99, 0.97, 0.95, 0.9, 0.8, 0.6)


def power_entry(beta: float) -> dict:
    return {"method": "cal-tempered-gibbs", "beta": float(beta)}
