"""The stable import surface for plugin authors (see docs/plugins.md).

Everything a plugin needs, re-exported from mixlab's internal modules; import from here, not
from those modules, and your plugin keeps working when mixlab's insides move::

    from mixlab.api import sampler, Param

    @sampler("spinglass", "my-sampler", params={"beta": Param(1.0, float, lo=0)})
    def make(target, params, chains):
        return MySampler(target, params["beta"], chains)

Registration (decorators):

- :func:`sampler` ``(family, name, params={...}, help="")`` on ``factory(target, params,
  chains) -> sampler``: one more sampler for a target family (:data:`FAMILIES`); every
  benchmark experiment of that family can then name it (``samplers: {label: {method: name}}``).
- :func:`experiment` ``(name, schema={...}, help="")`` on ``run(ctx: Context)``: a whole
  experiment kind (a spec's ``experiment:`` key names it).
- :func:`figure` ``(name, experiment=..., size=(w, h))`` on ``draw(run: RunReader, fig)``: a
  figure drawn from a run file alone.
- :func:`register_family` ``(Family(name=..., draws=(DrawKey(...),), cost=..., summarize=...,
  league=LeagueTargets(...)))``: a target family of one's own; its samplers then join runs
  (experiment ``league.sample``), ``mixlab diagnose``, ``mixlab plugins`` and ``mixlab league``.

Evaluators have no registry: an experiment kind builds them and hands them to
``ctx.stream(..., evaluators=[...])``; the contract is ``update(draws, count, seconds)``,
``curve() -> (x, y, yerr)``, attributes ``metric``, ``series``, ``x_label``, ``y_label`` and
``state()``/``load_state()`` (:class:`AttributeState` writes both from ``state_attrs``).

Schemas: :class:`Param`, :class:`MapOf`, :class:`ListOf`, :class:`SamplerEntry`.
Errors: :class:`SpecError` (exit 2, names the spec key), :class:`MixlabError` (exit 1).
Checks: :func:`check_step_output` (what the runner checks at a stream's first step).
"""

from __future__ import annotations

from .errors import DataError, MixlabError, SpecError
from .plugins.contract import check_step_output
from .plugins.families import DrawKey, Family, LeagueTargets, register_family
from .plugins.registry import FAMILIES, experiment, figure, sampler, samplers_for
from .run.context import Context
from .run.streams import StreamResult
from .runfile.checkpoint import AttributeState
from .runfile.store import RunReader
from .spec.schema import ListOf, MapOf, Param, SamplerEntry

__all__ = [
    "FAMILIES", "sampler", "samplers_for", "experiment", "figure",
    "Family", "DrawKey", "LeagueTargets", "register_family",
    "Param", "MapOf", "ListOf", "SamplerEntry",
    "AttributeState", "Context", "StreamResult", "RunReader", "check_step_output",
    "MixlabError", "SpecError", "DataError",
    "RBM", "SPINGLASS", "LOGISTIC", "MRF",
]

# The target families' names (the first argument of :func:`sampler`).
RBM, SPINGLASS, LOGISTIC, MRF = "rbm", "spinglass", "logistic", "mrf"
assert {RBM, SPINGLASS, LOGISTIC, MRF} <= set(FAMILIES)
