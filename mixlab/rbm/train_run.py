"""The ``rbm.train`` experiment kind: train a binary RBM as a run (what ``mixlab train`` runs).

A run of this kind holds, in its ``run.h5``:

- ``/stages/train``: the trained model ``W (V, H)``, ``b (V,)``, ``c (H,)`` and the per-epoch
  monitor curves ``monitor_<key> (epochs,)`` (:data:`mixlab.rbm.train.HISTORY_KEYS`), the same
  stage the rates-FPCD experiments cache when they train their own model;
- ``/stages/eval``: the test log-likelihood, with log Z exact or by AIS;
- ``/metrics/train/<key>``: the monitor curves against the epoch, and ``/results``: sizes, the
  test log-likelihood and log Z.

Resumable at any instant: the trainer's whole state (:meth:`Trainer.state_dict`: parameters,
velocities, fast weights, persistent chains, generator state, history) is saved through the
run's store after every epoch (the state ``train_checkpoint``, dropped once the model is a
stage), so a run killed mid-training continues from its last epoch and trains the same bits as
an uninterrupted one. The AIS estimate is one stage drawn from its own generator: killed during
it, the run computes it again from its start and gets the same value.

Randomness: the trainer's generator depends on the spec's ``seed`` only
(:func:`mixlab.rbm.target.train_seed_rng`), so a spec's ``train:`` section trains the same model
here as inside the rates-FPCD experiments; AIS draws from ``ctx.rng("eval", "ais")``.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import SpecError
from ..plugins.registry import experiment
from ..spec.schema import Param
from .checks import adapt, check_train_run
from .model import RBM
from .target import data_schema, load_data, train_schema, train_seed_rng

CHECKPOINT = "train_checkpoint"
EXACT_MAX_UNITS = 25     # exact log Z by default up to this many units in the smaller layer
EXACT_LIMIT = 30         # and never beyond (2^30 configurations)
LOG_Z_CHOICES = ("auto", "exact", "ais")


def _data_schema() -> dict:
    d = data_schema()
    d["binarize"] = Param(0.5, float, lo=0, hi=1, nullable=True,
                          help="binarisation threshold on [0,1] pixels (null: grey levels kept "
                               "as probabilities)")
    return d


EVAL_SCHEMA = {
    "enabled": Param(True, bool, help="compute the test log-likelihood once trained"),
    "log_z": Param("auto", str, choices=LOG_Z_CHOICES,
                   help="auto: exact when the smaller layer has at most exact_max_units units, "
                        "else AIS; exact; ais"),
    "exact_max_units": Param(EXACT_MAX_UNITS, int, lo=1, hi=EXACT_LIMIT,
                             help="auto: largest smaller layer summed over exactly"),
    "ais_runs": Param(100, int, lo=2, help="AIS runs"),
    "ais_betas": Param(10000, int, lo=2, help="AIS inverse temperatures"),
}

TRAIN_RUN_SCHEMA = {"data": _data_schema(), "train": train_schema(), "eval": EVAL_SCHEMA}


# ---------------------------------------------------------------------------------------------
# the trainer's state as a flat stage (history/<key> -> history__<key>)

def state_to_stage(state: dict) -> dict:
    """A :meth:`Trainer.state_dict` as a flat dict of arrays and strings (a stage)."""
    return {k.replace("/", "__"): v for k, v in state.items()}


def stage_to_state(stage: dict) -> dict:
    """Inverse of :func:`state_to_stage`."""
    return {k.replace("__", "/"): v for k, v in stage.items()}


# ---------------------------------------------------------------------------------------------
# training and evaluation

def train_resumably(ctx, X_train: np.ndarray, X_valid: np.ndarray | None) -> dict:
    """Train with ``ctx.params["train"]`` from the spec seed's generator, saving the trainer's
    state after every epoch; resumes from the saved state. Returns the ``train`` stage
    (:func:`mixlab.rbm.train.to_stage`)."""
    from .train import Trainer, spec_to_config, to_stage

    hidden, cfg = spec_to_config(ctx.params["train"])
    rng = train_seed_rng(ctx)
    rbm0 = RBM.init(X_train.shape[1], hidden, rng, data=X_train, scale=cfg["init_std"])
    tr = Trainer(rbm0, X_train, X_valid, rng=rng, **cfg)
    saved = ctx.saved_state(CHECKPOINT)
    if saved is not None:
        tr.load_state(stage_to_state(saved))
        ctx.log(f"training resumes after epoch {tr.epoch} of {tr.config['epochs']}")

    def checkpoint(t: Trainer, rec: dict) -> None:
        ctx.save_state(CHECKPOINT, state_to_stage(t.state_dict()))
        ctx.log(_epoch_line(rec))

    if not tr.done:
        tr.fit(callback=checkpoint, progress=ctx.bar)
    return to_stage(tr.rbm, tr.history_arrays())


def _epoch_line(rec: dict) -> str:
    line = f"epoch {int(rec['epoch'])}: {rec['seconds']:.2f} s"
    if "pseudo_ll" in rec and not math.isnan(rec["pseudo_ll"]):
        line += (f", pseudo-LL {rec['pseudo_ll']:.3f}, recon {rec['recon_error']:.3f}, "
                 f"F gap {rec['fe_gap']:.3f}")
    return line


def log_z_method(rbm: RBM, evp: dict) -> str:
    """'exact' or 'ais' for ``eval.log_z`` (SpecError when exact is asked of a model too big)."""
    small = min(rbm.n_visible, rbm.n_hidden)
    if evp["log_z"] == "exact":
        if small > EXACT_LIMIT:
            raise SpecError(f"exact log Z sums over 2^{small} states (the smaller layer has "
                            f"{small} units; at most {EXACT_LIMIT}): use auto or ais",
                            "eval.log_z")
        return "exact"
    if evp["log_z"] == "ais" or small > evp["exact_max_units"]:
        return "ais"
    return "exact"


def evaluate(rbm: RBM, X_train: np.ndarray, X_test: np.ndarray, evp: dict, how: str,
             rng: np.random.Generator) -> dict:
    """Test log-likelihood of ``rbm`` on ``X_test (n, V)``: ``{log_z, log_z_se, test_ll,
    test_ll_se}``; AIS (Salakhutdinov & Murray 2008) starts from the base-rate model of the
    training data ``X_train (N, V)``."""
    from .partition import log_likelihood, log_partition_ais, log_partition_exact

    if how == "exact":
        log_z, log_z_se = log_partition_exact(rbm, max_units=EXACT_LIMIT), 0.0
    else:
        log_z, log_z_se = log_partition_ais(rbm, n_runs=evp["ais_runs"],
                                            n_betas=evp["ais_betas"], data=X_train, rng=rng)
    ll, ll_se = log_likelihood(rbm, X_test, log_z)
    return {"log_z": log_z, "log_z_se": log_z_se, "test_ll": ll, "test_ll_se": ll_se}


def run_train(ctx) -> None:
    """Load the data, train (resumably), store the monitor curves and the test log-likelihood."""
    p = ctx.params
    ds = load_data(p, ctx)
    Xtr, Xva, Xte = ds.train.X, ds.valid.X, ds.test.X
    if Xtr.min() < 0 or Xtr.max() > 1:
        raise SpecError(f"the features of {ds.name} are not in [0, 1]; a binary RBM needs "
                        f"intensities (choose an image data set)", "data")
    st = ctx.store
    st.set_result("data_used", ds.name)
    st.set_result("data_sizes", f"train {len(Xtr)}, valid {len(Xva)}, test {len(Xte)}")
    if ds.shape:
        st.set_result("image_shape", "x".join(str(v) for v in ds.shape))
    stage = ctx.once("train", lambda: train_resumably(ctx, Xtr, Xva if len(Xva) else None))
    ctx.drop_state(CHECKPOINT)
    rbm = RBM(stage["W"], stage["b"], stage["c"])
    st.set_result("visible", rbm.n_visible)
    st.set_result("hidden", rbm.n_hidden)
    epochs = np.asarray(stage["monitor_epoch"])
    st.set_result("epochs_done", int(epochs[-1]) if epochs.size else 0)
    for key in ("pseudo_ll", "recon_error", "fe_gap", "lr"):
        y = np.asarray(stage[f"monitor_{key}"])
        if y.size and np.isfinite(y).any():
            st.write_metric("train", key, epochs, y, x_label="epoch", y_label=key)
    evp = p["eval"]
    if not evp["enabled"]:
        return
    how = log_z_method(rbm, evp)
    if how == "ais":
        ctx.log(f"AIS: {evp['ais_runs']} runs x {evp['ais_betas']} temperatures")
    ev = ctx.once("eval", lambda: evaluate(rbm, Xtr, Xte, evp, how, ctx.rng("eval", "ais")))
    for key in ("log_z", "log_z_se", "test_ll", "test_ll_se"):
        st.set_result(key, float(ev[key]))
    st.set_result("log_z_method", "AIS" if how == "ais" else "exact")
    if how == "ais":
        st.set_result("ais_runs", evp["ais_runs"])
        st.set_result("ais_betas", evp["ais_betas"])
    ctx.log(f"test log-likelihood {float(ev['test_ll']):.4f} nats (log Z "
            f"{float(ev['log_z']):.4f}, {how})")


experiment("rbm.train", schema=TRAIN_RUN_SCHEMA, check=check_train_run, adapt=adapt,
           help="train a binary RBM (CD-k, PCD, FPCD) and its test log-likelihood "
                "('mixlab train')")(run_train)
