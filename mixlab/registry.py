"""Registries through which the papers' code plugs into the runner.

- **Experiments**: ``@experiment("perturb_map.logz_vs_coupling", schema={...})`` on a function
  ``run(ctx: mixlab.context.Context) -> None``. A spec's ``experiment:`` key names one.
- **Figures**: ``@figure("perturb_map.fig1_left", experiment="perturb_map.logz_vs_coupling")``
  on ``draw(run: mixlab.store.RunReader, fig: matplotlib.figure.Figure) -> None``. A figure reads
  the run file only; it never runs model code.
- **Samplers**: ``@sampler("rbm", "gibbs", params={...})`` on a factory
  ``factory(target, params: dict, chains: int) -> sampler``; one registry per target family
  (:data:`FAMILIES`). A spec's sampler entry ``{method: gibbs, ...}`` names one
  (:class:`mixlab.schema.SamplerEntry` validates the rest against ``params``).

Plugin modules are imported lazily (the first time a registry is read), so ``mixlab --help``
stays fast and a broken plugin names itself: mixlab's own modules (:data:`PLUGIN_MODULES`), then
outsiders' plugins (entry points ``mixlab.plugins`` and ``MIXLAB_PLUGINS``, see mixlab.plugins).
Plugin authors import all of this from :mod:`mixlab.api`.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import SpecError

# Modules that register experiments and figures when imported.
PLUGIN_MODULES = (
    "mixlab.generic",
    "mixlab.diagnostics.figure",
    "mixlab.rbm.samplers",
    "mixlab.rbm.experiments",
    "mixlab.rbm.figures",
    "mixlab.spinglass.samplers",
    "mixlab.spinglass.experiments",
    "mixlab.spinglass.experiments_sampling",
    "mixlab.spinglass.figures",
    "mixlab.austerity.samplers",
    "mixlab.austerity.experiments",
    "mixlab.austerity.figures",
)


@dataclass(frozen=True)
class ExperimentKind:
    name: str
    run: Callable
    schema: dict
    help: str


@dataclass(frozen=True)
class SamplerKind:
    """A sampler registered for a target family: ``factory(target, params, chains)`` builds it.

    ``params`` is the schema (see mixlab.schema) of the sampler's own spec keys; ``module`` is
    where it was registered from (shown by ``mixlab plugins``)."""

    family: str
    name: str
    factory: Callable
    params: dict
    help: str
    module: str


@dataclass(frozen=True)
class FigureKind:
    name: str
    experiment: str
    draw: Callable
    help: str
    size: tuple[float, float]


# Target families a sampler can be registered for: name -> what its factory's ``target`` is.
# Each family's draw keys, step, cost statistic (site_updates, points_read, pair_terms_read)
# and exact truths: :func:`family_info` (mixlab.families).
FAMILIES = {
    "rbm": "a binary RBM (mixlab.rbm.model.RBM: W (D, H), b (D,), c (H,))",
    "spinglass": "a spin glass on a grid (mixlab.spinglass.target.SpinGlassTarget)",
    "logistic": "a Bayesian logistic-regression posterior (mixlab.austerity)",
    "mrf": "a dense triplet MRF over binary variables (mixlab.austerity.mrf)",
}


def family_info(name: str):
    """Family ``name``'s draws, step, cost statistic and exact truths (mixlab.families)."""
    from .families import family

    return family(name)


_EXPERIMENTS: dict[str, ExperimentKind] = {}
_SAMPLERS: dict[str, dict[str, SamplerKind]] = {f: {} for f in FAMILIES}
_FIGURES: dict[str, FigureKind] = {}
_loaded = False


def experiment(name: str, schema: dict, help: str = "") -> Callable:
    """Register ``run(ctx)`` as experiment kind ``name`` with spec ``schema`` (see mixlab.schema).

    The reserved top-level keys ``name``, ``experiment``, ``seed``, ``description``, ``scales``
    and ``scale`` must not appear in ``schema``."""

    def deco(fn: Callable) -> Callable:
        _EXPERIMENTS[name] = ExperimentKind(name, fn, schema, help or (fn.__doc__ or "").strip())
        return fn

    return deco


