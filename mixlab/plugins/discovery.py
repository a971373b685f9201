"""Plugin discovery: import the modules that register outsiders' samplers, experiments, figures.

Plugins come from three places only, in this order:

1. installed packages, through the entry-point group ``mixlab.plugins`` (``name = "pkg.module"``
   imports the module; ``name = "pkg.module:register"`` also calls ``register()``);
2. the ``MIXLAB_PLUGINS`` environment variable: module names or ``.py`` file paths separated by
   ``:``;
3. a spec's top-level ``plugins:`` key (a list of the same forms; a relative ``.py`` path is
   relative to the spec file's directory, see :func:`absolute_spec_entries`).

mixlab's own modules (:data:`BUILTIN_GROUPS`) register the same way: a registry read imports
the group it needs (an experiment's, a family's) or all of them, and every group is imported
before any plugin, so a plugin can never shadow a built-in name unnoticed. (1) and (2) are loaded
the first time a registry is read (:mod:`mixlab.plugins.registry`), (3) by :func:`mixlab.spec.resolver.resolve`
before the spec is validated, so the experiment and sampler names a spec uses may come from its
plugins.  Nothing stored in a run file is ever imported.

A plugin's import is a transaction: what it registered is recorded (``mixlab plugins`` shows it,
a run's provenance names it) and, when the import fails or a registration is bad (an unknown
family, a name that shadows someone else's, a malformed parameter schema), everything it had
registered is removed again and :class:`PluginError` names the plugin in one paragraph.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import os
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MixlabError, SpecError
from . import checks as plugin_checks
from . import registrations

ENTRY_POINT_GROUP = "mixlab.plugins"
ENV_VAR = "MIXLAB_PLUGINS"
DOCS = "docs/plugins.md"


class PluginError(MixlabError):
    """A plugin could not be imported or registered something invalid (exit code 1).

    ``attempted``: what its import had registered before it was undone (``"sampler
    family/name"``, ...)."""

    attempted: list[str] = []


@dataclass
class Plugin:
    """One imported plugin: where it came from and what it registered.

    ``ref`` is the plugin as it was named (module, ``.py`` path or entry point), ``source`` one
    of ``entry point``, ``MIXLAB_PLUGINS``, ``spec`` or ``command line``; ``file`` and
    ``sha256`` identify the code that ran (the module's file), ``distribution`` and ``version``
    the installed package it belongs to (entry points only)."""

    ref: str
    source: str
    module: str
    file: str | None = None
    sha256: str | None = None
    distribution: str | None = None
    version: str | None = None
    registered: list[str] = field(default_factory=list)

    def record(self) -> dict:
        """The plugin's entry in a run's provenance (root attribute ``plugins``, JSON)."""
        return {"ref": self.ref, "source": self.source, "module": self.module,
                "file": self.file, "sha256": self.sha256, "distribution": self.distribution,
                "version": self.version, "registered": list(self.registered)}


# mixlab's own modules that register experiments, samplers and figures when imported, grouped
# so that a spec imports only what its experiment and its samplers' family need: an experiment
# "<group>.<name>" (or "<group>") is registered by the modules of BUILTIN_GROUPS[group], a
# family's samplers by those of BUILTIN_GROUPS[FAMILY_GROUPS[family]], and the figures drawn from
# every run ("*") by the "diagnostics" group. Importing every family costs about 1.5 s of CPU per
# process, most of it numba, scipy and the kernels, which a toy run never uses.
# tests/foundation/test_builtin_groups.py checks these tables against what the modules register.
BUILTIN_GROUPS: dict[str, tuple[str, ...]] = {
    "toy": ("mixlab.toy.generic",),
    "diagnostics": ("mixlab.diagnostics.figure",),
    "rbm": ("mixlab.rbm.train_run",),
    "rates_fpcd": ("mixlab.rbm.samplers", "mixlab.rbm.experiments", "mixlab.rbm.figures"),
    "perturb_map": ("mixlab.spinglass.samplers", "mixlab.spinglass.experiments",
                    "mixlab.spinglass.experiments_sampling", "mixlab.spinglass.figures"),
    "austerity": ("mixlab.austerity.samplers", "mixlab.austerity.experiments",
                  "mixlab.austerity.figures"),
    "league": ("mixlab.league.cell", "mixlab.league.league", "mixlab.league.sample"),
}
FAMILY_GROUPS = {"rbm": "rates_fpcd", "spinglass": "perturb_map", "logistic": "austerity",
                 "mrf": "austerity"}
PLUGIN_MODULES = tuple(m for group in BUILTIN_GROUPS.values() for m in group)


@dataclass
class BrokenPlugin:
    """An installed plugin (entry point or ``MIXLAB_PLUGINS``) that failed to import or to
    register: skipped with a one-line warning; ``message`` is the full paragraph, ``attempted``
    what it had registered before it was undone, ``trace`` the traceback (for ``--debug``)."""

    ref: str
    source: str
    where: str
    message: str
    cause: str
    attempted: list[str]
    trace: str

    def warning(self) -> str:
        """One line for stderr: the plugin, why, and the fix."""
        line = (f"warning: plugin {self.where} is broken and was skipped ({self.cause}); fix "
                f"it or remove it from {_fix(self.source)}; what does not use it runs, "
                f"'mixlab plugins' shows the whole message")
        return " ".join(line.split())

    def record(self) -> dict:
        return {"ref": self.ref, "source": self.source, "message": self.message,
                "attempted": list(self.attempted)}


_PLUGINS: dict[str, Plugin] = {}      # key: module name (or the absolute path of a .py file)
_BROKEN: dict[str, BrokenPlugin] = {}
_groups_done: set[str] = set()
_installed_done = False
_installing = False


def loaded() -> list[Plugin]:
    """Every plugin imported so far, in load order."""
    return list(_PLUGINS.values())


def provenance() -> list[dict]:
    """What a run records about the plugins loaded in its process (see :meth:`Plugin.record`)."""
    return [p.record() for p in _PLUGINS.values()]


def owner(module: str) -> Plugin | None:
    """The plugin whose import registered things from ``module`` (None for mixlab's own)."""
    for p in _PLUGINS.values():
        if p.module == module or module.startswith(p.module + "."):
            return p
    return None


# ------------------------------------------------------------------------------------------------
# the three sources

def load_all() -> None:
    """Import mixlab's own modules, then the installed plugins (each once)."""
    load_builtin()
    load_installed()


def load_for_experiment(name: object) -> None:
    """Import the modules that register experiment ``name`` and its figures (all of mixlab's
    own when the name is not one of theirs), then the installed plugins."""
    group = str(name).split(".")[0]
    load_builtin((group, "diagnostics") if group in BUILTIN_GROUPS else None)
    load_installed()


def load_for_family(family: str) -> None:
    """Import the modules that register ``family``'s samplers, then the installed plugins."""
    load_builtin((FAMILY_GROUPS[family],) if family in FAMILY_GROUPS else None)
    load_installed()


def load_builtin(groups: tuple[str, ...] | None = None) -> None:
    """Import mixlab's own registering modules: those of ``groups`` (every group when None),
    each module once."""
    for group in BUILTIN_GROUPS if groups is None else groups:
        if group in _groups_done:
            continue
        _groups_done.add(group)
        for mod in BUILTIN_GROUPS[group]:
            try:
                importlib.import_module(mod)
            except ModuleNotFoundError as exc:
                # A paper package that is not there yet is skipped; a missing dependency inside
                # one is not.
                if exc.name is None or not mod.startswith(exc.name):
                    raise


def load_installed() -> None:
    """Import the entry-point plugins, then those named in ``MIXLAB_PLUGINS`` (once)."""
    global _installed_done, _installing
    if _installed_done or _installing:
        return
    _installing = True
    try:
        entry_points, env_refs = _entry_points(), env_entries()
        if entry_points or env_refs:
            load_builtin()   # mixlab's own modules first: a plugin may not shadow them
        for ep in entry_points:
            dist = getattr(ep, "dist", None)
            where = (f"entry point '{ep.name} = {ep.value}' (group {ENTRY_POINT_GROUP}"
                     + (f", package {dist.name} {dist.version})" if dist else ")"))
            _load_or_skip(ep.value, "entry point", where, entry_point=ep)
        for ref in env_refs:
            where = f"'{ref}' (from {ENV_VAR})"
            _load_or_skip(ref, ENV_VAR, where, base=Path.cwd())
        _installed_done = True
    finally:
        _installing = False


def _load_or_skip(ref: str, source: str, where: str, **kw) -> None:
    """Load an installed plugin; a broken one is recorded and warned about in one line, so that
    what does not use it still runs (what names it fails with the whole message)."""
    try:
        _load(ref, source, where, **kw)
    except PluginError as exc:
        root = exc.__cause__ or exc
        cause = f"{type(root).__name__}: {root}" if exc.__cause__ is not None else str(exc)
        trace = "".join(traceback.format_exception(root))
        bad = BrokenPlugin(ref, source, where, str(exc), cause[:300], list(exc.attempted), trace)
        _BROKEN[ref] = bad
        print(bad.warning(), file=sys.stderr, flush=True)


def broken() -> list[BrokenPlugin]:
    """The installed plugins that failed to load (each was skipped with a warning)."""
    return list(_BROKEN.values())


def broken_provider(kind: str, name: str) -> str | None:
    """When a ``kind`` (``sampler``, ``experiment``) called ``name`` (``family/name`` for a
    sampler) is not registered and installed plugins failed to load: a paragraph saying so,
    with their full messages (the one that registered ``name`` before failing, when known,
    else every broken one). None when no installed plugin is broken."""
    if not _BROKEN:
        return None
    wanted = f"{kind} {name}"
    owners = [b for b in _BROKEN.values() if wanted in b.attempted] or list(_BROKEN.values())
    lead = ("it comes from a plugin that failed to load" if wanted in owners[0].attempted
            else "it may come from an installed plugin that failed to load")
    return f"{lead}: " + " ".join(b.message for b in owners)


def env_entries() -> list[str]:
    """The non-empty ``:``-separated items of ``MIXLAB_PLUGINS``."""
    return [s.strip() for s in os.environ.get(ENV_VAR, "").split(":") if s.strip()]


def _entry_points() -> list:
    eps = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return sorted(eps, key=lambda ep: (ep.name, ep.value))


def is_path(ref: str) -> bool:
    """A plugin reference names a file (``*.py`` or anything with a slash), not a module."""
    return ref.endswith(".py") or "/" in ref or os.sep in ref


def absolute_spec_entries(entries: Any, spec_dir: Path) -> Any:
    """A raw spec's ``plugins:`` value with every relative ``.py`` path made absolute against
    the spec file's directory (other values are returned as they are, for validation to judge)."""
    if isinstance(entries, str):
        entries = [entries]
    if not isinstance(entries, list):
        return entries
    out = []
    for e in entries:
        if isinstance(e, str) and is_path(e) and not os.path.isabs(os.path.expanduser(e)):
            e = os.path.normpath(os.path.join(os.path.abspath(spec_dir), e))
        out.append(e)
    return out


def load_spec_plugins(entries: Any, key: str = "plugins") -> list[Plugin]:
    """Import the plugins a spec names (``plugins:``, already made absolute by
    :func:`absolute_spec_entries`); a malformed entry or a missing file is a SpecError naming
    ``key``, a plugin that fails to import a :class:`PluginError`."""
    if entries is None or entries == []:
        return []
    load_all()   # mixlab's own modules first: a spec plugin may not shadow them
    if isinstance(entries, str):
        entries = [entries]
    if not isinstance(entries, list):
        raise SpecError("must be a list of plugin module names or .py files, got "
                        f"{entries!r}", key)
    out = []
    for i, ref in enumerate(entries):
        if not isinstance(ref, str) or not ref.strip():
            raise SpecError(f"must be a module name or a .py file path, got {ref!r}",
                            f"{key}[{i}]")
        ref = ref.strip()
        if is_path(ref) and not Path(os.path.expanduser(ref)).is_file():
            raise SpecError(f"plugin file {ref} does not exist (a relative path is relative to "
                            f"the spec file's directory)", f"{key}[{i}]")
        if not is_path(ref) and importlib.util.find_spec(ref.split(".")[0]) is None:
            raise SpecError(f"plugin module '{ref}' cannot be found: install the package that "
                            f"provides it, put it on PYTHONPATH, or give a .py file path",
                            f"{key}[{i}]")
        out.append(_load(ref, "spec", f"'{ref}' (spec key {key}[{i}])", base=Path.cwd()))
    return out


def load_refs(refs: list[str], source: str = "command line") -> list[Plugin]:
    """Import plugins named on the command line (``mixlab plugins REF...``), relative to cwd,
    after mixlab's own modules and the installed plugins (a REF may not shadow them)."""
    if refs:
        load_all()
    return [_load(r, source, f"'{r}' ({source})", base=Path.cwd()) for r in refs]


# ------------------------------------------------------------------------------------------------
# one import, as a transaction

def _load(ref: str, source: str, where: str, *, base: Path | None = None,
          entry_point=None) -> Plugin:
    path = None
    if entry_point is None and is_path(ref):
        path = Path(os.path.expanduser(ref))
        if not path.is_absolute():
            path = (base or Path.cwd()) / path
        path = Path(os.path.normpath(path))
        key = str(path)
    else:
        key = ref.split(":")[0]
    if key in _PLUGINS:
        return _PLUGINS[key]
    before = registrations.snapshot()
    try:
        try:
            module = _import(ref, key, path, where, source, entry_point)
        finally:
            attempted = [f"{kind} {name}" for kind, name in registrations.changes(before)]
    except PluginError as exc:
        registrations.restore(before)
        exc.attempted = attempted
        raise
    added = registrations.changes(before)
    try:
        plugin_checks.check_registrations(added, before)
    except registrations.RegistrationError as exc:
        registrations.restore(before)
        err = PluginError(_invalid(where, exc, source))
        err.attempted = attempted
        raise err from exc
    plugin = Plugin(ref=ref, source=source, module=module.__name__,
                    registered=[f"{kind} {name}" for kind, name in added])
    file = getattr(module, "__file__", None)
    if file:
        plugin.file = str(Path(file).resolve())
        plugin.sha256 = _sha256(plugin.file)
    if entry_point is not None and getattr(entry_point, "dist", None) is not None:
        plugin.distribution = entry_point.dist.name
        plugin.version = entry_point.dist.version
    _PLUGINS[key] = plugin
    return plugin


def _import(ref: str, key: str, path: Path | None, where: str, source: str, entry_point):
    """Import one plugin's module; any failure of its code becomes a one-paragraph
    :class:`PluginError` (the caller undoes what it registered)."""
    try:
        if path is not None:
            module = _import_file(path, where)
        elif entry_point is not None:
            obj = entry_point.load()
            module = sys.modules[entry_point.module]
            if entry_point.attr:
                if not callable(obj):
                    raise PluginError(f"plugin {where}: '{entry_point.attr}' is not callable; "
                                      f"an entry point names a module or a register() function")
                obj()
        else:
            module = importlib.import_module(ref)
    except PluginError:
        raise
    except registrations.RegistrationError as exc:
        err = PluginError(_invalid(where, exc, source))
        if isinstance(exc, registrations.FamilyRegistrationError):
            err.exit_code = 2       # a malformed declaration, like a spec error
        raise err from exc
    except ModuleNotFoundError as exc:
        missing = exc.name or str(exc)
        if path is None and (missing == key or key.startswith(missing + ".")):
            raise PluginError(f"plugin {where} cannot be imported: there is no module "
                              f"'{missing}'. Install the package that provides it, put it on "
                              f"PYTHONPATH, give a .py file path instead, or remove it from "
                              f"{_fix(source)}.") from exc
        raise PluginError(_failure(where, exc, source)) from exc
    except Exception as exc:  # the plugin's own code failed: one paragraph, not a traceback
        raise PluginError(_failure(where, exc, source)) from exc
    return module


def _import_file(path: Path, where: str):
    """Import the ``.py`` file ``path`` as module ``mixlab_plugin_<stem>`` (made unique)."""
    if path.suffix != ".py":
        raise PluginError(f"plugin {where}: {path} is not a .py file")
    stem = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in path.stem)
    name = f"mixlab_plugin_{stem}"
    if name in sys.modules:
        name += "_" + hashlib.sha256(str(path).encode()).hexdigest()[:8]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"plugin {where}: {path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _failure(where: str, exc: BaseException, source: str) -> str:
    """One paragraph: which plugin, what it raised, at which line of its own code."""
    frames = traceback.extract_tb(exc.__traceback__)
    site = ""
    for fr in reversed(frames):
        if "importlib" not in fr.filename and "/mixlab/plugins.py" not in fr.filename:
            site = f" at {fr.filename}:{fr.lineno}"
            break
    return (f"plugin {where} failed to import: {type(exc).__name__}: {exc}{site}. Fix the "
            f"plugin or remove it from {_fix(source)}; 'mixlab --debug ...' shows the traceback.")


