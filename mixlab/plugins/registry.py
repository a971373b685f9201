"""Every registered experiment, figure and sampler, with mixlab's own modules and the installed
plugins loaded first.

- **Experiments**: ``@experiment("perturb_map.logz_vs_coupling", schema={...})`` on a function
  ``run(ctx: mixlab.run.context.Context) -> None``. A spec's ``experiment:`` key names one.
- **Figures**: ``@figure("perturb_map.fig1_left", experiment="perturb_map.logz_vs_coupling")``
  on ``draw(run: mixlab.runfile.store.RunReader, fig: matplotlib.figure.Figure) -> None``. A figure reads
  the run file only; it never runs model code.
- **Samplers**: ``@sampler("rbm", "gibbs", params={...})`` on a factory
  ``factory(target, params: dict, chains: int) -> sampler``; one registry per target family
  (:data:`FAMILIES`). A spec's sampler entry ``{method: gibbs, ...}`` names one
  (:class:`mixlab.spec.schema.SamplerEntry` validates the rest against ``params``).

The layers, bottom up: :mod:`mixlab.plugins.registrations` records (the decorators re-exported here);
:mod:`mixlab.plugins.discovery` finds and imports the modules that register; this module reads the tables
after loading what a read needs (an experiment's modules, a family's, or all of them, then the
installed plugins, so ``mixlab --help`` stays fast, a toy run never imports numba, and a broken
plugin names itself); :mod:`mixlab.spec.schema` asks it to validate sampler entries. Plugin
authors import all of this from :mod:`mixlab.api`.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from typing import Any

from ..errors import SpecError
from . import discovery as plugins
from .families import family
from .registrations import (  # noqa: F401  (re-exported: the registration surface)
    _EXPERIMENTS,
    _FIGURES,
    _SAMPLERS,
    BUILTIN_FAMILIES,
    FAMILIES,
    ExperimentKind,
    FigureKind,
    RegistrationError,
    SamplerKind,
    changes,
    experiment,
    family_names,
    figure,
    restore,
    sampler,
    snapshot,
)
from .sampler_builds import built_by


def family_info(name: str):
    """Family ``name``'s draws, step, cost statistic and exact truths (mixlab.plugins.families)."""
    return family(name)


def load_plugins() -> None:
    """Import all of mixlab's own modules (once), then the installed plugins (mixlab.plugins.discovery)."""
    plugins.load_all()


def samplers_for(family: str) -> dict[str, SamplerKind]:
    """Every sampler registered for ``family``, by name; each factory remembers what it builds
    and names a plugin whose code fails (mixlab.plugins.sampler_builds)."""
    plugins.load_for_family(family)
    return {n: _building(k) for n, k in _SAMPLERS[family].items()}


def _building(kind: SamplerKind, label: str | None = None) -> SamplerKind:
    """``kind`` with its factory wrapped by :func:`mixlab.plugins.sampler_builds.built_by`."""
    if not callable(kind.factory):
        return kind
    return replace(kind, factory=built_by(kind.factory, kind.family, kind.name, label))


def get_sampler(family: str, name: Any, path: str = "method") -> SamplerKind:
    """The sampler ``name`` of ``family``; a SpecError naming ``path`` and the closest name."""
    known = samplers_for(family)
    if not isinstance(name, str) or name not in known:
        _broken_provider("sampler", f"{family}/{name}", f"unknown {family} sampler '{name}'",
                         path)
        close = difflib.get_close_matches(str(name), list(known), n=1, cutoff=0.4)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise SpecError(f"unknown {family} sampler '{name}'; {hint}registered: "
                        f"{', '.join(sorted(known)) or 'none'} (see 'mixlab plugins')", path)
    # the spec's label, for failure messages and the stream's record (mixlab.run.update)
    label = (path[len("samplers."):-len(".method")]
             if path.startswith("samplers.") and path.endswith(".method") else None)
    return _building(known[name], label or None)


def _broken_provider(kind: str, name: str, what: str, path: str) -> None:
    """When ``name`` is missing and an installed plugin failed to load, fail with that
    plugin's whole message (exit 1) instead of an unknown-name error."""
    why = plugins.broken_provider(kind, name)
    if why is not None:
        raise plugins.PluginError(f"spec key '{path}': {what}; {why}")


def experiments() -> dict[str, ExperimentKind]:
    load_plugins()
    return dict(_EXPERIMENTS)


def find_experiment(name: Any) -> ExperimentKind | None:
    """The experiment ``name``, or None; imports only the modules that would register it."""
    plugins.load_for_experiment(name)
    return _EXPERIMENTS.get(name) if isinstance(name, str) else None


def get_experiment(name: Any) -> ExperimentKind:
    """The experiment ``name``; a SpecError naming the closest known name."""
    kind = find_experiment(name)
    if kind is not None:
        return kind
    kinds = experiments()
    if not isinstance(name, str) or name not in kinds:
        _broken_provider("experiment", str(name), f"unknown experiment '{name}'", "experiment")
        close = difflib.get_close_matches(str(name), list(kinds), n=1, cutoff=0.4)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise SpecError(f"unknown experiment '{name}'; {hint}known: {', '.join(sorted(kinds))}",
                        "experiment")
    return kinds[name]


def figures_for(experiment_name: str) -> dict[str, FigureKind]:
    """The figures drawn from a run of ``experiment_name`` (not those drawn from every run)."""
    return {n: f for n, f in figures_of_run(experiment_name).items()
            if f.experiment == experiment_name}


def figures_of_run(experiment_name: str) -> dict[str, FigureKind]:
    """Every figure that can be drawn from a run of ``experiment_name``: its own and those
    registered for every run (``experiment="*"``)."""
    plugins.load_for_experiment(experiment_name)
    return {n: f for n, f in _FIGURES.items() if f.experiment in (experiment_name, "*")}


def all_figures() -> dict[str, FigureKind]:
    load_plugins()
    return dict(_FIGURES)
