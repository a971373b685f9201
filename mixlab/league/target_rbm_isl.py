"""The league's full-resolution USPS RBM target, scored by the indirect sampling likelihood.

The model (Breuleux, Bengio & Vincent 2011, §5): an RBM with 256 visible units trained by FPCD
on the binarised 16x16 USPS training digits (mixlab.rbm.train, one BLAS thread, the definition's
seed). 2^256 visible states cannot be enumerated, so there is no exact truth: the samplers are
scored as in the paper's Fig 2, by the ISL (ALGORITHMS.md §A.5) of the held-out USPS test
digits under a product-of-Bernoulli kernel density on the draws,

    ISL(S) = mean_t [logsumexp_n log k(x_t | s_n) − log N],   k(x|s) = β^{#agree} (1−β)^{#disagree},

β chosen among the definition's grid by the validation digits' ISL at each sample count (the
streaming evaluator mixlab.rbm.isl.ISLEvaluator, exact Hamming histograms of the binary draws).

Reference and error: the reference ISL is that of the training digits themselves used as the
kernel centres (the paper's horizontal "train set" line; mixlab.rbm.isl.isl_of_centres, the
same evaluator, the same bandwidth choice), computed once with the trained weights and cached by
definition (mixlab.league.truth). The yardstick's error is

    error(S) = ISL(training digits) − ISL(S)     (nats per test digit; lower is better),

so a sampler whose draws were the training digits would score 0 at N = 6,291 draws. The error
can fall below 0: a sampler's draws may cover the test digits better than the training digits
do (the paper reports rates-FPCD ending 1.5 nats above the training-set line). The reference is
data, not the model's distribution: the error measures how well the draws cover the test
digits, which mixes the sampler's mixing with the model's fit (the paper's §1 says so), so the
target is reported with ``exact=False`` and no bias flag.
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecError
from ..runfile.checkpoint import AttributeState
from .cost import WORK_KEY
from .truth import cached_truth
from .yardstick import record_block_end

#: ISL sample counts that are never reached: the yardstick reads the ISL out where it wants it
_NO_RECORD = np.iinfo(np.int64).max // 2


def definition(model_seed: int, hidden: int = 200, epochs: int = 15) -> dict:
    """The definition of a USPS 16x16 ISL target: the data, the FPCD trainer of the paper's
    USPS model (the keys of mixlab's ``rates_fpcd/fig2`` spec) and the ISL's sets and grid."""
    return {"data": "usps", "binarize": 0.5, "max_train": None, "hidden": hidden,
            "trainer": "fpcd", "epochs": epochs, "lr": 0.05, "batch_size": 100,
            "fast_lr": 0.05, "fast_decay": 0.95, "model_seed": model_seed,
            "yardstick": "isl", "test_max": None, "valid_max": None,
            "beta_n": 20, "beta_lo": 0.55, "beta_hi": 0.9999}


def betas(d: dict) -> np.ndarray:
    """The candidate Bernoulli-kernel β's of a definition (mixlab.rbm.isl.default_betas)."""
    from ..rbm.isl import default_betas

    return default_betas(int(d["beta_n"]), float(d["beta_lo"]), float(d["beta_hi"]))


def isl_sets(d: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(train (N, 256), test (n_t, 256), valid (n_v, 256))`` float32 in {0, 1}: the
    definition's USPS splits, binarised, cut to ``max_train``, ``test_max``, ``valid_max``."""
    from ..data import load

    mt = d["max_train"]
    ds = load(str(d["data"]), binarize=float(d["binarize"]),
              max_train=None if mt is None else int(mt))
    cut = (lambda X, n: X if n is None else X[:int(n)])
    return tuple(np.asarray(X, np.float32) for X in
                 (ds.train.X, cut(ds.test.X, d["test_max"]), cut(ds.valid.X, d["valid_max"])))


class ISLYardstick(AttributeState):
    """The error ``reference − ISL(draws so far)`` of a stream, the league's yardstick contract
    (:class:`~mixlab.league.yardstick.MarginalYardstick`'s attributes and readers).

    ``X_test (n_t, V)``, ``X_valid (n_v, V)``: binary evaluation sets; ``reference``: the
    reference ISL (nats); ``bandwidths (n_bw,)``: candidate β. Fed blocks ``{key: (chains,
    n_draws, V) bool, "league_work": (chains, n_draws)}``, the draws enter the ISL in draw-major
    order (draw t of every chain, then draw t+1), and the error is kept at every block end,
    exactly at the draw where the cumulative work first reaches each work mark, and at the
    first block end at or after each second mark. There is no per-site estimate here, so no
    MCSE: :meth:`mcse` and :meth:`chain_mcse` are None (the target has no bias flag)."""

    state_attrs = ("draws", "work", "chains", "xs_sec", "xs_work", "ys", "work_marks_err",
                   "work_marks_at", "sec_marks_err")

    def __init__(self, X_test: np.ndarray, X_valid: np.ndarray, reference: float,
                 bandwidths: np.ndarray, key: str = "samples", work_marks=(), second_marks=(),
                 metric: str = "error_vs_seconds", series: str = "sampler"):
        from ..rbm.isl import ISLEvaluator

        self.isl = ISLEvaluator(X_test, X_valid, key=key, bandwidths=bandwidths,
                                points=[_NO_RECORD])
        self.reference = float(reference)
        self.truth = np.array([self.reference])
        self.key, self.metric, self.series = key, metric, series
        self.x_label, self.y_label = "sampling seconds", "ISL(training digits) − ISL (nats)"
        self.work_marks = [float(m) for m in work_marks]
        self.second_marks = [float(m) for m in second_marks]
        self.draws, self.work, self.chains = 0, 0.0, 0
        self.xs_sec: list[float] = []
        self.xs_work: list[float] = []
        self.ys: list[float] = []
        self.work_marks_err = [float("nan")] * len(self.work_marks)
        self.work_marks_at = [float("nan")] * len(self.work_marks)
        self.sec_marks_err = [float("nan")] * len(self.second_marks)

    # -- checkpoints: the ISL evaluator's arrays and counters under an ``isl.`` prefix ---------
    def state(self) -> dict:
        out = super().state()
        out.update({f"isl.{k}": v for k, v in self.isl.state().items()})
        return out

    def load_state(self, state: dict) -> None:
        super().load_state(state)
        self.isl.load_state({k[4:]: v for k, v in state.items() if k.startswith("isl.")})

    # -- feeding -------------------------------------------------------------------------------
    def isl_now(self) -> float:
        """Test ISL (nats) of the draws so far at the validation-chosen β."""
        t = self.isl.table()
        return float(t["test"][-1, int(t["chosen"][-1])])

    def update(self, draws: dict, count: int, seconds: float) -> None:
        x = np.asarray(draws[self.key])
        K, B = x.shape[:2]
        if x.dtype != bool:
            raise ValueError(f"the ISL yardstick needs binary draws '{self.key}' (bool), got "
                             f"{x.dtype}")
        self.chains = K
        S = np.swapaxes(x, 0, 1).reshape(K * B, -1)                      # draw-major (K B, V)
        w = np.asarray(draws.get(WORK_KEY, np.full((K, B), np.nan)), np.float64).sum(axis=0)
        cum_work = self.work + np.cumsum(w)                              # (B,)
        done = 0                                                         # draws of S fed
        for j, mark in enumerate(self.work_marks):
            if np.isnan(self.work_marks_err[j]) and np.isfinite(cum_work[-1]) \
                    and cum_work[-1] >= mark:
                b = int(np.argmax(cum_work >= mark))
                if b + 1 > done:
                    self.isl.add_samples(S[K * done:K * (b + 1)])
                    done = b + 1
                self.work_marks_err[j] = self.reference - self.isl_now()
                self.work_marks_at[j] = float(cum_work[b])
        if done < B:
            self.isl.add_samples(S[K * done:])
        self.draws += B
        self.work = float(cum_work[-1])
        record_block_end(self, seconds, self.reference - self.isl_now())

    # -- reading -------------------------------------------------------------------------------
    def estimate(self) -> np.ndarray:
        """The test ISL of the draws so far ``(1,)`` (NaN before any draw)."""
        return np.array([self.isl_now() if self.draws else float("nan")])

    def value(self) -> float:
        return self.ys[-1] if self.ys else float("nan")

    def mcse(self) -> None:
        return None

    def chain_mcse(self) -> None:
        return None

    def curve(self):
        return np.asarray(self.xs_sec, float), np.asarray(self.ys, float), None


def reach_error(d: dict, X: np.ndarray, X_test: np.ndarray, X_valid: np.ndarray,
                bandwidths: np.ndarray, reference: float) -> float:
    """The stated error (mixlab.league.reach): ``reference − ISL`` of :data:`~mixlab.league.
    reach.REACH_DRAWS` training digits (a subset drawn with the definition's seed) as the
    centres, the stand-in for that many ideal draws; cached by definition (no training)."""
    from .reach import REACH_DRAWS, stated

    n = min(REACH_DRAWS, len(X))

    def compute() -> dict:
        from ..rbm.isl import isl_of_centres

        pick = np.random.default_rng(int(d["model_seed"])).choice(len(X), n, replace=False)
        got = isl_of_centres(X[np.sort(pick)].astype(bool), X_test, X_valid,
                             bandwidths=bandwidths)
        return {"isl": np.array(got["isl"])}

    isl = float(cached_truth("rbm", {**d, "reach_centres": n}, compute)["isl"])
    return stated(reference - isl)


def build_rbm_isl(d: dict, instance_cls):
    """The :class:`~mixlab.league.targets.Instance` of a USPS ISL definition: the trained RBM
    (its weights and the reference ISL from the truth cache), binary draws from chains started
    at random training digits, the ISL yardstick and the RBM summaries for ESS."""
    from ..rbm.model import RBM
    from ..rbm.samplers import compute_rates
    from ..rbm.summaries import summarizer
    from ..rbm.target import RBMTarget

    try:
        X, Xt, Xv = isl_sets(d)
        hidden, beta = int(d["hidden"]), betas(d)
        train_keys = {"method": str(d["trainer"]), "epochs": int(d["epochs"]),
                      "lr": float(d["lr"]), "batch_size": int(d["batch_size"])}
        if d["trainer"] == "fpcd":
            train_keys.update(fast_lr=float(d["fast_lr"]), fast_decay=float(d["fast_decay"]))
        seed = int(d["model_seed"])
    except (KeyError, TypeError, ValueError) as exc:
        raise SpecError(f"an RBM ISL target needs data, binarize, max_train, hidden, trainer, "
                        f"epochs, lr, batch_size, fast_lr, fast_decay, model_seed, test_max, "
                        f"valid_max, beta_n, beta_lo and beta_hi ({exc})", "target") from None

    def compute() -> dict:
        from threadpoolctl import threadpool_limits

        from ..rbm.isl import isl_of_centres
        from ..rbm.train import train

        with threadpool_limits(1):       # the same weights however many BLAS threads there are
            rbm, _ = train(None, X, None, hidden=hidden, rng=np.random.default_rng(seed),
                           monitor=False, **train_keys)
        ref = isl_of_centres(X.astype(bool), Xt, Xv, bandwidths=beta)
        return {"W": np.asarray(rbm.W, np.float64), "b": np.asarray(rbm.b, np.float64),
                "c": np.asarray(rbm.c, np.float64), "reference_isl": ref["isl"],
                "reference_se": ref["se"], "reference_beta": ref["bandwidth"]}

    t = cached_truth("rbm", d, compute)
    rbm = RBM(t["W"].astype(np.float32), t["b"].astype(np.float32), t["c"].astype(np.float32))
    target = RBMTarget(rbm.W, rbm.b, rbm.c, train_X=X, rates=compute_rates(rbm, X),
                       init="data", emit="binary", shape=(16, 16))
    ref = float(t["reference_isl"])
    return instance_cls(
        target=target,
        truth={"reference_isl": np.array(ref), "reference_se": t["reference_se"],
               "reference_beta": t["reference_beta"]},
        yardstick=lambda work_marks=(), second_marks=(), series="sampler": ISLYardstick(
            Xt, Xv, ref, beta, key="samples", work_marks=work_marks,
            second_marks=second_marks, series=series),
        summarize=summarizer(rbm),
        truth_source=f"reference ISL of the {len(X)} training digits as kernel centres "
                     f"({ref:.2f} nats on {len(Xt)} test digits, beta chosen on {len(Xv)} "
                     f"validation digits); not exact",
        exact=False, yardstick_name="ISL(training digits) − ISL(draws), nats per test digit",
        reach_error=reach_error(d, X, Xt, Xv, beta, ref))
