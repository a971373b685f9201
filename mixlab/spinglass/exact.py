"""Exact inference on grid spin glasses by a transfer matrix over a moving frontier.

The grid is swept site by site in raster order over its narrower side (the model is transposed
when ``C > R``). The frontier holds the ``W = min(R, C)`` most recent spins, one per column, so
its state is one of ``2^W`` configurations (bit ``c`` of the state index = spin of column ``c``,
bit 1 meaning +1). Adding site ``(r, c)`` replaces the spin ``x[r-1, c]`` in bit ``c`` by
``x[r, c]``: one vectorised log-sum-exp (or max) over ``2^W`` states per site, so the cost is
``O(R C 2^W)`` and a 10x10 grid takes about a millisecond.

- :func:`log_partition`: ``log Z = log Σ_x exp θ(x)``.
- :func:`marginals`: ``P(x_rc = +1)`` (forward-backward over the frontier).
- :func:`edge_marginals`: ``P(x_i x_j = +1)`` for every right and down edge
  (``E[x_i x_j] = 2 P - 1``); :func:`site_and_edge_marginals`: both in one sweep.
- :func:`max_product`: exact MAP (max instead of log-sum-exp, with backtracking) for any sign of
  couplings, with optional unary and pairwise perturbation tables and a batch of perturbations.
- :func:`brute_force`: enumeration of all ``2^n`` configurations (n <= 24), the test oracle.

Perturbation tables use index 0 for spin -1 and 1 for spin +1: ``unary (..., R, C, 2)``,
``pairwise = (right (..., R, C-1, 2, 2), down (..., R-1, C, 2, 2))`` indexed
``[..., x_left/up, x_right/down]``. They are added to θ.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..compiled.numba_cache import CACHE
from ..errors import MixlabError
from .model import SpinGlass

__all__ = ["log_partition", "marginals", "edge_marginals", "site_and_edge_marginals", "max_product", "brute_force",
           "all_configurations", "MAX_WIDTH", "MAX_BRUTE"]

MAX_WIDTH = 22   # frontier of 2^22 states x 8 bytes = 32 MiB per site vector
MAX_BRUTE = 24
_SPIN = np.array([-1.0, 1.0])
_PAIR = np.array([[1.0, -1.0], [-1.0, 1.0]])  # x_i x_j for bits (b_i, b_j)


class _Tables:
    """Per-site log-potential tables of a (possibly transposed) model with a batch axis.

    ``unary (B, R, C, 2)``, ``right (B, R, C-1, 2, 2)``, ``down (B, R-1, C, 2, 2)``."""

    def __init__(self, model: SpinGlass, unary=None, pairwise=None):
        R, C = model.shape
        batch: tuple = ()
        if unary is not None:
            unary = np.asarray(unary, dtype=np.float64)
            if unary.shape[-3:] != (R, C, 2):
                raise ValueError(f"unary perturbation must be (..., {R}, {C}, 2), "
                                 f"got {unary.shape}")
            batch = unary.shape[:-3]
        pr = pd = None
        if pairwise is not None:
            pr, pd = (np.asarray(p, dtype=np.float64) for p in pairwise)
            if pr.shape[-4:] != (R, C - 1, 2, 2) or pd.shape[-4:] != (R - 1, C, 2, 2):
                raise ValueError(f"pairwise perturbation must be ((..., {R}, {C - 1}, 2, 2), "
                                 f"(..., {R - 1}, {C}, 2, 2)), got {pr.shape}, {pd.shape}")
            if pr.shape[:-4] != pd.shape[:-4] or (unary is not None and pr.shape[:-4] != batch):
                raise ValueError("perturbations must share their leading batch shape")
            batch = pr.shape[:-4]
        self.batch = batch
        B = int(np.prod(batch)) if batch else 1
        u = model.field[..., None] * _SPIN
        r = model.right[..., None, None] * _PAIR
        d = model.down[..., None, None] * _PAIR
        u = np.broadcast_to(u, (B, R, C, 2)) if unary is None else u + unary.reshape(B, R, C, 2)
        r = (np.broadcast_to(r, (B, R, C - 1, 2, 2)) if pr is None
             else r + pr.reshape(B, R, C - 1, 2, 2))
        d = (np.broadcast_to(d, (B, R - 1, C, 2, 2)) if pd is None
             else d + pd.reshape(B, R - 1, C, 2, 2))
        self.transposed = C > R
        if self.transposed:
            u, r, d = u.transpose(0, 2, 1, 3), d.transpose(0, 2, 1, 3, 4), r.transpose(0, 2, 1, 3, 4)
            R, C = C, R
        if C > MAX_WIDTH:
            raise MixlabError(f"exact frontier inference needs min(rows, cols) <= {MAX_WIDTH}; "
                              f"got a {model.rows}x{model.cols} grid (2^{C} frontier states)")
        self.B, self.R, self.C = B, R, C
        self.u, self.r, self.d = u, r, d

    def site(self, k: int):
        """(r, c, unary (B,2), down (B,2,2) or None, right (B,2,2) or None) of site k."""
        r, c = divmod(k, self.C)
        return (r, c, self.u[:, r, c], self.d[:, r - 1, c] if r > 0 else None,
                self.r[:, r, c - 1] if c > 0 else None)

    def untranspose(self, x: np.ndarray) -> np.ndarray:
        """``x (B, R', C')`` in frontier orientation -> batch shape + model grid."""
        if self.transposed:
            x = np.swapaxes(x, -1, -2)
        return x.reshape(self.batch + x.shape[1:])


def _lbits(c: int) -> np.ndarray:
    """Bit c-1 of the low index l in [0, 2^c): the left neighbour's bit, shape (2^c,)."""
    return (np.arange(1 << c) >> (c - 1)) & 1


