"""The logistic-regression target of Figs 1-6: the data problem, where chains start, the HMC truth.

Data: logistic regression on two classes of an image set (PCA fitted on train) or on KDD99.
``data.name: auto`` means Fashion-MNIST 7 vs 9 (sneaker vs ankle boot, 12,000 training points,
the paper's scale) when installed, else mnist-5k 7 vs 9 (1,000 training points); the data used
is recorded in /results (``data/name``).  Training set = the data layer's train + valid splits.

Ground truth: HMC (Laplace mass matrix, started at the mode) computed by :func:`hmc_truth`,
stored in the run under /stages/hmc_truth and cached across runs in
``$MIXLAB_DATA_DIR/cache/austerity-truth/<sha1>.npz`` (default ``~/.cache/mixlab/...``), the
key hashing the training data, prior, bias flag and HMC settings; the HMC seed is derived from
the same hash, so every run on the same posterior shares one truth.

The ``logistic`` sampler family's factories receive a :class:`LogisticTarget`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from ..errors import DataError, SpecError
from ..spec.schema import Param
from .hmc import HMC
from .limits import CHAINS_MAX, HMC_SAMPLES_MAX, SEED_MAX, STEPS_MAX
from .logistic import LogisticPosterior, add_bias, map_estimate, neg_hessian

# ----------------------------------------------------------------------------------------------
# spec pieces


def data_keys(name="auto", classes=None, pca=None, subsample=None):
    """The ``data`` block of the logistic-regression experiments: a registered data set
    (``name``, ``classes``, ``pca``) or the user's own table (``file``, ``label``, ...)."""
    from ..data import NAMES
    return {
        "name": Param(name, str, choices=("auto",) + tuple(NAMES),
                      help="data set; auto = fashion-mnist if installed, else mnist-5k (not "
                           "with file)"),
        "classes": Param(list(classes) if classes else None, list, item=int, lo=0, hi=100_000,
                         nullable=True,
                         help="two labels of an image set, relabelled 0/1 in this order; null "
                              "for kdd99 and for a file (whose label column is 0/1)"),
        "pca": Param(pca, int, lo=1, hi=100_000, nullable=True,
                     help="PCA components fitted on the training rows (null: the features)"),
        "subsample": Param(subsample, int, lo=2, hi=STEPS_MAX, nullable=True,
                           help="random subset of this many training rows"),
        "subsample_seed": Param(0, int, lo=0, hi=SEED_MAX,
                                help="seed of the subset (not the run seed, so that specs "
                                     "share one posterior and one cached truth)"),
        "test_max": Param(None, int, lo=1, hi=STEPS_MAX, nullable=True,
                          help="use at most this many test points"),
        "file": Param(None, str, nullable=True,
                      help="your own table instead of a data set: .csv (header row), .npz (one "
                           "array per column) or .npy (2-D; columns named 0, 1, ...)"),
        "label": Param(None, str, nullable=True, help="the file's 0/1 label column"),
        "features": Param(None, list, item=str, nullable=True, min_len=1,
                          help="the file's feature columns, in order (null: every other column)"),
        "standardize": Param(True, bool,
                             help="centre and scale the file's features by the training rows' "
                                  "mean and standard deviation"),
        "test_file": Param(None, str, nullable=True,
                           help="test rows for the file (same columns); else test_fraction"),
        "test_fraction": Param(None, float, lo=0, hi=1, lo_open=True, hi_open=True,
                               nullable=True,
                               help="fraction of the file's rows held out as test points "
                                    "(null: 0.2 unless test_file is given)"),
        "split_seed": Param(0, int, lo=0, hi=SEED_MAX,
                            help="seed of the file's train/test split"),
        "synthetic": Param(None, dict, nullable=True,
                           help="a synthetic data set instead: {n: ROWS, d: 50, seed: 0, "
                                "signal: 1.0, test: 1000} (mixlab.austerity.synthetic; the "
                                "generating θ* is recorded as data/theta_star)"),
    }


MODEL = {
    "precision": Param(10.0, float, lo=0, lo_open=True, help="Gaussian prior precision"),
    "bias": Param(True, bool, help="append a constant feature (penalised by the same prior)"),
}

HMC_KEYS = {
    "chains": Param(4, int, lo=1, hi=CHAINS_MAX, help="HMC chains for the ground truth"),
    "burn_in": Param(200, int, lo=0, hi=HMC_SAMPLES_MAX, help="HMC steps discarded"),
    "samples": Param(2000, int, lo=10, hi=HMC_SAMPLES_MAX,
                      help="HMC steps kept per chain (held in memory: chains x samples x d)"),
    "step_size": Param(0.4, float, lo=0, lo_open=True,
                       help="leapfrog step (in Laplace-whitened units)"),
    "n_leapfrog": Param(10, int, lo=1, hi=10_000, help="leapfrog steps per HMC step"),
    "keep": Param(4000, int, lo=10, hi=HMC_SAMPLES_MAX, help="thinned truth samples stored for figures"),
}


INIT_CHOICES = ("zero", "map", "laplace")


