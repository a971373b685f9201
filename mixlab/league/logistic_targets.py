"""The league's logistic-regression targets (definitions in mixlab.league.targets): the
posterior, its chains' starts and the HMC reference truth, and the moment yardstick.

:class:`MomentYardstick` is :class:`~mixlab.league.yardstick.MarginalYardstick` over the
features ``[θ, θ²]`` of a draw ``θ (d,)``: from the pooled means it forms the posterior mean
``m̂`` and standard deviation ``ŝ`` and scores ``mean_j (|m̂_j − m_j| + |ŝ_j − s_j|) / (2 s_j)``
against the HMC truth ``(m, s)``.
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecError
from .reach import moment_reach
from .yardstick import MarginalYardstick


class MomentYardstick(MarginalYardstick):
    """Posterior mean and sd error in posterior sd units (truth ``mean (d,)``, ``sd (d,)``)."""

    def __init__(self, mean: np.ndarray, sd: np.ndarray, **kw):
        self.m, self.s = np.asarray(mean, np.float64), np.asarray(sd, np.float64)
        super().__init__(np.concatenate([self.m, self.m ** 2 + self.s ** 2]),
                         features=lambda th: np.concatenate([th, th * th], axis=-1),
                         y_label="mean/sd error (posterior sd units)", **kw)

    def _error(self, est: np.ndarray) -> float:
        d = self.m.size
        mean = est[:d]
        sd = np.sqrt(np.maximum(est[d:] - mean ** 2, 0.0))
        return float(np.mean((np.abs(mean - self.m) + np.abs(sd - self.s)) / (2 * self.s)))


def _data(d: dict):
    """(X (N, d0) float32, y (N,), X_test, synthetic definition or None)."""
    if d["data"] == "synthetic":
        from ..austerity.synthetic import generate, synthetic_spec

        spec = synthetic_spec(dict(d["synthetic"]))
        syn = generate(spec)
        return syn.X, syn.y, syn.X_test, spec
    from ..data import load

    ds = load(str(d["data"]), classes=d.get("classes"), pca=d.get("pca"))
    parts = [s for s in (ds.train, ds.valid) if s is not None and s.n > 0]
    X = np.concatenate([s.X for s in parts])
    y = np.concatenate([s.y for s in parts])
    if d.get("subsample") is not None and int(d["subsample"]) < X.shape[0]:
        rng = np.random.default_rng(int(d["model_seed"]))
        idx = np.sort(rng.choice(X.shape[0], int(d["subsample"]), replace=False))
        X, y = X[idx], y[idx]
    return X, y, ds.test.X, None


def build_logistic(d: dict, instance_cls):
    from ..austerity.logistic import LogisticPosterior
    from ..austerity.summaries import theta_summaries
    from ..austerity.target_logistic import LogisticTarget, hmc_truth, init_theta, laplace_approx

    try:
        X, y, Xt, synthetic = _data(d)
        post = LogisticPosterior(X, y, precision=float(d["precision"]), bias=bool(d["bias"]))
        Xt = np.asarray(Xt[:int(d["test_max"])], np.float32)
        hspec = dict(d["hmc"])
    except (KeyError, TypeError) as exc:
        raise SpecError(f"a logistic target needs data, precision, bias, test_max, hmc and "
                        f"model_seed ({exc})", "target") from None
    if synthetic is not None:
        post.synthetic = synthetic            # the HMC truth's cache keys on the definition
    from .truth import truth_lock

    with truth_lock("logistic", d):           # computed once when cells run at once
        truth = hmc_truth(post, Xt, hspec, log=lambda *_: None)
    mean, sd = truth["mean"], np.sqrt(truth["var"])
    lap = laplace_approx(post)

    def make_target(chains: int) -> LogisticTarget:
        """The posterior with ``chains`` starts drawn from the Laplace approximation."""
        rng = np.random.default_rng(int(d["model_seed"]))
        return LogisticTarget(post, init_theta("laplace", post, rng, chains, lap), lap)

    return instance_cls(
        target=make_target, truth={"mean": mean, "sd": sd},
        yardstick=lambda work_marks=(), second_marks=(), series="sampler": MomentYardstick(
            mean, sd, key="samples", work_marks=work_marks, second_marks=second_marks,
            series=series),
        summarize=theta_summaries(list(range(min(post.d, 6)))),
        truth_source=f"HMC reference ({hspec['chains']} chains x {hspec['samples']} draws, "
                     f"Laplace mass matrix; N = {post.N}, d = {post.d})",
        exact=False, yardstick_name="posterior mean/sd error (sd units)",
        reach_error=moment_reach())