def figure(name: str, experiment: str, help: str = "",
           size: tuple[float, float] = (6.4, 4.8)) -> Callable:
    """Register ``draw(run, fig)`` as figure ``name`` of experiment kind ``experiment``.

    ``size`` is the figure size in inches (the DPI is fixed by the style)."""

    def deco(fn: Callable) -> Callable:
        _FIGURES[name] = FigureKind(name, experiment, fn, help or (fn.__doc__ or "").strip(),
                                    size)
        return fn

    return deco


class RegistrationError(ValueError):
    """A registration that cannot work (unknown family, bad schema, a name already taken)."""


def sampler(family: str, name: str, params: dict | None = None, help: str = "") -> Callable:
    """Register ``factory(target, params, chains) -> sampler`` as sampler ``name`` of ``family``.

    ``params`` is the schema of the sampler's own spec keys (besides ``method``)."""
    if family not in FAMILIES:
        raise RegistrationError(f"unknown sampler family {family!r} (sampler {name!r}); "
                                f"families: {', '.join(FAMILIES)}")

    def deco(factory: Callable) -> Callable:
        _SAMPLERS[family][name] = SamplerKind(family, name, factory, dict(params or {}),
                                              help or (factory.__doc__ or "").strip(),
                                              getattr(factory, "__module__", "?"))
        return factory

    return deco


def samplers_for(family: str) -> dict[str, SamplerKind]:
    """Every sampler registered for ``family``, by name."""
    load_plugins()
    return dict(_SAMPLERS[family])


def get_sampler(family: str, name: Any, path: str = "method") -> SamplerKind:
    """The sampler ``name`` of ``family``; a SpecError naming ``path`` and the closest name."""
    known = samplers_for(family)
    if not isinstance(name, str) or name not in known:
        close = difflib.get_close_matches(str(name), list(known), n=1, cutoff=0.4)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise SpecError(f"unknown {family} sampler '{name}'; {hint}registered: "
                        f"{', '.join(sorted(known)) or 'none'} (see 'mixlab plugins')", path)
    return known[name]


def load_plugins() -> None:
    """Import mixlab's own modules (once), then the installed plugins (mixlab.plugins)."""
    global _loaded
    if not _loaded:
        _loaded = True
        for mod in PLUGIN_MODULES:
            try:
                importlib.import_module(mod)
            except ModuleNotFoundError as exc:
                # A paper package that is not there yet is skipped; a missing dependency inside
                # one is not.
                if exc.name is None or not mod.startswith(exc.name):
                    raise
    from . import plugins

    plugins.load_installed()


# -- what a plugin's import registered (mixlab.plugins makes each import a transaction) --------

def snapshot() -> dict:
    """The registries' current contents (to compare with after a plugin's import)."""
    return {"experiment": dict(_EXPERIMENTS), "figure": dict(_FIGURES),
            "sampler": {f: dict(d) for f, d in _SAMPLERS.items()}}


def restore(snap: dict) -> None:
    """Put the registries back as :func:`snapshot` saw them (a failed plugin leaves nothing)."""
    _EXPERIMENTS.clear()
    _EXPERIMENTS.update(snap["experiment"])
    _FIGURES.clear()
    _FIGURES.update(snap["figure"])
    for f, d in _SAMPLERS.items():
        d.clear()
        d.update(snap["sampler"][f])


def changes(snap: dict) -> list[tuple[str, str]]:
    """``(kind, name)`` of every entry added or replaced since ``snap``; samplers are named
    ``family/name``."""
    out = [("experiment", n) for n, k in _EXPERIMENTS.items()
           if snap["experiment"].get(n) is not k]
    out += [("figure", n) for n, k in _FIGURES.items() if snap["figure"].get(n) is not k]
    for f, d in _SAMPLERS.items():
        out += [("sampler", f"{f}/{n}") for n, k in d.items()
                if snap["sampler"][f].get(n) is not k]
    return out


