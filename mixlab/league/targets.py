"""The league's standard targets: each family's models with a truth, listable as data.

A target is a name and a *definition* (a flat dict of numbers and strings that fixes the model
completely, its random seed included), so it can be rebuilt anywhere and its truth cached by
definition (mixlab.league.truth). :func:`standard_targets` lists a family's targets;
:func:`build` turns a definition into a :class:`Instance`: what the family's sampler
factories receive, the truth, the yardstick evaluator and the per-draw summaries.

Spin glass (exact truth): 10x10 grids with fields ``θ_i ~ U[-1, 1]`` and couplings ``θ_ij ~
U[0, c]`` (attractive) or ``U[-c, c]`` (mixed), at c = 0.5, 1.5 and 3 (c = 3 is the hard end of
Fig 1 of Hazan, Maji & Jaakkola 2013); truth: exact single-site marginals by the frontier
transfer matrix (mixlab.spinglass.exact).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SpecError
from .truth import cached_truth

#: the seed of every standard target's random model (part of its definition)
MODEL_SEED = 29


@dataclass
class Instance:
    """A built target: ``target`` for the factories, ``truth`` (flat dict of arrays),
    ``yardstick(work_marks, second_marks, series)`` -> evaluator, ``summarize`` (per-draw
    scalar summaries for ESS), ``n_total`` (N for a cost reported as a fraction, else None),
    ``truth_source`` (one line), ``exact`` (whether the truth is exact: the bias flag needs
    it), ``yardstick_name`` (what the error is)."""

    target: Any
    truth: dict
    yardstick: Callable
    summarize: Callable | None
    n_total: float | None
    truth_source: str
    exact: bool
    yardstick_name: str


def _spinglass_targets() -> dict[str, dict]:
    out = {}
    for mixed in (False, True):
        for c in (0.5, 1.5, 3.0):
            name = f"{'mixed' if mixed else 'attractive'}-c{c:g}"
            out[name] = {"rows": 10, "cols": 10, "field": 1.0, "coupling": c, "mixed": mixed,
                         "model_seed": MODEL_SEED}
    return out


def standard_targets(family: str) -> dict[str, dict]:
    """``{name: definition}`` of the family's standard targets, in table order."""
    makers = {"spinglass": _spinglass_targets}
    if family not in makers:
        raise SpecError(f"the {family} league has no standard targets yet; families with "
                        f"targets: {', '.join(makers)}", "family")
    return makers[family]()


def build(family: str, definition: dict, init: str = "random") -> Instance:
    """The :class:`Instance` of a target definition (its truth from the cache if there)."""
    if family == "spinglass":
        return _build_spinglass(definition, init)
    raise SpecError(f"the {family} league has no targets yet", "family")


def _build_spinglass(d: dict, init: str) -> Instance:
    from ..spinglass.exact import MAX_WIDTH
    from ..spinglass.exact import marginals as exact_marginals
    from ..spinglass.model import random_spin_glass
    from ..spinglass.summaries import summarizer
    from ..spinglass.target import SpinGlassTarget
    from .yardstick import MarginalYardstick

    try:
        rows, cols = int(d["rows"]), int(d["cols"])
        model = random_spin_glass(rows, cols, float(d["field"]), float(d["coupling"]),
                                  bool(d["mixed"]),
                                  np.random.default_rng(int(d["model_seed"])))
    except (KeyError, TypeError, ValueError) as exc:
        raise SpecError(f"a spin glass target needs rows, cols, field, coupling, mixed and "
                        f"model_seed ({exc})", "target") from None
    if min(rows, cols) > MAX_WIDTH:
        raise SpecError(f"exact marginals need min(rows, cols) <= {MAX_WIDTH}", "target")
    truth = cached_truth("spinglass", d, lambda: {"marginals": exact_marginals(model)})
    p = truth["marginals"]
    return Instance(
        target=SpinGlassTarget.of(model, init), truth=truth,
        yardstick=lambda work_marks=(), second_marks=(), series="sampler": MarginalYardstick(
            p, key="samples", work_marks=work_marks, second_marks=second_marks, series=series),
        summarize=summarizer(model), n_total=None,
        truth_source="exact single-site marginals (frontier transfer matrix)", exact=True,
        yardstick_name="mean |marginal error|")
