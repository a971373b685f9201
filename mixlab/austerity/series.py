"""What the austerity experiments share: their series of samplers, each looked up in the registry
(``logistic`` family for Figs 2-6, ``mrf`` for Figs 7-8), the spec keys common to several
figures, and the draw-adding wrappers.  The experiment kinds are in experiments_logistic.py
(Figs 1-6) and experiments_mrf.py (Figs 7-8)."""

from __future__ import annotations

import numpy as np

from ..errors import SpecError
from ..plugins import registry
from ..spec.schema import MapOf, Param, SamplerEntry, validate
from .limits import MINIBATCH_MAX
from .summaries import theta_dims, theta_summaries

PAPER_EPS = (0.01, 0.05, 0.1, 0.15, 0.2, 0.25)

# The sequential test's population may be blocks of consecutive rows (pair terms) of a
# once-shuffled order instead of single points; 1 keeps the paper's per-point test (the figures'
# default), larger blocks make a point read cost what it costs in the exact pass.
TEST_BLOCK_ROWS = Param(1, int, lo=1, hi=MINIBATCH_MAX,
                        help="rows per block of the sequential test's population (1: the "
                             "paper's per-point test; e.g. 32: blocks, faster per point read)")
TEST_BLOCK_TERMS = Param(1, int, lo=1, hi=MINIBATCH_MAX,
                         help="pair terms per block of the approximate Gibbs test's population "
                              "(1: the paper's per-term test; e.g. 64: blocks)")


def extra_samplers(family: str) -> MapOf:
    """The ``samplers`` key: more samplers, each one more series under the same budget."""
    return MapOf(SamplerEntry(family), default={},
                 help=f"more samplers to run beside the paper's, by label: {{method: NAME, ...}} "
                      f"with NAME a registered {family} sampler (see 'mixlab plugins'); each "
                      f"gets the same budget and appears as one more series")


def sampler_series(family: str, builtin: dict, extra: dict, path: str = "samplers") -> dict:
    """``{label: (entry, spec path or None)}``: the experiment's own series ``builtin``
    ({label: entry} made from its top-level keys, validated like spec entries; path None) then
    the spec's ``extra`` entries (already validated; path ``samplers.<label>``)."""
    out = {}
    for label, entry in builtin.items():
        out[label] = (validate(entry, SamplerEntry(family), path), None)
    for label, entry in extra.items():
        if label in out:
            raise SpecError(f"'{label}' is a series the experiment already runs; give this "
                            f"sampler another label", f"{path}.{label}")
        out[label] = (entry, f"{path}.{label}")
    if not out:
        raise SpecError("nothing to run: give eps values or samplers", path)
    return out


def build_sampler(family: str, entry: dict, where: str | None, target, chains: int,
                  shared: dict):
    """The registered sampler ``entry['method']`` of ``family`` built on ``target``.

    A parameter left null (``None``) takes the value of the same-named key of ``shared`` (the
    experiment's top-level settings, e.g. ``sigma`` or ``m``).  A SpecError of the factory is
    re-keyed under ``where`` (the entry's spec path; None for the experiment's own series, whose
    parameters are the top-level keys of the same names)."""
    params = dict(entry)
    for key, value in shared.items():
        if key in params and params[key] is None:
            params[key] = value
    kind = registry.get_sampler(family, params["method"], f"{where or 'samplers'}.method")
    try:
        return kind.factory(target, params, chains)
    except SpecError as exc:
        if where is None or exc.key is None or exc.key.startswith(where):
            raise
        msg = str(exc).split(": ", 1)[-1]
        raise SpecError(msg, f"{where}.{exc.key}") from None


class WithMarginal:
    """Adds the draw key ``marginal`` = samples[:, dims] (float32) to a sampler's draws."""

    def __init__(self, sampler, dims):
        self.sampler, self.dims = sampler, list(dims)
        self.chains = sampler.chains

    def init(self, rng):
        return self.sampler.init(rng)

    def step(self, state, rng):
        state, draws, stats = self.sampler.step(state, rng)
        draws = dict(draws, marginal=draws["samples"][:, self.dims].astype(np.float32))
        return state, draws, stats


class WithTerms:
    """Adds ``terms (chain,)`` = pair-term evaluations of the sweep to a sampler's draws (exact:
    D·N per sweep; approximate: the terms its tests read), for the work axis of Fig 8."""

    def __init__(self, sampler, per_sweep: int):
        self.sampler, self.per_sweep = sampler, per_sweep
        self.chains = sampler.chains

    def init(self, rng):
        return self.sampler.init(rng)

    def step(self, state, rng):
        state, draws, stats = self.sampler.step(state, rng)
        # a sampler without a data_used statistic is charged a full sweep (D·N terms)
        used = np.broadcast_to(stats.get("data_used", 1.0), (self.chains,))
        draws["terms"] = (used * self.per_sweep).astype(np.float32)
        return state, draws, stats


SUMMARY_DIMS = Param(None, list, item=int, lo=-100_000, hi=100_000, nullable=True,
                     help="coordinates of θ stored per draw as summaries for 'mixlab diagnose' "
                          "(null: every coordinate, d x 8 bytes per chain per draw; negative "
                          "counts from the end; [] none)")


def posterior_summaries(p: dict, d: int):
    """The stream's ``summarize`` for the spec's ``summary_dims`` (None when it lists none)."""
    dims = theta_dims(p["summary_dims"], d)
    return theta_summaries(dims) if dims else None


def eps_label(e: float) -> str:
    """Series label of a tolerance."""
    return f"eps={e:g}"
