"""Figure 1 left and middle of Hazan, Maji & Jaakkola (NIPS 2013) as mixlab experiments.

- ``perturb_map.logz_vs_coupling`` (figure ``perturb_map.fig1_left``): for each coupling strength
  c, ``models`` random R x C attractive grids (``θ_i ~ U[-field, field]``, ``θ_ij ~ U[0, c]``);
  every estimator's signed error ``estimate - log Z`` against the exact frontier log Z. Series:
  Gumbel upper bound, expected lower bound (Corollary 1), probable lower bound (Corollary 2 with
  ``copies`` copies, exact copy-model MAP, discrepancy ignored), and the variational baselines of
  :mod:`mixlab.spinglass.variational` (structured mean field, NTRW, BP, TRW, mean field) when
  that module is present. One coupling point is one ``ctx.once`` stage (resumable).
- ``perturb_map.logz_of_models`` (figure ``perturb_map.logz_of_models``): the same estimators
  on a list of the user's model files (``models: [a.npz, b.npz]``, any coupling signs where the
  MAP solvers allow), against the exact log Z when the grid is narrow enough. One file is one
  ``ctx.once`` stage.
- ``perturb_map.sampler_complexity`` (figure ``perturb_map.fig1_middle``): for each grid side,
  ``U - log Z`` (the log of the expected number of passes of Algorithm 1, exact log Z when the
  grid is narrow enough), ``U - probable LB`` (the paper's proxy for large grids), and on small
  grids the measured passes of the unbiased sampler. One side is one ``ctx.once`` stage.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from ..plugins.registry import experiment
from ..spec.schema import Param
from . import checks, exact
from .bounds import expected_lower_bound, probable_lower_bound, upper_bound
from .model import random_spin_glass
from .perturb import UnbiasedSampler

BASELINES = ("structured_mean_field", "ntrw", "bethe_bp", "trw", "mean_field")
LABELS = {"upper": "upper bound U", "expected_lb": "expected LB (Cor. 1)",
          "probable_lb": "probable LB (Cor. 2)", "structured_mean_field": "structured mean field",
          "ntrw": "NTRW", "bethe_bp": "BP (Bethe)", "trw": "TRW", "mean_field": "mean field"}


def _baselines(names):
    """{name: fn} for the baselines importable from .variational; missing ones are skipped."""
    try:
        from . import variational
    except ImportError:
        return {}
    return {n: getattr(variational, n) for n in names if hasattr(variational, n)}


LOGZ_SCHEMA = {
    "grid": {"rows": Param(10, int, lo=1), "cols": Param(10, int, lo=1, hi=exact.MAX_WIDTH)},
    "field": Param(1.0, float, lo=0, help="fields θ_i ~ U[-field, field]"),
    "couplings": Param([0.5, 1.0, 2.0, 3.0], list, item=float, lo=0, min_len=1,
                       help="coupling strengths c (θ_ij ~ U[0, c])"),
    "models": Param(3, int, lo=2, help="random models per coupling (s.e. over models)"),
    "perturbations": Param(20, int, lo=2, help="perturbed MAPs per model for U and expected LB"),
    "copies": Param(10_000, int, lo=1, hi=100_000,
                    help="copies per variable m for the probable LB (the paper: 10^4); the "
                         "copy-model MAP is certified by a dual bound, memory ~ 32 n m bytes"),
    "probable_draws": Param(3, int, lo=1,
                            help="independent perturbation draws per model for the probable LB "
                                 "(value = their mean, with its standard error)"),
    "baselines": Param(list(BASELINES), list, item=str, choices=BASELINES,
                       help="variational baselines to include"),
}


def _store_max_gap(ctx, points: list[dict]) -> None:
    """Result ``probable_lb_max_gap``: the largest certified gap (upper end - value) of any
    probable-bound MAP over the points' ``gap_probable_lb`` arrays."""
    gap = max(float(np.max(r["gap_probable_lb"])) for r in points)
    ctx.store.set_result("probable_lb_max_gap", max(0.0, gap))


@experiment("perturb_map.logz_vs_coupling", schema=LOGZ_SCHEMA,
            help="Fig 1 left: log Z error of Gumbel bounds and variational baselines vs coupling")
