"""Spin glass league targets beyond the random grids of Hazan et al.: a uniform ferromagnet
and a ±J glass, scored on their site marginals and nearest-neighbour pair probabilities.

A definition's ``model`` says which couplings (mixlab.spinglass.model's ±1 convention,
``p(x) ∝ exp(Σ field x_i + Σ θ_ij x_i x_j)``):

- absent (or ``"uniform_random"``): fields ``U[-field, field]``, couplings ``U[0, coupling]``
  or, with ``mixed``, ``U[-coupling, coupling]`` (mixlab.spinglass.model.random_spin_glass);
- ``"ferromagnet"``: every coupling ``coupling``, every field ``field``;
- ``"pm_j"``: every coupling ``±coupling`` with probability 1/2 each (the Edwards-Anderson ±J
  glass at inverse temperature ``coupling`` for J = 1), every field ``field``.

With ``yardstick: sites_and_edges`` the truth is the vector of the ``R C`` site marginals
``P(x_i = +1)`` followed by the ``R (C-1)`` right and ``(R-1) C`` down edges' agreement
probabilities ``P(x_i = x_j)`` (``E[x_i x_j] = 2 P − 1``), all from one forward-backward sweep
of the frontier transfer matrix (mixlab.spinglass.exact.site_and_edge_marginals), and the
yardstick is the mean absolute error over those features. At zero field every site marginal
is 1/2 by the global flip symmetry, so the site part measures whether the chains visit both
signs of the magnetisation equally (the slow mode of a critical ferromagnet, and of a glass's
frozen states); the edge part measures the nearest-neighbour correlations (the energy), which
a sampler can get right inside one valley.
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecError
from .reach import marginal_reach
from .truth import cached_truth

#: the ±J glass target's inverse temperature (J = 1): at T = 1/3 single-site samplers stay in
#: the valley they start in for thousands of sweeps of a 16 x 16 grid (docs/league.md)
GLASS_BETA = 3.0

MODELS = ("uniform_random", "ferromagnet", "pm_j")


def spinglass_model(d: dict):
    """The :class:`~mixlab.spinglass.model.SpinGlass` of a target definition ``d``."""
    from ..spinglass.model import SpinGlass, random_spin_glass

    kind = d.get("model", "uniform_random")
    if kind not in MODELS:
        raise SpecError(f"a spin glass target's model must be one of {', '.join(MODELS)}, "
                        f"got {kind!r}", "target")
    try:
        rows, cols = int(d["rows"]), int(d["cols"])
        field, coupling = float(d["field"]), float(d["coupling"])
        if kind == "uniform_random":
            return random_spin_glass(rows, cols, field, coupling, bool(d["mixed"]),
                                     np.random.default_rng(int(d["model_seed"])))
        if kind == "ferromagnet":
            return SpinGlass(np.full((rows, cols), field), np.full((rows, cols - 1), coupling),
                             np.full((rows - 1, cols), coupling))
        rng = np.random.default_rng(int(d["model_seed"]))
        right = coupling * (2.0 * rng.integers(0, 2, (rows, cols - 1)) - 1.0)
        down = coupling * (2.0 * rng.integers(0, 2, (rows - 1, cols)) - 1.0)
        return SpinGlass(np.full((rows, cols), field), right, down)
    except (KeyError, TypeError, ValueError) as exc:
        keys = {"uniform_random": "rows, cols, field, coupling, mixed and model_seed",
                "ferromagnet": "rows, cols, field and coupling",
                "pm_j": "rows, cols, field, coupling and model_seed"}[kind]
        raise SpecError(f"a spin glass target ({kind}) needs {keys} ({exc})",
                        "target") from None


def site_edge_features(x: np.ndarray) -> np.ndarray:
    """``x (chains, n, R, C)`` bool spins -> ``(chains, n, R C + R (C-1) + (R-1) C)`` bool:
    the sites, then each right edge's and each down edge's agreement ``x_i == x_j``."""
    x = np.asarray(x, bool)
    K, B = x.shape[:2]
    return np.concatenate([x.reshape(K, B, -1),
                           (x[..., :, :-1] == x[..., :, 1:]).reshape(K, B, -1),
                           (x[..., :-1, :] == x[..., 1:, :]).reshape(K, B, -1)], axis=2)


def exact_sites_and_edges(model) -> dict:
    """``{"marginals" (R, C), "right_agree" (R, C-1), "down_agree" (R-1, C)}``, exact."""
    from ..spinglass.exact import site_and_edge_marginals

    marg, right, down = site_and_edge_marginals(model)
    return {"marginals": marg, "right_agree": right, "down_agree": down}


def sites_and_edges(d: dict, model, init: str, instance):
    """The league ``instance`` (mixlab.league.targets.Instance) of a definition scored on its
    site marginals and nearest-neighbour agreement probabilities (truth cached)."""
    from ..spinglass.summaries import summarizer
    from ..spinglass.target import SpinGlassTarget
    from .yardstick import MarginalYardstick

    t = cached_truth("spinglass", d, lambda: exact_sites_and_edges(model))
    p = np.concatenate([t["marginals"].ravel(), t["right_agree"].ravel(),
                        t["down_agree"].ravel()])
    kind = d.get("model", "uniform_random")
    if kind == "ferromagnet":
        what = f"ferromagnet, coupling {float(d['coupling']):.4g}"
    elif kind == "pm_j":
        what = f"±J glass, |coupling| {float(d['coupling']):g}"
    else:
        what = "random grid"
    return instance(
        target=SpinGlassTarget.of(model, init), truth=t,
        yardstick=lambda work_marks=(), second_marks=(), series="sampler": MarginalYardstick(
            p, key="samples", work_marks=work_marks, second_marks=second_marks,
            series=series, features=site_edge_features,
            y_label="mean |error| of P(x_i = +1), P(x_i = x_j)"),
        summarize=summarizer(model),
        truth_source=f"exact site marginals and nearest-neighbour pair probabilities "
                     f"(frontier transfer matrix; {what})",
        exact=True, yardstick_name="mean |error| of the site marginals and the nearest-"
                                   "neighbour agreement probabilities",
        reach_error=marginal_reach(p))
