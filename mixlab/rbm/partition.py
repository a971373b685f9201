"""Partition function and log-likelihood of a binary RBM.

- :func:`log_partition_exact`: sums over every configuration of the smaller layer (float64,
  vectorised over blocks of configurations, log-sum-exp), for layers of up to ~25 units.
- :func:`log_partition_ais`: annealed importance sampling from a base-rate model
  (Salakhutdinov & Murray 2008), all runs advanced together as a batch.
- :func:`log_likelihood`: mean test log-likelihood ``mean(-F(x)) - log Z`` with its standard error.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit, logsumexp

from .model import RBM, sigmoid, softplus
from .partition_kernel import PRODUCT_MAX_ACT, log_product_sums, softplus_row_sums

__all__ = [
    "ais_betas",
    "all_configs",
    "exact_visible_log_probs",
    "log_likelihood",
    "log_partition_ais",
    "log_partition_exact",
]

MAX_EXACT_UNITS = 30


def all_configs(n: int, start: int = 0, stop: int | None = None,
                dtype=np.float64) -> np.ndarray:
    """Binary configurations ``start..stop-1`` of ``n`` units as rows ``(stop - start, n)``.

    Row ``i`` is the binary expansion of ``start + i`` with unit 0 the least significant bit."""
    stop = (1 << n) if stop is None else stop
    idx = np.arange(start, stop, dtype=np.int64)
    return ((idx[:, None] >> np.arange(n, dtype=np.int64)) & 1).astype(dtype)


def _block_size(n_sum: int, n_other: int) -> int:
    # keep a block's (configs x other layer) float64 matrix around 32 MB
    rows = max(1, (1 << 22) // max(n_other, 1))
    return 1 << min(n_sum, max(0, rows.bit_length() - 1))


def log_partition_exact(rbm: RBM, max_units: int = 25) -> float:
    """Exact ``log Z`` by summing over all states of the smaller layer (ties: the hidden one).

    With ``n = min(V, H) <= max_units``; ``2^n`` configurations are processed in blocks of
    ``2^k`` rows as one matrix product each. Computed in float64."""
    W = rbm.W.astype(np.float64)
    b = rbm.b.astype(np.float64)
    c = rbm.c.astype(np.float64)
    if rbm.n_hidden > rbm.n_visible:
        # sum over x: log Z = logsumexp_x [b.x + sum_j softplus(c_j + (xW)_j)]
        W, b, c = W.T, c, b
    # now sum over the layer whose biases are c (size n); the other layer is marginalised
    n = W.shape[1]
    if n > max_units:
        raise ValueError(f"exact log Z needs the smaller layer to have <= {max_units} units; "
                         f"it has {n} (use log_partition_ais)")
    if n > MAX_EXACT_UNITS:
        raise ValueError(f"exact log Z over 2^{n} configurations is not feasible")
    # configurations in blocks of 2^k: the k low units vary inside a block, the n - k high
    # ones are fixed, so a block's pre-activations are one (2^k, V) table plus a vector
    k = _block_size(n, W.shape[0]).bit_length() - 1
    low = all_configs(k)                                          # (2^k, k)
    low_act = low @ W[:, :k].T + b                                # (2^k, V)
    low_c = low @ c[:k]
    # e^(low + high) = e^low · e^high: one table of exponentials, a product per entry, while
    # both factors are far from float64's range and no entry exceeds the product form's bound
    lo_min, lo_max = (float(low_act.min()), float(low_act.max())) if low_act.size else (0, 0)
    low_exp_t = (np.ascontiguousarray(np.exp(low_act).T) if -600 < lo_min and lo_max < 600
                 else None)                                       # (V, 2^k)
    sums = np.empty(low_act.shape[0])
    parts = []
    for high in range(1 << (n - k)):
        bits = ((high >> np.arange(n - k)) & 1).astype(np.float64)
        high_act = W[:, k:] @ bits                                # (V,)
        if low_exp_t is not None and np.all(np.abs(high_act) < 600) \
                and lo_max + float(high_act.max(initial=0.0)) <= PRODUCT_MAX_ACT:
            log_product_sums(low_exp_t, np.exp(high_act), sums)
        else:
            sums = softplus_row_sums(low_act + high_act)
        parts.append(logsumexp(low_c + bits @ c[k:] + sums))
    return float(logsumexp(np.asarray(parts)))


def exact_visible_log_probs(rbm: RBM, log_z: float | None = None) -> np.ndarray:
    """``log p(x)`` for all ``2^V`` visible states, ordered as :func:`all_configs` ``(2^V,)``.

    For small models (V <= ~20) — exact reference distributions in tests."""
    V = rbm.n_visible
    if V > 24:
        raise ValueError(f"2^{V} visible states are too many to enumerate")
    if log_z is None:
        log_z = log_partition_exact(rbm, max_units=MAX_EXACT_UNITS)
    x = all_configs(V)
    return -rbm.astype(np.float64).free_energy(x) - log_z


def ais_betas(n_betas: int, schedule: str = "sm08") -> np.ndarray:
    """Inverse temperatures ``0 = beta_0 < ... < beta_K = 1`` (``n_betas`` values).

    ``"sm08"``: Salakhutdinov & Murray's (2008) schedule shape — 500 steps on [0, 0.5], 4000 on
    [0.5, 0.9], 10000 on [0.9, 1] out of 14500, scaled to ``n_betas``; ``"linear"``: uniform."""
    if n_betas < 2:
        raise ValueError("AIS needs at least 2 inverse temperatures")
    if schedule == "linear":
        return np.linspace(0.0, 1.0, n_betas)
    if schedule != "sm08":
        raise ValueError(f"unknown AIS schedule '{schedule}' (sm08, linear)")
    steps = n_betas - 1
    n1 = max(1, round(steps * 500 / 14500))
    n2 = max(1, round(steps * 4000 / 14500))
    n3 = max(1, steps - n1 - n2)
    return np.concatenate([np.linspace(0.0, 0.5, n1, endpoint=False),
                           np.linspace(0.5, 0.9, n2, endpoint=False),
                           np.linspace(0.9, 1.0, n3 + 1)])


def log_partition_ais(rbm: RBM, n_runs: int = 100, n_betas: int = 10000,
                      base_b: np.ndarray | None = None, rng: np.random.Generator | None = None,
                      data: np.ndarray | None = None, schedule: str = "sm08",
                      return_log_weights: bool = False):
    """Estimate ``log Z`` by annealed importance sampling (Salakhutdinov & Murray 2008).

    Base-rate model ``p_A(x) ∝ exp(b_A.x)`` with ``b_A = base_b``, or the clipped data log-odds
    of ``data (n, V)`` when ``base_b`` is None, or 0 (uniform) when both are None. Intermediate
    models ``p_k(x, h) ∝ exp((1 - β_k) b_A.x + β_k (b.x + c.h + xWh))``; transitions are one block
    Gibbs sweep at ``β_k``. All ``n_runs`` runs advance together (matrix products in the model
    dtype, log-weights accumulated in float64).

    Returns ``(log_Z_estimate, stderr)`` where the estimate is ``log Z_A + log mean(w)``
    (log-sum-exp of the log-weights) and ``stderr`` is the delta-method standard error of
    ``log mean(w)``: ``std(w) / (sqrt(n_runs) mean(w))``. With ``return_log_weights`` a third
    item, the ``(n_runs,)`` log-weights, is returned."""
    rng = np.random.default_rng() if rng is None else rng
    V, H = rbm.n_visible, rbm.n_hidden
    dt = rbm.dtype
    if base_b is None:
        base_b = RBM.data_log_odds(data) if data is not None else np.zeros(V)
    base_b = np.asarray(base_b, dtype=np.float64)
    if base_b.shape != (V,):
        raise ValueError(f"base_b must have shape ({V},), got {base_b.shape}")
    betas = ais_betas(n_betas, schedule)
    W = rbm.W
    b64 = rbm.b.astype(np.float64)
    c = rbm.c
    bA = base_b.astype(dt)
    db = (rbm.b - bA)  # b - b_A (model dtype) for the visible input at beta
    db64 = b64 - base_b
    fdt = np.float32 if dt == np.float32 else np.float64

    # x_0 ~ p_A
    x = (rng.random((n_runs, V), dtype=fdt) < sigmoid(bA)).astype(dt)
    log_w = np.zeros(n_runs)
    for k in range(1, len(betas)):
        bk, bprev = betas[k], betas[k - 1]
        a = x @ W + c                                     # (n_runs, H), model dtype
        # log p*_k(x) - log p*_{k-1}(x) at x = x_{k-1}; the hidden part is
        # softplus(bk a) - softplus(bprev a) = log1p(sigmoid(bprev a) expm1((bk - bprev) a)),
        # accurate to relative rounding even in float32 (no cancellation between two softplus)
        step = bk - bprev
        if step * float(np.abs(a).max(initial=0.0)) < 60.0:
            dh = np.log1p(expit(dt.type(bprev) * a) * np.expm1(dt.type(step) * a))
            dh = dh.sum(axis=1, dtype=np.float64)
        else:  # huge steps (tiny n_betas): difference of float64 softplus
            a64 = a.astype(np.float64)
            dh = (softplus(bk * a64) - softplus(bprev * a64)).sum(axis=1)
        log_w += step * (x.astype(np.float64) @ db64) + dh
        if k == len(betas) - 1:
            break
        # one block-Gibbs sweep leaving p_k invariant
        ph = sigmoid(dt.type(bk) * a)
        h = (rng.random(ph.shape, dtype=fdt) < ph).astype(dt)
        px = sigmoid(bA + dt.type(bk) * (h @ W.T + db))
        x = (rng.random(px.shape, dtype=fdt) < px).astype(dt)

    log_za = float(softplus(base_b).sum() + H * math.log(2.0))
    lse = float(logsumexp(log_w))
    est = log_za + lse - math.log(n_runs)
    w = np.exp(log_w - log_w.max())
    stderr = float(np.std(w, ddof=1) / (math.sqrt(n_runs) * w.mean())) if n_runs > 1 \
        else float("inf")
    if return_log_weights:
        return est, stderr, log_w
    return est, stderr


def log_likelihood(rbm: RBM, X: np.ndarray, log_z: float,
                   batch: int = 4096) -> tuple[float, float]:
    """Mean log-likelihood ``mean_n(-F(x_n)) - log Z`` of rows ``X (n, V)`` (float64), and the
    standard error of that mean over the examples (``std / sqrt(n)``; log Z's own error is not
    included)."""
    X = np.asarray(X)
    n = X.shape[0]
    m = rbm.astype(np.float64)
    ll = np.concatenate([-m.free_energy(X[i:i + batch]) for i in range(0, n, batch)]) - log_z
    se = float(ll.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    return float(ll.mean()), se
