"""The dense triplet MRF target of Figs 7-8: the model of a spec's ``model`` block, the random
5-variable subsets and the exact-Gibbs truth of their joints (cached across runs).

The model, the subsets and the truth run depend on ``model.seed`` only (not on the run seed), so
every run of a spec with the same ``model`` block shares them (and the truth cache).  The ``mrf``
sampler family's factories receive the :class:`mixlab.austerity.mrf.DenseMRF` itself.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from ..errors import SpecError
from ..spec.schema import Param
from .evaluators import JointL1
from .limits import SEED_MAX
from .mrf import DenseMRF, make_mrf, sweep_exact

MODEL_SCHEMA = {
    "D": Param(100, int, lo=3, hi=400, help="number of binary variables"),
    "s": Param(0.02, float, lo=0, lo_open=True,
               help="spread of the log-potentials: log psi ~ N(0, sigma^2), see s_is"),
    "s_is": Param("std", str, choices=("std", "variance"),
                  help="whether s is the standard deviation (sigma = s) or the variance "
                       "(sigma = sqrt(s)); the paper writes N(0, 0.02) without saying"),
    "seed": Param(0, int, lo=0, hi=SEED_MAX, help="seed of the model tables, the subsets and the truth run"),
}


def model_seed(model_p: dict, name: str) -> np.random.SeedSequence:
    """The SeedSequence of ``name`` (model, subsets, truth) under ``model.seed``."""
    key = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")
    return np.random.SeedSequence(model_p["seed"], spawn_key=(key,))


def build_model(model_p: dict) -> DenseMRF:
    """The MRF of a spec's ``model`` block (deterministic in ``model.seed``)."""
    rng = np.random.Generator(np.random.PCG64(model_seed(model_p, "model")))
    return make_mrf(model_p["D"], model_p["s"], model_p["s_is"], rng)


def model_attrs(model: DenseMRF, model_p: dict) -> dict:
    """The model facts stored as ``model/<key>`` results."""
    return {"D": model.D, "triplets": model.T, "terms_per_conditional": model.N,
            "s": model_p["s"], "s_is": model_p["s_is"], "model_seed": model_p["seed"],
            "model_hash": model.hash()}


def truth_joint(model: DenseMRF, subsets: np.ndarray, chains: int, sweeps: int, burn_in: int,
                rng: np.random.Generator, block: int = 200) -> dict:
    """Joint distributions on ``subsets (M, k)`` from exact Gibbs (quadratic form): ``chains``
    chains, ``burn_in`` + ``sweeps`` sweeps each.  Returns ``probs (M, 2^k)`` (all chains),
    ``noise_l1``: half the average L1 distance between the estimates of the two halves of the
    chains (≈ the L1 error of ``probs`` itself), and the settings."""
    if chains < 2:
        raise SpecError("the truth needs at least 2 chains (its noise is estimated by halves)",
                        "truth.chains")
    ev = JointL1("truth", subsets, np.zeros((subsets.shape[0], 1 << subsets.shape[1])),
                 np.array([], dtype=np.int64), model.D)
    X = (rng.random((chains, model.D)) < 0.5).astype(np.uint8)
    for _ in range(burn_in):
        sweep_exact(model, X, rng.random(X.shape))
    ev.counts = np.zeros((chains, ev.M << ev.k))
    done = 0
    buf = np.empty((chains, block, model.D), dtype=np.uint8)
    while done < sweeps:
        n = min(block, sweeps - done)
        for j in range(n):
            sweep_exact(model, X, rng.random(X.shape))
            buf[:, j] = X
        ev._add(buf[:, :n])
        done += n
    c = ev.counts.reshape(chains, ev.M, 1 << ev.k)
    h = chains // 2
    pa = c[:h].sum(0) / c[:h].sum(axis=(0, 2))[:, None]
    pb = c[h:].sum(0) / c[h:].sum(axis=(0, 2))[:, None]
    probs = c.sum(0) / c.sum(axis=(0, 2))[:, None]
    noise = 0.5 * float(np.abs(pa - pb).sum(axis=1).mean())
    return {"probs": probs, "subsets": subsets, "noise_l1": noise, "chains": chains,
            "sweeps": sweeps, "burn_in": burn_in}


def truth_cached(model: DenseMRF, model_p: dict, subsets: np.ndarray, tp: dict, log) -> dict:
    """:func:`truth_joint` under the spec's ``truth`` block ``tp``, cached in ``tp['cache_dir']``
    keyed by the model hash, the subsets and the truth settings."""
    hs = hashlib.sha256()
    hs.update(model.hash().encode())
    hs.update(np.ascontiguousarray(subsets, dtype="<i8").tobytes())
    hs.update(json.dumps({k: tp[k] for k in ("chains", "sweeps", "burn_in")}
                         | {"seed": model_p["seed"], "v": 1}, sort_keys=True).encode())
    key = hs.hexdigest()[:24]
    path = Path(tp["cache_dir"]) / f"austerity_mrf_truth_{key}.npz" if tp["cache_dir"] else None
    if path is not None and path.exists():
        with np.load(path) as z:
            out = {k: z[k] for k in z.files}
        if np.array_equal(out["subsets"], subsets):
            log(f"truth: loaded from cache {path}")
            out["cache_key"] = key
            return out
    rng = np.random.Generator(np.random.PCG64(model_seed(model_p, "truth")))
    out = truth_joint(model, subsets, tp["chains"], tp["sweeps"], tp["burn_in"], rng)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp.npz")
        np.savez(tmp, **out)
        os.replace(tmp, path)
        log(f"truth: cached in {path}")
    out["cache_key"] = key
    return out