def run_logz_vs_coupling(ctx) -> None:
    p = ctx.params
    R, C = p["grid"]["rows"], p["grid"]["cols"]
    base = _baselines(p["baselines"])
    missing = sorted(set(p["baselines"]) - set(base))
    if missing:
        ctx.log(f"baselines not available (mixlab.spinglass.variational): {', '.join(missing)}")
    series = ["upper", "expected_lb", "probable_lb"] + [b for b in p["baselines"] if b in base]
    couplings = np.asarray(p["couplings"], dtype=np.float64)
    stages = []
    for ci, c in enumerate(couplings):
        def point(ci=ci, c=c):
            out = {k: np.empty(p["models"]) for k in ["logz"] + series}
            out.update({f"se_{k}": np.empty(p["models"])
                        for k in ("upper", "expected_lb", "probable_lb")})
            out["seconds_probable_lb"] = np.empty(p["models"])
            out["gap_probable_lb"] = np.empty(p["models"])
            for mi in range(p["models"]):
                model = random_spin_glass(R, C, p["field"], float(c), rng=ctx.rng("model", ci, mi))
                out["logz"][mi] = exact.log_partition(model)
                u = upper_bound(model, p["perturbations"], ctx.rng("upper", ci, mi))
                e = expected_lower_bound(model, p["perturbations"], ctx.rng("elb", ci, mi))
                t0 = time.perf_counter()
                pl = probable_lower_bound(model, p["copies"], ctx.rng("plb", ci, mi),
                                          draws=p["probable_draws"])
                out["seconds_probable_lb"][mi] = (time.perf_counter() - t0) / p["probable_draws"]
                out["upper"][mi], out["se_upper"][mi] = u.value, u.se
                out["expected_lb"][mi], out["se_expected_lb"][mi] = e.value, e.se
                out["probable_lb"][mi], out["gap_probable_lb"][mi] = pl.value, pl.gap
                out["se_probable_lb"][mi] = pl.se
                out["discrepancy"] = pl.discrepancy
                for name, fn in base.items():
                    if name in out:
                        out[name][mi] = float(fn(model))
            return out
        stages.append((f"coupling_{ci}", point))
    results = ctx.once_each(stages)             # the couplings are independent (mixlab run -j)
    for c, r in zip(couplings, results):
        ctx.log(f"coupling {c:g}: " + ", ".join(
            f"{k} {np.mean(r[k] - r['logz']):+.3f}" for k in series))
    for k in series:
        err = np.array([r[k] - r["logz"] for r in results])          # (couplings, models)
        se = err.std(axis=1, ddof=1) / math.sqrt(err.shape[1])
        ctx.store.write_metric("logz_error", k, couplings, err.mean(axis=1), yerr=se,
                               x_label="coupling strength c", y_label="estimate - log Z (nats)",
                               label=LABELS[k])
        ctx.store.write_array(f"logz_error/{k}", err)
        ctx.store.set_result(f"mean_error/{k}", float(err.mean()))
    ctx.store.write_array("logz", np.array([r["logz"] for r in results]))
    ctx.store.set_result("copies", p["copies"])
    _store_max_gap(ctx, results)
    ctx.store.set_result("probable_draws", p["probable_draws"])
    ctx.store.write_array("probable_lb_seconds",
                          np.array([r["seconds_probable_lb"] for r in results]))
    for k in ("upper", "expected_lb", "probable_lb"):     # (couplings, models): s.e. over draws
        ctx.store.write_array(f"se_over_draws/{k}", np.array([r[f"se_{k}"] for r in results]))
    ctx.store.set_result("corollary2_discrepancy", float(results[0]["discrepancy"]))
    viol = np.array([r["upper"] - r["logz"] for r in results])
    ctx.store.set_result("upper_below_logz_3se",
                         int(np.sum(viol < -3 * np.array([r["se_upper"] for r in results]))))
    ctx.store.set_result("missing_baselines", ",".join(missing))


