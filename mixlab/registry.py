"""Registries through which the papers' code plugs into the runner.

- **Experiments**: ``@experiment("perturb_map.logz_vs_coupling", schema={...})`` on a function
  ``run(ctx: mixlab.context.Context) -> None``. A spec's ``experiment:`` key names one.
- **Figures**: ``@figure("perturb_map.fig1_left", experiment="perturb_map.logz_vs_coupling")``
  on ``draw(run: mixlab.store.RunReader, fig: matplotlib.figure.Figure) -> None``. A figure reads
  the run file only; it never runs model code.

Plugin modules are imported lazily (the first time a registry is read), so ``mixlab --help``
stays fast and a broken plugin names itself.
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
    "mixlab.rbm.experiments",
    "mixlab.spinglass.experiments",
    "mixlab.spinglass.experiments_sampling",
    "mixlab.austerity.experiments",
    "mixlab.austerity.experiments_mrf",
)


@dataclass(frozen=True)
class ExperimentKind:
    name: str
    run: Callable
    schema: dict
    help: str


@dataclass(frozen=True)
class FigureKind:
    name: str
    experiment: str
    draw: Callable
    help: str
    size: tuple[float, float]


_EXPERIMENTS: dict[str, ExperimentKind] = {}
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


def load_plugins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in PLUGIN_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            # A paper package that is not there yet is skipped; a missing dependency inside one is not.
            if exc.name is None or not mod.startswith(exc.name):
                raise


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
