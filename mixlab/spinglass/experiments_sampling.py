"""Perturb-and-MAP vs MCMC on single-site marginals (Fig 1 right of Hazan, Maji & Jaakkola 2013).

Experiment kinds (specs in ``experiments/perturb_map/``):

- ``perturb_map.marginals_vs_coupling`` (figure ``perturb_map.fig1_right``): for each coupling
  strength c, ``models`` random R x C attractive grids at high field (``θ_i ~ U[-field, field]``
  with field = 1, the paper's §6 setting; ``θ_ij ~ U[0, c]``). Every sampler estimates the
  single-site marginals; the error is ``mean_i |P̂(x_i=+1) - P(x_i=+1)|`` against the exact
  marginals (frontier transfer matrix, :func:`mixlab.spinglass.exact.marginals`). One coupling
  point is one ``ctx.once`` stage, so an interrupted run resumes at the next point.
- ``perturb_map.marginal_vs_time`` (figure ``perturb_map.marginal_vs_time``): one hard model
  (c = 3 by default); every sampler runs as a resumable ``ctx.stream`` under the same wall-clock
  budget, feeding :class:`~mixlab.spinglass.mcmc.MarginalError` (error vs seconds and vs site
  updates).

Budget convention (the paper says only "at most 1e8 iterations" for the MCMC samplers). MCMC:
``mcmc.updates`` site updates per model in total over ``mcmc.chains`` chains (one sweep = R*C
site updates per chain; Swendsen-Wang: one cluster update of all spins counts as one sweep;
replica exchange: the sweeps of its K replicas, K*R*C: each step is charged the sampler's
``site_updates``), the first ``mcmc.burn_in`` fraction of every chain discarded. Perturb-and-MAP: ``perturb.samples``
independent perturbed MAP solutions, reported also as "site-update equivalents" counting one MAP
solution as one sweep (R*C updates) -- a convention of ours, far cheaper than the real cost of a
graph cut or an exact max-product; the wall-clock seconds of every method are stored next to
the errors so the comparison can also be read at equal time.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..errors import SpecError
from ..plugins import registry
from ..plugins.registry import experiment
from ..spec.schema import MapOf, Param, SamplerEntry
from . import checks
from .evaluators import MarginalError
from .exact import marginals as exact_marginals
from .model import SpinGlass, random_spin_glass
from .samplers import PERTURB_AND_MAP
from .summaries import summarizer
from .target import MODEL_SCHEMA, SpinGlassTarget, coupling_signs, load_user_model, require_exact

PM_METHODS = PERTURB_AND_MAP
METHODS = PM_METHODS + ("gibbs", "metropolis", "swendsen_wang")
LABELS = {"local": "perturb-MAP (local)", "pairwise": "perturb-MAP (pairwise)",
          "gibbs": "Gibbs", "metropolis": "Metropolis", "swendsen_wang": "Swendsen-Wang"}
COLORS = {"local": "C0", "pairwise": "C1", "gibbs": "C2", "metropolis": "C3",
          "swendsen_wang": "C4"}
#: the papers' five samplers, each under its own name (the specs' default)
DEFAULT_SAMPLERS = {m: {"method": m} for m in METHODS}


def samplers_schema():
    return MapOf(SamplerEntry("spinglass"), default=DEFAULT_SAMPLERS, min_len=1,
                 help="label -> {method: a registered spinglass sampler, its own keys}; "
                      "perturb-and-MAP samplers (local, pairwise) get the perturb budget and "
                      "chains, every other sampler the mcmc ones")


def is_perturb_and_map(entry: dict) -> bool:
    return entry["method"] in PM_METHODS


def build_sampler(label: str, entry: dict, model: SpinGlass, chains: int, init: str):
    """The registered sampler of ``entry`` for ``model``; a factory's SpecError or ValueError is
    re-keyed to ``samplers.<label>``."""
    kind = registry.get_sampler("spinglass", entry["method"], f"samplers.{label}.method")
    params = {k: v for k, v in entry.items() if k != "method"}
    try:
        return kind.factory(SpinGlassTarget.of(model, init), params, chains)
    except SpecError as exc:
        msg = str(exc).removeprefix(f"spec key '{exc.key}': ") if exc.key else str(exc)
        raise SpecError(msg, f"samplers.{label}" + (f".{exc.key}" if exc.key else "")) from None
    except ValueError as exc:
        raise SpecError(f"{entry['method']}: {exc}", f"samplers.{label}") from None


def series_style(label: str, entry: dict | None, k: int) -> tuple[str, str]:
    """(legend label, colour) of a series: the papers' samplers keep theirs."""
    method = (entry or {}).get("method", label)
    if label == method and method in LABELS:
        return LABELS[method], COLORS[method]
    return (label if label == method else f"{label} ({method})"), f"C{5 + k % 5}"


