"""The RBM experiments' evaluators: the streaming ISL of a sampler's draws (the math is in
:mod:`mixlab.rbm.isl`), the ISL of the training set used as centres, and the log-likelihood of a
sampler's effective parameters θ⁻ = θ + θ_F.

The ISL evaluator follows the evaluator contract (``update``/``curve``/``state``/
``load_state``: its histograms or log-sum-exp sums are checkpointed as arrays, so an interrupted
stream resumes to the same curve).
"""

from __future__ import annotations

import numpy as np

from . import isl as isl_mod
from .model import RBM
from .target import binary

ISLEvaluator = isl_mod.ISLEvaluator


def isl_sets(islp: dict, ds) -> tuple[np.ndarray, np.ndarray]:
    """The test (n_t, V) and validation (n_v, V) sets of the ISL, binary float32, cut to the
    spec's ``isl.test_max`` / ``isl.valid_max``."""
    Xt = binary(ds.test.X)
    Xv = binary(ds.valid.X)
    if islp["test_max"]:
        Xt = Xt[:islp["test_max"]]
    if islp["valid_max"]:
        Xv = Xv[:islp["valid_max"]]
    return Xt, Xv


def bandwidths(islp: dict) -> np.ndarray | None:
    """The spec's candidate β, or None for the default grid."""
    return None if islp["bandwidths"] is None else np.asarray(islp["bandwidths"])


def centres_key(islp: dict, draw_keys) -> str:
    """The draws used as kernel centres: ``means`` (E[x|h]) when the spec asks for them and the
    sampler emits them, else the binary ``samples``."""
    return "means" if islp["centres"] == "means" and "means" in draw_keys else "samples"


def isl_evaluator(islp: dict, Xt: np.ndarray, Xv: np.ndarray, label: str, key: str,
                  total: int) -> ISLEvaluator:
    """The streaming ISL of one sampler's draws ``key``, recorded at ``isl.points`` log-spaced
    sample counts up to ``total`` (plus the ``isl.speedup_at`` counts)."""
    pts = np.union1d(isl_mod.log_points(total, islp["points"]),
                     [a for a in islp["speedup_at"] if a <= total])
    return ISLEvaluator(Xt, Xv, series=label, key=key, bandwidths=bandwidths(islp), points=pts,
                        select=islp["select"])


def train_set_isl(Xtr: np.ndarray, Xt: np.ndarray, Xv: np.ndarray, islp: dict) -> dict:
    """ISL of the test set with the training set (N, V) as centres: {isl, se, bandwidth, n}."""
    return {k: np.asarray(v) for k, v in
            isl_mod.isl_of_centres(Xtr.astype(bool), Xt, Xv, bandwidths=bandwidths(islp)).items()}


def write_isl_table(store, label: str, ev: ISLEvaluator) -> None:
    """The evaluator's full table (validation and test ISL per bandwidth and count) as
    ``/arrays/isl_table/<label>/*`` and its final values as results."""
    t = ev.table()
    j = int(t["chosen"][-1])
    for name in ("valid", "test", "n", "bandwidths", "chosen"):
        store.write_array(f"isl_table/{label}/{name}", t[name])
    store.set_result(f"isl_final/{label}", float(t["test"][-1, j]))
    store.set_result(f"isl_final_se/{label}", float(t["test_se"][-1, j]))
    store.set_result(f"isl_valid/{label}", float(t["valid"][-1, j]))
    store.set_result(f"isl_bandwidth/{label}", float(t["bandwidths"][j]))


def model_log_likelihood(rbm: RBM, X: np.ndarray, llp: dict, rng: np.random.Generator) -> dict:
    """Mean log-likelihood of X (N, V) under ``rbm``: exact log Z when the smaller layer has at
    most ``ll.exact_max_hidden`` units, else AIS.  {ll, ll_se, logz, logz_se, how}."""
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
