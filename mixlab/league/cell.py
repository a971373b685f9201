"""One league cell: one sampler on one target over several seeds, at equal time and equal work.

Experiment kind ``league.cell`` (a cell is an ordinary run: ``mixlab show``, ``compare``,
``diagnose`` and ``export`` read it). For each seed ``s`` the cell runs two resumable streams
of ``chains`` chains each, on generators keyed by (seed, clock):

- ``s<s>_time``: ``seconds`` of sampling time (the equal-wall-time clock);
- ``s<s>_work``: the draws that make ``work`` units of the family's cost (mixlab.league.cost),
  counted from the sampler's own statistics (the equal-work clock); skipped, and the cell says
  so, when the sampler reports no cost statistic.

A stream keeps neither the draws nor the sampler's per-step statistics (their means are
kept); the ESS of the target's per-draw summaries is estimated as the draws stream past
(mixlab.league.ess_stream), and the run file keeps a thinned record of the summaries (at most
2,048 evenly spaced draws per chain, ``/streams/<name>/summary``) for ``mixlab diagnose``
(``every_draw``: every draw's, to check the streaming ESS against ArviZ's on them). The
target's yardstick (mixlab.league.yardstick) records the error at ``fractions`` of each
budget; the cell stores, per clock, the median and range over seeds of each, the seconds and
work to reach the stated error (``reach_error``, else the target's own: mixlab.league.reach),
ESS per second (time clock) and ESS per million units of work (work clock), the streaming ESS
of the target's per-draw summaries (the smallest of them; ``ess/<stream>``, and how it was
estimated, ``ess_method/<stream>``: ``record``, ``stream`` or ``fallback``, ``ess_upper/<stream>``
1 when it is only an upper bound, ``ess_fallback`` the streams whose smallest ESS came from
the batch-means fallback, and per clock ``<clock>/ess_upper`` 1 when any seed's is a bound),
and the bias test (mixlab.league.bias) on the equal-work streams (else the time streams).

What scoring cost beside the sampling: ``evaluation_seconds`` (the yardstick's updates and the
per-draw summaries, outside the sampling clock) and ``ess_seconds`` (the streaming ESS's
updates and estimates), in all and per stream (``evaluation_seconds/<stream>``; a stream
resumed partway counts the blocks its last process evaluated).
"""

from __future__ import annotations

import inspect
import math
import time

import numpy as np

from ..errors import SpecError
from ..plugins import registry
from ..plugins.registry import experiment
from ..spec.schema import Param, validate
from . import bias, cost, targets, verdict
from .ess_stream import StreamingESS

CLOCKS = ("time", "work")

SCHEMA = {
    "family": Param(type=str, choices=registry.family_names, help="the sampler family"),
    "target": Param(type=dict, help="{name: ..., definition: {...}} (mixlab.league.targets)"),
    "label": Param(type=str, help="the sampler's label in the league"),
    "sampler": Param(type=dict, help="{method: a registered sampler of the family, its keys}"),
    "seeds": Param(3, int, lo=1, help="independent repetitions (streams) per clock"),
    "chains": Param(10, int, lo=1, help="chains per stream"),
    "seconds": Param(2.0, float, lo=0, lo_open=True, help="equal-time budget per stream"),
    "work": Param(1e6, float, lo=0, lo_open=True,
                  help="equal-work budget per stream (family's unit, all chains together)"),
    "work_max_seconds": Param(30.0, float, lo=0, lo_open=True,
                              help="sampling seconds after which an equal-work stream stops "
                                   "short of its budget (the sampler is then ranked by time "
                                   "alone)"),
    "fractions": Param([0.125, 0.25, 0.5, 1.0], list, item=float, lo=0, hi=1, lo_open=True,
                       min_len=1, help="budget fractions at which the yardstick is kept"),
    "reach_error": Param(None, float, lo=0, lo_open=True, nullable=True,
                         help="the stated error (seconds and work to reach it) for every "
                              "target; null: each target's own (mixlab.league.reach)"),
    "block": Param(20, int, lo=1, help="draws per equal-work stream block, at least (curve "
                                       "resolution)"),
    "work_points": Param(64, int, lo=1, help="blocks (curve points) per equal-work stream, at "
                                             "most: a block holds max(block, draws / "
                                             "work_points) draws"),
    "time_points": Param(64, int, lo=1, help="blocks (curve points) per equal-time stream: a "
                                             "block ends after seconds/time_points of sampling"),
    "calibration": Param(False, bool, help="the sampler may be one of the family's "
                                           "calibration set (mixlab.league.calibration)"),
    "init": Param("plus_minus", str,
                  help="spin glass chains' initial state (mixlab.spinglass.mcmc.INITS), for "
                       "every sampler that takes the target's: plus_minus (even chains all +1, "
                       "odd all -1) starts them overdispersed, as the verdict's R-hat needs"),
    "every_draw": Param(False, bool, help="keep every draw's summaries in the run file, not a "
                                          "thinned record (to check the streaming ESS "
                                          "against ArviZ's on the full draws)"),
}


