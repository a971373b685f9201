"""A small built-in experiment: random-walk Metropolis on a Gaussian, with its exact moments.

It exercises the whole pipeline (spec, streams, evaluators, checkpoints, figures, sweeps) in
seconds, so the foundation's tests and the README's CLI tour do not depend on any paper's code.
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecError
from ..plugins.registry import experiment, figure
from ..runfile.checkpoint import AttributeState
from ..spec.schema import Param


def log_spaced(n_max: int, points: int) -> np.ndarray:
    """About ``points`` distinct integers from 1 to ``n_max``, log-spaced, ``n_max`` included."""
    return np.unique(np.round(np.logspace(0, np.log10(max(n_max, 1)), points)).astype(np.int64))


class GaussianRWM:
    """Random-walk Metropolis on N(0, diag(scales²)) in ``dim`` dimensions, ``chains`` chains.

    state: {"x": (chains, dim), "logp": (chains,)}; draws: {"samples": (chains, dim)}."""

    def __init__(self, dim: int, chains: int, step: float, scales: np.ndarray):
        self.dim, self.chains, self.step_size = dim, chains, step
        self.scales = scales

    def logp(self, x: np.ndarray) -> np.ndarray:
        return -0.5 * np.sum((x / self.scales) ** 2, axis=-1)

    def init(self, rng: np.random.Generator) -> dict:
        x = rng.normal(size=(self.chains, self.dim)) * 3 * self.scales
        return {"x": x, "logp": self.logp(x)}

    def step(self, state: dict, rng: np.random.Generator):
        x, lp = state["x"], state["logp"]
        prop = x + self.step_size * rng.normal(size=x.shape)
        lp_prop = self.logp(prop)
        accept = np.log(rng.random(self.chains)) < lp_prop - lp
        x = np.where(accept[:, None], prop, x)
        lp = np.where(accept, lp_prop, lp)
        return {"x": x, "logp": lp}, {"samples": x.astype(np.float32)}, {"accept": accept}


class MeanError(AttributeState):
    """Streaming evaluator: RMS error of the running mean (pooled over chains) at log-spaced
    draw counts; the exact mean is 0."""

    metric, x_label, y_label = "mean_error", "draws per chain", "RMS error of the mean"

    state_attrs = ('total', 'count', 'xs', 'ys')

    def __init__(self, series: str, n_max: int, points: int = 30):
        self.series = series
        self.at = log_spaced(n_max, points)
        self.total = None
        self.count = 0
        self.xs: list[int] = []
        self.ys: list[float] = []

    def update(self, draws: dict, count: int, seconds: float) -> None:
        block = draws["samples"].astype(np.float64)  # (chain, n, dim)
        n = block.shape[1]
        start = count - n
        csum = np.cumsum(block.sum(axis=0), axis=0)  # (n, dim)
        base = self.total if self.total is not None else 0.0
        for c in self.at[(self.at > start) & (self.at <= count)]:
            mean = (base + csum[c - start - 1]) / (c * block.shape[0])
            self.xs.append(int(c))
            self.ys.append(float(np.sqrt(np.mean(mean ** 2))))
        self.total = base + csum[-1]
        self.count = count

    def curve(self):
        return np.asarray(self.xs, float), np.asarray(self.ys, float), None


SCHEMA = {
    "dim": Param(4, int, lo=1, hi=10_000, help="dimension of the Gaussian target"),
    "chains": Param(4, int, lo=1, help="independent chains"),
    "step": Param(0.5, float, lo=0, lo_open=True, help="random-walk proposal standard deviation"),
    "budget": {
        "draws": Param(2000, int, lo=1, nullable=True, help="draws per chain (after thinning)"),
        "seconds": Param(None, float, lo=0, lo_open=True, nullable=True,
                         help="wall-clock budget in seconds of sampling"),
    },
    "thin": Param(1, int, lo=1, help="keep one draw in every 'thin'"),
    "block": Param(None, int, lo=1, nullable=True,
                   help="draws per block (checkpoints fall on block boundaries)"),
}


def check_toy(p: dict) -> None:
    """Start-up validation: a budget to stop at."""
    if p["budget"]["draws"] is None and p["budget"]["seconds"] is None:
        raise SpecError("is null and so is budget.seconds: give budget.draws or budget.seconds",
                        "budget.draws")


@experiment("toy.gaussian", schema=SCHEMA, check=check_toy,
            help="random-walk Metropolis on a Gaussian; checks the runner end to end")
def run_toy(ctx) -> None:
    p = ctx.params
    budget = p["budget"]
    scales = np.linspace(1.0, 2.0, p["dim"])
    sampler = GaussianRWM(p["dim"], p["chains"], p["step"], scales)
    n_max = budget["draws"] or 10**6
    ev = MeanError("rwm", n_max)
    res = ctx.stream("rwm", sampler, draws=budget["draws"], seconds=budget["seconds"],
                     thin=p["thin"], evaluators=[ev], block=p["block"])
    ctx.store.set_result("draws", res.draws)
    ctx.store.set_result("accept_rate", res.stats_mean.get("accept", float("nan")))
    ctx.store.set_result("final_mean_error", ev.ys[-1] if ev.ys else float("nan"))


@figure("toy.mean_error", experiment="toy.gaussian")
def fig_mean_error(run, fig) -> None:
    """Error of the running mean vs draws, against the 1/sqrt(n) rate."""
    ax = fig.add_subplot()
    for series, c in run.metrics()["mean_error"].items():
        ax.loglog(c["x"], c["y"], label=series)
        ax.loglog(c["x"], c["y"][0] / np.sqrt(c["x"]), "k:", label="1/sqrt(n)")
    ax.set_xlabel("draws per chain")
    ax.set_ylabel("RMS error of the mean")
    ax.set_title(f"toy Gaussian, acceptance {run.results().get('accept_rate', float('nan')):.2f}")
    ax.legend()