def _incoming(T: _Tables, k: int):
    """Terms added when the new spin enters at site k.

    Returns (c, D (B,2,1,2) over [b_old, ., b_new] or None, E (B,1,2,L) = unary + right edge
    over [., b_new, l])."""
    r, c, u, d, rt = T.site(k)
    L = 1 << c
    E = np.broadcast_to(u[:, None, :, None], (T.B, 1, 2, L))
    if rt is not None:
        E = E + rt[:, _lbits(c), :].transpose(0, 2, 1)[:, None]   # (B,1,2,L)
    return c, d, E


def _forward(T: _Tables, mode: str, keep: bool = False):
    """Sweep the frontier. mode 'sum' (log-sum-exp) or 'max'.

    Returns (final (B, 2^C), per-site list): for 'max' with keep, the argmax old bit per site,
    bit-packed (uint8 (B, 2^C / 8), big-endian as ``np.packbits``, read by
    :func:`_packed_bit`: a 16 x 64 grid's 1,024 sites x 2^16 states keep 8 MiB per batch
    element); empty otherwise."""
    B, C, n = T.B, T.C, T.R * T.C
    S = 1 << C
    if mode == "sum":
        a = np.full((B, S), -C * np.log(2.0))
        for k in range(n):
            a = _sum_step(T, a, k)
        return a, []
    a = np.zeros((B, S))
    none = np.zeros((B, 2, 2))
    kept = []
    for k in range(n):
        _, c, u, d, rt = T.site(k)
        packed = np.zeros((B, (S + 7) // 8), np.uint8)
        _max_site(a, packed, np.ascontiguousarray(u),
                  none if d is None else np.ascontiguousarray(d),
                  none if rt is None else np.ascontiguousarray(rt), c, d is not None,
                  rt is not None)
        if keep:
            kept.append(packed)
    return a, kept


@njit(cache=CACHE, nogil=True, boundscheck=False)
def _max_site(a, packed, u, d, rt, c, has_down, has_right):
    """One max-product step of the frontier ``a (B, 2^C)``, in place: site at column ``c``
    replaces the old bit ``c`` (the spin above) by the new spin. For each state pair that
    differs in bit ``c`` only, the new value of bit ``c = new`` is ``max_old(a[old] +
    d[old, new]) + u[new] + rt[left, new]`` (``left`` = bit ``c - 1``); the argmax old bit is
    set in ``packed (B, 2^C / 8)`` (big-endian bits) when it is 1 (ties go to 0). ``u (B, 2)``,
    ``d (B, 2, 2)`` and ``rt (B, 2, 2)`` as in :meth:`_Tables.site`; the first row has no
    ``d`` (the old bit is a dummy: plain max, nothing recorded), the first column no ``rt``.
    One pass over the frontier, the work of the vectorised expressions it replaces without
    their temporaries."""
    B, S = a.shape
    L = 1 << c
    H = S // (2 * L)
    for b in range(B):
        for h in range(H):
            base = h * 2 * L
            for low in range(L):
                i0 = base + low
                i1 = i0 + L
                a0 = a[b, i0]
                a1 = a[b, i1]
                left = (low >> (c - 1)) & 1 if has_right else 0
                for new in range(2):
                    e = u[b, new]
                    if has_right:
                        e += rt[b, left, new]
                    if has_down:
                        x0 = a0 + d[b, 0, new]
                        x1 = a1 + d[b, 1, new]
                        if x1 > x0:
                            i = i1 if new else i0
                            packed[b, i >> 3] |= np.uint8(1 << (7 - (i & 7)))
                            x0 = x1
                    else:
                        x0 = a0 if a0 >= a1 else a1
                    if new:
                        a[b, i1] = x0 + e
                    else:
                        a[b, i0] = x0 + e


def _packed_bit(packed: np.ndarray, rows: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Bit ``index`` of row ``rows`` of an ``np.packbits`` array (big-endian bit order)."""
    return (packed[rows, index >> 3] >> (7 - (index & 7))) & 1


def _logsumexp(a: np.ndarray, axis) -> np.ndarray:
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(a - m), axis=axis))


def log_partition(model: SpinGlass, unary=None, pairwise=None) -> float | np.ndarray:
    """``log Σ_x exp(θ(x) + perturbation)``; a float, or an array over the perturbations'
    batch shape when ``unary``/``pairwise`` carry leading batch axes."""
    T = _Tables(model, unary, pairwise)
    a, _ = _forward(T, "sum")
    z = _logsumexp(a, axis=1).reshape(T.batch)
    return float(z) if z.ndim == 0 else z


def _sum_step(T: _Tables, a: np.ndarray, k: int) -> np.ndarray:
    """The log frontier ``a (B, 2^C)`` after adding site ``k`` (one log-sum-exp over the old
    bit)."""
    B, C = T.B, T.C
    c, d, E = _incoming(T, k)
    H, L = 1 << (C - 1 - c), 1 << c
    A = a.reshape(B, H, 2, L)
    if d is None:   # first row: the old bit is a dummy with weight 2^-1
        m = np.logaddexp(A[:, :, 0], A[:, :, 1])[:, :, None, :]
    else:
        m = np.logaddexp(A[:, :, 0:1, :] + d[:, None, 0, :, None],
                         A[:, :, 1:2, :] + d[:, None, 1, :, None])
    return (m + E).reshape(B, 1 << C)


def site_and_edge_marginals(model: SpinGlass) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(P(x_rc = +1) (R, C), right_agree (R, C-1), down_agree (R-1, C))`` in one
    forward-backward sweep over the frontier; ``*_agree`` is ``P(x_i x_j = +1)`` of each edge.

    Memory is ``O((R + C) 2^C)``, not ``O(R C 2^C)``: the forward pass keeps the frontier
    only at the start of every row, and the backward pass recomputes one row's frontiers from
    it (twice the forward work; on a 16 x 64 grid, 2^16 states, that is 40 MiB where every
    site's frontier would take 1.5 GiB).
    At each site the joint of (old bit, frontier with the new bit) is exponentiated once and
    the site's marginal and its up and left edges' agreement are sums of it."""
    T = _Tables(model)
    R, C = T.R, T.C
    S = 1 << C
    a = np.full((1, S), -C * np.log(2.0))
    starts = []                                    # frontier before each row's first site
    for k in range(R * C):
        if k % C == 0:
            starts.append(a)
        a = _sum_step(T, a, k)
    logZ = _logsumexp(a, axis=1)[0]
    marg, right, down = np.empty((R, C)), np.empty((R, max(C - 1, 0))), np.empty((R - 1, C))
    beta = np.zeros(S)
    for r in range(R - 1, -1, -1):
        row = [starts[r]]                          # row[c]: the frontier before site (r, c)
        for c in range(C - 1):
            row.append(_sum_step(T, row[-1], r * C + c))
        for c in range(C - 1, -1, -1):
            _, d, E = _incoming(T, r * C + c)
            H, L = 1 << (C - 1 - c), 1 << c
            Bk = beta.reshape(H, 1, 2, L) + E[0]                          # (H,1,2new,L)
            D = np.zeros((2, 2)) if d is None else d[0]
            X = D[None, :, :, None] + Bk                                  # (H,2old,2new,L)
            P = np.exp(row[c].reshape(H, 2, 1, L) + X - logZ)             # joint probability
            marg[r, c] = P[:, :, 1, :].sum()
            if r > 0:                   # old bit c = x[r-1, c], new bit = x[r, c]
                down[r - 1, c] = P[:, 0, 0, :].sum() + P[:, 1, 1, :].sum()
            if c > 0:                   # the left bit (c-1) is the high bit of the low index
                Pl = P.sum(axis=1).reshape(H, 2, 2, L // 2)               # (H,new,left,rest)
                right[r, c - 1] = Pl[:, 0, 0].sum() + Pl[:, 1, 1].sum()
            beta = np.logaddexp(X[:, :, 0, :], X[:, :, 1, :]).reshape(S)  # per old state
    marg, right, down = (np.clip(v, 0.0, 1.0) for v in (marg, right, down))
    if T.transposed:
        return marg.T.copy(), down.T.copy(), right.T.copy()
    return marg, right, down


def marginals(model: SpinGlass) -> np.ndarray:
    """Single-site marginals ``P(x_rc = +1)``, shape ``(R, C)``."""
    return site_and_edge_marginals(model)[0]


def edge_marginals(model: SpinGlass) -> tuple[np.ndarray, np.ndarray]:
    """``(right_agree (R, C-1), down_agree (R-1, C))``: ``P(x_i x_j = +1)`` for each edge.

    ``E[x_i x_j] = 2 P - 1``."""
    _, right, down = site_and_edge_marginals(model)
    return right, down


def max_product(model: SpinGlass, unary=None, pairwise=None, return_value: bool = False):
    """Exact MAP ``argmax_x θ(x) + Σ unary + Σ pairwise`` for any couplings.

    ``unary (..., R, C, 2)`` and ``pairwise`` tables (see module doc) may carry a leading batch
    shape; one MAP is solved per batch element in one vectorised sweep. Returns spins
    ``x (..., R, C)`` as int8 ±1, and with ``return_value`` also the maximal value ``(...)``.
    Ties are broken towards -1."""
    T = _Tables(model, unary, pairwise)
    a, choices = _forward(T, "max", keep=True)
    C, n, B = T.C, T.R * T.C, T.B
    state = np.argmax(a, axis=1)
    value = a[np.arange(B), state]
    bits = np.empty((B, n), dtype=np.int8)
    rows = np.arange(B)
    for k in range(n - 1, -1, -1):
        c = k % C
        bits[:, k] = (state >> c) & 1
        old = _packed_bit(choices[k], rows, state).astype(np.int64)
        state = (state & ~(1 << c)) | (old << c)
    x = (2 * bits - 1).astype(np.int8).reshape(B, T.R, T.C)
    x = T.untranspose(x)
    if return_value:
        v = value.reshape(T.batch)
        return x, (float(v) if v.ndim == 0 else v)
    return x


def all_configurations(n: int) -> np.ndarray:
    """All ``2^n`` spin vectors as int8 ±1, shape ``(2^n, n)``; row i has spin j = bit j of i."""
    idx = np.arange(1 << n)[:, None]
    return (2 * ((idx >> np.arange(n)) & 1) - 1).astype(np.int8)


def brute_force(model: SpinGlass) -> tuple[float, np.ndarray]:
    """``(log Z, P(x = +1) (R, C))`` by enumerating all ``2^n`` configurations (n <= 24)."""
    n = model.n
    if n > MAX_BRUTE:
        raise MixlabError(f"brute force needs at most {MAX_BRUTE} spins, got {n}")
    X = all_configurations(n).reshape(-1, model.rows, model.cols)
    s = model.score(X)
    m = s.max()
    w = np.exp(s - m)
    Z = w.sum()
    marg = np.einsum("k,krc->rc", w, (X > 0).astype(np.float64)) / Z
    return float(m + np.log(Z)), marg