def init_theta(kind: str, post, rng, chains: int, laplace=None) -> np.ndarray:
    """(chains, d) starts: zeros, the mode, or draws from the Laplace approximation."""
    if kind == "zero":
        return np.zeros((chains, post.d))
    mode, H = laplace if laplace is not None else laplace_approx(post)
    if kind == "map":
        return np.tile(mode, (chains, 1))
    L = np.linalg.cholesky(np.linalg.inv(H))
    return mode + rng.standard_normal((chains, post.d)) @ L.T


def laplace_approx(post: LogisticPosterior) -> tuple[np.ndarray, np.ndarray]:
    """(mode (d,), negative Hessian of the log posterior at the mode (d, d))."""
    mode = map_estimate(post)
    return mode, neg_hessian(post, mode)


# ----------------------------------------------------------------------------------------------
# the target handed to sampler factories


class LogisticTarget:
    """A Bayesian logistic-regression posterior and where its chains start.

    ``posterior``: :class:`mixlab.austerity.logistic.LogisticPosterior` (``log_posterior``,
    ``grad_log_posterior(theta (C, d), idx=None | (n,) | (C, n))``, ``loglik_terms``, ``N``, ``d``);
    ``theta0`` (chains, d) float64: the start of every chain (the spec's ``init``);
    ``laplace()`` -> (mode (d,), negative Hessian at the mode (d, d)), computed once."""

    def __init__(self, posterior: LogisticPosterior, theta0: np.ndarray,
                 laplace: tuple[np.ndarray, np.ndarray] | None = None):
        self.posterior = posterior
        self.theta0 = np.asarray(theta0, dtype=np.float64)
        self._laplace = laplace

    def laplace(self) -> tuple[np.ndarray, np.ndarray]:
        if self._laplace is None:
            self._laplace = laplace_approx(self.posterior)
        return self._laplace


def start_target(ctx, p: dict, post: LogisticPosterior) -> LogisticTarget:
    """The posterior with every chain's start (the same start for every series, as the paper)."""
    lap = laplace_approx(post) if p["init"] != "zero" else None
    return LogisticTarget(post, init_theta(p["init"], post, ctx.rng("init"), p["chains"], lap),
                          lap)


# ----------------------------------------------------------------------------------------------
# data


def load_problem(ctx, dspec: dict, mspec: dict):
    """-> (post, X_test (M, d0) float32, y_test (M,), data name).  Records data/* results
    (``data/columns``: the name of every coordinate of θ, in order)."""
    from ..data import load
    if dspec["synthetic"] is not None:
        return load_synthetic(ctx, dspec, mspec)
    if dspec["file"] is not None:
        X, y, Xt, yt, name, columns = load_user_table(ctx, dspec)
        return _posterior(ctx, dspec, mspec, X, y, Xt, yt, name, columns)
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
    Xt, yt = ds.test.X, ds.test.y
    columns = ([f"pc{j + 1}" for j in range(X.shape[1])] if dspec["pca"] is not None
               else [f"x{j}" for j in range(X.shape[1])])
    return _posterior(ctx, dspec, mspec, X, y, Xt, yt, name, columns)


def _posterior(ctx, dspec, mspec, X, y, Xt, yt, name, columns):
    """Subsample, cap the test set, build the posterior, record data/* results."""
    if dspec["subsample"] is not None and dspec["subsample"] < X.shape[0]:
        rng = np.random.default_rng(dspec["subsample_seed"])
        idx = np.sort(rng.choice(X.shape[0], dspec["subsample"], replace=False))
        X, y = X[idx], y[idx]
    if dspec["test_max"] is not None:
        Xt, yt = Xt[:dspec["test_max"]], yt[:dspec["test_max"]]
    post = LogisticPosterior(X, y, precision=mspec["precision"], bias=mspec["bias"])
    ctx.store.set_result("data/name", name)
    ctx.store.set_result("data/N", int(post.N))
    ctx.store.set_result("data/d", int(post.d))
    ctx.store.set_result("data/test_points", int(Xt.shape[0]))
    ctx.store.set_result("data/columns", list(columns) + (["bias"] if post.bias else []))
    ctx.log(f"data {name}: N = {post.N}, d = {post.d} (bias {'on' if post.bias else 'off'}), "
            f"{Xt.shape[0]} test points")
    return post, np.asarray(Xt, np.float32), yt, name


