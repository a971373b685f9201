"""Experiment kind ``league.sample``: any family's samplers on one of its league targets.

The run a family from a plugin gets for free, and that works for mixlab's families too: the
spec names the ``family``, one of its league ``target``s (mixlab.league.targets), the
``samplers`` (label -> ``{method, its keys}``) and a budget; each sampler runs as one
resumable stream of ``chains`` chains (independent streams: ``mixlab run -j N`` samples N at a
time), recording its draws, its per-step statistics and the family's per-draw summaries (what
``mixlab diagnose`` reads), with the target's yardstick as evaluator (metric
``error_vs_seconds``: the error against the exact truth after each block). Results:
``error/<label>`` (the yardstick at the end), ``draws/<label>``, ``work/<label>`` (the
family's cost statistic summed over every step and chain; NaN when the sampler does not report
it), and the target's ``truth``, ``yardstick`` and ``reach_error``.
"""

from __future__ import annotations

import inspect

import numpy as np

from ..errors import SpecError
from ..plugins import registry
from ..plugins.families import family
from ..plugins.registry import experiment, figure
from ..spec.schema import Param
from . import cost, targets
from .cell import build_sampler, sampler_params

SCHEMA = {
    "family": Param(type=str, choices=registry.family_names, help="the sampler family"),
    "target": Param(type=str, help="one of the family's league targets (mixlab plugins "
                                   "--markdown FAMILY lists a plugin family's)"),
    "samplers": Param(type=dict, help="label -> {method: a sampler of the family, its keys}"),
    "chains": Param(10, int, lo=1, help="chains per sampler"),
    "budget": {
        "draws": Param(1000, int, lo=1, nullable=True, help="draws per chain"),
        "seconds": Param(None, float, lo=0, lo_open=True, nullable=True,
                         help="sampling seconds per sampler"),
    },
    "block": Param(None, int, lo=1, nullable=True, help="draws per block (curve points, "
                                                        "checkpoints)"),
    "record": Param(True, bool, help="store the draws (the summaries and statistics are "
                                     "stored either way)"),
    "init": Param("random", str, help="initial state for samplers that take one"),
}


def entries(p: dict) -> dict[str, dict]:
    """label -> sampler entry; a bare label or null means ``{method: label}``."""
    out = {}
    for label, entry in p["samplers"].items():
        entry = {"method": label} if entry is None else entry
        if not isinstance(entry, dict):
            raise SpecError(f"must be a mapping {{method: ..., its keys}}, got {entry!r}",
                            f"samplers.{label}")
        out[str(label)] = {"method": label, **entry}
    return out


def check_sample(p: dict) -> None:
    """Start-up validation: a budget, a known target, known samplers with valid keys."""
    if p["budget"]["draws"] is None and p["budget"]["seconds"] is None:
        raise SpecError("is null and so is budget.seconds: give budget.draws or budget.seconds",
                        "budget.draws")
    if not p["samplers"]:
        raise SpecError("names no sampler", "samplers")
    std = targets.standard_targets(p["family"])
    if p["target"] not in std:
        raise SpecError(f"unknown target {p['target']!r}; the {p['family']} targets are "
                        f"{', '.join(std)}", "target")
    for label, entry in entries(p).items():
        sampler_params(p["family"], entry, f"samplers.{label}")


@experiment("league.sample", schema=SCHEMA, check=check_sample,
            help="a family's samplers on one of its league targets, with its summaries and "
                 "exact-truth error")
def run_sample(ctx) -> None:
    p = ctx.params
    fam, chains = p["family"], p["chains"]
    inst = targets.build(fam, targets.standard_targets(fam)[p["target"]], p["init"])
    target = inst.target(chains) if inspect.isfunction(inst.target) else inst.target
    keys = tuple(d.key for d in family(fam).draws)
    evaluators, handles = {}, {}
    with ctx.parallel():
        for label, entry in entries(p).items():
            sampler = build_sampler(fam, label, entry, target, chains)
            ev = evaluators[label] = inst.yardstick(series=label)
            handles[label] = ctx.stream(
                label, sampler, draws=p["budget"]["draws"], seconds=p["budget"]["seconds"],
                evaluators=[ev], record=keys if p["record"] else False,
                rng=ctx.rng("sample", label), block=p["block"], summarize=inst.summarize,
                after_block=cost.WorkMeter(fam, chains))
    for label, res in handles.items():
        ev = evaluators[label]
        ctx.store.set_result(f"error/{label}", float(ev.value()))
        ctx.store.set_result(f"draws/{label}", int(res.draws))
        ctx.store.set_result(f"work/{label}", float(ev.work))
    ctx.store.set_result("target", p["target"])
    ctx.store.set_result("truth", inst.truth_source)
    ctx.store.set_result("yardstick", inst.yardstick_name)
    ctx.store.set_result("reach_error", float(inst.reach_error))
    ctx.store.set_result("unit", cost.unit(fam))


@figure("league.sample_error", experiment="league.sample")
def fig_error(run, fig) -> None:
    """Each sampler's error against the exact truth vs sampling seconds."""
    ax = fig.add_subplot()
    res = run.results()
    for series, c in sorted(run.metrics().get("error_vs_seconds", {}).items()):
        ax.plot(c["x"], c["y"], label=series)
    reach = float(res.get("reach_error", np.nan))
    if np.isfinite(reach):
        ax.axhline(reach, color="k", ls=":", label="1,000 exact draws")
    ax.set_xlabel("sampling seconds")
    ax.set_ylabel(str(res.get("yardstick", "error")))
    ax.set_yscale("log")
    ax.set_title(f"{run.spec.get('family')} on {res.get('target', '?')}")
    ax.legend()
