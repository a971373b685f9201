"""Rates-FPCD experiment kinds (Breuleux, Bengio & Vincent 2011): spec schemas and ``run(ctx)``.

Experiment kinds (specs in ``experiments/rates_fpcd/``; figures in :mod:`mixlab.rbm.figures`):

- ``rates_fpcd.isl``: train an RBM (cached stage), run several samplers on it, feed every stream
  to a streaming ISL evaluator (validation-chosen bandwidth), draw the training-set line, store
  final ISL values and the coverage speed-up against a reference sampler.  Figures 2 and 3.
- ``rates_fpcd.sequences``: the same machinery, storing consecutive samples of one chain per
  sampler for Figure 1 (ISL optional).
- ``rates_fpcd.sample``: the same, for ``mixlab sample`` (one sampler, ISL off).
- ``rates_fpcd.bias``: an extra figure the paper lacks — the test log-likelihood of the
  sampler's effective parameters θ⁻ = θ + θ_F as sampling proceeds (exact log Z for small
  models, AIS with error bars otherwise).

Samplers are looked up in the ``rbm`` family of the sampler registry (:mod:`mixlab.rbm.samplers`
registers the built-in ones; a plugin's appear as more series); each gets
``ctx.rng("sample", label)``.  Every stream records the per-draw summaries of
:mod:`mixlab.rbm.summaries` for mixing diagnostics.
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecError
from ..plugins import registry
from ..plugins.registry import experiment
from ..spec.schema import MapOf, Param, SamplerEntry
from . import evaluators as ev_mod
from . import isl as isl_mod
from . import samplers as _builtin_samplers  # noqa: F401  (registers the built-in samplers)
from .checks import adapt, check_bias, check_isl
from .model import RBM
from .summaries import summarizer
from .target import INIT_CHOICES, data_schema, prepare, train_schema

# keys every sampler entry of an RBM experiment takes besides ``method`` (each sampler's own
# keys come from its registration)
COMMON_SAMPLER_KEYS: dict = {}

COMMON = {
    "data": data_schema(),
    "train": train_schema(),
    "model_file": Param(None, str, nullable=True,
                        help="use this trained RBM (the model file of 'mixlab train', or its "
                             "run directory) instead of training one"),
    "samplers": MapOf(SamplerEntry("rbm", common=COMMON_SAMPLER_KEYS), min_len=1,
                      help="label -> sampler settings ({method: <registered rbm sampler>, ...})"),
    "chains": Param(1, int, lo=1, help="chains per sampler (samples are counted over all)"),
    "init": Param("data", str, choices=INIT_CHOICES,
                  help="initial visible state: a random training example or uniform noise"),
    "budget": {"draws": Param(10000, int, lo=1, help="emitted draws per chain")},
    "block": Param(None, int, lo=1, nullable=True, help="draws per runner block"),
    "record": Param(["samples"], list, item=str, choices=("samples", "means"),
                    help="draw keys stored in the run file"),
    "note": Param("", str, help="text shown on the figure (e.g. a data substitution)"),
}

ISL_SCHEMA = {
    "enabled": Param(True, bool, help="compute ISL curves"),
    "centres": Param("means", str, choices=("means", "samples"),
                     help="kernel centres: E[x|h] (grayscale, as in the paper) or binary x "
                          "(samplers without means, e.g. rates-herding, always use binary x)"),
    "points": Param(30, int, lo=2, help="log-spaced sample counts recorded"),
    "bandwidths": Param(None, list, item=float, lo=0.5, hi=1, lo_open=True, hi_open=True,
                        nullable=True, help="candidate β (default: 20 logit-spaced in "
                                            "[0.55, 0.9999])"),
    "select": Param("per-point", str, choices=("per-point", "final"),
                    help="β chosen on validation at each recorded count, or at the last"),
    "test_max": Param(None, int, lo=2, nullable=True,
                      help="use the first n test examples (the paper: 2000 on MNIST)"),
    "valid_max": Param(None, int, lo=2, nullable=True, help="use the first n validation examples"),
    "train_set_baseline": Param(True, bool, help="ISL of the training set as centres"),
    "reference": Param(None, str, nullable=True,
                       help="label of the reference sampler (Gibbs) for coverage speed-ups"),
    "speedup_at": Param([], list, item=int, lo=1,
                        help="sample counts at which speed-ups are also reported (besides the "
                             "last)"),
}

ISL_EXP_SCHEMA = {**COMMON, "isl": ISL_SCHEMA,
                  "sequence": {"length": Param(0, int, lo=0,
                                               help="consecutive draws of chain 0 kept per "
                                                    "sampler as /arrays/sequence/<label>")}}

BIAS_SCHEMA = {**COMMON,
               "ll": {"points": Param(12, int, lo=2, help="log-spaced evaluation points"),
                      "exact_max_hidden": Param(25, int, lo=1, hi=30,
                                                help="exact log Z up to this many hidden units"),
                      "ais_runs": Param(100, int, lo=2), "ais_betas": Param(10000, int, lo=2),
                      "split": Param("test", str, choices=("train", "valid", "test"))}}


# ---------------------------------------------------------------------------------------------
# samplers from the registry

def build_sampler(label: str, entry: dict, target, chains: int):
    """The registered ``rbm`` sampler named by ``entry["method"]``, built by its factory with the
    entry's other keys; a factory's ValueError becomes a SpecError naming ``samplers.<label>``."""
    kind = registry.get_sampler("rbm", entry["method"], f"samplers.{label}.method")
    params = {k: v for k, v in entry.items() if k != "method"}
    try:
        return kind.factory(target, params, chains)
    except ValueError as exc:
        raise SpecError(f"{entry['method']}: {exc}", f"samplers.{label}") from None


def draw_keys(sampler) -> tuple[str, ...]:
    """The draw keys a sampler emits: its ``draw_keys`` attribute, else those of one step from
    a throw-away state (a generator of its own: the stream's random numbers are untouched)."""
    keys = getattr(sampler, "draw_keys", None)
    if keys is None:
        rng = np.random.default_rng(0)
        _, draws, _ = sampler.step(sampler.init(rng), rng)
        keys = tuple(draws)
    return tuple(keys)


# ---------------------------------------------------------------------------------------------
# rates_fpcd.isl / rates_fpcd.sequences / rates_fpcd.sample

def run_isl(ctx) -> None:
    """Train (or load) an RBM, run the samplers, ISL curves, training-set line, speed-ups."""
    p = ctx.params
    ds, target = prepare(ctx)
    ctx.store.set_result("data_sizes", f"train {ds.train.n}, valid {ds.valid.n}, "
                                       f"test {ds.test.n}")
    ctx.store.set_result("hidden", int(target.W.shape[1]))
    if target.shape:
        ctx.store.set_result("image_shape", "x".join(str(v) for v in target.shape))
    islp = p.get("isl", {"enabled": False})
    seq_len = p.get("sequence", {}).get("length", 0)
    draws = p["budget"]["draws"]
    chains = p["chains"]
    total = draws * chains
    if islp["enabled"]:
        Xt, Xv = ev_mod.isl_sets(islp, ds)
        ctx.store.set_result("isl_test_points", int(Xt.shape[0]))
        ctx.store.set_result("isl_valid_points", int(Xv.shape[0]))
        if islp["train_set_baseline"]:
            base = ctx.once("train_set_isl",
                            lambda: ev_mod.train_set_isl(target.train_X, Xt, Xv, islp))
            ctx.store.write_metric("isl_baseline", "training set",
                                   [1, total], [float(base["isl"])] * 2,
                                   [float(base["se"])] * 2, x_label="samples",
                                   y_label="ISL (nats)", n=int(base["n"]),
                                   bandwidth=float(base["bandwidth"]))
            ctx.store.set_result("isl_train_set", float(base["isl"]))
            ctx.store.set_result("isl_train_set_se", float(base["se"]))
            ctx.store.set_result("isl_train_set_bandwidth", float(base["bandwidth"]))
    summarize = summarizer(target)
    curves = {}
    streams = {}
    with ctx.parallel():                        # the samplers are independent (mixlab run -j)
        for label, s in p["samplers"].items():
            sampler = build_sampler(label, s, target, chains)
            keys = draw_keys(sampler)
            evs = []
            if islp["enabled"]:
                key = ev_mod.centres_key(islp, keys)
                ctx.store.set_result(f"isl_centres/{label}", key)
                evs.append(ev_mod.isl_evaluator(islp, Xt, Xv, label, key, total))
            record = tuple(k for k in p["record"] if k in keys)
            streams[label] = s, evs, ctx.stream(
                label, sampler, draws=draws, evaluators=evs, record=record or False,
                rng=ctx.rng("sample", label), block=p["block"], summarize=summarize)
    for label, (s, evs, res) in streams.items():
        ctx.store.set_result(f"seconds/{label}", float(res.seconds))
        ctx.store.set_result(f"ms_per_sample/{label}", 1e3 * res.seconds / max(total, 1))
        for k, v in res.stats_mean.items():
            ctx.store.set_result(f"stat_{k}/{label}", float(v))
        if seq_len:
            ctx.store.write_array(f"sequence/{label}", _sequence(ctx, label, seq_len),
                                  shape=list(ds.shape or ()), method=s["method"])
        if evs:
            ev_mod.write_isl_table(ctx.store, label, evs[0])
            x, y, _ = evs[0].curve()
            curves[label] = (x, y)
    ref = islp.get("reference") if islp["enabled"] else None
    if ref:
        _speedups(ctx, islp, ref, curves)


def _speedups(ctx, islp: dict, ref: str, curves: dict) -> None:
    """Coverage speed-ups of every sampler against the reference ``ref`` (results
    ``speedup[@n]/<label>``, ``ref_samples_needed[@n]/<label>``, ``speedup_n[@n]/<label>``)."""
    for label, (x, y) in curves.items():
        if label == ref:
            continue
        for at in [None, *islp["speedup_at"]]:
            if at is not None and at > x[-1]:
                continue
            r = isl_mod.coverage_speedup(*curves[ref], x, y, at=at)
            suffix = "" if at is None else f"@{int(at)}"
            n_at = int(r["at"])
            if r["reached"]:
                ctx.store.set_result(f"speedup{suffix}/{label}", float(r["speedup"]))
                ctx.store.set_result(f"ref_samples_needed{suffix}/{label}",
                                     float(r["ref_needed"]))
            else:
                ctx.store.set_result(
                    f"speedup{suffix}/{label}",
                    f"not reached within budget (> {r['lower_bound']:.3g}x: {ref} never "
                    f"reaches {r['isl_new']:.2f} in {int(np.max(curves[ref][0]))} samples)")
            ctx.store.set_result(f"speedup_n{suffix}/{label}", n_at)


def _sequence(ctx, label: str, n: int) -> np.ndarray:
    """The first n draws of chain 0 (n, V) float32: E[x|h] when recorded, else binary x."""
    keys = ctx.store.stream_keys(label)
    key = "means" if "means" in keys else "samples"
    if key not in keys:   # the sampler emits neither of the recorded keys
        raise SpecError(f"sequence.length needs the draws recorded, and sampler '{label}' "
                        f"records none of {', '.join(ctx.params['record'])}: set record to "
                        f"[samples] or [samples, means]", "record")
    raw = ctx.store.stream(label, key, chains=slice(0, 1), draws=slice(0, n))
    return np.asarray(raw[0], dtype=np.float32)


experiment("rates_fpcd.isl", schema=ISL_EXP_SCHEMA, check=check_isl, adapt=adapt,
           help="ISL vs number of samples for RBM samplers (rates-FPCD paper, Figs 2-3)")(run_isl)
experiment("rates_fpcd.sequences", schema=ISL_EXP_SCHEMA, check=check_isl, adapt=adapt,
           help="consecutive samples of each sampler (rates-FPCD paper, Fig 1)")(run_isl)
experiment("rates_fpcd.sample", schema=ISL_EXP_SCHEMA, check=check_isl, adapt=adapt,
           help="draw samples from a trained RBM ('mixlab sample'); figures: a grid of "
                "consecutive samples, and the ISL once 'mixlab evaluate isl' stored it")(run_isl)


# ---------------------------------------------------------------------------------------------
# rates_fpcd.bias

class _Continue:
    """A sampler that starts from a given state (to run a stream in resumable segments)."""

    def __init__(self, inner, state: dict):
        self.inner, self.state0 = inner, state
        self.chains = inner.chains

    def init(self, rng):
        return {k: np.array(v, copy=True) for k, v in self.state0.items()}

    def step(self, state, rng):
        return self.inner.step(state, rng)


def run_bias(ctx) -> None:
    """Test log-likelihood of θ⁻ = θ + θ_F along each sampler's run.  Samplers without fast
    weights (no ``effective_params(state)``, e.g. Gibbs: θ⁻ = θ throughout) are skipped."""
    p = ctx.params
    ds, target = prepare(ctx)
    llp = p["ll"]
    Xe = ev_mod.binary(getattr(ds, llp["split"]).X)
    base = ctx.once("ll_model", lambda: {k: np.asarray(v) for k, v in
                                         ev_mod.model_log_likelihood(
                                             target, Xe, llp, ctx.rng("ll", "model")).items()})
    ctx.store.set_result("ll_model", float(base["ll"]))
    ctx.store.set_result("ll_method", str(base["how"]))
    draws = p["budget"]["draws"]
    pts = isl_mod.log_points(draws, llp["points"])
    stages, labels = [], []
    for label, s in p["samplers"].items():
        sampler = build_sampler(label, s, target, p["chains"])
        if not hasattr(sampler, "effective_params"):
            ctx.log(f"{label}: no fast weights (θ⁻ = θ), skipped")
            continue
        labels.append(label)
        state, done = None, 0
        for i, n in enumerate(pts):
            cur = sampler if state is None else _Continue(sampler, state)
            res = ctx.stream(f"{label}/seg{i:02d}", cur, draws=int(n - done), record=False,
                             rng=ctx.rng("sample", label, i), block=p["block"])
            state, done = res.state, int(n)
            theta = sampler.effective_params(state)[0]  # chain 0's θ⁻
            m = RBM(theta["W"], theta["b"], theta["c"])
            stages.append((f"ll/{label}/{i:02d}", lambda m=m, i=i, label=label: {
                k: np.asarray(val) for k, val in
                ev_mod.model_log_likelihood(m, Xe, llp, ctx.rng("ll", label, i)).items()}))
    # each point's log-likelihood (an exact log Z or AIS) depends on its θ⁻ only: the costly
    # part of the run, computed in parallel under mixlab run -j
    values = iter(ctx.once_each(stages))
    for label in labels:
        xs, ys, es = [], [], []
        for n in pts:
            v = next(values)
            xs.append(n * p["chains"])
            ys.append(float(v["ll"]))
            es.append(float(np.hypot(v["ll_se"], v["logz_se"])))
        ctx.store.write_metric("ll_eff", label, xs, ys, es, x_label="samples",
                               y_label=f"{llp['split']} log-likelihood of θ⁻ (nats)",
                               how=str(base["how"]))
        ctx.store.set_result(f"ll_final/{label}", ys[-1])
    ctx.store.write_metric("ll_model", "trained model", [1, draws * p["chains"]],
                           [float(base["ll"])] * 2, [float(base["ll_se"])] * 2,
                           x_label="samples", y_label="log-likelihood")


experiment("rates_fpcd.bias", schema=BIAS_SCHEMA, check=check_bias, adapt=adapt,
           help="test log-likelihood of the effective parameters θ+θ_F while sampling")(run_bias)