GRID = {"rows": Param(10, int, lo=1, help="grid rows"),
        "cols": Param(10, int, lo=1, help="grid columns")}
MCMC = {
    "updates": Param(1_000_000, int, lo=1, help="site updates per model, total over all chains "
                                                "(paper: 1e8)"),
    "chains": Param(10, int, lo=1, help="independent chains per MCMC sampler"),
    "burn_in": Param(0.1, float, lo=0, hi=1, hi_open=True,
                     help="fraction of each chain's sweeps discarded before estimating"),
    "init": Param("random", str, choices=("random", "plus", "minus"), help="initial spins"),
}
PERTURB = {
    "samples": Param(200, int, lo=1, help="perturbed MAP samples per model"),
    "chains": Param(50, int, lo=1, help="MAP problems solved per sampler step (batch)"),
}

SCHEMA_COUPLING = {
    "grid": GRID,
    "field": Param(1.0, float, lo=0, help="high signal: θ_i ~ U[-field, field]; the paper "
                                          "(§6) uses field 1"),
    "couplings": Param([0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0], list, item=float, lo=0, min_len=1,
                       help="coupling strengths c: θ_ij ~ U[0, c] (U[-c, c] when mixed)"),
    "mixed": Param(False, bool, help="mixed-sign couplings (pairwise MAP then needs "
                                     "max-product)"),
    "models": Param(2, int, lo=1, help="random models per coupling (errors are averaged)"),
    "samplers": samplers_schema(),
    "mcmc": MCMC,
    "perturb": PERTURB,
}


def step_updates(s, n: int) -> float:
    """Site updates one step of sampler ``s`` costs per chain: its ``site_updates_per_step``
    when it declares one (replica exchange: K sweeps, K*n), else one sweep, ``n``. Declared,
    not probed, so a plugin's step runs only inside its stream (where a failure is reported
    with the stream and step)."""
    return float(getattr(s, "site_updates_per_step", n))


def _run_mcmc(s, model, p, rng):
    """Marginal estimate of an MCMC sampler ``s`` (``p["chains"]`` chains) under the update
    budget, each step charged its ``site_updates`` (:func:`step_updates`): (P̂ (R, C), seconds,
    site updates used)."""
    chains = p["chains"]
    per_step = step_updates(s, model.n)
    sweeps = max(1, math.ceil(p["updates"] / (chains * per_step)))
    burn = int(p["burn_in"] * sweeps)
    t0 = time.perf_counter()
    st = s.init(rng)
    acc = np.zeros(model.shape)
    for i in range(sweeps):
        st, d, _ = s.step(st, rng)
        if i >= burn:
            acc += d["samples"].sum(axis=0)
    secs = time.perf_counter() - t0
    return acc / (chains * (sweeps - burn)), secs, sweeps * chains * per_step


