"""RBM trainers: CD-k, SML/PCD (Younes 1998; Tieleman 2008) and FPCD (Tieleman & Hinton 2009).

One update on a minibatch ``x (n, V)``:

- positive phase: ``h+ = E[h | x; θ]``; statistics ``s+ = (x^T h+ / n, mean x, mean h+)``;
- negative phase, ``k`` block-Gibbs sweeps ``h -> x- -> h`` under the *negative model*:
  * **cd**: start from ``h ~ P(h | x; θ)`` (the minibatch), negative model ``θ``;
  * **pcd** (= SML): start from the persistent hidden states ``h-_{t-1}`` of ``chains`` chains
    (the paper's §2: "a block Gibbs chain initialized at h-_{t-1} to sample x-_t, then h-_t"),
    negative model ``θ``; the chains are never reset;
  * **fpcd**: as pcd but the negative model is ``θ- = θ + θ_F``;
  statistics ``s- = (x-^T E[h|x-; θ-] / m, mean x-, mean E[h|x-; θ-])``;
- ``g = s+ - s-``; slow update with momentum ``μ`` and L2 decay ``λ`` (on W only):
  ``v ← μ v + ε_t (g - λ W)``, ``θ ← θ + v``; fast update (fpcd) ``θ_F ← α θ_F + ε_F g``.

FPCD with ``ε_F = 0`` follows exactly the same arithmetic and random-number consumption as PCD,
so both give bit-identical parameters from the same generator (tested).

Learning-rate schedules over the global update index ``t`` (``T`` updates in all, ``B`` per epoch):
``constant``: ``ε``; ``linear``: ``ε (1 - (1 - lr_final) t / T)``; ``inverse``:
``ε / (1 + t / (lr_tau B))``.

Per-epoch monitor (on fixed subsets chosen once from the trainer's generator): mean-field
reconstruction error ``mean ||x - E[x | E[h|x]]||²``; stochastic pseudo-likelihood
``V mean log P(x_i | x_-i)`` with one fixed random bit ``i`` per example; free-energy gap
``mean F(valid subset) - mean F(train subset)`` of equal size. Monitoring never touches the
training generator, so it does not change the trained parameters.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MixlabError, SpecError
from ..spec.schema import Param
from .model import RBM, sigmoid, softplus

__all__ = [
    "TRAINER_DEFAULTS",
    "TRAIN_SCHEMA",
    "Trainer",
    "load_checkpoint",
    "monitor_stats",
    "save_checkpoint",
    "to_stage",
    "train",
    "train_from_spec",
]

METHODS = ("cd", "pcd", "fpcd")
SCHEDULES = ("constant", "linear", "inverse")
CHAIN_INITS = ("data", "uniform")

# Trainer configuration keys with their defaults (schema and CLI options use the same names;
# the spec/CLI key ``trainer`` is the ``method`` here).
TRAINER_DEFAULTS: dict[str, Any] = {
    "method": "pcd",
    "epochs": 10,
    "batch_size": 100,
    "lr": 0.05,
    "lr_schedule": "constant",
    "lr_final": None,        # linear schedule only: final lr as a fraction of lr (default 0)
    "lr_tau": None,          # inverse schedule only: epochs until lr halves (default 1)
    "momentum": 0.0,
    "weight_decay": 0.0,
    "k": 1,
    "chains": None,          # pcd/fpcd only: number of persistent chains (default batch_size)
    "chain_init": None,      # pcd/fpcd only: "data" (random training rows) or "uniform"
    "fast_lr": None,         # fpcd only: ε_F (default = lr)
    "fast_decay": None,      # fpcd only: α (default 19/20)
    "init_std": 0.01,
    "monitor_size": 1000,
}

TRAIN_SCHEMA: dict[str, Param] = {
    "trainer": Param("pcd", str, choices=METHODS, help="cd (CD-k), pcd (SML) or fpcd"),
    "hidden": Param(500, int, lo=1, help="number of hidden units"),
    "epochs": Param(10, int, lo=1, help="passes over the training set"),
    "batch_size": Param(100, int, lo=1, help="minibatch size"),
    "lr": Param(0.05, float, lo=0, help="learning rate ε of the slow weights"),
    "lr_schedule": Param("constant", str, choices=SCHEDULES,
                         help="constant | linear (decay to lr_final·lr) | inverse (1/t)"),
    "lr_final": Param(None, float, lo=0, hi=1, nullable=True,
                      help="linear schedule: final lr as a fraction of lr (default 0)"),
    "lr_tau": Param(None, float, lo=0, lo_open=True, nullable=True,
                    help="inverse schedule: lr = ε/(1 + epochs/lr_tau) (default 1)"),
    "momentum": Param(0.0, float, lo=0, hi=1, hi_open=True, help="momentum μ"),
    "weight_decay": Param(0.0, float, lo=0, help="L2 weight decay λ on W"),
    "k": Param(1, int, lo=1, help="Gibbs sweeps per update"),
    "chains": Param(None, int, lo=1, nullable=True,
                    help="pcd/fpcd: persistent chains (default batch_size)"),
    "chain_init": Param(None, str, choices=CHAIN_INITS, nullable=True,
                        help="pcd/fpcd: chains start at random training rows (data, default) "
                             "or uniform noise"),
    "fast_lr": Param(None, float, lo=0, nullable=True,
                     help="fpcd: fast learning rate ε_F (default lr)"),
    "fast_decay": Param(None, float, lo=0, hi=1, nullable=True,
                        help="fpcd: fast-weight decay α (default 19/20)"),
    "init_std": Param(0.01, float, lo=0, help="std of the initial weights"),
    "monitor_size": Param(1000, int, lo=1, help="examples in the monitoring subsets"),
}


def resolve_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Fill defaults and check combinations; raises SpecError naming the offending key.

    Keys that only apply to some methods/schedules must be left ``None`` for the others."""
    out = dict(TRAINER_DEFAULTS)
    unknown = set(cfg) - set(out)
    if unknown:
        raise SpecError(f"unknown trainer key(s): {', '.join(sorted(unknown))}",
                        min(unknown))
    out.update({k: v for k, v in cfg.items()})
    m = out["method"]
    if m not in METHODS:
        raise SpecError(f"must be one of {', '.join(METHODS)}; got '{m}'", "trainer")
    if out["lr_schedule"] not in SCHEDULES:
        raise SpecError(f"must be one of {', '.join(SCHEDULES)}", "lr_schedule")
    for key, needs in (("chains", ("pcd", "fpcd")), ("chain_init", ("pcd", "fpcd")),
                       ("fast_lr", ("fpcd",)), ("fast_decay", ("fpcd",))):
        if out[key] is not None and m not in needs:
            raise SpecError(f"only applies to trainer {' or '.join(needs)}, not '{m}'", key)
    if out["lr_final"] is not None and out["lr_schedule"] != "linear":
        raise SpecError("only applies to lr_schedule linear", "lr_final")
    if out["lr_tau"] is not None and out["lr_schedule"] != "inverse":
        raise SpecError("only applies to lr_schedule inverse", "lr_tau")
    for key, lo in (("epochs", 1), ("batch_size", 1), ("k", 1), ("monitor_size", 1)):
        if int(out[key]) < lo:
            raise SpecError(f"must be >= {lo}, got {out[key]}", key)
    for key in ("lr", "momentum", "weight_decay", "init_std"):
        if not (float(out[key]) >= 0 and math.isfinite(float(out[key]))):
            raise SpecError(f"must be a finite number >= 0, got {out[key]}", key)
    if out["momentum"] >= 1:
        raise SpecError(f"must be < 1, got {out['momentum']}", "momentum")
    if m in ("pcd", "fpcd"):
        out["chains"] = int(out["batch_size"] if out["chains"] is None else out["chains"])
        out["chain_init"] = out["chain_init"] or "data"
        if out["chain_init"] not in CHAIN_INITS:
            raise SpecError(f"must be one of {', '.join(CHAIN_INITS)}", "chain_init")
    if m == "fpcd":
        out["fast_lr"] = float(out["lr"] if out["fast_lr"] is None else out["fast_lr"])
        out["fast_decay"] = float(19 / 20 if out["fast_decay"] is None else out["fast_decay"])
        if out["fast_lr"] < 0:
            raise SpecError("must be >= 0", "fast_lr")
        if not 0 <= out["fast_decay"] <= 1:
            raise SpecError("must be in [0, 1]", "fast_decay")
    if out["lr_schedule"] == "linear" and out["lr_final"] is None:
        out["lr_final"] = 0.0
    if out["lr_schedule"] == "inverse" and out["lr_tau"] is None:
        out["lr_tau"] = 1.0
    for key in ("epochs", "batch_size", "k", "monitor_size"):
        out[key] = int(out[key])
    for key in ("lr", "momentum", "weight_decay", "init_std"):
        out[key] = float(out[key])
    return out


