"""Rates-FPCD experiments (Breuleux, Bengio & Vincent 2011) wired to the mixlab runner.

Experiment kinds (specs in ``experiments/rates_fpcd/``):

- ``rates_fpcd.isl``: train an RBM (cached stage), run several samplers on it, feed every stream
  to a streaming ISL evaluator (validation-chosen bandwidth), draw the training-set line, store
  final ISL values and the coverage speed-up against a reference sampler.  Figures 2 and 3.
- ``rates_fpcd.sequences``: the same machinery, storing consecutive samples of one chain per
  sampler for Figure 1 (ISL optional).
- ``rates_fpcd.bias``: an extra figure the paper lacks — the test log-likelihood of the
  sampler's effective parameters θ⁻ = θ + θ_F as sampling proceeds (exact log Z for small
  models, AIS with error bars otherwise).

Randomness: the model is trained with a generator that depends only on the spec's ``seed``
(not on a sweep point's spawn key), so every point of a hyper-parameter sweep samples from the
same model; each sampler gets ``ctx.rng("sample", label)``.
"""

from __future__ import annotations

import math

import numpy as np

from ..data import DATA_SCHEMA, load_from_spec
from ..errors import DataError, SpecError
from ..registry import experiment, figure
from ..schema import MapOf, Param
from . import isl as isl_mod
from . import samplers as smp
from .model import RBM

DATA_NAMES = ("usps", "mnist", "mnist-5k", "fashion-mnist")

SAMPLER_SCHEMA = {
    "method": Param(type=str, choices=smp.METHODS, help="gibbs | rates-fpcd | rates-herding | "
                                                        "sample-penalization"),
    "eps_f": Param(0.0, float, lo=0, help="fast-weight step size ε_F (not used by gibbs)"),
    "alpha": Param(1.0, float, lo=0, hi=1, help="fast-weight decay α (SP needs α < 1)"),
    "k": Param(1, int, lo=1, help="Gibbs steps per sample (herding: max hill-climb rounds)"),
    "shared": Param(False, bool, help="one θ_F shared by all chains (mean statistics) instead "
                                      "of one per chain"),
}


def _data_schema() -> dict:
    d = {k: v for k, v in DATA_SCHEMA.items()}
    d["name"] = Param("usps", str, choices=DATA_NAMES, help="data set")
    d["binarize"] = Param(0.5, float, lo=0, hi=1, help="binarisation threshold on [0,1] pixels")
    d["fallback"] = Param(None, str, choices=DATA_NAMES, nullable=True,
                          help="data set used when 'name' is not installed (e.g. mnist -> "
                               "mnist-5k offline); the one used is recorded in /results")
    return d


def _train_schema() -> dict:
    from .train import TRAIN_SCHEMA

    return dict(TRAIN_SCHEMA)


