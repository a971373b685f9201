"""What each target family promises a plugin author: its target, draws, step, cost and truths.

One :class:`Family` per family of :data:`mixlab.plugins.registry.FAMILIES`: mixlab's four in
:data:`FAMILY_INFO`, and those plugins register with :func:`register_family` (checked field by
field; :func:`find` and :func:`all_families` read both).  The runner checks a
sampler's first step against the family's declared draws (:func:`mixlab.plugins.contract.check_family`)
and every block of draws for NaN/inf where the family forbids them; the league and ESS-per-work
read the family's cost statistic ``cost`` from each step's stats; ``mixlab plugins --markdown``
prints these tables into docs/plugins/ (a test keeps the committed pages equal to them).

A draw's trailing shape comes from the target the sampler was built for (``dims(target)``);
when a plugin's factory receives something without the attributes used here, the shape check
falls back to the leading (chains) axis.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..runfile.streamfile import RESERVED_KEYS
from . import registrations
from .registrations import FamilyRegistrationError


@dataclass(frozen=True)
class DrawKey:
    """One draw key a family's experiments read.

    ``shape``: the shape as documented, ``(C, ...)``; ``dims(target)``: the trailing shape for
    a target (None: not known for this target); ``kinds``: the allowed numpy dtype kinds
    (``"b"`` bool, ``"f"`` float); ``finite``: NaN/inf are refused."""

    key: str = ""
    shape: str = ""
    dims: Callable[[Any], tuple[int, ...]] | None = None
    kinds: str = ""
    finite: bool = False
    help: str = ""


@dataclass(frozen=True)
class LeagueTargets:
    """A plugin family's league targets, each with an exact truth (``mixlab league FAMILY``).

    - ``definitions() -> {name: definition}``: the standard targets, in table order; a
      definition is a flat dict of numbers and strings that fixes the model, its seed included;
    - ``build(definition) -> target``: what the family's sampler factories receive;
    - ``truth(target) -> (n,)`` float: the exact probabilities ``P(f_i(x) = 1)`` of the 0/1
      features below (computed once per definition and cached: mixlab.league.truth);
    - ``features(target, x) -> (C, B, n)`` bool: the features of a block of draws ``x (C, B,
      ...)`` of draw key ``key``; None: the draws themselves, flattened (0/1 marginals).

    The yardstick is ``mean_i |p̂_i − p_i|`` over the features (mixlab.league.yardstick), its
    stated error that of 1,000 exact draws (mixlab.league.reach), and the bias flag compares
    it with the sampler's own Monte Carlo error (mixlab.league.bias)."""

    definitions: Callable[[], dict] | None = None
    build: Callable[[dict], Any] | None = None
    truth: Callable[[Any], Any] | None = None
    features: Callable[[Any, Any], Any] | None = None
    key: str = "samples"
    truth_source: str = "exact feature probabilities"
    yardstick_name: str = "mean |error| of the feature probabilities"


@dataclass(frozen=True)
class Family:
    """A target family: see the module docstring.  ``required``: every step must emit at least
    one of these draw keys; ``cost``: the name of the per-chain stat ``(C,)`` counting the
    step's work, ``cost_help`` what it counts; ``constant``: its ``mixlab.api`` name (mixlab's
    own families).  A plugin's family also gives ``summarize(target) -> fn`` (``fn({key: (C,
    n, ...)}) -> {stat: (C, n)}``, the per-draw scalar summaries) and ``league``
    (:class:`LeagueTargets`); the text fields are its page (``mixlab plugins --markdown``)."""

    name: str = ""
    constant: str = ""
    target: str = ""
    draws: tuple[DrawKey, ...] = ()
    required: tuple[str, ...] = ()
    step: str = ""
    cost: str = ""
    cost_help: str = ""
    summaries: str = ""
    exact: str = ""
    benchmarks: str = ""
    summarize: Callable[[Any], Callable] | None = field(default=None, compare=False)
    league: LeagueTargets | None = field(default=None, compare=False)

    def draw(self, key: str) -> DrawKey | None:
        return next((d for d in self.draws if d.key == key), None)


def _attr_dims(*path: str, index: int | None = None, full: bool = False):
    """``dims(target)`` reading ``target.<path>`` (its ``.shape[index]`` or its whole shape)."""

    def dims(target: Any) -> tuple[int, ...]:
        obj = target
        for name in path:
            obj = getattr(obj, name)
        if full:
            return tuple(int(n) for n in obj.shape)
        return (int(obj.shape[index]) if index is not None else int(obj),)

    return dims