def _bernoulli(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    u = rng.random(p.shape, dtype=np.float32)
    return (u < p).astype(np.float32)


def monitor_stats(rbm: RBM, X_mon: np.ndarray, bits: np.ndarray,
                  X_valid_mon: np.ndarray | None) -> dict[str, float]:
    """Monitoring quantities on fixed subsets (see module docstring).

    ``X_mon (m, V)`` training rows, ``bits (m,)`` the visible unit flipped per row for the
    pseudo-likelihood, ``X_valid_mon (m', V)`` validation rows (or None)."""
    m = rbm.astype(np.float64)
    x = X_mon.astype(np.float64)
    a = x @ m.W + m.c
    hp = sigmoid(a)
    recon = sigmoid(hp @ m.W.T + m.b)
    recon_err = float(((x - recon) ** 2).sum(axis=1).mean())
    rows = np.arange(x.shape[0])
    xi = x[rows, bits]
    delta = 1.0 - 2.0 * xi                       # change of x_i when flipped
    f_x = -(x @ m.b) - softplus(a).sum(axis=1)
    a_flip = a + delta[:, None] * m.W[bits]
    f_flip = -(x @ m.b + delta * m.b[bits]) - softplus(a_flip).sum(axis=1)
    pl = float(-rbm.n_visible * softplus(f_x - f_flip).mean())
    out = {"recon_error": recon_err, "pseudo_ll": pl, "fe_train": float(f_x.mean())}
    if X_valid_mon is not None:
        fv = float(m.free_energy(X_valid_mon.astype(np.float64)).mean())
        out["fe_valid"] = fv
        out["fe_gap"] = fv - out["fe_train"]
    else:
        out["fe_valid"] = float("nan")
        out["fe_gap"] = float("nan")
    return out


HISTORY_KEYS = ("epoch", "lr", "seconds", "recon_error", "pseudo_ll", "fe_train", "fe_valid",
                "fe_gap")


class _NullBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix(self, *a: Any, **k: Any) -> None:
        pass

    def close(self) -> None:
        pass


def _make_bar(progress: Any, total: int, desc: str) -> Any:
    if progress is None or progress is False:
        return _NullBar()
    if progress is True:
        from tqdm.auto import tqdm
        return tqdm(total=total, desc=desc, file=sys.stderr, leave=False,
                    disable=not sys.stderr.isatty())
    return progress(total=total, desc=desc)       # a factory such as ctx.bar


class Trainer:
    """Resumable minibatch trainer of a binary RBM (see the module docstring for the algorithm).

    ``X_train (n, V)`` and ``X_valid (n', V)`` hold values in [0, 1] (binary for the paper's
    experiments); they are converted to float32 once. ``rng`` is consumed only by training
    (initial chains, monitor subsets seed, shuffles, Gibbs sampling), in a fixed order per update.
    """

    def __init__(self, rbm: RBM, X_train: np.ndarray, X_valid: np.ndarray | None = None, *,
                 rng: np.random.Generator | None = None, monitor: bool = True,
                 **config: Any) -> None:
        self.config = resolve_config(config)
        cfg = self.config
        self.rng = np.random.default_rng() if rng is None else rng
        self.X = np.ascontiguousarray(X_train, dtype=np.float32)
        if self.X.ndim != 2 or self.X.shape[0] == 0:
            raise MixlabError(f"training data must be a non-empty (n, V) array, "
                              f"got shape {self.X.shape}")
        if self.X.shape[1] != rbm.n_visible:
            raise MixlabError(f"training data has {self.X.shape[1]} columns but the RBM has "
                              f"{rbm.n_visible} visible units")
        self.X_valid = None if X_valid is None else np.ascontiguousarray(X_valid, np.float32)
        if self.X_valid is not None and self.X_valid.shape[1] != rbm.n_visible:
            raise MixlabError(f"validation data has {self.X_valid.shape[1]} columns, "
                              f"expected {rbm.n_visible}")
        if not (np.isfinite(self.X).all() and self.X.min() >= 0 and self.X.max() <= 1):
            raise MixlabError("training data must lie in [0, 1] (binarise or scale it first)")
        r = rbm.astype(np.float32)
        self.W, self.b, self.c = r.W.copy(), r.b.copy(), r.c.copy()
        self.vW = np.zeros_like(self.W)
        self.vb = np.zeros_like(self.b)
        self.vc = np.zeros_like(self.c)
        self.method = cfg["method"]
        self.persistent = self.method in ("pcd", "fpcd")
        self.fast = self.method == "fpcd"
        if self.fast:
            self.fW = np.zeros_like(self.W)
            self.fb = np.zeros_like(self.b)
            self.fc = np.zeros_like(self.c)
        self.monitor = monitor
        n, V = self.X.shape
        self.n_batches = -(-n // cfg["batch_size"])
        self.total_updates = self.n_batches * cfg["epochs"]
        self.epoch = 0            # completed epochs
        self.step = 0             # completed updates
        self.history: dict[str, list[float]] = {k: [] for k in HISTORY_KEYS}

        # monitoring subsets: from a child generator seeded once from rng (always drawn, so
        # training does not depend on whether monitoring is on)
        mon_rng = np.random.default_rng(int(self.rng.integers(0, 2**63)))
        m = min(cfg["monitor_size"], n)
        if self.X_valid is not None and len(self.X_valid):
            m = min(m, len(self.X_valid))
            self.valid_idx = np.sort(mon_rng.choice(len(self.X_valid), m, replace=False))
        else:
            self.valid_idx = None
        self.mon_idx = np.sort(mon_rng.choice(n, m, replace=False))
        self.mon_bits = mon_rng.integers(0, V, size=m)

        if self.persistent:
            nc = cfg["chains"]
            if cfg["chain_init"] == "data":
                x0 = self.X[self.rng.integers(0, n, size=nc)]
                x0 = (self.rng.random(x0.shape, dtype=np.float32) < x0).astype(np.float32)
            else:
                x0 = (self.rng.random((nc, V), dtype=np.float32) < 0.5).astype(np.float32)
            self.chain_x = x0
            self.chain_h = _bernoulli(sigmoid(x0 @ self.W + self.c), self.rng)

    # ------------------------------------------------------------------ model views
    @property
    def rbm(self) -> RBM:
        """The current (slow) parameters θ as an RBM (copies)."""
        return RBM(self.W.copy(), self.b.copy(), self.c.copy())

    def negative_rbm(self) -> RBM:
        """The model the negative chains sample from (θ + θ_F for fpcd, else θ)."""
        if self.fast:
            return RBM(self.W + self.fW, self.b + self.fb, self.c + self.fc)
        return self.rbm

    def lr_at(self, t: int) -> float:
        cfg = self.config
        if cfg["lr_schedule"] == "constant":
            return cfg["lr"]
        if cfg["lr_schedule"] == "linear":
            return cfg["lr"] * (1.0 - (1.0 - cfg["lr_final"]) * t / self.total_updates)
        return cfg["lr"] / (1.0 + t / (cfg["lr_tau"] * self.n_batches))

    # ------------------------------------------------------------------ one update
    def _update(self, xb: np.ndarray, lr: float) -> None:
        cfg = self.config
        rng = self.rng
        W, b, c = self.W, self.b, self.c
        n = xb.shape[0]
        hp = sigmoid(xb @ W + c)                                   # (n, H) positive phase
        if self.fast:
            Wn, bn, cn = W + self.fW, b + self.fb, c + self.fc
        else:
            Wn, bn, cn = W, b, c
        h = self.chain_h if self.persistent else _bernoulli(hp, rng)
        k = cfg["k"]
        for s in range(k):
            xn = _bernoulli(sigmoid(h @ Wn.T + bn), rng)           # (m, V)
            hn = sigmoid(xn @ Wn + cn)                             # (m, H) E[h | x-; θ-]
            if s + 1 < k:
                h = _bernoulli(hn, rng)
        if self.persistent:
            self.chain_x = xn
            self.chain_h = _bernoulli(hn, rng)
        m = xn.shape[0]
        gW = xb.T @ hp
        gW *= np.float32(1.0 / n)
        gW -= (xn.T @ hn) * np.float32(1.0 / m)
        inv_n, inv_m = np.float32(1.0 / n), np.float32(1.0 / m)
        gb = np.add.reduce(xb, axis=0) * inv_n - np.add.reduce(xn, axis=0) * inv_m
        gc = np.add.reduce(hp, axis=0) * inv_n - np.add.reduce(hn, axis=0) * inv_m

        lr32 = np.float32(lr)
        mu = np.float32(cfg["momentum"])
        self.vW *= mu
        if cfg["weight_decay"]:
            self.vW += lr32 * (gW - np.float32(cfg["weight_decay"]) * W)
        else:
            self.vW += lr32 * gW
        self.vb *= mu
        self.vb += lr32 * gb
        self.vc *= mu
        self.vc += lr32 * gc
        W += self.vW
        b += self.vb
        c += self.vc
        if self.fast:
            a = np.float32(cfg["fast_decay"])
            ef = np.float32(cfg["fast_lr"])
            self.fW *= a
            self.fW += ef * gW
            self.fb *= a
            self.fb += ef * gb
            self.fc *= a
            self.fc += ef * gc

    # ------------------------------------------------------------------ epochs
    @property
    def done(self) -> bool:
        return self.epoch >= self.config["epochs"]

    def run_epoch(self, bar: Any = None) -> dict[str, float]:
        """One pass over the shuffled training set; returns this epoch's monitor record."""
        if self.done:
            raise MixlabError(f"training already finished ({self.epoch} epochs)")
        t0 = time.perf_counter()
        B = self.config["batch_size"]
        perm = self.rng.permutation(self.X.shape[0])
        lr = self.lr_at(self.step)
        for i in range(self.n_batches):
            lr = self.lr_at(self.step)
            self._update(self.X[perm[i * B:(i + 1) * B]], lr)
            self.step += 1
            if bar is not None:
                bar.update(1)
        if not (np.isfinite(self.W).all() and np.isfinite(self.b).all()
                and np.isfinite(self.c).all()):
            raise MixlabError(f"training diverged at epoch {self.epoch + 1} (non-finite "
                              f"weights); lower the learning rate (lr={self.config['lr']})")
        self.epoch += 1
        rec = {"epoch": float(self.epoch), "lr": float(lr),
               "seconds": time.perf_counter() - t0}
        if self.monitor:
            rec.update(monitor_stats(
                RBM(self.W, self.b, self.c), self.X[self.mon_idx], self.mon_bits,
                None if self.valid_idx is None else self.X_valid[self.valid_idx]))
        for k in HISTORY_KEYS:
            self.history[k].append(rec.get(k, float("nan")))
        return rec

    def fit(self, callback: Callable[[Trainer, dict], Any] | None = None,
            progress: Any = None) -> tuple[RBM, dict[str, np.ndarray]]:
        """Run the remaining epochs; ``callback(trainer, record)`` after each (e.g. to
        checkpoint). ``progress``: None/False (silent), True (tqdm on stderr if a TTY) or a
        factory ``progress(total=, desc=)`` returning a tqdm-like bar."""
        remaining = (self.config["epochs"] - self.epoch) * self.n_batches
        bar = _make_bar(progress, remaining, f"train {self.method}")
        try:
            while not self.done:
                rec = self.run_epoch(bar)
                if self.monitor:
                    bar.set_postfix(epoch=self.epoch, pl=f"{rec['pseudo_ll']:.2f}",
                                    recon=f"{rec['recon_error']:.2f}")
                if callback is not None:
                    callback(self, rec)
        finally:
            bar.close()
        return self.rbm, self.history_arrays()

    def history_arrays(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(v, dtype=np.float64) for k, v in self.history.items()}

    # ------------------------------------------------------------------ checkpoints
    _ARRAYS = ("W", "b", "c", "vW", "vb", "vc")
    _FAST = ("fW", "fb", "fc")
    _CHAINS = ("chain_x", "chain_h")

    def _config_json(self) -> str:
        return json.dumps(self.config, sort_keys=True)

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue bit for bit: arrays, counters, history, the
        generator's ``bit_generator.state`` (as JSON text) and the resolved config (JSON)."""
        names = self._ARRAYS + (self._FAST if self.fast else ()) + \
            (self._CHAINS if self.persistent else ())
        st: dict[str, Any] = {k: getattr(self, k).copy() for k in names}
        st["mon_idx"] = self.mon_idx.copy()
        st["mon_bits"] = self.mon_bits.copy()
        if self.valid_idx is not None:
            st["valid_idx"] = self.valid_idx.copy()
        for k, v in self.history_arrays().items():
            st[f"history/{k}"] = v
        st["epoch"] = np.int64(self.epoch)
        st["step"] = np.int64(self.step)
        st["rng_state"] = json.dumps(self.rng.bit_generator.state)
        st["config"] = self._config_json()
        return st

    def load_state(self, st: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`; the configuration must match (MixlabError if not)."""
        saved = json.loads(str(st["config"]))
        mine = json.loads(self._config_json())
        if self.config["lr_schedule"] != "linear":       # extending a run is allowed
            saved.pop("epochs", None)
            mine.pop("epochs", None)
        if saved != mine:
            diff = sorted(k for k in set(saved) | set(mine) if saved.get(k) != mine.get(k))
            raise MixlabError("checkpoint was written with different trainer settings: "
                              + ", ".join(f"{k}={saved.get(k)!r} (now {mine.get(k)!r})"
                                          for k in diff))
        names = self._ARRAYS + (self._FAST if self.fast else ()) + \
            (self._CHAINS if self.persistent else ())
        for k in names:
            cur = getattr(self, k)
            new = np.asarray(st[k])
            if k not in self._CHAINS and new.shape != cur.shape:
                raise MixlabError(f"checkpoint array {k} has shape {new.shape}, "
                                  f"expected {cur.shape}")
            setattr(self, k, np.array(new, dtype=np.float32))
        self.mon_idx = np.asarray(st["mon_idx"])
        self.mon_bits = np.asarray(st["mon_bits"])
        self.valid_idx = np.asarray(st["valid_idx"]) if "valid_idx" in st else None
        self.epoch = int(st["epoch"])
        self.step = int(st["step"])
        self.history = {k: list(np.asarray(st.get(f"history/{k}", []), dtype=np.float64))
                        for k in HISTORY_KEYS}
        state = json.loads(str(st["rng_state"]))
        if state.get("bit_generator") != type(self.rng.bit_generator).__name__:
            raise MixlabError(f"checkpoint generator {state.get('bit_generator')} differs "
                              f"from {type(self.rng.bit_generator).__name__}")
        self.rng.bit_generator.state = state


def save_checkpoint(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """Write a :meth:`Trainer.state_dict` to HDF5 atomically (temporary file + rename)."""
    import h5py

    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with h5py.File(tmp, "w") as f:
        f.attrs["format"] = "mixlab.rbm.checkpoint"
        for k, v in state.items():
            if isinstance(v, str):
                f.attrs[k] = v
            else:
                f.create_dataset(k, data=np.asarray(v))
    os.replace(tmp, path)


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` (MixlabError if unreadable)."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            if f.attrs.get("format") != "mixlab.rbm.checkpoint":
                raise MixlabError(f"{path} is not a mixlab RBM checkpoint")
            st: dict[str, Any] = {k: (v.decode() if isinstance(v, bytes) else str(v))
                                  for k, v in f.attrs.items() if k != "format"}

            def visit(name: str, obj: Any) -> None:
                if isinstance(obj, h5py.Dataset):
                    st[name] = obj[()]
            f.visititems(visit)
    except MixlabError:
        raise
    except (OSError, KeyError, ValueError) as e:
        raise MixlabError(f"cannot read checkpoint {path}: {e} (delete it to start over)") from e
    return st


def train(rbm: RBM | None, X_train: np.ndarray, X_valid: np.ndarray | None = None, *,
          method: str = "pcd", hidden: int | None = None,
          rng: np.random.Generator | None = None, callback: Callable | None = None,
          monitor: bool = True, progress: Any = None,
          **config: Any) -> tuple[RBM, dict[str, np.ndarray]]:
    """Train an RBM; returns ``(rbm, history)`` with per-epoch arrays (see HISTORY_KEYS).

    ``rbm=None`` initialises one with ``hidden`` units by :meth:`RBM.init` from ``rng`` and
    ``X_train``. Other keyword arguments are trainer keys (TRAINER_DEFAULTS)."""
    rng = np.random.default_rng() if rng is None else rng
    X_train = np.asarray(X_train)
    if rbm is None:
        if hidden is None:
            raise ValueError("give an RBM or the number of hidden units")
        rbm = RBM.init(X_train.shape[1], int(hidden), rng, data=X_train,
                       scale=float(config.get("init_std", TRAINER_DEFAULTS["init_std"])))
    elif hidden is not None and hidden != rbm.n_hidden:
        raise ValueError(f"hidden={hidden} but the RBM has {rbm.n_hidden} hidden units")
    tr = Trainer(rbm, X_train, X_valid, rng=rng, monitor=monitor, method=method, **config)
    return tr.fit(callback=callback, progress=progress)


def spec_to_config(params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """``(hidden, trainer config)`` from a TRAIN_SCHEMA-validated dict."""
    cfg = {k: v for k, v in params.items() if k in TRAIN_SCHEMA and k not in ("trainer", "hidden")}
    cfg["method"] = params.get("trainer", "pcd")
    return int(params.get("hidden", TRAIN_SCHEMA["hidden"].default)), cfg


def train_from_spec(params: dict[str, Any], X_train: np.ndarray, X_valid: np.ndarray | None,
                    rng: np.random.Generator, progress: Any = None
                    ) -> tuple[RBM, dict[str, np.ndarray]]:
    """Train from a spec fragment validated against :data:`TRAIN_SCHEMA`; ``(rbm, history)``.

    Inside an experiment: ``ctx.once("train", lambda: to_stage(*train_from_spec(p["train"],
    Xtr, Xva, ctx.rng("train"), ctx.bar)))``."""
    hidden, cfg = spec_to_config(params)
    return train(None, X_train, X_valid, hidden=hidden, rng=rng, progress=progress, **cfg)


def to_stage(rbm: RBM, history: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Flat dict for ``ctx.once``: ``W``, ``b``, ``c`` and ``monitor_<key>`` curves."""
    out: dict[str, np.ndarray] = {"W": rbm.W, "b": rbm.b, "c": rbm.c}
    out.update({f"monitor_{k}": v for k, v in history.items()})
    return out