FILES_SCHEMA = {
    "models": Param(type=list, item=str, min_len=1,
                    help="spin glass .npz files (arrays field, right, down; "
                         "mixlab.spinglass.save_npz); relative paths from the working directory"),
    "perturbations": LOGZ_SCHEMA["perturbations"],
    "copies": Param(1000, int, lo=1, hi=100_000,
                    help="copies per variable m for the probable LB (the paper: 10^4)"),
    "probable_draws": LOGZ_SCHEMA["probable_draws"],
    "baselines": LOGZ_SCHEMA["baselines"],
}


@experiment("perturb_map.logz_of_models", schema=FILES_SCHEMA, check=checks.logz_of_models,
            help="log Z bounds and variational estimates on your own spin glass files")
def run_logz_of_models(ctx) -> None:
    from ..errors import MixlabError, SpecError
    from .target import coupling_signs, exact_reference, load_user_model

    p = ctx.params
    base = _baselines(p["baselines"])
    series = ["upper", "expected_lb", "probable_lb"] + [b for b in p["baselines"] if b in base]
    models = [load_user_model(f, f"models[{i}]") for i, f in enumerate(p["models"])]
    labels = [Path(f).stem for f in p["models"]]   # distinct (checked at start)
    rows = []
    for i, (model, label) in enumerate(zip(models, labels)):
        def point(i=i, model=model):
            ref = exact_reference(model)
            out = {"logz": np.nan if ref is None else ref["log_z"]}
            try:
                u = upper_bound(model, p["perturbations"], ctx.rng("upper", i))
                e = expected_lower_bound(model, p["perturbations"], ctx.rng("elb", i))
                pl = probable_lower_bound(model, p["copies"], ctx.rng("plb", i),
                                          draws=p["probable_draws"])
            except MixlabError as exc:
                raise SpecError(f"{p['models'][i]}: {exc}", f"models[{i}]") from None
            out.update(upper=u.value, se_upper=u.se, expected_lb=e.value, se_expected_lb=e.se,
                       probable_lb=pl.value, se_probable_lb=pl.se, gap_probable_lb=pl.gap)
            for name, fn in base.items():
                out[name] = float(fn(model))
            return out
        rows.append(ctx.once(f"model_{i}", point))
        r = rows[-1]
        ctx.store.set_result(f"model/{label}", f"{model.rows}x{model.cols}, "
                                                f"{coupling_signs(model)}")
        if np.isfinite(r["logz"]):
            ctx.store.set_result(f"log_z_exact/{label}", float(r["logz"]))
        for k in series:
            ctx.store.set_result(f"{k}/{label}", float(r[k]))
        ctx.log(f"{label}: " + ", ".join(f"{k} {float(r[k]):.4g}" for k in ["logz"] + series))
    x = np.arange(len(models), dtype=np.float64)
    have_exact = all(np.isfinite(r["logz"]) for r in rows)
    ctx.store.set_result("reference", "exact log Z by the frontier transfer matrix"
                         if have_exact else "exact log Z where the grid's narrow side is at "
                         "most 22; elsewhere none (the values are the estimates themselves)")
    ctx.store.set_result("model_labels", ",".join(labels))
    for k in series:
        y = np.array([float(r[k]) - (float(r["logz"]) if np.isfinite(r["logz"]) else 0.0)
                      for r in rows])
        ctx.store.write_metric("logz_of_models", k, x, y, x_label="model file",
                               y_label="estimate - log Z (nats)" if have_exact
                               else "estimate (nats; minus log Z where known)", label=LABELS[k])
    _store_max_gap(ctx, [{"gap_probable_lb": np.array([r["gap_probable_lb"]])} for r in rows])
    ctx.store.set_result("copies", p["copies"])


COMPLEXITY_SCHEMA = {
    "sides": Param([2, 3, 4, 6, 8, 10], list, item=int, lo=1, min_len=1,
                   help="square grid sides"),
    "field": Param(1.0, float, lo=0),
    "coupling": Param(1.0, float, lo=0),
    "models": Param(3, int, lo=1),
    "perturbations": Param(50, int, lo=2, help="perturbed MAPs for U"),
    "copies": Param(10_000, int, lo=1, hi=100_000,
                    help="copies per variable m for the probable LB (the paper: 10^4)"),
    "measure": {"max_side": Param(3, int, lo=0, help="run the unbiased sampler up to this side"),
                "samples": Param(20, int, lo=1, help="accepted samples per model"),
                "perturbations": Param(50, int, lo=2, help="M per V estimate in the sampler")},
}