def _run_pm(s, model, p, rng):
    steps = math.ceil(p["samples"] / p["chains"])
    t0 = time.perf_counter()
    st = s.init(rng)
    acc = np.zeros(model.shape)
    for _ in range(steps):
        st, d, _ = s.step(st, rng)
        acc += np.asarray(d["samples"]).sum(axis=0)
    secs = time.perf_counter() - t0
    k = steps * p["chains"]
    return acc / k, secs, k * model.n


@experiment("perturb_map.marginals_vs_coupling", schema=SCHEMA_COUPLING,
            check=checks.marginals_vs_coupling,
            help="Fig 1 right: single-site marginal error vs coupling, perturb-and-MAP vs MCMC")
def run_marginals_vs_coupling(ctx) -> None:
    p = ctx.params
    R, C = p["grid"]["rows"], p["grid"]["cols"]
    entries = p["samplers"]
    methods = list(entries)
    cs = [float(c) for c in p["couplings"]]
    K = p["models"]
    err = {m: np.zeros((len(cs), K)) for m in methods}
    secs = {m: np.zeros((len(cs), K)) for m in methods}
    upd = {m: np.zeros((len(cs), K)) for m in methods}
    stages = []
    for ci, c in enumerate(cs):
        def point(ci=ci, c=c):
            out = {f"{m}.{q}": np.zeros(K) for m in methods for q in ("error", "seconds",
                                                                      "updates")}
            for k in range(K):
                model = random_spin_glass(R, C, p["field"], c, p["mixed"],
                                          ctx.rng("model", ci, k))
                truth = exact_marginals(model)
                for m in methods:
                    rng = ctx.rng("sample", m, ci, k)
                    pm = is_perturb_and_map(entries[m])
                    budget = p["perturb"] if pm else p["mcmc"]
                    s = build_sampler(m, entries[m], model, budget["chains"], p["mcmc"]["init"])
                    est, sec, u = (_run_pm if pm else _run_mcmc)(s, model, budget, rng)
                    out[f"{m}.error"][k] = np.mean(np.abs(est - truth))
                    out[f"{m}.seconds"][k] = sec
                    out[f"{m}.updates"][k] = u
            return out
        stages.append((f"coupling_{ci}", point))
    # the couplings are independent (mixlab run -j)
    for ci, (c, vals) in enumerate(zip(cs, ctx.once_each(stages))):
        for m in methods:
            err[m][ci] = vals[f"{m}.error"]
            secs[m][ci] = vals[f"{m}.seconds"]
            upd[m][ci] = vals[f"{m}.updates"]
        ctx.log(f"c={c:g}: " + ", ".join(f"{m} {err[m][ci].mean():.4f}" for m in methods))
    x = np.asarray(cs)
    for m in methods:
        ctx.store.write_metric("marginal_error", m, x, err[m].mean(axis=1),
                               err[m].std(axis=1, ddof=1) / math.sqrt(K) if K > 1 else None,
                               x_label="coupling c", y_label="mean |marginal error|",
                               seconds=secs[m].mean(axis=1), updates=upd[m].mean(axis=1))
        ctx.store.write_array(f"errors/{m}", err[m], units="mean |P̂-P| per (coupling, model)")
        ctx.store.write_array(f"seconds/{m}", secs[m], units="seconds per (coupling, model)")
        ctx.store.set_result(f"mean_error/{m}", float(err[m].mean()))
        ctx.store.set_result(f"seconds_per_model/{m}", float(secs[m].mean()))
        ctx.store.set_result(f"updates_per_model/{m}", float(upd[m].mean()))


# ---------------------------------------------------------------------------------------------
# Marginal error vs wall-clock time on one hard model
# ---------------------------------------------------------------------------------------------

