"""The sampler contract, checked where a sampler first meets the runner, and failures of a
plugin's sampler named in one paragraph.

A sampler (see docs/plugins.md) has an attribute ``chains``, ``init(rng) -> state`` and
``step(state, rng) -> (state, draws, stats)`` with

- ``state``: ``{name: np.ndarray}`` of numbers or booleans (numbers are allowed too; it is
  checkpointed as data), the same keys and shapes at every step;
- ``draws``: a non-empty ``{key: array (chains, ...)}`` (one draw per chain); the keys its
  family declares (mixlab.plugins.families) have the family's trailing shape and dtype;
- ``stats``: ``{key: array (chains,) or scalar ()}``.

:func:`check_step_output` checks one step's output; :func:`checked` wraps a sampler so that its
first ``init`` and first ``step`` in a stream are checked and every later call goes straight to
the sampler's own methods (the wrapper replaces its ``step`` by the sampler's bound method after
the check, so the check costs nothing afterwards).  A violation is a :class:`SamplerContractError`
naming the sampler, the module (and plugin) it comes from, the key and the shapes.

The registry hands out factories wrapped by :func:`mixlab.plugins.sampler_builds.built_by`: the
samplers they build are remembered with their family and the draw shapes their target implies,
which :func:`check_family` checks the first step against; an exception raised by a plugin's
factory, ``init`` or ``step`` (:func:`code_failure`, called by the runner with the stream and the
step number) or a NaN/inf where the family forbids it (:func:`check_finite`) becomes a
:class:`SamplerFailure` naming the plugin (module, file, line), the stream and the step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import MixlabError
from ..runfile.streamfile import RESERVED_KEYS
from .sampler_builds import (  # noqa: F401  (re-exported: the runner names failures with these)
    SamplerFailure,
    _who,
    built_record,
    code_failure,
    describe_sampler,
)


class SamplerContractError(MixlabError):
    """A sampler's init or step returned something the runner cannot store (exit code 1)."""


def check_finite(sampler: Any, block: dict, stream: str, first_step: int, thin: int) -> None:
    """Refuse NaN/inf in a plugin sampler's block of draws ``{key: (chains, n, ...)}`` for the
    keys whose family forbids them (float keys only); ``first_step`` is the step number of the
    block's first draw.  No-op for mixlab's own samplers and those no registered factory
    built."""
    from . import discovery as plugins
    from .families import find

    rec = built_record(sampler)
    fam = find(rec.family) if rec is not None else None
    if fam is None or plugins.owner(rec.module) is None:
        return          # mixlab's own samplers: a diverging one is a result, not a failure
    for d in fam.draws:
        a = block.get(d.key)
        if not d.finite or a is None or a.dtype.kind not in "fc":
            continue
        ok = np.isfinite(a.reshape(a.shape[0], a.shape[1], -1)).all(axis=2)   # (chains, n)
        if ok.all():
            continue
        chain, j = (int(v[0]) for v in np.nonzero(~ok))
        step = first_step + (j + 1) * thin
        text, _ = _who(sampler)
        raise SamplerFailure(
            f"sampler {text} drew a non-finite value (NaN or inf) in draw '{d.key}' of "
            f"stream '{stream}' at step {step} (chain {chain}); the {fam.name} family's "
            f"'{d.key}' must be finite. Look for an overflow or a division by zero in the "
            f"plugin's step (a step size too large, a log density of -inf accepted); "
            f"'mixlab --debug ...' shows the traceback. The run is marked failed.")


def _fail(sampler: Any, stream: str, what: str, fix: str = "") -> SamplerContractError:
    return SamplerContractError(
        f"sampler {describe_sampler(sampler)} (stream '{stream}', step 1) breaks the sampler "
        f"contract: {what}. {fix or ''}A sampler's step(state, rng) must return (state, draws, "
        f"stats) with state {{name: array}}, draws {{key: array (chains, ...)}} and stats "
        f"{{key: (chains,) or scalar}}; see docs/plugins.md. The run is marked failed.")


_KIND_NAMES = {"b": "bool", "f": "float", "i": "integer", "u": "unsigned integer"}


def check_family(sampler: Any, draws: dict, stream: str) -> None:
    """The draws of the first step against the family's declared keys, trailing shapes and
    dtypes (mixlab.plugins.families); no-op for a sampler no registered factory built."""
    from .families import find

    rec = built_record(sampler)
    fam = find(rec.family) if rec is not None else None
    if fam is None:
        return
    if not any(k in draws for k in fam.required):
        raise _fail(sampler, stream, f"it emitted the draw keys {', '.join(map(repr, draws))} "
                                     f"and none of {', '.join(map(repr, fam.required))}, which "
                                     f"the {fam.name} family's experiments read")
    for d in fam.draws:
        if d.key not in draws:
            continue
        a = np.asarray(draws[d.key])
        want = rec.dims.get(d.key)
        if want is not None and a.shape[1:] != want:
            full = (a.shape[0],) + want
            raise _fail(sampler, stream, f"draw '{d.key}' has shape {a.shape}; the {fam.name} "
                                         f"family's '{d.key}' is {d.shape} = {full} for this "
                                         f"target", f"Return {d.help} shaped {full}. ")
        if a.dtype.kind not in d.kinds:
            names = " or ".join(_KIND_NAMES.get(k, k) for k in d.kinds)
            raise _fail(sampler, stream, f"draw '{d.key}' has dtype {a.dtype}; the {fam.name} "
                                         f"family's '{d.key}' is {names}",
                        f"Convert it (e.g. draws['{d.key}'].astype("
                        f"{'bool' if d.kinds == 'b' else 'np.float64'})). ")