def sampler_params(family: str, entry: dict, path: str = "sampler"):
    """``(kind, params)``: the registered sampler ``entry["method"]`` of ``family`` and the
    entry's other keys validated against its parameters; a SpecError names ``<path>.<key>``
    (``<key>`` alone when ``path`` is empty)."""
    kind = registry.get_sampler(family, entry["method"], f"{path}.method" if path else "method")
    params = validate(entry, {"method": Param(type=str), **kind.params}, path)
    return kind, {k: v for k, v in params.items() if k != "method"}


def build_sampler(family: str, label: str, entry: dict, target, chains: int):
    """The registered sampler of ``entry`` (validated against its params) for ``target``; a
    SpecError names ``sampler.<key>``."""
    if not isinstance(entry, dict) or "method" not in entry:
        raise SpecError("must be a mapping with a 'method' key", "sampler")
    kind, params = sampler_params(family, entry)
    try:
        return kind.factory(target, params, chains)
    except SpecError as exc:
        msg = str(exc).removeprefix(f"spec key '{exc.key}': ") if exc.key else str(exc)
        raise SpecError(f"{label}: {msg}", "sampler" + (f".{exc.key}" if exc.key else "")) \
            from None
    except ValueError as exc:
        raise SpecError(f"{label} ({entry['method']}): {exc}", "sampler") from None


@experiment("league.cell", schema=SCHEMA,
            help="one league cell: a sampler on a target, seeds x (equal time, equal work)")