@experiment("perturb_map.sampler_complexity", schema=COMPLEXITY_SCHEMA,
            help="Fig 1 middle: expected restarts of the unbiased sampler vs grid size")
def run_sampler_complexity(ctx) -> None:
    p = ctx.params
    sides = np.asarray(p["sides"], dtype=np.int64)
    stages = []
    for si, L in enumerate(sides):
        L = int(L)

        def point(si=si, L=L):
            M = p["models"]
            out = {k: np.full(M, np.nan) for k in ("upper", "se_upper", "logz", "probable_lb",
                                                   "gap_probable_lb", "measured_passes",
                                                   "violation_rate", "sampler_seconds")}
            for mi in range(M):
                model = random_spin_glass(L, L, p["field"], p["coupling"],
                                          rng=ctx.rng("model", si, mi))
                u = upper_bound(model, p["perturbations"], ctx.rng("upper", si, mi))
                out["upper"][mi], out["se_upper"][mi] = u.value, u.se
                if L <= exact.MAX_WIDTH - 6:
                    out["logz"][mi] = exact.log_partition(model)
                pl = probable_lower_bound(model, p["copies"], ctx.rng("plb", si, mi))
                out["probable_lb"][mi], out["gap_probable_lb"][mi] = pl.value, pl.gap
                if L <= p["measure"]["max_side"]:
                    s = UnbiasedSampler(model, chains=p["measure"]["samples"],
                                        perturbations=p["measure"]["perturbations"])
                    rng = ctx.rng("sampler", si, mi)
                    t0 = time.perf_counter()
                    _, _, stats = s.step(s.init(rng), rng)
                    out["sampler_seconds"][mi] = time.perf_counter() - t0
                    out["measured_passes"][mi] = 1.0 + stats["restarts"].mean()
                    out["violation_rate"][mi] = stats["violations"].sum() / (
                        (stats["restarts"].sum() + len(stats["restarts"])) * L * L)
            return out
        stages.append((f"side_{si}", point))
    rows = ctx.once_each(stages)                # the sides are independent (mixlab run -j)
    for L, r in zip(sides, rows):
        measured = r["measured_passes"][np.isfinite(r["measured_passes"])]
        gap_exact = (r["upper"] - r["logz"])[np.isfinite(r["logz"])]   # empty past the exact width
        ctx.log(f"side {L}: U-logZ "
                + (f"{gap_exact.mean():.3f}" if gap_exact.size else "(no exact log Z)")
                + f", U-PLB {np.mean(r['upper'] - r['probable_lb']):.3f}, measured passes "
                + (f"{measured.mean():.3g}" if measured.size else "not measured"))

    def curve(name, vals, label):
        vals = np.asarray(vals)
        ok = np.all(np.isfinite(vals), axis=1)
        if not ok.any():
            return
        y = vals[ok].mean(axis=1)
        se = vals[ok].std(axis=1, ddof=1) / math.sqrt(vals.shape[1]) if vals.shape[1] > 1 else None
        ctx.store.write_metric("log_passes", name, sides[ok] ** 2, y, yerr=se,
                               x_label="number of spins n", y_label="log expected passes",
                               label=label)

    curve("U-logZ", [r["upper"] - r["logz"] for r in rows], "U − log Z (exact)")
    curve("U-probable_lb", [r["upper"] - r["probable_lb"] for r in rows],
          f"U − probable LB (m={p['copies']})")
    curve("measured", [np.log(r["measured_passes"]) for r in rows],
          "log measured passes (Algorithm 1)")
    ctx.store.set_result("copies", p["copies"])
    _store_max_gap(ctx, rows)
    ctx.store.set_result("coupling", p["coupling"])
    vr = np.concatenate([r["violation_rate"] for r in rows])
    if np.isfinite(vr).any():
        ctx.store.set_result("violation_rate", float(np.nanmean(vr)))


