"""One PCD epoch on USPS (6291 x 256, binarised at 0.5; 500 hidden, batch 100).

Rows (all timed side by side in this process, best of several repetitions):
- ``rbm_train/pcd_epoch_vs_sklearn``: mixlab ``Trainer.run_epoch`` (pcd, k=1, monitoring off)
  / scikit-learn ``BernoulliRBM.partial_fit`` called on the same 63 minibatches (float32
  input; partial_fit initialises float64 weights, so it computes in float64). Target <= 1.0.
- ``rbm_train/pcd_epoch_vs_sklearn_fit``: the same against ``BernoulliRBM.fit(n_iter=1)``, which
  keeps float32 (its own minibatch loop, same batch size). Target <= 1.0.
- ``rbm_train/pcd_epoch_vs_gemm``: the same epoch / the five bare float32 GEMMs per update that
  any PCD-1 implementation needs (x W, x^T h+, h- W^T, x- W, x-^T h-). Target <= 2.0.
"""

from __future__ import annotations

import os

import numpy as np

from benchmarks.timing import best_time


def _usps() -> np.ndarray:
    try:
        from mixlab.data import load
    except ImportError:  # data layer unavailable: read the mirror directly
        import h5py
        mirror = os.environ.get("MIXLAB_DATA_MIRROR", "/work/shared/data")
        with h5py.File(os.path.join(mirror, "usps", "usps.h5"), "r") as f:
            X = f["train/data"][:6291]
        return (X > 0.5).astype(np.float32)
    return load("usps", binarize=0.5).train.X


def run(quick: bool) -> list[dict]:
    from sklearn.neural_network import BernoulliRBM

    from mixlab.rbm.model import RBM
    from mixlab.rbm.train import Trainer

    X = np.ascontiguousarray(_usps(), dtype=np.float32)
    n, V = X.shape
    H, B = 500, 100
    reps = 3 if quick else 7
    rng = np.random.default_rng(0)

    tr = Trainer(RBM.init(V, H, rng, data=X), X, None, rng=rng, method="pcd",
                 epochs=10**6, batch_size=B, lr=0.01, monitor=False)
    t_mix = best_time(tr.run_epoch, reps, warm_up=True)

    sk = BernoulliRBM(n_components=H, learning_rate=0.01, batch_size=B, n_iter=1,
                      random_state=0)
    sk.partial_fit(X[:B])
    batches = [X[i:i + B] for i in range(0, n, B)]

    def sk_epoch():
        for xb in batches:
            sk.partial_fit(xb)
    t_sk = best_time(sk_epoch, reps, warm_up=True)
    sk_dtype = sk.components_.dtype

    # scikit-learn's own epoch loop (fit with n_iter=1 keeps float32 input in float32)
    sk_fit = BernoulliRBM(n_components=H, learning_rate=0.01, batch_size=B, n_iter=1,
                          random_state=0)
    t_skfit = best_time(lambda: sk_fit.fit(X), reps, warm_up=True)

    W = tr.W
    xs = [X[i:i + B] for i in range(0, n, B)]
    hb = np.ones((B, H), np.float32)

    def gemms():
        for xb in xs:
            xb @ W
            xb.T @ hb[:len(xb)]
            hb @ W.T
            xb @ W
            xb.T @ hb[:len(xb)]
    t_gemm = best_time(gemms, reps, warm_up=True)

    r1 = t_mix / t_sk
    r2 = t_mix / t_gemm
    return [
        {"name": "rbm_train/pcd_epoch_vs_sklearn", "ratio": r1, "target": "<= 1.0",
         "ok": r1 <= 1.0,
         "detail": f"mixlab {t_mix * 1e3:.0f} ms vs sklearn BernoulliRBM.partial_fit "
                   f"{t_sk * 1e3:.0f} ms ({sk_dtype}); USPS {n}x{V}, H={H}, batch {B}"},
        {"name": "rbm_train/pcd_epoch_vs_sklearn_fit", "ratio": t_mix / t_skfit,
         "target": "<= 1.0", "ok": t_mix / t_skfit <= 1.0,
         "detail": f"mixlab {t_mix * 1e3:.0f} ms vs sklearn BernoulliRBM.fit(n_iter=1) "
                   f"{t_skfit * 1e3:.0f} ms ({sk_fit.components_.dtype})"},
        {"name": "rbm_train/pcd_epoch_vs_gemm", "ratio": r2, "target": "<= 2.0",
         "ok": r2 <= 2.0,
         "detail": f"mixlab {t_mix * 1e3:.0f} ms vs 5 bare float32 GEMMs/update "
                   f"{t_gemm * 1e3:.0f} ms"},
    ]


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
