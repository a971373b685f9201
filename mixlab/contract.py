"""The sampler contract, checked where a sampler first meets the runner.

A sampler (see docs/plugins.md) has an attribute ``chains``, ``init(rng) -> state`` and
``step(state, rng) -> (state, draws, stats)`` with

- ``state``: ``{name: np.ndarray}`` of numbers or booleans (numbers are allowed too; it is
  checkpointed as data);
- ``draws``: a non-empty ``{key: array (chains, ...)}`` (one draw per chain);
- ``stats``: ``{key: array (chains,) or scalar ()}``.

:func:`check_step_output` checks one step's output; :func:`checked` wraps a sampler so that its
first ``init`` and first ``step`` in a stream are checked and every later call goes straight to
the sampler's own methods (the wrapper replaces its ``step`` by the sampler's bound method after
the check, so the check costs nothing afterwards).  A violation is a :class:`SamplerContractError`
naming the sampler, the module (and plugin) it comes from, the key and the shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import MixlabError


class SamplerContractError(MixlabError):
    """A sampler's init or step returned something the runner cannot store (exit code 1)."""


def describe_sampler(sampler: Any) -> str:
    """``'<module>.<Class>'`` plus the plugin it came from, if any."""
    from . import plugins

    cls = type(sampler)
    text = f"{cls.__module__}.{cls.__qualname__}"
    p = plugins.owner(cls.__module__)
    if p is not None:
        text += f" from plugin {p.ref}"
    return text


def _fail(sampler: Any, stream: str, what: str) -> SamplerContractError:
    return SamplerContractError(
        f"sampler {describe_sampler(sampler)} (stream '{stream}') breaks the sampler contract: "
        f"{what}. A sampler's step(state, rng) must return (state, draws, stats) with state "
        f"{{name: array}}, draws {{key: array (chains, ...)}} and stats {{key: (chains,) or "
        f"scalar}}; see docs/plugins.md. The run is marked failed.")


def check_state(sampler: Any, state: Any, stream: str, where: str = "init") -> None:
    """``state`` must be a dict of numeric/bool numpy arrays (checkpointed as data)."""
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


def check_step_output(sampler: Any, out: Any, stream: str = "?") -> None:
    """Check one ``step`` result against the contract (see the module docstring)."""
    chains = getattr(sampler, "chains", None)
    if not isinstance(chains, (int, np.integer)) or chains < 1:
        raise _fail(sampler, stream, f"its 'chains' attribute is {chains!r}, not a positive "
                                     f"integer")
    if not isinstance(out, tuple) or len(out) != 3:
        raise _fail(sampler, stream, f"step returned a {type(out).__name__}"
                    + (f" of length {len(out)}" if isinstance(out, tuple) else "")
                    + ", not the tuple (state, draws, stats)")
    state, draws, stats = out
    check_state(sampler, state, stream, "step")
    if not isinstance(draws, dict) or not draws:
        raise _fail(sampler, stream, "step returned no draws (draws must be a non-empty dict)")
    for k, v in draws.items():
        if not isinstance(k, str) or not k or "/" in k or k in ("time", "stats", "summary",
                                                                 "_checkpoint"):
            raise _fail(sampler, stream, f"draw key {k!r} is not allowed (a non-empty string "
                                         f"without '/', not time/stats/summary/_checkpoint)")
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


class checked:  # noqa: N801 - used like a function: ``checked(sampler, name)``
    """``sampler`` with its first init/step checked (see the module docstring); other
    attributes are the sampler's own."""

    def __init__(self, sampler: Any, stream: str):
        self._sampler, self._stream = sampler, stream

    @property
    def chains(self):
        return getattr(self._sampler, "chains", None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sampler, name)

    def init(self, rng: np.random.Generator) -> dict:
        state = self._sampler.init(rng)
        check_state(self._sampler, state, self._stream)
        return state

    def step(self, state: dict, rng: np.random.Generator):
        out = self._sampler.step(state, rng)
        check_step_output(self._sampler, out, self._stream)
        self.step = self._sampler.step  # later steps: the sampler's own method, no check
        return out