FAMILY_INFO: dict[str, Family] = {f.name: f for f in (
    Family(
        name="rbm", constant="RBM",
        target="`RBMTarget`, a binary RBM: `W (V, H)`, `b (V,)`, `c (H,)` float64, "
               "p(x) ∝ Σ_h exp(bᵀx + cᵀh + xᵀWh) over x ∈ {0,1}^V; `train_X (N, V)` 0/1 "
               "training images; `rates` (`{W, b, c}` or None); `init` (\"data\" or "
               "\"noise\"); `emit` (\"both\", \"binary\", \"means\"); `shape` (image rows, "
               "cols) or None",
        draws=(
            DrawKey("samples", "(C, V)", _attr_dims("W", index=0), "b", False,
                    "the binary visible state x of each chain"),
            DrawKey("means", "(C, V)", _attr_dims("W", index=0), "f", True,
                    "E[x | h] of the last half-step (the ISL centres), in [0, 1]"),
        ),
        required=("samples", "means"),
        step="one emitted visible state per chain; inside it the sampler's own k block-Gibbs "
             "sweeps x → h → x (k is a sampler parameter)",
        cost="site_updates",
        cost_help="units updated: each visible or hidden unit drawn (or set, for herding) "
                  "counts one; k block-Gibbs sweeps = k·(V + H)",
        summaries="`free_energy` F(x) = -bᵀx - Σ_j softplus(c_j + (xW)_j), `active_pixels` "
                  "(units equal to 1), three fixed pixels `pixel_r<i>c<j>` (0/1) "
                  "(mixlab.rbm.summaries; from `samples`)",
        exact="an RBM with V ≤ 20 visible units: "
              "`mixlab.rbm.partition.exact_visible_log_probs(rbm)` (log p(x) of all 2^V "
              "states); `log_partition_exact(rbm)` when min(V, H) ≤ 25",
        benchmarks="`rates_fpcd.isl` (Figs 2, 3), `rates_fpcd.sequences` (Fig 1), "
                   "`rates_fpcd.sample`"),
    Family(
        name="spinglass", constant="SPINGLASS",
        target="`SpinGlassTarget`: `field (R, C)`, `right (R, C-1)`, `down (R-1, C)` float64, "
               "p(x) ∝ exp(Σ field·x + Σ right·x x + Σ down·x x) over ±1 spins; `init` "
               "(\"random\", \"plus\", \"minus\"); `score(x)`, `attractive`",
        draws=(
            DrawKey("samples", "(C, rows, cols)", _attr_dims("field", full=True), "b", False,
                    "the spins of each chain on the R x C grid, True = +1"),
        ),
        required=("samples",),
        step="MCMC samplers: one sweep (every site updated once, R·C site updates), replica "
             "exchange one sweep of each of its K replicas and the swaps; "
             "perturb-and-MAP samplers (`local`, `pairwise`): one independent perturbed MAP "
             "solution per chain",
        cost="site_updates",
        cost_help="single-site updates: a sweep counts R·C (replica exchange: K·R·C, every "
                  "replica's sweep); a perturb-and-MAP solution is "
                  "charged R·C (each site assigned once; the MAP solver's own work is not "
                  "counted, compare those samplers by time)",
        summaries="`magnetisation` (mean spin), `energy` (-θ(x), Eq. 1), the spins of four "
                  "fixed sites `spin_r<i>c<j>` (mixlab.spinglass.summaries)",
        exact="`mixlab.spinglass.exact.marginals(model)`, `site_and_edge_marginals(model)` "
              "(with each edge's P(x_i = x_j)) and `log_partition(model)` (frontier "
              "transfer matrix, exact for grids whose narrow side is at most 22); "
              "`all_configurations(n)` to enumerate a grid of n ≤ 24 sites",
        benchmarks="`perturb_map.marginal_vs_time`, `perturb_map.marginals_vs_coupling`"),
    Family(
        name="logistic", constant="LOGISTIC",
        target="`LogisticTarget`: `posterior` (`log_posterior(theta (C, d)) -> (C,)`, "
               "`grad_log_posterior(theta, idx=None)`, `loglik_terms`, `N`, `d`), `theta0 "
               "(C, d)` the chains' start, `laplace() -> (mode (d,), negative Hessian (d, d))`",
        draws=(
            DrawKey("samples", "(C, d)", _attr_dims("posterior", "d"), "f", True,
                    "the parameter θ of each chain"),
        ),
        required=("samples",),
        step="one proposal and its accept/reject decision per chain (SGLD: one update)",
        cost="points_read",
        cost_help="data points whose log-likelihood or gradient term the step evaluated (a "
                  "point read twice counts twice): N for an exact MH test, the points the "
                  "sequential test read, the minibatch of each stochastic gradient, N per "
                  "full-data gradient",
        summaries="`theta_<j>` for the coordinates j of the spec's `summary_dims` (default: "
                  "every coordinate) (mixlab.austerity.summaries)",
        exact="a one- or two-dimensional posterior (`LogisticPosterior` on a few points) by "
              "quadrature on a fine grid; the Laplace approximation `laplace()` is not exact",
        benchmarks="`austerity.rw_risk` (Fig 3), `austerity.rw_marginals` (Fig 4), "
                   "`austerity.sgld_variance` (Figs 5, 6)"),
    Family(
        name="mrf", constant="MRF",
        target="`DenseMRF`: `D`, `h (D,)`, `Q (D, D, D)` (log-odds `h_i + xᵀ Q[i] x`), "
               "`tri`, `logpsi (T, 2, 2, 2)`, `N` = (D-1)(D-2)/2 pair terms per conditional",
        draws=(
            DrawKey("samples", "(C, D)", _attr_dims("D"), "b", False,
                    "the binary variables of each chain"),
        ),
        required=("samples",),
        step="one systematic sweep: each of the D variables updated once",
        cost="pair_terms_read",
        cost_help="pair-table terms read by the step's conditionals: an exact update is "
                  "charged its N terms (D·N a sweep), an approximate one the terms its "
                  "sequential test read",
        summaries="`energy` (-log of the unnormalised probability), `ones` (fraction of "
                  "variables equal to 1), `subset_<k>` indicators of Fig 8's subsets "
                  "(mixlab.austerity.summaries)",
        exact="`mixlab.austerity.mrf.enumerate_joint(model)`: the joint of a model with "
              "D ≤ 20 by enumeration (`make_mrf(D=6, ...)` for a test)",
        benchmarks="`austerity.mrf_joint_error` (Fig 8)"),
)}