def _invalid(where: str, exc: BaseException, source: str) -> str:
    return (f"plugin {where} registered something invalid: {exc}. Fix the plugin's "
            f"registration (see {DOCS}) or remove it from {_fix(source)}.")


def _fix(source: str) -> str:
    return {"entry point": "the environment (pip uninstall the package)",
            ENV_VAR: ENV_VAR, "spec": "the spec's 'plugins:' list"}.get(source, "the command line")


def _sha256(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


# ------------------------------------------------------------------------------------------------
# resuming a run with the plugins that started it

def check_resume(recorded: Any, run_dir: Path) -> None:
    """Refuse to resume a run whose plugins changed since it started (their code or version),
    so no run mixes two versions of a sampler under one provenance."""
    import json

    if not recorded:
        return
    try:
        old = json.loads(recorded) if isinstance(recorded, str) else list(recorded)
    except (TypeError, ValueError):
        return
    now = {(p["module"]): p for p in provenance()}
    for rec in old:
        cur = now.get(rec.get("module"))
        if cur is None:
            continue  # not loaded now: the experiment itself will say if something is missing
        if rec.get("sha256") != cur["sha256"] or rec.get("version") != cur["version"]:
            raise MixlabError(
                f"{run_dir} was started with plugin {rec.get('ref')} (version "
                f"{rec.get('version')}, sha256 {str(rec.get('sha256'))[:12]}) and the plugin "
                f"has changed since (version {cur['version']}, sha256 "
                f"{str(cur['sha256'])[:12]}); resume with the same plugin code, or re-run with "
                f"--force to start afresh")
