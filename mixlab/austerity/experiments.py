"""Experiments and figures 1-6 of Korattikara, Chen & Welling (2014), "Austerity in MCMC land".

Experiment kinds (one spec per figure under experiments/austerity/):

* ``austerity.tstat``        Fig 1: t statistic under resampling without replacement vs Student-t
* ``austerity.rw_decisions`` Fig 2: % data used and % wrong decisions vs eps (RW-MH)
* ``austerity.rw_risk``      Fig 3: risk of the predictive mean vs wall time (RW-MH, 8 chains)
* ``austerity.rw_marginals`` Fig 4: (θ1, θ2) marginals at three wall times vs the HMC truth
* ``austerity.sgld_variance`` Figs 5-6: L1 error of the posterior variance vs wall time (SGLD)

Data: logistic regression on two classes of an image set (PCA fitted on train) or on KDD99.
``data.name: auto`` means Fashion-MNIST 7 vs 9 (sneaker vs ankle boot, 12,000 training points,
the paper's scale) when installed, else mnist-5k 7 vs 9 (1,000 training points); the data used
is recorded in /results (``data/name``).  Training set = the data layer's train + valid splits.

Ground truth: HMC (Laplace mass matrix, started at the mode) computed by :func:`hmc_truth`,
stored in the run under /stages/hmc_truth and cached across runs in
``$MIXLAB_DATA_DIR/cache/austerity-truth/<sha1>.npz`` (default ``~/.cache/mixlab/...``), the
key hashing the training data, prior, bias flag and HMC settings; the HMC seed is derived from
the same hash, so every run on the same posterior shares one truth.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from ..checkpoint import AttributeState
from ..errors import DataError, SpecError
from ..registry import experiment, figure
from ..schema import Param
from .blas import one_blas_thread
from .hmc import HMC
from .logistic import LogisticPosterior, add_bias, map_estimate, neg_hessian
from .samplers import BLOCK_DEFAULT, SGLD, RandomWalkMH

# ----------------------------------------------------------------------------------------------
# spec pieces


def _data_keys(name="auto", classes=(7, 9), pca=50, subsample=None):
    from ..data import NAMES
    return {
        "name": Param(name, str, choices=("auto",) + tuple(NAMES),
                      help="data set; auto = fashion-mnist if installed, else mnist-5k"),
        "classes": Param(list(classes) if classes else None, list, item=int, lo=0, nullable=True,
                         help="two labels (relabelled 0/1 in this order); null for kdd99"),
        "pca": Param(pca, int, lo=1, nullable=True, help="PCA components fitted on train"),
        "subsample": Param(subsample, int, lo=2, nullable=True,
                           help="random subset of this many training rows"),
        "subsample_seed": Param(0, int, lo=0,
                                help="seed of the subset (not the run seed, so that specs "
                                     "share one posterior and one cached truth)"),
        "test_max": Param(None, int, lo=1, nullable=True, help="use at most this many test points"),
    }


MODEL = {
    "precision": Param(10.0, float, lo=0, lo_open=True, help="Gaussian prior precision"),
    "bias": Param(True, bool, help="append a constant feature (penalised by the same prior)"),
}

HMC_KEYS = {
    "chains": Param(4, int, lo=1, help="HMC chains for the ground truth"),
    "burn_in": Param(200, int, lo=0, help="HMC steps discarded"),
    "samples": Param(2000, int, lo=10, help="HMC steps kept per chain"),
    "step_size": Param(0.4, float, lo=0, lo_open=True,
                       help="leapfrog step (in Laplace-whitened units)"),
    "n_leapfrog": Param(10, int, lo=1, help="leapfrog steps per HMC step"),
    "keep": Param(4000, int, lo=10, help="thinned truth samples stored for figures"),
}

INIT_CHOICES = ("zero", "map", "laplace")


def _init_theta(kind: str, post, rng, chains: int, laplace=None) -> np.ndarray:
    if kind == "zero":
        return np.zeros((chains, post.d))
    mode, H = laplace if laplace is not None else _laplace(post)
    if kind == "map":
        return np.tile(mode, (chains, 1))
    L = np.linalg.cholesky(np.linalg.inv(H))
    return mode + rng.standard_normal((chains, post.d)) @ L.T


def _laplace(post):
    mode = map_estimate(post)
    return mode, neg_hessian(post, mode)


# ----------------------------------------------------------------------------------------------
# data


def load_problem(ctx, dspec: dict, mspec: dict):
    """-> (post, X_test (M, d0) float32, y_test (M,), data name).  Records data/* results."""
    from ..data import load
    name = dspec["name"]
    kwargs = {"classes": dspec["classes"], "pca": dspec["pca"]}
    if name == "auto":
        try:
            ds = load("fashion-mnist", **kwargs)
            name = "fashion-mnist"
        except DataError as exc:
            ctx.log(f"fashion-mnist not available ({exc}); using mnist-5k")
            ds = load("mnist-5k", **kwargs)
            name = "mnist-5k"
    else:
        ds = load(name, **kwargs)
    parts = [s for s in (ds.train, ds.valid) if s is not None and s.n > 0]
    X = np.concatenate([s.X for s in parts])
    y = np.concatenate([s.y for s in parts])
    if not np.isin(y, (0, 1)).all():
        raise SpecError("logistic regression needs two classes (data.classes: [a, b])",
                        "data.classes")
    if dspec["subsample"] is not None and dspec["subsample"] < X.shape[0]:
        rng = np.random.default_rng(dspec["subsample_seed"])
        idx = np.sort(rng.choice(X.shape[0], dspec["subsample"], replace=False))
        X, y = X[idx], y[idx]
    Xt, yt = ds.test.X, ds.test.y
    if dspec["test_max"] is not None:
        Xt, yt = Xt[:dspec["test_max"]], yt[:dspec["test_max"]]
    post = LogisticPosterior(X, y, precision=mspec["precision"], bias=mspec["bias"])
    ctx.store.set_result("data/name", name)
    ctx.store.set_result("data/N", int(post.N))
    ctx.store.set_result("data/d", int(post.d))
    ctx.store.set_result("data/test_points", int(Xt.shape[0]))
    ctx.log(f"data {name}: N = {post.N}, d = {post.d} (bias {'on' if post.bias else 'off'}), "
            f"{Xt.shape[0]} test points")
    return post, np.asarray(Xt, np.float32), yt, name


# ----------------------------------------------------------------------------------------------
# ground truth


def truth_key(post: LogisticPosterior, X_test: np.ndarray, hspec: dict) -> str:
    h = hashlib.sha1()
    for a in (post.X, post.s, np.asarray(X_test, np.float32)):
        h.update(np.ascontiguousarray(a).tobytes())
    h.update(repr((post.precision, post.bias, sorted(hspec.items()), "v1")).encode())
    return h.hexdigest()


def truth_cache_dir() -> Path:
    from ..data import data_dir
    return data_dir() / "cache" / "austerity-truth"


def hmc_truth(post: LogisticPosterior, X_test: np.ndarray, hspec: dict, log=print) -> dict:
    """Long HMC run: posterior mean/variance, predictive mean on X_test, thinned samples.

    Returns a flat dict: mean (d,), var (d,), pred (M,), samples (keep, d), accept, var_floor
    (L1 distance between the variances of the two halves of the chains / 2: the truth's own
    Monte Carlo error), pred_floor (mean squared difference of the halves' predictive means / 4).
    """
    key = truth_key(post, X_test, hspec)
    path = truth_cache_dir() / f"{key}.npz"
    if path.exists():
        with np.load(path) as z:
            log(f"HMC truth from cache {path}")
            return {k: z[k] for k in z.files}
    rng = np.random.default_rng(int(key[:16], 16))
    mode, H = _laplace(post)

    def logp_grad(th):
        return post.log_posterior(th), post.grad_log_posterior(th)

    C = hspec["chains"]
    init = _init_theta("laplace", post, rng, C, laplace=(mode, H))
    hmc = HMC(logp_grad, C, init, hspec["step_size"], hspec["n_leapfrog"], mass=H,
              grad=post.grad_log_posterior)
    st = hmc.init(rng)
    S = hspec["samples"]
    samples = np.empty((C, S, post.d))
    acc = 0.0
    for i in range(hspec["burn_in"] + S):
        st, d, s = hmc.step(st, rng)
        if i >= hspec["burn_in"]:
            samples[:, i - hspec["burn_in"]] = d["samples"]
            acc += s["accept"].mean()
    flat = samples.reshape(-1, post.d)
    Xt = add_bias(X_test) if post.bias else np.asarray(X_test, np.float32)
    pred_sum = np.zeros((2, Xt.shape[0]))
    half = max(C // 2, 1)
    for c in range(C):
        for blk in range(0, S, 500):
            z = samples[c, blk:blk + 500].astype(np.float32) @ Xt.T
            pred_sum[0 if c < half or C == 1 else 1] += _sigmoid(z).sum(0, dtype=np.float64)
    if C == 1:
        h1, h2 = samples[0, :S // 2], samples[0, S // 2:]
        n1 = n2 = C * S / 2
    else:
        h1, h2 = samples[:half].reshape(-1, post.d), samples[half:].reshape(-1, post.d)
        n1, n2 = half * S, (C - half) * S
    pred = pred_sum.sum(0) / (C * S)
    out = {
        "mean": flat.mean(0), "var": flat.var(0), "pred": pred,
        "samples": flat[rng.choice(flat.shape[0], min(hspec["keep"], flat.shape[0]),
                                   replace=False)],
        "accept": acc / S, "mode": mode,
        "var_floor": float(np.abs(h1.var(0) - h2.var(0)).sum() / 2),
        "pred_floor": float(np.mean((pred_sum[0] / n1 - pred_sum[1] / n2) ** 2) / 4)
        if C > 1 else float("nan"),
    }
    log(f"HMC truth: {C} chains x {S} samples, acceptance {out['accept']:.3f}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}.npz")
        np.savez(tmp, **out)
        os.replace(tmp, path)
    except OSError as exc:                         # a read-only cache is not fatal
        log(f"could not cache the HMC truth at {path}: {exc}")
    return out


def _truth(ctx, post, X_test, hspec) -> dict:
    return ctx.once("hmc_truth", lambda: hmc_truth(post, X_test, hspec, log=ctx.log))


def _sigmoid(a):
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e))


# ----------------------------------------------------------------------------------------------
# evaluators


class PredictiveRisk(AttributeState):
    """Risk of the running predictive mean: mean over chains and test points of
    (mean_t σ(x*·θ_t) - truth(x*))², after each block.  x = sampling seconds."""

    metric = "risk"
    x_label = "wall-clock seconds (sampling)"
    y_label = "risk of the predictive mean"

    state_attrs = ('sum', 'n', 'x', 'y', 'count')

    def __init__(self, series: str, X_test_b: np.ndarray, truth_pred: np.ndarray, chains: int):
        self.series = series
        self.Xt = np.ascontiguousarray(X_test_b, dtype=np.float32)      # (M, d) with bias col
        self.truth = np.asarray(truth_pred, dtype=np.float64)            # (M,)
        self.sum = np.zeros((chains, self.Xt.shape[0]))
        self.n = 0
        self.x, self.y, self.count = [], [], []

    def update(self, draws, count, seconds):
        th = np.asarray(draws["samples"], dtype=np.float32)             # (C, B, d)
        C, B, d = th.shape
        for s in range(0, B, 1000):
            z = th[:, s:s + 1000].reshape(-1, d) @ self.Xt.T
            self.sum += _sigmoid(z).reshape(C, -1, self.Xt.shape[0]).sum(1, dtype=np.float64)
        self.n += B
        est = self.sum / self.n
        self.x.append(seconds)
        self.y.append(float(np.mean((est - self.truth) ** 2)))
        self.count.append(count)

    def curve(self):
        return np.array(self.x), np.array(self.y), None


class VarianceL1(AttributeState):
    """L1 error of the running posterior variance, sum_j |var_j - truth_j|, averaged over chains,
    after each block.  x = sampling seconds."""

    metric = "variance_l1"
    x_label = "wall-clock seconds (sampling)"
    y_label = "L1 error of the posterior variance"

    state_attrs = ('n', 'mean', 'm2', 'x', 'y')

    def __init__(self, series: str, truth_var: np.ndarray, chains: int):
        self.series = series
        self.truth = np.asarray(truth_var, dtype=np.float64)
        d = self.truth.shape[0]
        self.n = 0
        self.mean = np.zeros((chains, d))
        self.m2 = np.zeros((chains, d))
        self.x, self.y = [], []

    def update(self, draws, count, seconds):
        th = np.asarray(draws["samples"], dtype=np.float64)             # (C, B, d)
        B = th.shape[1]
        bm = th.mean(1)
        bm2 = ((th - bm[:, None]) ** 2).sum(1)
        n_new = self.n + B
        delta = bm - self.mean
        self.m2 += bm2 + delta ** 2 * (self.n * B / n_new)
        self.mean += delta * (B / n_new)
        self.n = n_new
        var = self.m2 / self.n
        self.x.append(seconds)
        self.y.append(float(np.abs(var - self.truth).sum(1).mean()))

    def curve(self):
        return np.array(self.x), np.array(self.y), None


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


def _eps_label(eps: float) -> str:
    return "exact MH (eps=0)" if eps == 0 else f"eps={eps:g}"


def _data_note(run) -> str:
    r = run.results()
    name = r.get("data/name", "?")
    note = f"data: {name}, N = {r.get('data/N', '?')}"
    if name != "mnist":
        note += " (paper: MNIST 7 vs 9, N = 12,214)" if "kdd" not in name else ""
    return note


# ----------------------------------------------------------------------------------------------
# Fig 1


SCHEMA_TSTAT = {
    "data": _data_keys(),
    "model": MODEL,
    "n": Param([500, 5000, 10000], list, item=int, lo=2, min_len=1,
               help="subsample sizes (for N = reference_N; rescaled by N/reference_N if N is "
                    "smaller than reference_N)"),
    "reference_N": Param(12214, int, lo=2, help="N of the paper's data (MNIST 7 vs 9)"),
    "resamples": Param(2000, int, lo=10, help="subsamples drawn per n"),
    "sigma": Param(0.01, float, lo=0, lo_open=True,
                   help="θ' = mode + sigma ξ defines the population l_i"),
}


@experiment("austerity.tstat", schema=SCHEMA_TSTAT,
            help="Fig 1: t statistic under resampling without replacement vs Student-t")
@one_blas_thread
def run_tstat(ctx) -> None:
    from scipy import stats as sst

    from .seqtest import t_statistic
    p = ctx.params
    post, _xt, _yt, _name = load_problem(ctx, p["data"], p["model"])
    N = post.N
    rng = ctx.rng("tstat")
    mode = map_estimate(post)
    prop = mode + p["sigma"] * rng.standard_normal(post.d)
    L = (post.loglik_terms(prop[None]) - post.loglik_terms(mode[None]))[0].astype(np.float64)
    mu = L.mean()
    ctx.store.write_array("tstat/population", L.astype(np.float32), mean=mu)
    scale = N / p["reference_N"] if N < p["reference_N"] else 1.0
    for n in p["n"]:
        n_eff = int(np.clip(round(n * scale), 2, N - 1))
        if n_eff != n:
            ctx.log(f"n = {n} rescaled to {n_eff} (N = {N} < {p['reference_N']})")
        R = p["resamples"]
        t = np.empty(R)
        for s in range(0, R, 100):
            r = min(100, R - s)
            idx = np.argsort(rng.random((r, N)), axis=1)[:, :n_eff]
            t[s:s + r] = t_statistic(L[idx], mu, N)
        ks = sst.kstest(t, sst.t(df=n_eff - 1).cdf)
        ctx.store.write_array(f"tstat/n{n}", t, n=n, n_eff=n_eff, N=N)
        ctx.store.set_result(f"tstat/n{n}/n_eff", n_eff)
        ctx.store.set_result(f"tstat/n{n}/ks_stat", float(ks.statistic))
        ctx.store.set_result(f"tstat/n{n}/ks_pvalue", float(ks.pvalue))
        ctx.log(f"n = {n_eff}: KS distance to t_{n_eff - 1} = {ks.statistic:.4f} "
                f"(p = {ks.pvalue:.3g})")


@figure("austerity.fig1", experiment="austerity.tstat", size=(11.0, 3.6))
def fig1(run, fig) -> None:
    """Histograms of the t statistic vs the Student-t density, one panel per n."""
    from scipy import stats as sst
    names = sorted([a.split("/")[1] for a in run.array_names()
                    if a.startswith("tstat/n")], key=lambda s: int(s[1:]))
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    res = run.results()
    for ax, nm in zip(axes, names):
        t = run.array(f"tstat/{nm}")
        at = run.array_attrs(f"tstat/{nm}")
        n_eff, N = int(at["n_eff"]), int(at["N"])
        ax.hist(t, bins=50, density=True, color="tab:blue", alpha=0.6, label="empirical")
        g = np.linspace(-4.5, 4.5, 400)
        ax.plot(g, sst.t(df=n_eff - 1).pdf(g), color="tab:red", label=f"Student-t, {n_eff - 1} dof")
        ttl = f"n = {n_eff} of N = {N}"
        if n_eff != int(at["n"]):
            ttl += f"\n(paper n = {int(at['n'])}, rescaled to N)"
        ax.set_title(ttl, fontsize=9)
        ax.set_xlim(-4.5, 4.5)
        ax.text(0.02, 0.97, f"KS = {res.get(f'tstat/{nm}/ks_stat', float('nan')):.3f}",
                transform=ax.transAxes, va="top", fontsize=8)
    axes[0].legend(fontsize=7, loc="upper right")
    fig.suptitle("t statistic under resampling without replacement; " + _data_note(run),
                 fontsize=9, y=0.99)
    fig.subplots_adjust(top=0.78, wspace=0.25)


# ----------------------------------------------------------------------------------------------
# Fig 2


SCHEMA_DECISIONS = {
    "data": _data_keys(),
    "model": MODEL,
    "sigma": Param(0.01, float, lo=0, lo_open=True, help="random-walk proposal std"),
    "m": Param(500, int, lo=2, help="minibatch size of the sequential test"),
    "test_block": Param(BLOCK_DEFAULT, int, lo=1,
                        help="rows per block of the sequential test's population (1: the paper's "
                             "per-point test; issue 16)"),
    "eps": Param([0.0, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2], list, item=float, lo=0, hi=0.5,
                 min_len=1, help="tolerances"),
    "chains": Param(4, int, lo=1),
    "burn_in": Param(200, int, lo=0, help="steps per chain before measuring"),
    "steps": Param(2000, int, lo=1, help="measured steps per chain"),
    "init": Param("laplace", str, choices=INIT_CHOICES,
                  help="start: zero, the mode, or a draw from the Laplace approximation"),
}


@experiment("austerity.rw_decisions", schema=SCHEMA_DECISIONS,
            help="Fig 2: fraction of data used and of wrong decisions vs eps (RW-MH)")
@one_blas_thread
def run_decisions(ctx) -> None:
    p = ctx.params
    post, _xt, _yt, _name = load_problem(ctx, p["data"], p["model"])
    lap = _laplace(post)
    used, wrong, acc = [], [], []
    for eps in p["eps"]:
        lab = f"eps={eps:g}"
        init = _init_theta(p["init"], post, ctx.rng("init", lab), p["chains"], lap)
        kw = {"sigma": p["sigma"], "eps": eps, "m": p["m"], "track_errors": True,
              "block": p["test_block"]}
        if p["burn_in"]:
            r0 = ctx.stream(f"burnin/{lab}", RandomWalkMH(post, p["chains"], init=init, **kw),
                            draws=p["burn_in"], record=False, rng=ctx.rng("burnin", lab))
            init = r0.state["theta"]
        r = ctx.stream(lab, RandomWalkMH(post, p["chains"], init=init, **kw),
                       draws=p["steps"], record=False, rng=ctx.rng("sample", lab))
        used.append(r.stats_mean["data_used"])
        wrong.append(r.stats_mean["wrong"])
        acc.append(r.stats_mean["accept"])
        ctx.store.set_result(f"{lab}/data_used", used[-1])
        ctx.store.set_result(f"{lab}/wrong", wrong[-1])
        ctx.store.set_result(f"{lab}/accept", acc[-1])
        ctx.log(f"{lab}: data used {100 * used[-1]:.1f}%, wrong decisions "
                f"{100 * wrong[-1]:.2f}%, acceptance {acc[-1]:.3f}")
    eps = np.array(p["eps"])
    ctx.store.write_metric("decisions", "data_used", eps, 100 * np.array(used),
                           x_label="eps", y_label="% of data used")
    ctx.store.write_metric("decisions", "wrong", eps, 100 * np.array(wrong),
                           x_label="eps", y_label="% wrong decisions")
    ctx.store.write_metric("decisions", "accept", eps, np.array(acc),
                           x_label="eps", y_label="acceptance rate")


@figure("austerity.fig2", experiment="austerity.rw_decisions", size=(6.4, 4.4))
def fig2(run, fig) -> None:
    """% of data used (left axis) and % wrong decisions (right axis) vs eps."""
    m = run.metrics()["decisions"]
    ax = fig.add_subplot()
    ax.plot(m["data_used"]["x"], m["data_used"]["y"], "o-", color="tab:blue", label="data used")
    ax.set_xlabel("ε")
    ax.set_ylabel("% of data used", color="tab:blue")
    ax.set_ylim(0, 105)
    ax2 = ax.twinx()
    ax2.plot(m["wrong"]["x"], m["wrong"]["y"], "s-", color="tab:red", label="wrong decisions")
    ax2.set_ylabel("% wrong accept/reject decisions", color="tab:red")
    ax2.set_ylim(bottom=0)
    ax.set_title("RW-MH, sequential test: " + _data_note(run), fontsize=9)


# ----------------------------------------------------------------------------------------------
# Figs 3 and 4


SCHEMA_RISK = {
    "data": _data_keys(),
    "model": MODEL,
    "hmc": HMC_KEYS,
    "sigma": Param(0.01, float, lo=0, lo_open=True, help="random-walk proposal std"),
    "m": Param(500, int, lo=2, help="minibatch size of the sequential test"),
    "test_block": Param(BLOCK_DEFAULT, int, lo=1,
                        help="rows per block of the sequential test's population (1: the paper's "
                             "per-point test; issue 16)"),
    "eps": Param([0.0, 0.01, 0.05, 0.1, 0.2], list, item=float, lo=0, hi=0.5, min_len=1),
    "chains": Param(8, int, lo=1, help="independent chains (risk = MSE over them)"),
    "seconds": Param(20.0, float, lo=0, lo_open=True, help="sampling wall time per eps"),
    "init": Param("zero", str, choices=INIT_CHOICES, help="start of every chain"),
    "block": Param(100, int, lo=1, help="draws per block (one curve point per block)"),
}


@experiment("austerity.rw_risk", schema=SCHEMA_RISK,
            help="Fig 3: risk of the predictive mean vs wall-clock time, RW-MH, several eps")
@one_blas_thread
def run_risk(ctx) -> None:
    p = ctx.params
    post, Xt, _yt, _name = load_problem(ctx, p["data"], p["model"])
    truth = _truth(ctx, post, Xt, p["hmc"])
    ctx.store.set_result("truth/pred_floor", float(truth["pred_floor"]))
    lap = _laplace(post) if p["init"] != "zero" else None
    Xtb = add_bias(Xt) if post.bias else Xt
    finals = {}
    for eps in p["eps"]:
        lab = f"eps={eps:g}"
        init = _init_theta(p["init"], post, ctx.rng("init"), p["chains"], lap)
        s = RandomWalkMH(post, p["chains"], sigma=p["sigma"], eps=eps, m=p["m"], init=init,
                         block=p["test_block"])
        ev = PredictiveRisk(lab, Xtb, truth["pred"], p["chains"])
        r = ctx.stream(lab, s, seconds=p["seconds"], evaluators=[ev], record=False,
                       rng=ctx.rng("sample", lab), block=p["block"])
        finals[eps] = ev.y[-1]
        ctx.store.write_metric("samples", lab, np.array(ev.x), np.array(ev.count),
                               x_label="wall-clock seconds", y_label="samples per chain")
        for k, v in (("samples", r.draws), ("seconds", r.seconds),
                     ("data_used", r.stats_mean["data_used"]),
                     ("accept", r.stats_mean["accept"]), ("final_risk", finals[eps])):
            ctx.store.set_result(f"{lab}/{k}", v)
        ctx.log(f"{lab}: T = {r.draws} samples/chain in {r.seconds:.1f} s, data used "
                f"{100 * r.stats_mean['data_used']:.1f}%, final risk {finals[eps]:.3g}")
    best = min(finals, key=finals.get)
    ctx.store.set_result("best_eps", best)
    ctx.store.set_result("min_risk_at_eps_gt_0", bool(best > 0))


@figure("austerity.fig3", experiment="austerity.rw_risk", size=(6.4, 4.8))
def fig3(run, fig) -> None:
    """Risk of the predictive mean vs sampling time, one line per eps (log scale)."""
    res = run.results()
    ax = fig.add_subplot()
    for lab, c in sorted(run.metrics().get("risk", {}).items(),
                         key=lambda kv: float(kv[0].split("=")[1])):
        eps = float(lab.split("=")[1])
        T = res.get(f"{lab}/samples", 0)
        ax.semilogy(c["x"], c["y"], label=f"{_eps_label(eps)}, T = {int(T):,}")
    floor = res.get("truth/pred_floor")
    ys = [c["y"].min() for c in run.metrics().get("risk", {}).values() if len(c["y"])]
    if floor is not None and np.isfinite(floor) and ys and floor > min(ys) / 100:
        ax.axhline(floor, color="0.5", ls=":", lw=1, label="HMC truth MC error")
    ax.set_xlabel("wall-clock seconds (sampling only)")
    ax.set_ylabel("risk of the predictive mean (log scale)")
    best = res.get("best_eps")
    ax.set_title(f"RW-MH, {_data_note(run)}\nlowest final risk at ε = {best}", fontsize=9)
    ax.legend(fontsize=7)


SCHEMA_MARGINALS = dict(SCHEMA_RISK)
SCHEMA_MARGINALS.update({
    "eps": Param([0.0, 0.01], list, item=float, lo=0, hi=0.5, min_len=1),
    "chains": Param(3, int, lo=1, help="independent runs drawn per panel"),
    "times": Param([5.0, 10.0, 20.0], list, item=float, lo=0, lo_open=True, min_len=1,
                   help="wall times of the panels (the budget is the largest)"),
    "dims": Param([0, 1], list, item=int, lo=0, min_len=2, help="the two coordinates shown"),
})
del SCHEMA_MARGINALS["seconds"]


@experiment("austerity.rw_marginals", schema=SCHEMA_MARGINALS,
            help="Fig 4: (θ1, θ2) marginals of RW-MH at three wall times vs the HMC truth")
@one_blas_thread
def run_marginals(ctx) -> None:
    p = ctx.params
    if len(p["dims"]) != 2:
        raise SpecError("give exactly two coordinates", "dims")
    post, Xt, _yt, _name = load_problem(ctx, p["data"], p["model"])
    if max(p["dims"]) >= post.d:
        raise SpecError(f"coordinates must be < d = {post.d}", "dims")
    truth = _truth(ctx, post, Xt, p["hmc"])
    ctx.store.write_array("truth/marginal", truth["samples"][:, p["dims"]].astype(np.float32))
    lap = _laplace(post) if p["init"] != "zero" else None
    budget = max(p["times"])
    for eps in p["eps"]:
        lab = f"eps={eps:g}"
        init = _init_theta(p["init"], post, ctx.rng("init"), p["chains"], lap)
        s = WithMarginal(RandomWalkMH(post, p["chains"], sigma=p["sigma"], eps=eps, m=p["m"],
                                      init=init, block=p["test_block"]), p["dims"])
        r = ctx.stream(lab, s, seconds=budget, record=("marginal",), rng=ctx.rng("sample", lab),
                       block=p["block"])
        ctx.store.set_result(f"{lab}/samples", r.draws)
        ctx.store.set_result(f"{lab}/data_used", r.stats_mean["data_used"])
        ctx.log(f"{lab}: T = {r.draws} samples/chain in {r.seconds:.1f} s")


@figure("austerity.fig4", experiment="austerity.rw_marginals", size=(10.0, 6.4))
def fig4(run, fig) -> None:
    """Rows: eps; columns: wall times; each chain's samples so far vs the HMC truth."""
    spec = run.spec
    times, dims = spec["times"], spec["dims"]
    labs = sorted([n for n in run.stream_names() if n.startswith("eps=")],
                  key=lambda s: float(s.split("=")[1]))
    truth = run.array("truth/marginal")
    axes = fig.subplots(len(labs), len(times), squeeze=False)
    mu, cov = truth.mean(0), np.cov(truth.T)
    ang = np.linspace(0, 2 * np.pi, 200)
    w, v = np.linalg.eigh(cov)
    ell = [mu + (v @ (k * np.sqrt(w)[:, None] * np.stack([np.cos(ang), np.sin(ang)]))).T
           for k in (1, 2)]
    lo = np.minimum(truth.min(0), mu - 3 * np.sqrt(np.diag(cov)))
    hi = np.maximum(truth.max(0), mu + 3 * np.sqrt(np.diag(cov)))
    for i, lab in enumerate(labs):
        x = run.stream(lab, "marginal")                          # (chain, draw, 2)
        tt = run.stream_time(lab)
        eps = float(lab.split("=")[1])
        for j, T in enumerate(times):
            ax = axes[i, j]
            k = int(np.searchsorted(tt, T, side="right"))
            ax.scatter(truth[:, 0], truth[:, 1], s=1, color="tab:blue", alpha=0.15)
            for c in range(x.shape[0]):
                ax.plot(x[c, :k, 0], x[c, :k, 1], color="tab:red", lw=0.4, alpha=0.6)
            for e in ell:                    # on top: long runs would otherwise hide the truth
                ax.plot(e[:, 0], e[:, 1], color="tab:blue", lw=1.2, zorder=3)
            ax.set_title(f"{_eps_label(eps)}, {T:g} s, T = {k:,}", fontsize=8)
            span = np.vstack([lo, hi, x[:, :k].reshape(-1, 2).min(0) if k else lo,
                              x[:, :k].reshape(-1, 2).max(0) if k else hi])
            ax.set_xlim(span[:, 0].min(), span[:, 0].max())
            ax.set_ylim(span[:, 1].min(), span[:, 1].max())
            ax.tick_params(labelsize=6)
            if i == len(labs) - 1:
                ax.set_xlabel(f"θ{dims[0] + 1}", fontsize=8)
            if j == 0:
                ax.set_ylabel(f"θ{dims[1] + 1}", fontsize=8)
    fig.suptitle("RW-MH paths (red, one per chain) vs HMC truth (blue: samples, 1σ/2σ "
                 "ellipses); " + _data_note(run), fontsize=9)


# ----------------------------------------------------------------------------------------------
# Figs 5 and 6


SCHEMA_SGLD = {
    "data": _data_keys("kdd99", classes=None, pca=None),
    "model": {"precision": Param(10.0, float, lo=0, lo_open=True),
              "bias": Param(False, bool, help="the paper has 41 parameters: no intercept")},
    "hmc": HMC_KEYS,
    "step_size": Param(5e-4, float, lo=0, lo_open=True, help="SGLD step α"),
    "batch": Param(500, int, lo=1, help="SGLD gradient minibatch"),
    "m": Param(500, int, lo=2, help="minibatch size of the sequential test"),
    "test_block": Param(BLOCK_DEFAULT, int, lo=1,
                        help="rows per block of the sequential test's population (1: the paper's "
                             "per-point test; issue 16)"),
    "eps": Param([0.01, 0.05, 0.1], list, item=float, lo=0, hi=0.5,
                 help="tolerances of the corrected samplers"),
    "include_sgld": Param(True, bool, help="run uncorrected SGLD"),
    "include_mh": Param(True, bool, help="run SGLD corrected by the exact MH test"),
    "chains": Param(8, int, lo=1),
    "seconds": Param(20.0, float, lo=0, lo_open=True, help="sampling wall time per sampler"),
    "init": Param("map", str, choices=INIT_CHOICES, help="start of every chain"),
    "block": Param(200, int, lo=1, help="draws per block (one curve point per block)"),
}


@experiment("austerity.sgld_variance", schema=SCHEMA_SGLD,
            help="Figs 5-6: L1 error of the posterior variance vs wall time, SGLD proposals")
@one_blas_thread
def run_sgld(ctx) -> None:
    p = ctx.params
    post, Xt, _yt, _name = load_problem(ctx, p["data"], p["model"])
    truth = _truth(ctx, post, Xt[:10], p["hmc"])
    ctx.store.set_result("truth/var_floor", float(truth["var_floor"]))
    ctx.store.set_result("truth/var_l1_norm", float(np.abs(truth["var"]).sum()))
    lap = _laplace(post) if p["init"] != "zero" else None
    runs = []
    if p["include_sgld"]:
        runs.append(("SGLD", {"correction": "none"}))
    if p["include_mh"]:
        runs.append(("MH", {"correction": "exact"}))
    runs += [(f"eps={e:g}", {"correction": "sequential", "eps": e}) for e in p["eps"]]
    if not runs:
        raise SpecError("nothing to run: enable include_sgld / include_mh or give eps", "eps")
    for lab, kw in runs:
        init = _init_theta(p["init"], post, ctx.rng("init"), p["chains"], lap)
        s = SGLD(post, p["chains"], p["step_size"], batch=p["batch"], m=p["m"], init=init,
                 block=p["test_block"], **kw)
        ev = VarianceL1(lab, truth["var"], p["chains"])
        r = ctx.stream(lab, s, seconds=p["seconds"], evaluators=[ev], record=False,
                       rng=ctx.rng("sample", lab), block=p["block"])
        for k, v in (("samples", r.draws), ("seconds", r.seconds),
                     ("data_used", r.stats_mean["data_used"]),
                     ("accept", r.stats_mean["accept"]), ("final_l1", ev.y[-1])):
            ctx.store.set_result(f"{lab}/{k}", v)
        ctx.log(f"{lab}: T = {r.draws} in {r.seconds:.1f} s, acceptance "
                f"{r.stats_mean['accept']:.3f}, test data {100 * r.stats_mean['data_used']:.1f}%,"
                f" final L1 {ev.y[-1]:.3g}")


@figure("austerity.fig5_6", experiment="austerity.sgld_variance", size=(6.4, 4.8))
def fig5_6(run, fig) -> None:
    """L1 error in the posterior variance vs sampling time, one line per sampler."""
    res = run.results()
    ax = fig.add_subplot()
    for lab, c in run.metrics().get("variance_l1", {}).items():
        T = int(res.get(f"{lab}/samples", 0))
        acc = res.get(f"{lab}/accept", float("nan"))
        ax.semilogy(c["x"], c["y"], label=f"{lab}, T = {T:,} (acc {acc:.2f})")
    floor = res.get("truth/var_floor")
    ys = [c["y"].min() for c in run.metrics().get("variance_l1", {}).values() if len(c["y"])]
    if floor is not None and np.isfinite(floor) and ys and floor > min(ys) / 100:
        ax.axhline(floor, color="0.5", ls=":", lw=1, label="HMC truth MC error")
    total = res.get("truth/var_l1_norm")
    if total is not None and np.isfinite(total):
        # a chain that never moves estimates every variance as 0: its error is Σ var
        ax.axhline(total, color="0.3", ls="--", lw=0.8,
                   label=f"Σ var = {total:.3g} (error of a chain that never moves)")
    frozen = [lab for lab in run.metrics().get("variance_l1", {})
              if res.get(f"{lab}/accept", 1.0) < 0.01]
    if frozen:
        fig.subplots_adjust(bottom=0.15)
        fig.text(0.02, 0.01, f"acceptance < 1%: {', '.join(frozen)}", fontsize=7, va="bottom")
    ax.set_xlabel("wall-clock seconds (sampling only)")
    ax.set_ylabel("L1 error of the posterior variance (log scale)")
    ax.set_title(f"SGLD proposals, step size {run.spec['step_size']:g}; data: "
                 f"{res.get('data/name', '?')}, N = {res.get('data/N', '?')}"
                 + " (paper: the 10% set, 494,021 rows)",
                 fontsize=9)
    ax.legend(fontsize=7)
