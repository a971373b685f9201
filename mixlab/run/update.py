"""What produced each stream and stage of a run, and which of them a changed spec or plugin makes
stale (``mixlab run SPEC --update``, ``mixlab show``).

A stream records, as the JSON attribute ``inputs`` of ``/streams/<name>``, what its draws depend
on (:func:`stream_inputs`):

- ``common``: a hash of the spec without ``samplers`` (and without ``name``, ``description``,
  ``plugins``, which change no number): budgets, seeds, models, every shared setting;
- ``label`` and ``entry``: the spec label of the stream's sampler and its entry
  ``samplers.<label>``, when a registered factory built it for that label; otherwise
  ``samplers``, a hash of the whole map (any sampler change makes the stream stale);
- ``code``: the code of the sampler and of the experiment kind, each a plugin's file hash
  (and version) or mixlab's version.

A stage (``ctx.once``) records the same ``common`` and experiment code, the samplers built
while it was computed (their labels, entries and code) and the streams that existed when it
was computed (``after``): a stage computed from a stream's draws is stale when that stream is.

:func:`plan` compares a run's records with a spec (and the code loaded now): streams whose
inputs changed are rerun, streams of samplers no longer in the spec are removed, new samplers
add streams; complete streams whose inputs did not change are kept byte for byte.  Results,
metrics and arrays are recomputed by running the experiment again over the kept streams (a
complete stream is a no-op for the runner).
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..runfile.records import RunRecords

#: spec keys that change no number of a run
NEUTRAL_KEYS = ("name", "description", "plugins")


def as_stored(spec: dict) -> dict:
    """The spec as the run file stores it (its YAML text read back), so that a record made from
    the resolved spec and a check made from the stored one agree."""
    try:
        key = json.dumps(spec, sort_keys=True, default=repr)
    except TypeError:                     # keys that do not sort (mixed types): no cache
        return _yaml_round_trip(spec)
    if key not in _STORED:                # every stream of a run records the same spec
        if len(_STORED) >= 8:
            _STORED.clear()
        _STORED[key] = _yaml_round_trip(spec)
    return copy.deepcopy(_STORED[key])


_STORED: dict[str, dict] = {}


def _yaml_round_trip(spec: dict) -> dict:
    import yaml

    from ..spec.resolver import dump

    # libyaml's safe loader where PyYAML has it: the values yaml.safe_load gives, 8x faster
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(dump(spec))
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _hash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def common_hash(spec: dict) -> str:
    """The hash of the spec's settings shared by every stream (all keys but ``samplers`` and
    :data:`NEUTRAL_KEYS`)."""
    return _hash({k: v for k, v in spec.items() if k not in ("samplers", *NEUTRAL_KEYS)})


def code_of(module: str | None) -> dict:
    """The code identity of ``module``: ``{"plugin", "file", "sha256", "version"}`` for a
    plugin's module, ``{"mixlab": version}`` for mixlab's own."""
    from ..plugins import discovery as plugins

    p = plugins.owner(module or "")
    if p is None:
        return {"mixlab": __version__, "module": module}
    return {"plugin": p.ref, "file": p.file, "sha256": p.sha256, "version": p.version,
            "module": module}


def _same_code(old: dict, new: dict) -> bool:
    keys = ("mixlab",) if "mixlab" in new else ("sha256", "version")
    return all(old.get(k) == new.get(k) for k in keys) and ("mixlab" in old) == ("mixlab" in new)


def _code_text(code: dict) -> str:
    if "mixlab" in code:
        return f"mixlab {code['mixlab']}"
    return (f"plugin {code.get('plugin')} (sha256 {str(code.get('sha256'))[:12]}"
            + (f", version {code['version']}" if code.get("version") else "") + ")")


def _samplers(spec: dict) -> dict:
    s = spec.get("samplers")
    return s if isinstance(s, dict) else {}


def stream_inputs(spec: dict, experiment_module: str, built) -> dict:
    """The ``inputs`` record of a stream whose sampler has the :class:`mixlab.plugins.contract.Built`
    record ``built`` (None: not built by a registered factory for a spec label)."""
    spec = as_stored(spec)
    rec: dict[str, Any] = {"common": common_hash(spec),
                           "code": {"experiment": code_of(experiment_module)}}
    label = getattr(built, "label", None)
    if built is not None:
        rec["sampler"] = {"family": built.family, "name": built.name, "module": built.module}
        rec["code"]["sampler"] = code_of(built.module)
    if label is not None and label in _samplers(spec):
        rec["label"], rec["entry"] = label, _samplers(spec)[label]
    else:
        rec["samplers"] = _hash(_samplers(spec))
    return rec


def stage_inputs(spec: dict, experiment_module: str, built: list, after: list[str]) -> dict:
    """The ``inputs`` record of a stage computed while the samplers ``built`` (Built records)
    were made, after the streams ``after``."""
    spec = as_stored(spec)
    rec: dict[str, Any] = {"common": common_hash(spec),
                           "code": {"experiment": code_of(experiment_module)},
                           "after": sorted(after)}
    labels = {}
    for b in built:
        if b.label is None or b.label not in _samplers(spec):
            rec["samplers"] = _hash(_samplers(spec))
            continue
        labels[b.label] = {"entry": _samplers(spec)[b.label], "code": code_of(b.module)}
    if labels:
        rec["labels"] = labels
    return rec


# ------------------------------------------------------------------------------------------------
# what is stale

def _loaded_now(recorded: dict) -> dict | None:
    """The code identity now of recorded code, judged without importing or opening anything:
    mixlab's version, or that of the plugin module as this process loaded it (its hash was
    taken when it was loaded from the user's own spec, entry points or ``MIXLAB_PLUGINS``).
    None when the module is not loaded here: a run file's record names a file, and that file is
    never opened (it may be anything, anywhere), so the code is not checked."""
    from ..plugins import discovery as plugins

    if "mixlab" in recorded:
        return {"mixlab": __version__}
    module = recorded.get("module")
    if not isinstance(module, str) or not module or plugins.owner(module) is None:
        return None
    return code_of(module)


def _now(recorded: dict, live: bool) -> dict | None:
    """The code identity now of ``recorded``: that of its module as loaded in this process
    (``live``, the run command, whose spec's plugins are loaded), else :func:`_loaded_now`."""
    if live and recorded.get("module"):
        return code_of(recorded["module"])
    return _loaded_now(recorded)


def _code_reasons(recorded: dict | None, live: bool, unchecked: set | None = None) -> list[str]:
    """Why the recorded code ``{role: identity}`` differs from the code now; the plugins whose
    code cannot be judged here are added to ``unchecked`` (their refs)."""
    out = []
    for role, old in (recorded or {}).items():
        if not isinstance(old, dict):
            continue
        now = _now(old, live)
        if now is None:
            if unchecked is not None:
                unchecked.add(str(old.get("plugin") or old.get("module")))
            continue
        if not _same_code(old, now):
            out.append(f"its {role}'s code changed ({_code_text(old)} -> {_code_text(now)})")
    return out


def stream_reasons(rec: dict | None, spec: dict, live: bool,
                   unchecked: set | None = None) -> list[str]:
    """Why a stream with record ``rec`` is stale against ``spec`` ([] = up to date); ``live``:
    judge code by what this process loaded, importing the module when needed (else only by the
    plugins already loaded; the others go to ``unchecked``)."""
    if rec is None:
        return ["its inputs were not recorded"]
    out = []
    if rec.get("common") != common_hash(spec):
        out.append("the spec's shared settings changed")
    label = rec.get("label")
    if label is not None:
        if label not in _samplers(spec):
            return [f"sampler '{label}' is no longer in the spec"]
        if _samplers(spec)[label] != rec.get("entry"):
            out.append(f"samplers.{label} changed")
    elif "samplers" in rec and rec["samplers"] != _hash(_samplers(spec)):
        out.append("the samplers changed (the stream is not tied to one sampler entry)")
    return out + _code_reasons(rec.get("code"), live, unchecked)


@dataclass
class Plan:
    """What ``--update`` does to a run: ``rerun`` and ``remove`` map stream names to their
    reasons, ``keep`` lists the streams kept as they are, ``add`` the spec labels with no stream
    yet, ``stages`` the stale stages and their reasons."""

    rerun: dict = field(default_factory=dict)
    remove: dict = field(default_factory=dict)
    keep: list = field(default_factory=list)
    add: list = field(default_factory=list)
    stages: dict = field(default_factory=dict)
    unchecked: set = field(default_factory=set)

    @property
    def empty(self) -> bool:
        return not (self.rerun or self.remove or self.add or self.stages)

    def summary(self) -> str:
        """One sentence: what would be rerun, added, removed and kept."""
        parts = []
        if self.rerun:
            parts.append("rerun " + "; ".join(f"'{n}' ({', '.join(r)})"
                                              for n, r in self.rerun.items()))
        if self.add:
            parts.append("add " + ", ".join(f"'{n}'" for n in self.add))
        if self.remove:
            parts.append("remove " + ", ".join(f"'{n}'" for n in self.remove))
        if self.stages:
            parts.append("recompute stage(s) " + ", ".join(f"'{n}'" for n in self.stages))
        kept = (f"keeping {len(self.keep)} complete stream(s) as they are"
                + (f" ({', '.join(self.keep)})" if self.keep else ""))
        return ("; ".join(parts) or "change nothing") + f", {kept}"


def plan(records: RunRecords, spec: dict, live: bool = True) -> Plan:
    """The :class:`Plan` of updating a run file whose records are ``records``
    (mixlab.runfile.records) to ``spec``.  ``live``: judge code by the modules this process
    loaded (the run command, which loaded the spec's plugins); False imports and opens nothing
    (``mixlab show``): plugin code is judged only when this process already loaded the plugin,
    and the others are listed in ``Plan.unchecked``."""
    spec = as_stored(spec)
    out = Plan()
    labels_seen = set()
    for name, rec, complete in records.streams:
        reasons = stream_reasons(rec, spec, live, out.unchecked)
        if rec is not None and rec.get("label") is not None:
            labels_seen.add(rec["label"])
        if reasons and rec is not None and rec.get("label") not in (None, *_samplers(spec)):
            out.remove[name] = reasons
        elif reasons:
            out.rerun[name] = reasons
        elif not complete:
            out.rerun[name] = ["it is not complete"]
        else:
            out.keep.append(name)
    out.add = [lab for lab in _samplers(spec) if lab not in labels_seen and lab not in records.top]
    gone = set(out.rerun) | set(out.remove)
    for name, rec in records.stages:
        why = _stage_reasons(rec, spec, live, gone, out.unchecked)
        if why:
            out.stages[name] = why
    return out


def _stage_reasons(rec: dict | None, spec: dict, live: bool, gone: set,
                   unchecked: set | None = None) -> list[str]:
    """Why a computed stage whose record is ``rec`` is stale ([] if it is not)."""
    if rec is None:
        return ["its inputs were not recorded"]
    why = []
    if rec.get("common") != common_hash(spec):
        why.append("the spec's shared settings changed")
    if "samplers" in rec and rec["samplers"] != _hash(_samplers(spec)):
        why.append("the samplers changed")
    for label, old in (rec.get("labels") or {}).items():
        if _samplers(spec).get(label) != old.get("entry"):
            why.append(f"samplers.{label} changed")
        else:
            why += [r.replace("its sampler's", f"sampler '{label}''s")
                    for r in _code_reasons({"sampler": old.get("code")}, live, unchecked)]
    why += _code_reasons(rec.get("code"), live, unchecked)
    hit = sorted(set(rec.get("after") or ()) & gone)
    if hit:
        why.append(f"it was computed after stream(s) {', '.join(hit)}, which change")
    return why


# ------------------------------------------------------------------------------------------------
# applying a plan

def remove_segments(run_dir: Path, names: list[str]) -> None:
    """Delete the segment folders of the streams ``names`` (after the file no longer links them)."""
    from ..runfile import confined
    from ..runfile.segments import SEGMENT_DIR, stream_id

    for name in names:  # only the segment files mixlab wrote (mixlab.runfile.confined)
        confined.remove_generated_in(run_dir, f"{SEGMENT_DIR}/{stream_id(name)}")


# ------------------------------------------------------------------------------------------------
# the run command's helpers

def stale_note(run_dir: Path, spec: dict) -> str:
    """For a complete run: what ``--update`` would do when some of it is stale, else ''."""
    from ..runfile.store import RunReader

    try:
        with RunReader(run_dir) as r:
            todo = plan(r.records(), spec)
    except Exception:      # a note only: the run itself was judged complete
        return ""
    return "" if todo.empty else f"but stale: --update would {todo.summary()}"


def adopt_latest(run_dir: Path) -> Path:
    """``run_dir`` (``runs/<name>/<spec hash>``) for ``--update`` without ``--out``: when it
    holds no run, the most recently written run of the same name (a sibling directory) is moved
    there first, so that it is updated rather than started afresh."""
    from ..runfile.lock import live_writer
    from ..runfile.store import RUN_FILE

    run_dir = Path(run_dir)
    if (run_dir / RUN_FILE).exists() or not run_dir.parent.is_dir():
        return run_dir
    siblings = [d for d in run_dir.parent.iterdir()
                if d.is_dir() and not d.is_symlink() and (d / RUN_FILE).is_file()
                and not d.name.endswith(".previous")]
    if not siblings:
        return run_dir
    latest = max(siblings, key=lambda d: (d / RUN_FILE).stat().st_mtime)
    if live_writer(latest) is not None:
        return run_dir
    if run_dir.exists():
        try:
            run_dir.rmdir()          # an empty directory only
        except OSError:
            return run_dir
    latest.rename(run_dir)
    return run_dir


def stale_streams(records: RunRecords, spec: dict) -> tuple[dict, list[str]]:
    """``({stream: reasons}, unchecked)``: the complete-or-started streams that the run's own
    spec and the code this process has loaded make stale, and the plugins (refs, as recorded)
    whose code could not be checked (``mixlab show``: imports nothing and opens no path the run
    file names)."""
    todo = plan(records, spec, live=False)
    out = {n: r for n, r in todo.rerun.items() if r != ["it is not complete"]}
    out.update(todo.remove)
    out.update({f"stage {n}": r for n, r in todo.stages.items()})
    return out, sorted(todo.unchecked)