def find(name: str) -> Family | None:
    """The :class:`Family` named ``name``, mixlab's or a plugin's (None for an unknown one)."""
    if name in FAMILY_INFO:
        return FAMILY_INFO[name]
    kind = registrations._FAMILIES.get(name)
    return None if kind is None else kind.info


def family(name: str) -> Family:
    """The :class:`Family` named ``name`` (a KeyError for an unknown one)."""
    f = find(name)
    if f is None:
        raise KeyError(name)
    return f


def all_families() -> dict[str, Family]:
    """Every family: mixlab's four, then those plugins registered, by name."""
    return {**FAMILY_INFO, **{n: k.info for n, k in registrations._FAMILIES.items()}}


def family_module(name: str) -> str | None:
    """The module that registered plugin family ``name`` (None for mixlab's own)."""
    kind = registrations._FAMILIES.get(name)
    return None if kind is None else kind.module


def cost_statistic(name: str) -> str:
    """The name of family ``name``'s per-step cost statistic (e.g. ``site_updates``)."""
    return family(name).cost


# ------------------------------------------------------------------------------------------------
# a plugin's family

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
_RESERVED_DRAWS = (*RESERVED_KEYS, "league_work")   # a stream's own groups in the run file
_TEXT = {"target": "what the factories' target is (its attributes and the model's density)",
         "step": "what one step of a sampler means",
         "cost_help": "what one unit of the cost statistic counts",
         "summaries": "the per-draw summaries summarize computes, in words",
         "exact": "the exact truths to test a sampler against"}


def register_family(fam: Family) -> Family:
    """Register a plugin's target family ``fam`` (see :class:`Family`): its samplers can then
    be registered with ``@sampler(fam.name, ...)`` and join runs (experiment ``league.sample``),
    ``mixlab diagnose``, ``mixlab plugins`` and ``mixlab league``.  Every field is checked
    here: a missing or malformed one, or a name already taken, raises
    :class:`FamilyRegistrationError` naming the family and the field."""
    check_family(fam)
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    module = str(caller.f_globals.get("__name__", "?")) if caller is not None else "?"
    registrations.add_family(fam.name, fam.target.split(";")[0][:200], fam, module)
    return fam


def _bad(name: str, what: str) -> FamilyRegistrationError:
    return FamilyRegistrationError(f"family {name!r}: {what} (see docs/plugins.md, 'A family "
                                   f"of your own')")