def check_registrations(added: list[tuple[str, str]], snap: dict) -> None:
    """Raise RegistrationError for an entry of ``added`` that replaces someone else's or that
    cannot work (a schema that is not one, a reserved key, a factory that is not callable)."""
    from .spec import RESERVED

    for kind, name in added:
        if kind == "sampler":
            family, _, short = name.partition("/")
            old, new = snap["sampler"][family].get(short), _SAMPLERS[family][short]
        elif kind == "experiment":
            old, new = snap["experiment"].get(name), _EXPERIMENTS[name]
        else:
            old, new = snap["figure"].get(name), _FIGURES[name]
        where = f"{kind} '{name}'"
        if old is not None:
            src = getattr(old, "module", None) or getattr(getattr(old, "run", None) or
                                                          getattr(old, "draw", None),
                                                          "__module__", "?")
            raise RegistrationError(f"{where} is already registered by {src}; choose another "
                                    f"name")
        if kind == "sampler":
            if not callable(new.factory):
                raise RegistrationError(f"{where}: the factory is not callable")
            if "method" in new.params:
                raise RegistrationError(f"{where}: 'method' is reserved (it names the sampler); "
                                        f"rename that parameter")
            schema = new.params
        elif kind == "experiment":
            if not callable(new.run):
                raise RegistrationError(f"{where}: run is not callable")
            if not isinstance(new.schema, dict):
                raise RegistrationError(f"{where}: schema must be a dict of spec keys")
            clash = set(new.schema) & (set(RESERVED) | {"scales", "plugins"})
            if clash:
                raise RegistrationError(f"{where}: schema redefines the reserved key(s) "
                                        f"{', '.join(sorted(clash))}")
            schema = new.schema
        else:
            if not callable(new.draw):
                raise RegistrationError(f"{where}: the draw function is not callable")
            if not isinstance(new.experiment, str):
                raise RegistrationError(f"{where}: experiment must be an experiment kind's name")
            continue
        bad = _not_a_schema(schema)
        if bad is not None:
            raise RegistrationError(f"{where}: its parameter schema is not made of Param, "
                                    f"MapOf, ListOf, SamplerEntry and dicts ({bad})")


def _not_a_schema(schema: Any, path: str = "") -> str | None:
    """Where ``schema`` holds something that is not a schema node (None when it is one)."""
    from .schema import ListOf, MapOf, Param, SamplerEntry

    if isinstance(schema, (Param, SamplerEntry)):
        return None
    if isinstance(schema, (MapOf, ListOf)):
        return _not_a_schema(schema.schema, path + "[]")
    if isinstance(schema, dict):
        for k, v in schema.items():
            if not isinstance(k, str):
                return f"key {k!r} is not a string"
            bad = _not_a_schema(v, f"{path}.{k}" if path else k)
            if bad is not None:
                return bad
        return None
    return f"{path or 'the schema'} is {type(schema).__name__} {schema!r}"


def experiments() -> dict[str, ExperimentKind]:
    load_plugins()
    return dict(_EXPERIMENTS)


def get_experiment(name: Any) -> ExperimentKind:
    kinds = experiments()
    if not isinstance(name, str) or name not in kinds:
        close = difflib.get_close_matches(str(name), list(kinds), n=1, cutoff=0.4)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise SpecError(f"unknown experiment '{name}'; {hint}known: {', '.join(sorted(kinds))}",
                        "experiment")
    return kinds[name]


def figures_for(experiment_name: str) -> dict[str, FigureKind]:
    load_plugins()
    return {n: f for n, f in _FIGURES.items() if f.experiment == experiment_name}


def all_figures() -> dict[str, FigureKind]:
    load_plugins()
    return dict(_FIGURES)