def check_data_keys(dspec: dict) -> None:
    """The ``data`` keys that cannot go together: data.synthetic or data.file replace the named
    data set and its image-set keys; a file needs its label column (SpecError naming the key;
    called at start, see mixlab.austerity.checks, and again by the loaders)."""
    if dspec.get("synthetic") is not None:
        for key, fix in (("file", "drop data.file"), ("classes", "set data.classes: null"),
                         ("pca", "set data.pca: null"),
                         ("subsample", "set data.subsample: null")):
            if dspec[key] is not None:
                raise SpecError(f"does not apply to data.synthetic: {fix}, or drop "
                                f"data.synthetic", f"data.{key}")
        if dspec["name"] != "auto":
            raise SpecError(f"is {dspec['name']!r} but data.synthetic replaces the named data "
                            f"set: set data.name: auto with data.synthetic", "data.name")
        return
    if dspec["file"] is None:
        return
    if dspec["name"] != "auto":
        raise SpecError(f"is {dspec['name']!r} (given, or this experiment's default) but "
                        f"data.file replaces the named data set: set data.name: auto with "
                        f"data.file, or drop data.file", "data.name")
    if dspec["classes"] is not None:
        raise SpecError("applies to the image sets; a file's label column must already be 0/1 "
                        "(set data.classes: null)", "data.classes")
    if dspec["label"] is None:
        raise SpecError("is required with data.file: the name of the 0/1 label column",
                        "data.label")
    if dspec["test_file"] is not None and dspec["test_fraction"] is not None:
        raise SpecError("give data.test_file or data.test_fraction, not both",
                        "data.test_fraction")


def load_synthetic(ctx, dspec: dict, mspec: dict):
    """``data.synthetic`` (see mixlab.austerity.synthetic): the posterior on the generated rows,
    with data/theta_star (the generating parameters; 0 for the bias column) recorded."""
    from .synthetic import generate, synthetic_spec
    check_data_keys(dspec)
    spec = synthetic_spec(dspec["synthetic"])
    syn = generate(spec)
    post, Xt, yt, name = _posterior(ctx, dspec, mspec, syn.X, syn.y, syn.X_test, syn.y_test,
                                    "synthetic", [f"x{j}" for j in range(spec["d"])])
    star = list(syn.theta_star) + ([0.0] if post.bias else [])
    ctx.store.set_result("data/theta_star", [float(v) for v in star])
    post.synthetic = spec                      # the truth's cache keys on this definition
    return post, Xt, yt, name


def load_user_table(ctx, dspec: dict):
    """``data.file`` (see mixlab.data.user_tables): -> X, y, X_test, y_test (standardised and
    PCA-projected with the training rows' statistics), the data name, the column names."""
    from ..data.transforms import pca_apply, pca_fit
    from ..data.user_tables import read_table, split_and_standardize
    check_data_keys(dspec)
    train = read_table(dspec["file"], dspec["label"], dspec["features"], "data.file")
    test = (read_table(dspec["test_file"], dspec["label"], train.columns, "data.test_file")
            if dspec["test_file"] is not None else None)
    frac = dspec["test_fraction"] if dspec["test_fraction"] is not None else 0.2
    X, y, Xt, yt = split_and_standardize(train, test, frac, dspec["standardize"],
                                         dspec["split_seed"])
    columns = list(train.columns)
    if dspec["pca"] is not None:
        try:
            mean, comps, _ = pca_fit(X, dspec["pca"])
        except SpecError as exc:
            raise SpecError(str(exc).split(": ", 1)[-1], "data.pca") from None
        X, Xt = pca_apply(X, mean, comps), pca_apply(Xt, mean, comps)
        columns = [f"pc{j + 1}" for j in range(dspec["pca"])]
    ctx.store.set_result("data/file", str(train.path))
    ctx.store.set_result("data/file_sha256", train.sha256)
    if test is not None:
        ctx.store.set_result("data/test_file", str(test.path))
        ctx.store.set_result("data/test_file_sha256", test.sha256)
    return X, y, Xt, yt, train.path.name, columns


def record_truth(ctx, truth: dict) -> None:
    """``truth_mean`` and ``truth_sd`` (lists in the order of ``data/columns``) as results."""
    ctx.store.set_result("truth_mean", [float(v) for v in truth["mean"]])
    ctx.store.set_result("truth_sd", [float(v) for v in np.sqrt(truth["var"])])


# ----------------------------------------------------------------------------------------------
# ground truth


def truth_key(post: LogisticPosterior, X_test: np.ndarray, hspec: dict) -> str:
    """The cache key of a posterior's truth: its definition for synthetic data (the rows are a
    function of it), else a hash of the data, the test points, the prior and the settings."""
    synthetic = getattr(post, "synthetic", None)
    if synthetic is not None and X_test.shape[0] == synthetic["test"]:
        from .synthetic import definition_key
        return definition_key(synthetic, post.precision, post.bias, sorted(hspec.items()))
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
    mode, H = laplace_approx(post)

    def logp_grad(th):
        return post.log_posterior(th), post.grad_log_posterior(th)

    C = hspec["chains"]
    init = init_theta("laplace", post, rng, C, laplace=(mode, H))
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
            pred_sum[0 if c < half or C == 1 else 1] += sigmoid(z).sum(0, dtype=np.float64)
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


def truth_once(ctx, post, X_test, hspec) -> dict:
    """The HMC truth of this posterior, computed (or read from the cache) once per run."""
    return ctx.once("hmc_truth", lambda: hmc_truth(post, X_test, hspec, log=ctx.log))


def sigmoid(a: np.ndarray) -> np.ndarray:
    """Stable logistic function, elementwise."""
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e))