def check_family(fam: Any) -> None:
    """Raise :class:`FamilyRegistrationError` naming the field of ``fam`` that cannot work."""
    if not isinstance(fam, Family):
        raise FamilyRegistrationError(f"register_family needs a mixlab.api.Family, got "
                                      f"{type(fam).__name__} {fam!r:.80}")
    name = fam.name
    if not isinstance(name, str) or not _NAME.match(name):
        raise _bad(str(name), "field 'name' must be a lower-case name of letters, digits, '-' "
                              f"and '_' starting with a letter, got {name!r}")
    for key, what in _TEXT.items():
        value = getattr(fam, key)
        if not isinstance(value, str) or not value.strip():
            raise _bad(name, f"field '{key}' is missing or empty: give {what} (text of the "
                             f"family's page)")
    if not isinstance(fam.cost, str) or not fam.cost.isidentifier():
        raise _bad(name, f"field 'cost' must name the per-chain statistic (C,) that counts a "
                         f"step's work, e.g. 'site_updates', got {fam.cost!r}")
    draws = tuple(fam.draws) if isinstance(fam.draws, (tuple, list)) else None
    if not draws:
        raise _bad(name, "field 'draws' must be a non-empty tuple of DrawKey (the draw keys "
                         "its samplers emit)")
    seen = set()
    for i, d in enumerate(draws):
        _check_draw(name, i, d)
        if d.key in seen:
            raise _bad(name, f"field 'draws[{i}]': draw key {d.key!r} is declared twice")
        seen.add(d.key)
    required = fam.required
    if isinstance(required, str) or not isinstance(required, (tuple, list)) or not required:
        raise _bad(name, "field 'required' must be a non-empty tuple of draw keys (every step "
                         "emits at least one of them)")
    unknown = [k for k in required if k not in seen]
    if unknown:
        raise _bad(name, f"field 'required' names {', '.join(map(repr, unknown))}, not a key "
                         f"of 'draws' ({', '.join(map(repr, seen))})")
    if not callable(fam.summarize):
        raise _bad(name, "field 'summarize' is missing or not callable: give summarize(target) "
                         "-> fn({key: (C, n, ...)}) -> {stat: (C, n)} (the per-draw summaries "
                         "of mixlab diagnose and the league's ESS)")
    if fam.league is not None:
        _check_league(name, fam.league, seen)


def _check_draw(name: str, i: int, d: Any) -> None:
    where = f"field 'draws[{i}]'"
    if not isinstance(d, DrawKey):
        raise _bad(name, f"{where} must be a mixlab.api.DrawKey, got {type(d).__name__}")
    if not isinstance(d.key, str) or not d.key or "/" in d.key or d.key in _RESERVED_DRAWS:
        raise _bad(name, f"{where}: key {d.key!r} must be a non-empty string without '/', not "
                         f"one of {', '.join(_RESERVED_DRAWS)}")
    if not callable(d.dims):
        raise _bad(name, f"{where} ({d.key!r}): dims must be callable: dims(target) -> the "
                         f"draw's trailing shape")
    if not isinstance(d.kinds, str) or not d.kinds or set(d.kinds) - set("biuf"):
        raise _bad(name, f"{where} ({d.key!r}): kinds must be numpy dtype kinds among 'b', "
                         f"'i', 'u', 'f', got {d.kinds!r}")
    if not isinstance(d.finite, bool):
        raise _bad(name, f"{where} ({d.key!r}): finite must be True or False")
    for attr in ("shape", "help"):
        if not isinstance(getattr(d, attr), str) or not getattr(d, attr).strip():
            raise _bad(name, f"{where} ({d.key!r}): {attr} must be non-empty text")


def _check_league(name: str, league: Any, keys: set) -> None:
    if not isinstance(league, LeagueTargets):
        raise _bad(name, f"field 'league' must be a mixlab.api.LeagueTargets, got "
                         f"{type(league).__name__}")
    for attr in ("definitions", "build", "truth"):
        if not callable(getattr(league, attr)):
            raise _bad(name, f"field 'league.{attr}' is missing or not callable (see "
                             f"LeagueTargets)")
    if league.features is not None and not callable(league.features):
        raise _bad(name, "field 'league.features' must be callable or None")
    if league.key not in keys:
        raise _bad(name, f"field 'league.key' is {league.key!r}, not a key of 'draws'")
    for attr in ("truth_source", "yardstick_name"):
        if not isinstance(getattr(league, attr), str) or not getattr(league, attr).strip():
            raise _bad(name, f"field 'league.{attr}' must be non-empty text")