def run_cell(ctx) -> None:
    p = ctx.params
    fam, label, entry = p["family"], p["label"], p["sampler"]
    if p["calibration"]:
        from . import calibration

        calibration.load(fam)       # registers the calibration samplers in this process
    tname = p["target"].get("name", "target")
    inst = targets.build(fam, p["target"].get("definition", {}), p["init"])
    # a target that depends on the number of chains (their starts) comes as a function of it
    target = inst.target(p["chains"]) if inspect.isfunction(inst.target) else inst.target
    make = lambda: build_sampler(fam, label, entry, target, p["chains"])  # noqa: E731
    probe = ctx.once("cost_probe", lambda: _probe(fam, make(), ctx.rng("probe")))
    per_step, varies = float(probe["per_step"]), bool(probe["varies"])
    has_work = math.isfinite(per_step) and per_step > 0
    unit = cost.unit(fam)
    ctx.store.set_result("target", tname)
    ctx.store.set_result("sampler", label)
    ctx.store.set_result("method", entry["method"])
    ctx.store.set_result("truth", inst.truth_source)
    ctx.store.set_result("yardstick", inst.yardstick_name)
    ctx.store.set_result("unit", unit)
    ctx.store.set_result("has_work", int(has_work))
    ctx.store.set_result("exact_truth", int(inst.exact))
    ctx.log(f"{label} on {tname}: " + (f"{per_step:g} {unit} per step" if has_work else
                                       "no cost statistic: equal time only"))
    reach = inst.reach_error if p["reach_error"] is None else float(p["reach_error"])
    if not math.isfinite(reach):
        raise SpecError(f"target {tname} states no error to reach: set reach_error",
                        "reach_error")
    ctx.store.set_result("reach_error", reach)
    fr = sorted({float(f) for f in p["fractions"]} | {1.0})
    per_seed = {c: [] for c in CLOCKS}
    for s in range(p["seeds"]):
        ev = inst.yardstick(second_marks=[f * p["seconds"] for f in fr], series=f"s{s}_time")
        spent, es = _time_evaluation(ev, inst.summarize), _TimedESS()
        sampler = make()
        res = ctx.stream(f"s{s}_time", sampler, after_block=_meter(fam, sampler),
                         seconds=p["seconds"], evaluators=[ev, es], record=False,
                         record_stats=False, rng=ctx.rng("seed", s, "time"),
                         block_seconds=p["seconds"] / p["time_points"],
                         summarize=spent.summarize, record_summaries=p["every_draw"])
        spent.record(ctx, f"s{s}_time")
        per_seed["time"].append(_leg(ctx, f"s{s}_time", ev, es, res, ev.sec_marks_err, p,
                                     reach))
        if has_work:
            draws = math.ceil(p["work"] / per_step * (1.2 if varies else 1.0))
            ev = inst.yardstick(work_marks=[f * p["work"] for f in fr], series=f"s{s}_work")
            spent, es = _time_evaluation(ev, inst.summarize), _TimedESS()
            sampler = make()
            res = ctx.stream(f"s{s}_work", sampler, after_block=_meter(fam, sampler),
                             draws=max(draws, 1), seconds=p["work_max_seconds"],
                             evaluators=[ev, es], record=False, record_stats=False,
                             rng=ctx.rng("seed", s, "work"),
                             block=max(p["block"], math.ceil(draws / p["work_points"])),
                             summarize=spent.summarize, record_summaries=p["every_draw"])
            spent.record(ctx, f"s{s}_work")
            per_seed["work"].append(_leg(ctx, f"s{s}_work", ev, es, res, ev.work_marks_err,
                                         p, reach))
            per_seed["work"][-1]["capped"] = bool(ev.work < p["work"] and res.draws < draws)
    capped = any(leg["capped"] for leg in per_seed["work"])
    ctx.store.set_result("work/capped", int(capped))
    if capped:   # short of the work budget: no equal-work numbers, ranked by time alone
        ctx.log(f"{label}: an equal-work stream stopped at {p['work_max_seconds']:g} s before "
                f"its budget; ranked by time alone")
        per_seed["work"] = []
    for clock in CLOCKS:
        _aggregate(ctx, clock, per_seed[clock], fr)
    ctx.store.set_result("sampling_seconds", float(sum(
        ctx.store.stream_attrs(n).get("seconds", 0.0) for n in _stream_names(ctx))))
    done = ctx.store.results()
    for what in ("evaluation_seconds", "ess_seconds"):
        ctx.store.set_result(what, float(sum(done.get(f"{what}/{n}", 0.0)
                                             for n in _stream_names(ctx))))
    ctx.store.set_result("ess_fallback", int(sum(done.get(f"ess_method/{n}") == "fallback"
                                                 for n in _stream_names(ctx))))
    legs = per_seed["work"] or per_seed["time"]
    t0 = time.perf_counter()
    flag = bias.verdict(legs) if inst.exact else bias.NO_VERDICT
    for k, v in flag.items():
        ctx.store.set_result(f"bias/{k}", v)
    ctx.store.set_result("bias/clock", "work" if per_seed["work"] else "time")
    said = verdict.decide(per_seed, fr, inst.exact, reach)
    for k, v in said.items():
        ctx.store.set_result(f"verdict/{k}", v)
    ctx.store.set_result("verdict_seconds", time.perf_counter() - t0)
    ctx.log(f"{label} on {tname}: " + ", ".join(
        f"{c} error {ctx.store.results().get(f'{c}/error/median', float('nan')):.4g}"
        for c in CLOCKS) + f"; verdict {said['verdict'] or 'none'}"
        + (f" ({said['note']})" if said["note"] else ""))