SCHEMA_TIME = {
    "model": MODEL_SCHEMA,
    "grid": GRID,
    "field": Param(1.0, float, lo=0, help="θ_i ~ U[-field, field] (paper: 1)"),
    "coupling": Param(3.0, float, lo=0, help="θ_ij ~ U[0, c]; c = 3 is the hard end of Fig 1"),
    "mixed": Param(False, bool, help="mixed-sign couplings"),
    "samplers": samplers_schema(),
    "seconds": Param(10.0, float, lo=0, lo_open=True,
                     help="wall-clock sampling budget per sampler"),
    "mcmc": {k: v for k, v in MCMC.items() if k not in ("updates", "burn_in")},
    "perturb": {"chains": PERTURB["chains"]},
    "block": Param(None, int, lo=1, nullable=True,
                   help="draws per stream block (evaluator and checkpoint granularity); null: "
                        "the runner's default"),
}


@experiment("perturb_map.marginal_vs_time", schema=SCHEMA_TIME, check=checks.marginal_vs_time,
            adapt=checks.adapt_marginal_vs_time,
            help="marginal error vs wall-clock seconds for every sampler on one hard model")
def run_marginal_vs_time(ctx) -> None:
    p = ctx.params
    user_file = p["model"]["file"]
    if user_file is not None:
        model = load_user_model(user_file)
        ref = require_exact(model, "marginal_vs_time", "model.file")
        st = {"field": model.field, "right": model.right, "down": model.down,
              "marginals": ref["marginals"], "log_z": ref["log_z"]}
        ctx.store.set_result("model/file", str(user_file))
        ctx.store.set_result("model/file_sha256", _sha256(user_file))
    else:
        st = ctx.once("model", lambda: _model_stage(ctx, p))
    model = SpinGlass(st["field"], st["right"], st["down"])
    if "log_z" not in st:      # a model stage cached before log Z was recorded
        st["log_z"] = require_exact(model, "marginal_vs_time", "grid")["log_z"]
    truth = st["marginals"]
    ctx.store.write_array("exact_marginals", truth, units="P(x=+1), exact (transfer matrix)")
    ctx.store.set_result("log_z_exact", float(st["log_z"]))
    ctx.store.set_result("reference", "exact marginals and log Z by the frontier transfer "
                                      "matrix")
    ctx.store.set_result("model/shape", f"{model.rows}x{model.cols}")
    ctx.store.set_result("model/couplings", coupling_signs(model))
    ctx.log(f"model {model.rows}x{model.cols}, {coupling_signs(model)}, exact log Z "
            f"{st['log_z']:.6g}")
    n = model.n
    summarize = summarizer(model)
    streams = {}
    with ctx.parallel():                        # the samplers are independent (mixlab run -j)
        for m, entry in p["samplers"].items():
            chains = (p["perturb"]["chains"] if is_perturb_and_map(entry)
                      else p["mcmc"]["chains"])
            sampler = build_sampler(m, entry, model, chains, p["mcmc"]["init"])
            evs = [MarginalError(truth, metric="error_vs_seconds", series=m, x="seconds"),
                   MarginalError(truth, metric="error_vs_updates", series=m, x="updates",
                                 updates_per_draw=step_updates(sampler, n))]
            streams[m] = evs, ctx.stream(m, sampler, seconds=p["seconds"], evaluators=evs,
                                         record=False, rng=ctx.rng("sample", m),
                                         block=p["block"], summarize=summarize)
    for m, (evs, res) in streams.items():
        ctx.store.set_result(f"final_error/{m}", evs[0].value())
        ctx.store.set_result(f"draws_per_chain/{m}", int(res.draws))
        ctx.store.set_result(f"seconds/{m}", float(res.seconds))


def _model_stage(ctx, p) -> dict:
    m = random_spin_glass(p["grid"]["rows"], p["grid"]["cols"], p["field"], p["coupling"],
                          p["mixed"], ctx.rng("model"))
    ref = require_exact(m, "marginal_vs_time", "grid")
    return {"field": m.field, "right": m.right, "down": m.down, "marginals": ref["marginals"],
            "log_z": ref["log_z"]}


def _sha256(path: str) -> str:
    import hashlib

    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


