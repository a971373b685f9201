"""The registrations themselves: what the papers' code and outsiders' plugins have registered.

- **Experiments**: ``@experiment("perturb_map.logz_vs_coupling", schema={...})`` on a function
  ``run(ctx: mixlab.run.context.Context) -> None``. A spec's ``experiment:`` key names one.
- **Figures**: ``@figure("perturb_map.fig1_left", experiment="perturb_map.logz_vs_coupling")``
  on ``draw(run: mixlab.runfile.store.RunReader, fig: matplotlib.figure.Figure) -> None``. A figure reads
  the run file only; it never runs model code.
- **Samplers**: ``@sampler("rbm", "gibbs", params={...})`` on a factory
  ``factory(target, params: dict, chains: int) -> sampler``; one table per target family
  (:data:`FAMILIES`). A spec's sampler entry ``{method: gibbs, ...}`` names one.
- **Families**: mixlab's four, and those plugins add
  (:func:`mixlab.plugins.families.register_family` checks one and calls :func:`add_family`).

This module only records: it imports nothing of mixlab's but the errors. Finding and importing
the modules that register (mixlab's own and installed plugins) is :mod:`mixlab.plugins.discovery`; reading
the tables with every plugin loaded is :mod:`mixlab.plugins.registry`, which plugin authors reach
through :mod:`mixlab.api`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ExperimentKind:
    """An experiment kind: ``run(ctx)``, its spec ``schema``, and ``check(spec)``, the start-up
    validation beyond the schema (cross-key rules, files named by the spec) that both
    ``mixlab run --dry-run`` and the run itself call before any work (None: the schema is
    all); ``adapt(spec, given) -> {key: reason}``, which turns off the keys of the spec file
    that do not apply to what the user chose (see :func:`mixlab.spec.resolver.resolve`)."""

    name: str
    run: Callable
    schema: dict
    help: str
    check: Callable | None = None
    adapt: Callable | None = None


@dataclass(frozen=True)
class SamplerKind:
    """A sampler registered for a target family: ``factory(target, params, chains)`` builds it.

    ``params`` is the schema (see mixlab.spec.schema) of the sampler's own spec keys; ``module`` is
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
# and exact truths: mixlab.plugins.registry.family_info (mixlab.plugins.families).
FAMILIES = {
    "rbm": "a binary RBM (mixlab.rbm.model.RBM: W (D, H), b (D,), c (H,))",
    "spinglass": "a spin glass on a grid (mixlab.spinglass.target.SpinGlassTarget)",
    "logistic": "a Bayesian logistic-regression posterior (mixlab.austerity)",
    "mrf": "a dense triplet MRF over binary variables (mixlab.austerity.mrf)",
}

#: mixlab's own families (a plugin's family may not take one of these names)
BUILTIN_FAMILIES = tuple(FAMILIES)

_EXPERIMENTS: dict[str, ExperimentKind] = {}
_SAMPLERS: dict[str, dict[str, SamplerKind]] = {f: {} for f in FAMILIES}
_FIGURES: dict[str, FigureKind] = {}
#: the families plugins registered: name -> FamilyKind (mixlab.plugins.families.register_family)
_FAMILIES: dict[str, FamilyKind] = {}


class FamilyNames:
    """The names of the registered families, read when they are asked for, so that a spec's
    ``family`` key (``Param(choices=family_names)``) admits a family a plugin registered after
    the schema was written."""

    def __iter__(self):
        return iter(FAMILIES)

    def __contains__(self, name: object) -> bool:
        return name in FAMILIES

    def __repr__(self) -> str:
        return repr(tuple(FAMILIES))


family_names = FamilyNames()


def experiment(name: str, schema: dict, help: str = "", check: Callable | None = None,
               adapt: Callable | None = None) -> Callable:
    """Register ``run(ctx)`` as experiment kind ``name`` with spec ``schema`` (see mixlab.spec.schema).

    The reserved top-level keys ``name``, ``experiment``, ``seed``, ``description``, ``scales``
    and ``scale`` must not appear in ``schema``. ``check(spec)``, when given, receives the
    validated spec and raises :class:`mixlab.errors.SpecError` naming the full dotted key of
    anything the run would refuse at start; it must be cheap and must not write anything.
    ``adapt(spec, given)``, when given, receives the validated spec and ``given(key)`` (True
    for a key the user set on the command line or a sweep axis); it resets keys of the spec
    file that cannot apply (e.g. a data set's classes when the user gives their own file) and
    returns ``{dotted key: why}`` for each (shown by ``--dry-run`` and ``mixlab show``)."""

    def deco(fn: Callable) -> Callable:
        _EXPERIMENTS[name] = ExperimentKind(name, fn, schema, help or (fn.__doc__ or "").strip(),
                                            check, adapt)
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


