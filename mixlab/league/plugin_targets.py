"""The league targets of a family a plugin registered (mixlab.plugins.families.LeagueTargets).

The plugin gives its targets' definitions, ``build(definition) -> target``, the exact
probabilities ``truth(target) -> (n,)`` of 0/1 features of a draw and ``features(target, x)
-> (C, B, n)`` (or none: the draws themselves are the features). The league caches the truth
by definition (mixlab.league.truth), scores the draws with the marginal yardstick
``mean_i |p̂_i − p_i|`` (mixlab.league.yardstick), states the error of 1,000 exact draws
(mixlab.league.reach) and flags bias against the sampler's own Monte Carlo error
(mixlab.league.bias), as for mixlab's spin glasses. A failure of the plugin's code is one
paragraph naming the family, the plugin module and the function (exit 1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import MixlabError, SpecError
from ..plugins.families import Family, family_module, find
from .reach import marginal_reach
from .truth import cached_truth


def plugin_family(family: str) -> Family | None:
    """The plugin's :class:`Family` named ``family`` when it has league targets, else None."""
    fam = find(family)
    if fam is None or family_module(family) is None or fam.league is None:
        return None
    return fam


def _call(fam: Family, what: str, fn: Callable, *args) -> Any:
    """``fn(*args)``, a plugin function; its exception as a MixlabError naming the plugin."""
    try:
        return fn(*args)
    except (MixlabError, KeyboardInterrupt):
        raise
    except Exception as exc:
        raise MixlabError(f"the league targets of family '{fam.name}' (plugin module "
                          f"{family_module(fam.name)}) failed in {what}: "
                          f"{type(exc).__name__}: {exc}. Fix the plugin's LeagueTargets; "
                          f"'mixlab --debug ...' shows the traceback.") from exc


def definitions(fam: Family) -> dict[str, dict]:
    """``{name: definition}`` of the plugin family's targets, checked to be data."""
    defs = _call(fam, "definitions()", fam.league.definitions)
    if not isinstance(defs, dict) or not defs or not all(
            isinstance(k, str) and isinstance(v, dict) for k, v in defs.items()):
        raise MixlabError(f"the league targets of family '{fam.name}' (plugin module "
                          f"{family_module(fam.name)}): definitions() must return a non-empty "
                          f"{{name: definition dict}}, got {defs!r:.120}")
    return {k: dict(v) for k, v in defs.items()}


def build(fam: Family, definition: dict, instance: type):
    """The ``instance`` (mixlab.league.targets.Instance) of one of the family's targets."""
    league = fam.league
    target = _call(fam, "build(definition)", league.build, dict(definition))

    def compute() -> dict:
        p = np.asarray(_call(fam, "truth(target)", league.truth, target), np.float64).ravel()
        if not p.size or not np.all(np.isfinite(p)) or p.min() < 0 or p.max() > 1:
            raise MixlabError(f"the league targets of family '{fam.name}' (plugin module "
                              f"{family_module(fam.name)}): truth(target) must return the "
                              f"exact probabilities (n,) of the features, each in [0, 1]")
        return {"p": p}

    try:
        p = cached_truth(fam.name, definition, compute)["p"]
    except TypeError as exc:   # a definition that is not data: JSON cannot key it
        raise SpecError(f"a {fam.name} target definition must hold numbers and strings "
                        f"({exc})", "target") from None
    features = _features(fam, target, p.size)
    return instance(
        target=target, truth={"p": p},
        yardstick=lambda work_marks=(), second_marks=(), series="sampler": _yardstick(
            p, league.key, features, work_marks, second_marks, series, league.yardstick_name),
        summarize=_call(fam, "summarize(target)", fam.summarize, target),
        truth_source=league.truth_source, exact=True, yardstick_name=league.yardstick_name,
        reach_error=marginal_reach(p))


def _yardstick(p, key, features, work_marks, second_marks, series, y_label):
    from .yardstick import MarginalYardstick

    return MarginalYardstick(p, key=key, work_marks=work_marks, second_marks=second_marks,
                             series=series, features=features, y_label=y_label)


def _features(fam: Family, target: Any, n: int) -> Callable:
    """``features(x (C, B, ...)) -> (C, B, n)``: the plugin's, checked against the truth's
    size, or the draws themselves flattened."""
    own = fam.league.features

    def features(x: np.ndarray) -> np.ndarray:
        f = x if own is None else _call(fam, "features(target, x)", own, target, x)
        f = np.asarray(f)
        f = f.reshape(x.shape[0], x.shape[1], -1)
        if f.shape[2] != n:
            raise MixlabError(f"the league targets of family '{fam.name}' (plugin module "
                              f"{family_module(fam.name)}): features give {f.shape[2]} values "
                              f"per draw and truth(target) {n} probabilities; they must agree")
        return f.astype(bool) if f.dtype.kind in "biu" else f

    return features