class _time_evaluation:  # noqa: N801 - used like a function
    """The seconds one stream spends scoring its draws, outside the sampling clock: the
    yardstick's ``update`` (timed on this instance) and the per-draw ``summarize``."""

    def __init__(self, yardstick, summarize):
        self.seconds = 0.0
        yardstick.update = self._timed(yardstick.update)
        self.summarize = None if summarize is None else self._timed(summarize)

    def _timed(self, fn):
        def call(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0
        return call

    def record(self, ctx, name: str) -> None:
        """``evaluation_seconds/<name>``, unless the stream was complete before this process
        (nothing evaluated here: its earlier value stays)."""
        if self.seconds > 0 or f"evaluation_seconds/{name}" not in ctx.store.results():
            ctx.store.set_result(f"evaluation_seconds/{name}", self.seconds)


def _stream_names(ctx) -> list[str]:
    return ctx.store.stream_names()


def _meter(family: str, sampler) -> cost.WorkMeter:
    """The stream's ``after_block``: each step's work added to its draws, off the clock."""
    return cost.WorkMeter(family, int(sampler.chains))


def _probe(family: str, sampler, rng) -> dict:
    got = cost.probe_cost(family, sampler, rng)
    return {"per_step": np.float64(np.nan if got is None else got[0]),
            "varies": np.int64(0 if got is None else int(got[1]))}


def _leg(ctx, name: str, ev, es, res, marks: list, p: dict, reach: float) -> dict:
    """What one stream contributes: its curves (also written as metrics), the errors at the
    budget marks, the cost to reach the stated error, its smallest ESS, its bias data."""
    xs_sec, xs_work, ys = (np.asarray(a, float) for a in (ev.xs_sec, ev.xs_work, ev.ys))
    if np.all(np.isfinite(xs_work)) and len(xs_work):
        ctx.store.write_metric("error_vs_work", name, xs_work, ys,
                               x_label=f"work ({cost.unit(p['family'])}, all chains)",
                               y_label=ev.y_label)
    hit = np.flatnonzero(ys <= reach)
    ess, ess_method, ess_upper = _min_ess(ctx, name, es, p["every_draw"])
    mcse, mcse_dof = ev.mcse(), math.inf
    if mcse is None:   # too few batches per chain: the spread of independent chains instead
        mcse = ev.chain_mcse()
        mcse_dof = int(ev.chains) - 1
    marks = [float(m) for m in marks]
    if not math.isfinite(marks[-1]):   # a varying cost that fell short of the budget
        marks[-1] = ev.value()
    return {"marks": marks, "reach_seconds": float(xs_sec[hit[0]]) if len(hit) else math.inf,
            "reach_work": float(xs_work[hit[0]]) if len(hit) else math.inf,
            "ess": ess, "ess_method": ess_method, "ess_upper": ess_upper,
            "seconds": float(res.seconds),
            "work": float(ev.work),
            "estimate": ev.estimate(), "truth": ev.truth, "mcse": mcse,
            "batches": _batch_means(ev), "blen": int(getattr(ev, "blen", 1)),
            "mcse_dof": mcse_dof, "n_draws": int(ev.draws) * int(ev.chains)}


def _batch_means(ev) -> np.ndarray | None:
    """The yardstick's full batch means ``(chains, nb, n)`` (None for a yardstick without
    batches: mixlab.league.mixing reads them)."""
    if getattr(ev, "nb", 0) < 1:
        return None
    return ev.batches[:, :ev.nb] / ev.blen


def _min_ess(ctx, name: str, es: _TimedESS, every_draw: bool) -> tuple[float, str, bool]:
    """``(ESS, method, upper)``: the smallest streaming ESS (mixlab.league.ess_stream) over the
    stream's per-draw summaries (NaN, method "none", without any, or with fewer than 4 draws),
    stored as ``ess/<name>`` with its method (``ess_method/<name>``) and whether it is only an
    upper bound (``ess_upper/<name>``, 0 or 1); the thinned record
    written (unless the stream keeps every draw's summaries); ``ess_seconds/<name>`` the
    estimator's seconds in this process."""
    t0 = time.perf_counter()
    est = es.estimates()
    if est and not every_draw:
        ctx.store.write_summary_record(name, es.record(), es.stride, es.n,
                                       {k: {"ess_stream": v["ess"], "mcse_stream": v["mcse"],
                                            "ess_method": v["method"]}
                                        for k, v in est.items()})
    if es.seconds > 0 or f"ess_seconds/{name}" not in ctx.store.results():
        # not for a stream complete before this process: its earlier value stays
        ctx.store.set_result(f"ess_seconds/{name}", es.seconds + time.perf_counter() - t0)
    finite = {k: v for k, v in est.items() if math.isfinite(v["ess"])}
    if not finite:
        ctx.store.set_result(f"ess_method/{name}", "none")
        return float("nan"), "none", False
    low = min(finite, key=lambda k: finite[k]["ess"])
    ctx.store.set_result(f"ess/{name}", finite[low]["ess"])
    ctx.store.set_result(f"ess_method/{name}", finite[low]["method"])
    ctx.store.set_result(f"ess_upper/{name}", int(finite[low]["upper"]))
    return float(finite[low]["ess"]), str(finite[low]["method"]), bool(finite[low]["upper"])


class _TimedESS(StreamingESS):
    """The streaming ESS with the seconds its updates take in this process (``seconds``)."""

    def __init__(self):
        super().__init__()
        self.seconds = 0.0

    def update(self, draws: dict, count: int, seconds: float) -> None:
        t0 = time.perf_counter()
        try:
            super().update(draws, count, seconds)
        finally:
            self.seconds += time.perf_counter() - t0


def _spread(values) -> tuple[float, float, float]:
    v = np.asarray(values, float)
    if not len(v):
        return (math.nan,) * 3
    with np.errstate(invalid="ignore"):
        return float(np.median(v)), float(np.min(v)), float(np.max(v))


def _aggregate(ctx, clock: str, legs: list[dict], fractions: list[float]) -> None:
    """Median and range over seeds of every number of the clock's streams."""
    if not legs:
        return
    put = ctx.store.set_result
    for i, f in enumerate(fractions):
        med, lo, hi = _spread([leg["marks"][i] for leg in legs])
        key = "error" if f == fractions[-1] else f"error@{f:g}"
        for stat, v in (("median", med), ("min", lo), ("max", hi)):
            put(f"{clock}/{key}/{stat}", v)
            if key == "error":
                put(f"{clock}/error@{f:g}/{stat}", v)
    for k in ("reach_seconds", "reach_work"):
        put(f"{clock}/{k}/median", _spread([leg[k] for leg in legs])[0])
    put(f"{clock}/seconds/median", _spread([leg["seconds"] for leg in legs])[0])
    put(f"{clock}/work/median", _spread([leg["work"] for leg in legs])[0])
    ess = [leg["ess"] for leg in legs]
    # one seed's ESS only an upper bound: the median over seeds is only one too
    put(f"{clock}/ess_upper", int(any(leg.get("ess_upper") for leg in legs)))
    if clock == "time":
        put("time/ess_per_s/median", _spread([e / leg["seconds"] for e, leg in
                                              zip(ess, legs)])[0])
    else:
        put("work/ess_per_munit/median", _spread([1e6 * e / leg["work"] for e, leg in
                                                  zip(ess, legs)])[0])