class FamilyRegistrationError(RegistrationError):
    """A family registration that cannot work (a field missing or malformed, a name already
    taken): a plugin's declaration is wrong, so commands that load it exit with code 2."""


@dataclass(frozen=True)
class FamilyKind:
    """A family a plugin registered: ``info`` its :class:`mixlab.plugins.families.Family`,
    ``module`` where it was registered from."""

    name: str
    info: object
    module: str


def add_family(name: str, description: str, info: object, module: str) -> None:
    """Record a plugin's family ``name`` (``info``: its Family, already checked): a table of
    samplers of its own; a FamilyRegistrationError when the name is taken."""
    if name in FAMILIES:
        owner = (f"plugin module {_FAMILIES[name].module}" if name in _FAMILIES
                 else "mixlab (a built-in family)")
        raise FamilyRegistrationError(f"family {name!r} is already registered by {owner}; "
                                      f"choose another name (built-in families: "
                                      f"{', '.join(BUILTIN_FAMILIES)})")
    FAMILIES[name] = description
    _SAMPLERS[name] = {}
    _FAMILIES[name] = FamilyKind(name, info, module)


def sampler(family: str, name: str, params: dict | None = None, help: str = "") -> Callable:
    """Register ``factory(target, params, chains) -> sampler`` as sampler ``name`` of ``family``.

    ``params`` is the schema of the sampler's own spec keys (besides ``method``)."""
    if family not in FAMILIES:
        raise RegistrationError(f"unknown sampler family {family!r} (sampler {name!r}); "
                                f"families: {', '.join(FAMILIES)} (a plugin's own family is "
                                f"registered with register_family before its samplers)")

    def deco(factory: Callable) -> Callable:
        _SAMPLERS[family][name] = SamplerKind(family, name, factory, dict(params or {}),
                                              help or (factory.__doc__ or "").strip(),
                                              getattr(factory, "__module__", "?"))
        return factory

    return deco


# -- what a plugin's import registered (mixlab.plugins.discovery makes each import a transaction)

def snapshot() -> dict:
    """The registries' current contents (to compare with after a plugin's import)."""
    return {"experiment": dict(_EXPERIMENTS), "figure": dict(_FIGURES),
            "sampler": {f: dict(d) for f, d in _SAMPLERS.items()},
            "family": dict(_FAMILIES), "families": dict(FAMILIES)}


def restore(snap: dict) -> None:
    """Put the registries back as :func:`snapshot` saw them (a failed plugin leaves nothing)."""
    _EXPERIMENTS.clear()
    _EXPERIMENTS.update(snap["experiment"])
    _FIGURES.clear()
    _FIGURES.update(snap["figure"])
    _FAMILIES.clear()
    _FAMILIES.update(snap["family"])
    FAMILIES.clear()
    FAMILIES.update(snap["families"])
    for f in [f for f in _SAMPLERS if f not in snap["sampler"]]:   # registered since
        del _SAMPLERS[f]
    for f, d in snap["sampler"].items():
        table = _SAMPLERS.setdefault(f, {})
        table.clear()
        table.update(d)


def changes(snap: dict) -> list[tuple[str, str]]:
    """``(kind, name)`` of every entry added or replaced since ``snap``; samplers are named
    ``family/name``."""
    out = [("family", n) for n, k in _FAMILIES.items() if snap["family"].get(n) is not k]
    out += [("experiment", n) for n, k in _EXPERIMENTS.items()
           if snap["experiment"].get(n) is not k]
    out += [("figure", n) for n, k in _FIGURES.items() if snap["figure"].get(n) is not k]
    for f, d in _SAMPLERS.items():
        out += [("sampler", f"{f}/{n}") for n, k in d.items()
                if snap["sampler"].get(f, {}).get(n) is not k]
    return out
