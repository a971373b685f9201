"""The RBM family's target: the data problem (a binary image set and its splits) and the trained
(or loaded) RBM the samplers run on.

:class:`RBMTarget` is what a sampler factory of the ``rbm`` family receives
(``mixlab.plugins.registry.sampler("rbm", ...)``): an :class:`mixlab.rbm.model.RBM` (``W (V, H)``,
``b (V,)``, ``c (H,)``) that also carries the binary training set, the rates R of the trained
model, the initial-state mode and the draws the experiment wants.

Randomness: the model is trained with a generator that depends only on the spec's ``seed``
(not on a sweep point's spawn key), so every point of a hyper-parameter sweep samples from the
same model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data import DATA_SCHEMA, load_from_spec
from ..errors import DataError, SpecError
from ..spec.schema import Param
from .model import RBM

DATA_NAMES = ("usps", "mnist", "mnist-5k", "fashion-mnist")
DEFAULT_DATA = "usps"
INIT_CHOICES = ("data", "noise")


@dataclass
class RBMTarget(RBM):
    """A trained binary RBM (``W (V, H)``, ``b (V,)``, ``c (H,)``) plus what its samplers need.

    ``train_X``: (N, V) float32 in {0, 1}, the training set (the rates R come from it; ``init
    = "data"`` starts each chain from a random row of it).  ``rates``: ``{"W" (V,H), "b" (V,),
    "c" (H,)}`` float32 (ALGORITHMS.md §A.3) or None (a sampler that needs them computes them
    from ``train_X``).  ``init``: ``"data"`` or ``"noise"`` (uniform).  ``emit``: the draws
    wanted, ``"both"`` (``samples`` (chain, V) bool and ``means`` (chain, V) float32 = E[x|h]),
    ``"binary"`` or ``"means"``; a sampler that has no means emits ``samples`` only.
    ``shape``: the image shape, e.g. (16, 16), or None."""

    train_X: np.ndarray | None = None
    rates: dict | None = None
    init: str = "data"
    emit: str = "both"
    shape: tuple | None = None


def data_schema() -> dict:
    """The ``data`` section of the RBM experiments' specs: a registered data set (``name``) or
    the user's own file (``file``, see :mod:`mixlab.data.user_images`)."""
    d = dict(DATA_SCHEMA)
    d["name"] = Param(None, str, choices=DATA_NAMES, nullable=True,
                      help=f"registered data set ({DEFAULT_DATA} unless 'file' is given)")
    d["file"] = Param(None, str, nullable=True,
                      help="your own images instead of 'name': .npy (N, D) or (N, rows, cols), "
                           ".npz (train/valid/test arrays, or one array) or IDX; values in "
                           "[0, 1]")
    d["valid_fraction"] = Param(0.1, float, lo=0, hi=1, lo_open=True, hi_open=True,
                                help="with 'file' and no splits in it: the fraction of rows "
                                     "(before the test rows) used for validation")
    d["test_fraction"] = Param(0.1, float, lo=0, hi=1, lo_open=True, hi_open=True,
                               help="with 'file' and no splits in it: the fraction of rows (the "
                                    "last ones) used as the test set")
    d["binarize"] = Param(0.5, float, lo=0, hi=1, help="binarisation threshold on [0,1] pixels")
    d["fallback"] = Param(None, str, choices=DATA_NAMES, nullable=True,
                          help="data set used when 'name' is not installed (e.g. mnist -> "
                               "mnist-5k offline); the one used is recorded in /results")
    return d


def train_schema() -> dict:
    from .train import TRAIN_SCHEMA

    return dict(TRAIN_SCHEMA)


def load_data(p: dict, ctx=None):
    """Load the spec's data set: ``data.file`` (the user's images) or the registered
    ``data.name`` (with ``data.fallback`` when it is not installed)."""
    d = p["data"]
    if d.get("file"):
        return _load_file(d)
    spec = {k: d[k] for k in DATA_SCHEMA}
    spec["name"] = spec["name"] or DEFAULT_DATA
    try:
        ds = load_from_spec(spec)
    except DataError as exc:
        if not d.get("fallback"):
            raise
        if ctx is not None:
            ctx.log(f"data set {d['name']} not available ({exc}); using {d['fallback']}")
        ds = load_from_spec({**spec, "name": d["fallback"]})
    return ds


def _load_file(d: dict):
    """The user's image file (its combination with other data keys is checked at start, see
    mixlab.rbm.checks)."""
    from ..data.user_images import load_user_images

    return load_user_images(d["file"], binarize=d["binarize"],
                            valid_fraction=d["valid_fraction"], test_fraction=d["test_fraction"],
                            max_train=d["max_train"], key="data.file")


def binary(X: np.ndarray) -> np.ndarray:
    """Training data as 0/1 float32 (already binarised by the data layer: a check, not a
    transform)."""
    X = np.asarray(X, np.float32)
    if not np.all((X == 0) | (X == 1)):
        raise SpecError("rates-FPCD experiments need binary data: set data.binarize", "data")
    return X


def train_seed_rng(ctx) -> np.random.Generator:
    """Generator for training: depends on the spec's seed only (not on a sweep point)."""
    from ..run.context import name_key

    return np.random.default_rng(np.random.SeedSequence(int(ctx.params["seed"]),
                                                        spawn_key=(name_key("train"),)))


def get_model(ctx, ds) -> RBM:
    """The spec's ``model_file`` or an RBM trained on ``ds`` (the cached stage ``train``)."""
    p = ctx.params
    if p["model_file"]:
        from .model_file import load_trained

        rbm = load_trained(p["model_file"])
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


def rates_stage(ctx, rbm: RBM, X: np.ndarray) -> dict:
    """The rates R of ``rbm`` on the binary training set X (N, V) (the cached stage ``rates``)."""
    from .samplers import compute_rates

    R = ctx.once("rates", lambda: compute_rates(rbm, X))
    return {k: R[k] for k in ("W", "b", "c")}


def prepare(ctx, rates: bool = True):
    """The set-up every RBM experiment shares: the data set (its name recorded as the result
    ``data_used``) and the target (trained or loaded model, cached; its rates when asked).

    Returns ``(dataset, RBMTarget)``."""
    p = ctx.params
    ds = load_data(p, ctx)
    ctx.store.set_result("data_used", ds.name)
    Xtr = binary(ds.train.X)
    rbm = get_model(ctx, ds)
    R = rates_stage(ctx, rbm, Xtr) if rates else None
    target = RBMTarget(rbm.W, rbm.b, rbm.c, train_X=Xtr, rates=R, init=p["init"], emit="both",
                       shape=tuple(ds.shape) if ds.shape else None)
    return ds, target
