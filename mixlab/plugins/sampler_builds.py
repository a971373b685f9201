"""The samplers that registered factories build: which family, sampler and spec label each
belongs to, and failures of a plugin's sampler code named in one paragraph.

:func:`built_by` wraps a registered factory (the registry hands out wrapped factories): the
samplers it builds are remembered (:func:`built_record`) with their family, registered name,
factory module, spec label and the draw shapes their target implies (mixlab.plugins.families), and an
exception raised by a plugin's factory becomes a :class:`SamplerFailure` naming the plugin.
:func:`code_failure` does the same for a plugin's ``init`` or ``step`` (the runner calls it with
the stream and the step number); :func:`build_log` collects what is built inside a block (a
stage records which sampler entries it used).
"""

from __future__ import annotations

import functools
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import MixlabError, interruption


class SamplerFailure(MixlabError):
    """A plugin's sampler code raised, or drew NaN/inf where its family forbids it (exit 1)."""


@dataclass(frozen=True)
class Built:
    """What a registered factory built: the sampler's family and registered name, the module
    of its factory, the spec label it was built for (None when unknown) and the trailing draw
    shapes its target implies ``{key: dims or None}``."""

    family: str
    name: str
    module: str
    label: str | None
    dims: dict


_BUILT: dict[int, tuple[Any, Built]] = {}      # id(sampler) -> (weak reference, record)
_LOGS: list[list] = []                           # open build logs (see :func:`build_log`)


@contextmanager
def build_log():
    """Collect the :class:`Built` records of the samplers built inside the block (a stage
    records which sampler entries it used)."""
    log: list = []
    _LOGS.append(log)
    try:
        yield log
    finally:
        _LOGS.remove(log)


def _remember(sampler: Any, record: Built) -> None:
    key = id(sampler)
    try:
        ref = weakref.ref(sampler, lambda _r: _BUILT.pop(key, None))
    except TypeError:          # not weak-referenceable: not remembered, checks use the contract
        return
    _BUILT[id(sampler)] = (ref, record)


def built_record(sampler: Any) -> Built | None:
    """The :class:`Built` record of ``sampler``, or of a sampler it wraps (an attribute of it,
    e.g. an experiment's wrapper adding a draw key), None when no registered factory built it."""
    candidates = [sampler]
    try:
        candidates += [v for v in vars(sampler).values() if hasattr(v, "step")]
    except TypeError:
        pass
    for obj in candidates:
        hit = _BUILT.get(id(obj))
        if hit is not None and hit[0]() is obj:
            return hit[1]
    return None


def _target_dims(family: str, target: Any) -> dict:
    from .families import find

    out = {}
    fam = find(family)
    for d in fam.draws if fam is not None else ():
        try:
            out[d.key] = tuple(int(n) for n in d.dims(target))
        except Exception:      # a target without the attribute: leading-axis checks only
            out[d.key] = None
    return out


def built_by(factory: Any, family: str, name: str, label: str | None = None):
    """``factory(target, params, chains)`` whose samplers are remembered (:func:`built_record`)
    and whose own exceptions, when raised by a plugin's code, name the plugin.  SpecError,
    other MixlabErrors and ValueError (a setting that cannot work: the caller names the spec
    key) pass through unchanged."""
    raw = getattr(factory, "__wrapped__", factory)

    @functools.wraps(raw)
    def build(target: Any, params: dict, chains: int) -> Any:
        try:
            sampler = raw(target, params, chains)
        except (MixlabError, ValueError):
            raise
        except Exception as exc:
            failure = code_failure(None, exc, label, None, "factory",
                                   module=getattr(raw, "__module__", None), name=name,
                                   family=family)
            if failure is None:
                raise
            raise failure from exc
        record = Built(family, name, getattr(raw, "__module__", "?"), label,
                       _target_dims(family, target))
        _remember(sampler, record)
        for log in _LOGS:
            log.append(record)
        return sampler

    return build


def _plugin_of_traceback(exc: BaseException):
    """``(plugin, filename, lineno, function)`` of the innermost frame of ``exc``'s traceback in
    a plugin's code, or None."""
    from . import discovery as plugins

    tb, hit = exc.__traceback__, None
    while tb is not None:
        p = plugins.owner(str(tb.tb_frame.f_globals.get("__name__", "")))
        if p is not None:
            hit = (p, tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return hit


def _who(sampler: Any, module: str | None = None, name: str | None = None,
         family: str | None = None) -> tuple[str, Any]:
    """``(text, plugin or None)`` naming a sampler: its registered name and family, its class
    or factory module, and the plugin (ref, module, file) it comes from."""
    from . import discovery as plugins

    rec = built_record(sampler) if sampler is not None else None
    if rec is not None:
        module, name, family = rec.module, rec.name, rec.family
    if module is None and sampler is not None:
        cls = type(sampler)
        module = cls.__module__
        text = f"{cls.__module__}.{cls.__qualname__}"
    else:
        text = f"'{name}'" + (f" (family {family})" if family else "")
    p = plugins.owner(module or "")
    if p is not None:
        text += f" from plugin {p.ref} (module {p.module}, file {p.file})"
    return text, p


def describe_sampler(sampler: Any) -> str:
    """The sampler's registered name and family (or ``'<module>.<Class>'``) plus the plugin it
    came from (ref, module, file), if any."""
    return _who(sampler)[0]


def _at(step: int | None) -> str:
    if step is None:
        return ""
    return " in init" if step == 0 else f" at step {step}"


def code_failure(sampler: Any, exc: BaseException, stream: str | None, step: int | None,
                 where: str = "", *, module: str | None = None, name: str | None = None,
                 family: str | None = None) -> SamplerFailure | None:
    """The one-paragraph :class:`SamplerFailure` for ``exc`` raised by a plugin's sampler code
    (``step``: 0 for init, n >= 1 for the n-th step of the stream), or None when no plugin's
    code is involved (mixlab's own samplers keep their exceptions) or ``exc`` is a MixlabError
    or an interruption."""
    if isinstance(exc, MixlabError) or interruption(exc) is not None:
        return None
    site = _plugin_of_traceback(exc)
    text, plugin = _who(sampler, module, name, family)
    if site is None and plugin is None:
        return None
    rec = built_record(sampler) if sampler is not None else None
    label = stream or (rec.label if rec else None)
    what = where or ("init" if step == 0 else "step")
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    line = ""
    if site is not None:
        line = f" (raised at {site[1]}:{site[2]} in {site[3]})"
        if plugin is None:
            text += f", in code of plugin {site[0].ref} (file {site[0].file})"
    return SamplerFailure(
        f"sampler {text} failed{f' in stream {label!r}' if label else ''}{_at(step)}: "
        f"{type(exc).__name__}: {msg}{line}. The error is in the plugin's {what}: fix it there "
        f"(or remove the sampler from the spec's samplers); 'mixlab --debug ...' shows the "
        f"traceback. The run is marked failed.")