COMMON = {
    "data": _data_schema(),
    "train": _train_schema(),
    "model_file": Param(None, str, nullable=True,
                        help="use this trained RBM (HDF5 from 'mixlab train') instead of "
                             "training one"),
    "samplers": MapOf(SAMPLER_SCHEMA, min_len=1, help="label -> sampler settings"),
    "chains": Param(1, int, lo=1, help="chains per sampler (samples are counted over all)"),
    "init": Param("data", str, choices=smp.INIT_CHOICES,
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
                          "(rates-herding always uses binary x)"),
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
# shared steps

def load_data(p: dict, ctx=None):
    """Load the spec's data set (with the fallback when the primary is not installed)."""
    d = p["data"]
    spec = {k: d[k] for k in DATA_SCHEMA}
    try:
        ds = load_from_spec(spec)
    except DataError as exc:
        if not d.get("fallback"):
            raise
        if ctx is not None:
            ctx.log(f"data set {d['name']} not available ({exc}); using {d['fallback']}")
        ds = load_from_spec({**spec, "name": d["fallback"]})
    return ds


def binary(X: np.ndarray) -> np.ndarray:
    """Training data as 0/1 float32 (already binarised by the data layer: a check, not a
    transform)."""
    X = np.asarray(X, np.float32)
    if not np.all((X == 0) | (X == 1)):
        raise SpecError("rates-FPCD experiments need binary data: set data.binarize", "data")
    return X


def train_seed_rng(ctx) -> np.random.Generator:
    """Generator for training: depends on the spec's seed only (not on a sweep point)."""
    from ..context import name_key

    return np.random.default_rng(np.random.SeedSequence(int(ctx.params["seed"]),
                                                        spawn_key=(name_key("train"),)))


def get_model(ctx, ds) -> RBM:
    p = ctx.params
    if p["model_file"]:
        rbm = RBM.load(p["model_file"])
        if rbm.W.shape[0] != ds.dim:
            raise SpecError(f"{p['model_file']} has {rbm.W.shape[0]} visible units, the data "
                            f"{ds.dim}", "model_file")
        ctx.once("train", lambda: {"W": rbm.W, "b": rbm.b, "c": rbm.c,
                                   "source": np.array(str(p["model_file"]))})
        return rbm
    from .train import to_stage, train_from_spec

    def fit():
        rbm, hist = train_from_spec(p["train"], ds.train.X, ds.valid.X, train_seed_rng(ctx),
                                    progress=ctx.bar)
        return to_stage(rbm, hist)

    st = ctx.once("train", fit)
    return RBM(st["W"], st["b"], st["c"])


def validate_samplers(p: dict) -> None:
    for label, s in p["samplers"].items():
        if s["method"] == "sample-penalization" and s["alpha"] >= 1:
            raise SpecError("sample penalization needs alpha < 1 (with alpha = 1 it drifts to "
                            "the uniform distribution)", f"samplers.{label}.alpha")
        if "/" in label:
            raise SpecError("sampler labels must not contain '/'", f"samplers.{label}")


def build_sampler(s: dict, rbm: RBM, rates: dict, X_init: np.ndarray, chains: int, init: str):
    emit = "binary" if s["method"] == "rates-herding" else "both"
    return smp.make_sampler(s["method"], rbm, rates=rates, eps_f=s["eps_f"], alpha=s["alpha"],
                            k=s["k"], chains=chains, shared=s["shared"], init=init,
                            init_data=X_init, emit=emit)


def rates_stage(ctx, rbm: RBM, X: np.ndarray) -> dict:
    R = ctx.once("rates", lambda: smp.compute_rates(rbm, X))
    return {k: R[k] for k in ("W", "b", "c")}


# ---------------------------------------------------------------------------------------------
# rates_fpcd.isl / rates_fpcd.sequences

def _isl_sets(p: dict, ds) -> tuple[np.ndarray, np.ndarray]:
    Xt = binary(ds.test.X)
    Xv = binary(ds.valid.X)
    if p["isl"]["test_max"]:
        Xt = Xt[:p["isl"]["test_max"]]
    if p["isl"]["valid_max"]:
        Xv = Xv[:p["isl"]["valid_max"]]
    return Xt, Xv


def _prepare(ctx):
    """The set-up every RBM experiment shares: validated params, data (recorded as
    ``data_used``), binary training set (n, V) and the trained (or loaded, cached) model."""
    p = ctx.params
    validate_samplers(p)
    ds = load_data(p, ctx)
    ctx.store.set_result("data_used", ds.name)
    return p, ds, binary(ds.train.X), get_model(ctx, ds)


def run_isl(ctx) -> None:
    """Train (or load) an RBM, run the samplers, ISL curves, training-set line, speed-ups."""
    p, ds, Xtr, rbm = _prepare(ctx)
    ctx.store.set_result("data_sizes", f"train {ds.train.n}, valid {ds.valid.n}, "
                                       f"test {ds.test.n}")
    ctx.store.set_result("hidden", int(rbm.W.shape[1]))
    R = rates_stage(ctx, rbm, Xtr)
    islp = p.get("isl", {"enabled": False})
    seq_len = p.get("sequence", {}).get("length", 0)
    draws = p["budget"]["draws"]
    chains = p["chains"]
    total = draws * chains
    if islp["enabled"]:
        Xt, Xv = _isl_sets(p, ds)
        ctx.store.set_result("isl_test_points", int(Xt.shape[0]))
        ctx.store.set_result("isl_valid_points", int(Xv.shape[0]))
        bws = None if islp["bandwidths"] is None else np.asarray(islp["bandwidths"])
        if islp["train_set_baseline"]:
            base = ctx.once("train_set_isl", lambda: {
                k: np.asarray(v) for k, v in
                isl_mod.isl_of_centres(Xtr.astype(bool), Xt, Xv, bandwidths=bws).items()})
            ctx.store.write_metric("isl_baseline", "training set",
                                   [1, total], [float(base["isl"])] * 2,
                                   [float(base["se"])] * 2, x_label="samples",
                                   y_label="ISL (nats)", n=int(base["n"]),
                                   bandwidth=float(base["bandwidth"]))
            ctx.store.set_result("isl_train_set", float(base["isl"]))
            ctx.store.set_result("isl_train_set_se", float(base["se"]))
            ctx.store.set_result("isl_train_set_bandwidth", float(base["bandwidth"]))
    curves = {}
    for label, s in p["samplers"].items():
        sampler = build_sampler(s, rbm, R, Xtr, chains, p["init"])
        evs = []
        if islp["enabled"]:
            key = "samples" if s["method"] == "rates-herding" else \
                ("means" if islp["centres"] == "means" else "samples")
            pts = np.union1d(isl_mod.log_points(total, islp["points"]),
                             [a for a in islp["speedup_at"] if a <= total])
            ev = isl_mod.ISLEvaluator(Xt, Xv, series=label, key=key, bandwidths=bws,
                                      points=pts, select=islp["select"])
            evs.append(ev)
        record = tuple(k for k in p["record"]
                       if not (k == "means" and s["method"] == "rates-herding"))
        res = ctx.stream(label, sampler, draws=draws, evaluators=evs, record=record or False,
                         rng=ctx.rng("sample", label), block=p["block"])
        ctx.store.set_result(f"seconds/{label}", float(res.seconds))
        ctx.store.set_result(f"ms_per_sample/{label}", 1e3 * res.seconds / max(total, 1))
        for k, v in res.stats_mean.items():
            ctx.store.set_result(f"stat_{k}/{label}", float(v))
        if seq_len:
            ctx.store.write_array(f"sequence/{label}", _sequence(ctx, label, s, seq_len),
                                  shape=list(ds.shape or ()), method=s["method"])
        if evs:
            ev = evs[0]
            t = ev.table()
            j = int(t["chosen"][-1])
            ctx.store.write_array(f"isl_table/{label}/valid", t["valid"])
            ctx.store.write_array(f"isl_table/{label}/test", t["test"])
            ctx.store.write_array(f"isl_table/{label}/n", t["n"])
            ctx.store.write_array(f"isl_table/{label}/bandwidths", t["bandwidths"])
            ctx.store.write_array(f"isl_table/{label}/chosen", t["chosen"])
            ctx.store.set_result(f"isl_final/{label}", float(t["test"][-1, j]))
            ctx.store.set_result(f"isl_final_se/{label}", float(t["test_se"][-1, j]))
            ctx.store.set_result(f"isl_valid/{label}", float(t["valid"][-1, j]))
            ctx.store.set_result(f"isl_bandwidth/{label}", float(t["bandwidths"][j]))
            x, y, _ = ev.curve()
            curves[label] = (x, y)
    ref = islp.get("reference") if islp["enabled"] else None
    if ref:
        if ref not in curves:
            raise SpecError(f"'{ref}' is not a sampler label of this spec", "isl.reference")
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


def _sequence(ctx, label: str, s: dict, n: int) -> np.ndarray:
    """The first n draws of chain 0: means when recorded and available, else binary samples."""
    reader_key = "samples"
    g = ctx.store.f[f"streams/{label}"]
    if "means" in g and s["method"] != "rates-herding":
        reader_key = "means"
    from ..store import unpack_bool

    ds = g[reader_key]
    raw = ds[0:1, :n]
    if ds.attrs.get("packed", False):
        raw = unpack_bool(raw, tuple(int(v) for v in ds.attrs["shape"]))
    return np.asarray(raw[0], dtype=np.float32)


experiment("rates_fpcd.isl", schema=ISL_EXP_SCHEMA,
           help="ISL vs number of samples for RBM samplers (rates-FPCD paper, Figs 2-3)")(run_isl)
experiment("rates_fpcd.sequences", schema=ISL_EXP_SCHEMA,
           help="consecutive samples of each sampler (rates-FPCD paper, Fig 1)")(run_isl)
experiment("rates_fpcd.sample", schema=ISL_EXP_SCHEMA,
           help="draw samples from a trained RBM ('mixlab sample'); no figure")(run_isl)


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


def _model_ll(rbm: RBM, X: np.ndarray, llp: dict, rng: np.random.Generator) -> dict:
    from .partition import log_likelihood, log_partition_ais, log_partition_exact

    if min(rbm.W.shape) <= llp["exact_max_hidden"]:
        logz, logz_se = log_partition_exact(rbm, max_units=llp["exact_max_hidden"]), 0.0
        how = "exact"
    else:
        base = RBM.data_log_odds(X)
        logz, logz_se = log_partition_ais(rbm, n_runs=llp["ais_runs"], n_betas=llp["ais_betas"],
                                          base_b=base, rng=rng)
        how = "ais"
    ll, se = log_likelihood(rbm, X, logz)
    return {"ll": ll, "ll_se": se, "logz": logz, "logz_se": logz_se, "how": how}


def run_bias(ctx) -> None:
    """Test log-likelihood of θ⁻ = θ + θ_F along each sampler's run."""
    p, ds, Xtr, rbm = _prepare(ctx)
    R = rates_stage(ctx, rbm, Xtr)
    llp = p["ll"]
    Xe = binary(getattr(ds, llp["split"]).X)
    base = ctx.once("ll_model", lambda: {k: np.asarray(v) for k, v in
                                         _model_ll(rbm, Xe, llp, ctx.rng("ll", "model")).items()})
    ctx.store.set_result("ll_model", float(base["ll"]))
    ctx.store.set_result("ll_method", str(base["how"]))
    draws = p["budget"]["draws"]
    pts = isl_mod.log_points(draws, llp["points"])
    for label, s in p["samplers"].items():
        if s["method"] == "gibbs":
            continue  # θ⁻ = θ throughout
        sampler = build_sampler(s, rbm, R, Xtr, p["chains"], p["init"])
        state, done = None, 0
        xs, ys, es, zs = [], [], [], []
        for i, n in enumerate(pts):
            cur = sampler if state is None else _Continue(sampler, state)
            res = ctx.stream(f"{label}/seg{i:02d}", cur, draws=int(n - done), record=False,
                             rng=ctx.rng("sample", label, i), block=p["block"])
            state, done = res.state, int(n)
            theta = sampler.effective_params(state)[0]  # chain 0's θ⁻
            m = RBM(theta["W"], theta["b"], theta["c"])
            v = ctx.once(f"ll/{label}/{i:02d}", lambda m=m, i=i, label=label: {
                k: np.asarray(val) for k, val in
                _model_ll(m, Xe, llp, ctx.rng("ll", label, i)).items()})
            xs.append(n * p["chains"])
            ys.append(float(v["ll"]))
            es.append(float(np.hypot(v["ll_se"], v["logz_se"])))
            zs.append(float(v["logz"]))
        ctx.store.write_metric("ll_eff", label, xs, ys, es, x_label="samples",
                               y_label=f"{llp['split']} log-likelihood of θ⁻ (nats)",
                               how=str(base["how"]))
        ctx.store.set_result(f"ll_final/{label}", ys[-1])
    ctx.store.write_metric("ll_model", "trained model", [1, draws * p["chains"]],
                           [float(base["ll"])] * 2, [float(base["ll_se"])] * 2,
                           x_label="samples", y_label="log-likelihood")


experiment("rates_fpcd.bias", schema=BIAS_SCHEMA,
           help="test log-likelihood of the effective parameters θ+θ_F while sampling")(run_bias)


# ---------------------------------------------------------------------------------------------
# figures (read the run file only)

_COLORS = {"gibbs": "C3", "sample-penalization": "C2", "rates-herding": "C1",
           "rates-fpcd": "C0"}


def _method_of(run, label: str) -> str:
    try:
        return run.spec["samplers"][label]["method"]
    except KeyError:
        return ""


@figure("rates_fpcd.isl_curves", experiment="rates_fpcd.isl", size=(6.4, 4.8))
def fig_isl(run, fig) -> None:
    """ISL on the test set vs number of generated samples (log x), one curve per sampler, and
    the training set used as kernel centres."""
    ax = fig.add_subplot()
    res = run.results()
    metrics = run.metrics()
    styles = ["-", "--", "-.", ":"]
    for i, (label, c) in enumerate(metrics.get("isl", {}).items()):
        meth = _method_of(run, label)
        col = _COLORS.get(meth, f"C{4 + i}")
        ls = styles[sum(1 for lab in list(metrics["isl"])[:i] if _method_of(run, lab) == meth)
                    % len(styles)]
        fin = res.get(f"isl_final/{label}")
        lab = f"{label} ({fin:.1f})" if isinstance(fin, float) else label
        if meth == "rates-herding" and run.spec.get("isl", {}).get("centres") == "means":
            lab += " [binary centres]"
        ax.plot(c["x"], c["y"], ls, color=col, label=lab)
        if c["yerr"] is not None:
            ax.fill_between(c["x"], c["y"] - c["yerr"], c["y"] + c["yerr"], color=col,
                            alpha=0.15, lw=0)
    for label, c in metrics.get("isl_baseline", {}).items():
        ax.axhline(c["y"][0], color="k", ls=":", lw=1,
                   label=f"{label} ({c['y'][0]:.1f})")
    ax.set_xscale("log")
    ax.set_xlabel("number of samples")
    ax.set_ylabel("ISL of the test set (nats)")
    spec = run.spec
    title = spec.get("description") or spec.get("name", "")
    ax.set_title(f"{title}\n{res.get('data_used', '')}, {res.get('hidden', '?')} hidden, "
                 f"{res.get('isl_test_points', '?')} test points", fontsize=9)
    lines = []
    for key, v in sorted(res.items()):
        if key.startswith("speedup/") or key.startswith("speedup@"):
            pre, lab = key.split("/", 1)
            n_at = res.get(f"speedup_n{pre[len('speedup'):]}/{lab}")
            lines.append(f"{lab} vs {spec['isl'].get('reference')}: " +
                         (f"{v:.3g}x at {n_at} samples" if isinstance(v, float) else
                          f"not reached within budget at {n_at} samples"))
    note = spec.get("note") or ""
    text = "\n".join([*([note] if note else []), *lines])
    if text:
        ax.text(0.02, 0.98, text, transform=ax.transAxes, fontsize=7, va="top",
                bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
    ax.legend(fontsize=7, loc="lower right")
    ylo = [np.nanmin(c["y"][c["x"] >= 10]) for c in metrics.get("isl", {}).values()
           if np.any(c["x"] >= 10)]
    if ylo:
        top = max(np.nanmax(c["y"]) for c in metrics["isl"].values())
        for c in metrics.get("isl_baseline", {}).values():
            top = max(top, c["y"][0])
        # headroom for the text box above the curves: 4.5% of the data range per line of text
        lines_of_text = text.count("\n") + 1 if text else 0
        span = top - min(ylo) + 8
        ax.set_ylim(min(ylo) - 5, top + 3 + span * 0.045 * lines_of_text)


@figure("rates_fpcd.fig1", experiment="rates_fpcd.sequences", size=(8.0, 4.0))
def fig_sequences(run, fig) -> None:
    """Consecutive samples (E[x|h] for the stochastic samplers, x for herding) of one chain per
    sampler, a row per method."""
    names = [n for n in run.array_names() if n.startswith("sequence/")]
    labels = [n.split("/", 1)[1] for n in names]
    order = list(run.spec.get("samplers", {}))
    labels = sorted(labels, key=lambda lab: order.index(lab) if lab in order else 99)
    axes = fig.subplots(len(labels), 1, squeeze=False)[:, 0]
    res = run.results()
    for ax, lab in zip(axes, labels):
        seq = run.array(f"sequence/{lab}")
        shape = tuple(run.array_attrs(f"sequence/{lab}").get("shape") or ())
        if len(shape) != 2:
            side = int(round(math.sqrt(seq.shape[1])))
            shape = (side, seq.shape[1] // side)
        imgs = seq.reshape((-1,) + shape)
        pad = np.ones((imgs.shape[0], shape[0], 1), np.float32)
        row = np.concatenate([np.concatenate([im, p], axis=1) for im, p in zip(imgs, pad)],
                             axis=1)
        ax.imshow(1.0 - row, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        s = run.spec["samplers"].get(lab, {})
        desc = s.get("method", lab)
        if s.get("method") != "gibbs":
            desc += f" ε_F={s.get('eps_f')} α={s.get('alpha')}"
        ax.set_ylabel(lab, rotation=0, ha="right", va="center", fontsize=8)
        ax.set_title(f"{desc}, k={s.get('k')}", fontsize=7, loc="left")
    fig.suptitle(f"{run.spec.get('description') or 'consecutive samples'} "
                 f"({res.get('data_used', '')}, {res.get('hidden', '?')} hidden)", fontsize=9)


@figure("rates_fpcd.bias", experiment="rates_fpcd.bias", size=(6.4, 4.8))
def fig_bias(run, fig) -> None:
    """Log-likelihood of θ⁻ = θ + θ_F (chain 0) vs samples drawn, against the trained model."""
    ax = fig.add_subplot()
    m = run.metrics()
    res = run.results()
    used: set = set()
    for i, (label, c) in enumerate(m.get("ll_eff", {}).items()):
        col = _COLORS.get(_method_of(run, label), f"C{i}")
        ax.errorbar(c["x"], c["y"], yerr=c["yerr"], marker="o", ms=3, capsize=2, color=col,
                    ls="--" if col in used else "-",  # same method, other settings: dashed
                    label=f"{label} θ+θ_F ({c['y'][-1]:.2f})")
        used.add(col)
    for label, c in m.get("ll_model", {}).items():
        ax.axhline(c["y"][0], color="k", ls=":", label=f"{label} θ ({c['y'][0]:.2f})")
    ax.set_xscale("log")
    ax.set_xlabel("number of samples")
    split = run.spec.get("ll", {}).get("split", "test")
    ax.set_ylabel(f"{split} log-likelihood (nats)")
    how = res.get("ll_method", "")
    ax.set_title(f"{run.spec.get('description') or 'effective parameters while sampling'}\n"
                 f"{res.get('data_used', '')}, log Z {'exact' if how == 'exact' else 'by AIS'}",
                 fontsize=9)
    ax.legend(fontsize=7)