def check_state(sampler: Any, state: Any, stream: str, where: str = "init",
                like: dict | None = None) -> None:
    """``state`` must be a dict of numeric/bool numpy arrays (checkpointed as data) with the
    keys and shapes ``like`` ``{key: shape}`` (the init state's) when given."""
    if not isinstance(state, dict):
        raise _fail(sampler, stream, f"{where} returned a {type(state).__name__} as the state, "
                                     f"not a dict of arrays")
    for k, v in state.items():
        if not isinstance(k, str) or "/" in k:
            raise _fail(sampler, stream, f"state key {k!r} must be a string without '/'")
        ok = isinstance(v, (np.ndarray, np.generic, bool, int, float))
        if not ok or np.asarray(v).dtype.kind not in "biuf":
            raise _fail(sampler, stream, f"state '{k}' is a {type(v).__name__}"
                        + (f" of dtype {v.dtype}" if isinstance(v, np.ndarray) else "")
                        + "; the state must hold numeric or boolean numpy arrays only (it is "
                          "checkpointed as data, never pickled)")
    if like is not None:
        shapes = {k: np.shape(v) for k, v in state.items()}
        before = dict(like)
        if shapes != before:
            changed = sorted(k for k in set(shapes) | set(before)
                             if shapes.get(k) != before.get(k))
            raise _fail(sampler, stream, "step returned a state whose "
                        + ", ".join(f"'{k}' is {shapes.get(k, 'missing')} (init gave "
                                    f"{before.get(k, 'no such key')})" for k in changed),
                        "The state keeps the keys and shapes init gave it (it is checkpointed "
                        "and handed back on resume). ")


def check_step_output(sampler: Any, out: Any, stream: str = "?",
                      init_shapes: dict | None = None) -> None:
    """Check one ``step`` result against the contract (see the module docstring); with
    ``init_shapes`` ``{key: shape}``, the step's state must keep those keys and shapes."""
    chains = getattr(sampler, "chains", None)
    if not isinstance(chains, (int, np.integer)) or chains < 1:
        raise _fail(sampler, stream, f"its 'chains' attribute is {chains!r}, not a positive "
                                     f"integer")
    if not isinstance(out, tuple) or len(out) != 3:
        raise _fail(sampler, stream, f"step returned a {type(out).__name__}"
                    + (f" of length {len(out)}" if isinstance(out, tuple) else "")
                    + ", not the tuple (state, draws, stats)")
    state, draws, stats = out
    check_state(sampler, state, stream, "step", init_shapes)
    if not isinstance(draws, dict) or not draws:
        raise _fail(sampler, stream, "step returned no draws (draws must be a non-empty dict)")
    for k, v in draws.items():
        if not isinstance(k, str) or not k or "/" in k or k in RESERVED_KEYS:
            raise _fail(sampler, stream, f"draw key {k!r} is not allowed (a non-empty string "
                                         f"without '/', not {'/'.join(RESERVED_KEYS)})")
        a = np.asarray(v)
        if a.dtype.kind not in "biuf":
            raise _fail(sampler, stream, f"draw '{k}' has dtype {a.dtype}; draws must be "
                                         f"numeric or boolean arrays")
        if a.ndim < 1 or a.shape[0] != chains:
            raise _fail(sampler, stream, f"draw '{k}' has shape {a.shape}, expected (chains, "
                                         f"...) with chains = {chains}")
    if not isinstance(stats, dict):
        raise _fail(sampler, stream, f"step returned a {type(stats).__name__} as stats, not a "
                                     f"dict")
    for k, v in stats.items():
        a = np.asarray(v)
        if not isinstance(k, str) or "/" in k:
            raise _fail(sampler, stream, f"stat key {k!r} must be a string without '/'")
        if a.dtype.kind not in "biuf" or a.shape not in ((chains,), ()):
            raise _fail(sampler, stream, f"stat '{k}' has shape {a.shape} and dtype {a.dtype}; "
                                         f"stats must be numbers shaped (chains,) = ({chains},) "
                                         f"or scalars")
    check_family(sampler, draws, stream)


class checked:  # noqa: N801 - used like a function: ``checked(sampler, name)``
    """``sampler`` with its first init/step checked (see the module docstring); other
    attributes are the sampler's own."""

    def __init__(self, sampler: Any, stream: str):
        self._sampler, self._stream = sampler, stream
        self._init_shapes: dict | None = None

    @property
    def chains(self):
        return getattr(self._sampler, "chains", None)

    @property
    def wrapped(self) -> Any:
        """The sampler this wrapper checks (for failure messages and the NaN check)."""
        return self._sampler

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_sampler", "_stream", "_init_shapes"):
            raise AttributeError(name)   # unpickling (a Dask task) asks before it sets them
        return getattr(self._sampler, name)

    def init(self, rng: np.random.Generator) -> dict:
        state = self._sampler.init(rng)
        check_state(self._sampler, state, self._stream)
        self._init_shapes = {k: np.shape(v) for k, v in state.items()}
        return state

    def step(self, state: dict, rng: np.random.Generator):
        out = self._sampler.step(state, rng)
        check_step_output(self._sampler, out, self._stream, self._init_shapes)
        self.step = self._sampler.step  # later steps: the sampler's own method, no check
        return out
