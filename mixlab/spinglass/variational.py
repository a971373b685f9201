"""Variational log Z baselines on the grid spin glass (Fig 1 left of Hazan, Maji & Jaakkola 2013).

All functions take a :class:`~mixlab.spinglass.model.SpinGlass` (``field (R, C)``, ``right
(R, C-1)``, ``down (R-1, C)``, spins ±1, ``p(x) ∝ exp θ(x)``) and return the log Z estimate, or
``(logZ, marginals)`` with ``return_marginals=True`` where ``marginals (R, C)`` is the estimate
of ``P(x_rc = +1)``. Iterative methods take ``damping``, ``tol`` and ``max_iter`` keywords and
emit a :class:`VariationalWarning` when they stop without meeting ``tol`` (never silently); the
diagnostics of the last call are in :data:`last_info` (``converged``, ``iterations``,
``residual`` and method-specific entries).

Methods
-------
- :func:`bethe_bp`: loopy sum-product BP (parallel, damped, log-domain messages over all directed
  edges at once); log Z is minus the Bethe free energy at the fixed point.
- :func:`trw`: tree-reweighted BP (Wainwright, Jaakkola & Willsky 2005), the same message passing
  with edge appearance probabilities ``ρ_e``; at its fixed point the value is an **upper bound**.
  Default ``ρ``: the uniform mixture over all "comb" spanning trees of the grid -- the R
  horizontal combs (all horizontal edges plus the vertical edges of one spine column, one comb per
  spine column c = 0..C-1) and the vertical combs (all vertical edges plus the horizontal edges of
  one spine row), the two families with weight 1/2 each. This gives
  ``ρ = 1/2 + 1/(2R)`` on every horizontal edge and ``ρ = 1/2 + 1/(2C)`` on every vertical edge
  (a point of the spanning-tree polytope). ``rho=`` overrides it (scalar or ``(right, down)``).
- :func:`mean_field`: naive mean field, checkerboard coordinate ascent (all sites of one colour
  at once are an exact block update); the value is a lower bound for any iterate.
- :func:`structured_mean_field`: ``q(x) = Π_c q_c(x[:, c])`` over the grid's vertical chains
  (columns); each ``q_c`` is an exact chain distribution (forward-backward) whose field includes
  the mean-field messages ``Σ θ_ij m_j`` of its horizontal neighbours; even then odd columns are
  updated (exact block coordinate ascent). Started from the naive mean-field solution, so its
  value is ``>=`` naive MF. A lower bound for any iterate.
- :func:`ntrw`: negative tree-reweighted bound (Liu & Ihler, UAI 2010, "Negative tree reweighted
  belief propagation") on the vertical and horizontal comb trees -- see its docstring for exactly
  what is implemented (the primal reverse-Jensen bound, optimised by L-BFGS).

Edge order used internally: the ``R (C-1)`` right edges row-major, then the ``(R-1) C`` down edges.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.optimize
import scipy.sparse

from .model import SpinGlass

__all__ = ["bethe_bp", "trw", "mean_field", "structured_mean_field", "ntrw", "comb_rho",
           "tree_infer", "VariationalWarning", "last_info"]

_SPIN = np.array([-1.0, 1.0])
last_info: dict = {}


class VariationalWarning(RuntimeWarning):
    """An iterative variational method stopped before meeting its tolerance."""


def _set_info(**kw) -> None:
    last_info.clear()
    last_info.update(kw)


def _warn_unconverged(name: str, it: int, residual: float, tol: float) -> None:
    warnings.warn(f"{name} did not converge in {it} iterations (residual {residual:.3g} > tol "
                  f"{tol:.3g}); its value is not a guaranteed bound", VariationalWarning,
                  stacklevel=3)


def _edges(model: SpinGlass):
    """``(src, dst, J)`` of the undirected edges: right edges row-major, then down edges."""
    R, C = model.shape
    idx = np.arange(R * C).reshape(R, C)
    src = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    dst = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    J = np.concatenate([model.right.ravel(), model.down.ravel()])
    return src, dst, J


def _entropy2(p: np.ndarray) -> np.ndarray:
    """Entropy (nats) of the last axis' distributions."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.sum(np.where(p > 0, p * np.log(p), 0.0), axis=-1)


def _binary_entropy(p1: np.ndarray) -> np.ndarray:
    return _entropy2(np.stack([1.0 - p1, p1], axis=-1))


# --------------------------------------------------------------------------------------------
# Reweighted sum-product BP (Bethe: rho = 1; TRW: rho in the spanning tree polytope)
# --------------------------------------------------------------------------------------------

def comb_rho(model: SpinGlass) -> tuple[np.ndarray, np.ndarray]:
    """Edge appearance probabilities of the uniform mixture of comb spanning trees (see module
    doc): ``(rho_right (R, C-1), rho_down (R-1, C))``."""
    R, C = model.shape
    return (np.full((R, C - 1), 0.5 + 0.5 / R), np.full((R - 1, C), 0.5 + 0.5 / C))


def _rho_vector(model: SpinGlass, rho) -> np.ndarray:
    R, C = model.shape
    if np.isscalar(rho):
        r = np.full(R * (C - 1) + (R - 1) * C, float(rho))
    else:
        rr, rd = rho
        r = np.concatenate([np.broadcast_to(np.asarray(rr, float), (R, C - 1)).ravel(),
                            np.broadcast_to(np.asarray(rd, float), (R - 1, C)).ravel()])
    if np.any(r <= 0) or not np.all(np.isfinite(r)):
        raise ValueError("edge weights rho must be positive and finite")
    return r


def _reweighted_bp(model: SpinGlass, rho: np.ndarray, damping: float, tol: float,
                   max_iter: int, name: str):
    """Parallel damped log-domain message passing of TRW-BP with edge weights ``rho (E,)``.

    Message ``t -> s``: ``m_ts(x_s) = log Σ_{x_t} exp(θ_st x_s x_t / ρ_st + L_t(x_t) - m_st(x_t))``
    with ``L_t(x) = θ_t x + Σ_{v ∈ N(t)} ρ_vt m_vt(x)`` (Wainwright et al. 2005; ρ = 1 is BP).
    Returns ``(logZ, P(x=+1) (n,), info)`` where logZ is the reweighted free energy
    ``Σ_s <θ_s, b_s> + Σ_e <θ_e, b_e> + Σ_s H(b_s) - Σ_e ρ_e I_e(b_e)``."""
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    n = model.n
    h = model.field.ravel()
    src, dst, J = _edges(model)
    E = J.size
    if E == 0:
        logZ = float(np.sum(np.logaddexp(h, -h)))
        return logZ, 1.0 / (1.0 + np.exp(-2.0 * h)), dict(converged=True, iterations=0,
                                                           residual=0.0)
    frm = np.concatenate([src, dst])            # directed edge d: frm[d] -> to[d]
    to = np.concatenate([dst, src])
    rev = np.concatenate([np.arange(E, 2 * E), np.arange(E)])
    Jd = np.concatenate([J / rho, J / rho])
    rhod = np.concatenate([rho, rho])
    A = scipy.sparse.csr_matrix((rhod, (to, np.arange(2 * E))), shape=(n, 2 * E))
    M = np.zeros((2 * E, 2))                      # log m_d(x_to), x_to in (-1, +1)
    hs = h[:, None] * _SPIN
    residual = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        L = hs + A @ M
        cav = L[frm] - M[rev]                     # function of x_frm
        c0, c1 = cav[:, 0], cav[:, 1]
        new = np.stack([np.logaddexp(Jd + c0, -Jd + c1), np.logaddexp(-Jd + c0, Jd + c1)], 1)
        new -= new.mean(axis=1, keepdims=True)
        residual = float(np.max(np.abs(new - M)))
        M = damping * M + (1.0 - damping) * new
        if residual < tol:
            break
    converged = residual < tol
    if not converged:
        _warn_unconverged(name, it, residual, tol)
    L = hs + A @ M
    bs = np.exp(L - L.max(axis=1, keepdims=True))
    bs /= bs.sum(axis=1, keepdims=True)          # (n, 2)
    cs = L[src] - M[E:]                           # (E, 2) over x_src (message dst->src removed)
    ct = L[dst] - M[:E]                           # (E, 2) over x_dst
    pair = _SPIN[:, None] * _SPIN[None, :]        # x_s x_t, (2, 2)
    le = (J / rho)[:, None, None] * pair + cs[:, :, None] + ct[:, None, :]
    le -= le.max(axis=(1, 2), keepdims=True)
    be = np.exp(le)
    be /= be.sum(axis=(1, 2), keepdims=True)     # (E, 2, 2)
    energy = np.sum(bs * hs) + np.sum(be * (J[:, None, None] * pair))
    Hs = _entropy2(bs)
    He = _entropy2(be.reshape(E, 4))
    I = Hs[src] + Hs[dst] - He
    logZ = float(energy + Hs.sum() - np.sum(rho * I))
    return logZ, bs[:, 1], dict(converged=converged, iterations=it, residual=residual)


def bethe_bp(model: SpinGlass, *, damping: float = 0.5, tol: float = 1e-10,
             max_iter: int = 10000, return_marginals: bool = False):
    """Loopy sum-product belief propagation; log Z ≈ minus the Bethe free energy.

    Exact on trees and forests. Parallel (flooding) schedule over all directed edges, damped in
    the log domain: ``m <- damping m_old + (1 - damping) m_new``; stops when the largest message
    change is below ``tol``. Returns ``logZ`` or ``(logZ, P(x=+1) (R, C))``."""
    logZ, p, info = _reweighted_bp(model, _rho_vector(model, 1.0), damping, tol, max_iter,
                                   "bethe_bp")
    _set_info(method="bethe_bp", **info)
    return (logZ, p.reshape(model.shape)) if return_marginals else logZ


def trw(model: SpinGlass, *, rho=None, damping: float = 0.5, tol: float = 1e-10,
        max_iter: int = 10000, return_marginals: bool = False):
    """Tree-reweighted BP upper bound on log Z (Wainwright, Jaakkola & Willsky 2005).

    ``rho``: edge appearance probabilities -- ``None`` for the comb-tree mixture
    (:func:`comb_rho`), a scalar, or ``(rho_right (R, C-1), rho_down (R-1, C))``. The value is an
    upper bound when ``rho`` lies in the spanning-tree polytope and the messages converged; with
    ``rho = 1`` on a tree it is exact (it is then BP)."""
    r = _rho_vector(model, comb_rho(model) if rho is None else rho)
    logZ, p, info = _reweighted_bp(model, r, damping, tol, max_iter, "trw")
    _set_info(method="trw", **info)
    return (logZ, p.reshape(model.shape)) if return_marginals else logZ


# --------------------------------------------------------------------------------------------
# Mean field
# --------------------------------------------------------------------------------------------

def _neighbour_field(model: SpinGlass, m: np.ndarray) -> np.ndarray:
    """``Σ_j θ_ij m_j`` for every site ``i``: (R, C)."""
    out = np.zeros_like(m)
    out[:, :-1] += model.right * m[:, 1:]
    out[:, 1:] += model.right * m[:, :-1]
    out[:-1, :] += model.down * m[1:, :]
    out[1:, :] += model.down * m[:-1, :]
    return out


def _mf_value(model: SpinGlass, m: np.ndarray) -> float:
    """``E_q[θ] + H(q)`` of the product distribution with means ``m (R, C)``."""
    e = (np.sum(model.field * m) + np.sum(model.right * m[:, :-1] * m[:, 1:])
         + np.sum(model.down * m[:-1, :] * m[1:, :]))
    return float(e + np.sum(_binary_entropy((1.0 + m) / 2.0)))


def _mean_field_run(model, m, tol, max_iter):
    R, C = model.shape
    rr, cc = np.indices((R, C))
    colour = (rr + cc) % 2 == 0
    residual = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        old = m.copy()
        for mask in (colour, ~colour):
            m = np.where(mask, np.tanh(model.field + _neighbour_field(model, m)), m)
        residual = float(np.max(np.abs(m - old)))
        if residual < tol:
            break
    return m, it, residual


def mean_field(model: SpinGlass, *, tol: float = 1e-10, max_iter: int = 10000,
               init: np.ndarray | None = None, return_marginals: bool = False):
    """Naive mean field lower bound ``max_q E_q[θ] + H(q)`` over product distributions.

    Checkerboard coordinate ascent ``m_i <- tanh(θ_i + Σ_j θ_ij m_j)`` (all sites of one colour
    at once, which is exact since they are not neighbours); the bound increases monotonically and
    is valid at every iterate. ``init``: starting means ``(R, C)`` (default ``tanh(field)``)."""
    m = np.tanh(model.field) if init is None else np.array(init, dtype=float)
    m, it, residual = _mean_field_run(model, m, tol, max_iter)
    converged = residual < tol
    if not converged:
        _warn_unconverged("mean_field", it, residual, tol)
    val = _mf_value(model, m)
    _set_info(method="mean_field", converged=converged, iterations=it, residual=residual)
    return (val, (1.0 + m) / 2.0) if return_marginals else val


# --------------------------------------------------------------------------------------------
# Exact inference on trees/forests given by parent pointers (used by SMF, NTRW and tests)
# --------------------------------------------------------------------------------------------

class _Forest:
    """A rooted forest over ``n`` nodes: ``parent (n,)`` (-1 for roots). Precomputes the levels
    (nodes grouped by depth) so that both passes are vectorised per level."""

    def __init__(self, parent: np.ndarray):
        parent = np.asarray(parent, dtype=np.int64)
        n = parent.size
        depth = np.full(n, -1)
        depth[parent < 0] = 0
        for _ in range(n):
            todo = depth < 0
            if not todo.any():
                break
            ok = todo & (depth[np.maximum(parent, 0)] >= 0)
            depth[ok] = depth[parent[ok]] + 1
        if np.any(depth < 0):
            raise ValueError("parent pointers contain a cycle")
        self.parent = parent
        self.n = n
        self.levels = [np.flatnonzero(depth == d) for d in range(int(depth.max()) + 1)]
        self.roots = self.levels[0]


def tree_infer(forest: _Forest, h: np.ndarray, J: np.ndarray):
    """Exact inference on a forest of ±1 spins with ``θ(x) = Σ h_i x_i + Σ_i J_i x_i x_parent(i)``.

    ``h (n,)``, ``J (n,)`` (coupling of node i to its parent; ignored for roots). Returns
    ``(logZ, E[x_i] (n,), E[x_i x_parent(i)] (n,))`` (0 for roots)."""
    n = forest.n
    par = forest.parent
    a = h[:, None] * _SPIN                          # a_i(x_i) = h_i x_i + Σ_children messages
    msg = np.zeros((n, 2))                          # message child -> parent, over x_parent
    for lev in reversed(forest.levels[1:]):
        al = a[lev]
        Jl = J[lev][:, None]
        # m(x_p) = log Σ_{x_c} exp(J x_c x_p + a_c(x_c))
        m = np.stack([np.logaddexp(Jl[:, 0] * 1 + al[:, 0], -Jl[:, 0] + al[:, 1]),
                      np.logaddexp(-Jl[:, 0] + al[:, 0], Jl[:, 0] + al[:, 1])], axis=1)
        msg[lev] = m
        a[:, 0] += np.bincount(par[lev], m[:, 0], minlength=n)
        a[:, 1] += np.bincount(par[lev], m[:, 1], minlength=n)
    logZ = float(np.sum(np.logaddexp(a[forest.roots, 0], a[forest.roots, 1])))
    out = np.zeros((n, 2))                          # message parent -> node, over x_node
    belief = np.zeros((n, 2))
    pair = np.zeros(n)
    r = forest.roots
    belief[r] = a[r]
    for lev in forest.levels[1:]:
        p = par[lev]
        bp = a[p] + out[p] - msg[lev]               # parent's belief without this child, (k, 2)
        Jl = J[lev]
        o = np.stack([np.logaddexp(Jl + bp[:, 0], -Jl + bp[:, 1]),
                      np.logaddexp(-Jl + bp[:, 0], Jl + bp[:, 1])], axis=1)
        out[lev] = o
        belief[lev] = a[lev] + o
        # pairwise: J x_c x_p + a_c(x_c) + bp(x_p); E[x_c x_p] = (P(agree) - P(disagree))
        ag = np.logaddexp(Jl + a[lev, 0] + bp[:, 0], Jl + a[lev, 1] + bp[:, 1])
        dg = np.logaddexp(-Jl + a[lev, 0] + bp[:, 1], -Jl + a[lev, 1] + bp[:, 0])
        pair[lev] = np.tanh((ag - dg) / 2.0)
    mean = np.tanh((belief[:, 1] - belief[:, 0]) / 2.0)
    return logZ, mean, pair


def _node(r, c, C):
    return r * C + c


def _column_forest(R: int, C: int) -> tuple[_Forest, np.ndarray]:
    """Vertical chains: parent of (r, c) is (r-1, c). Returns the forest and, per node, the index
    of its parent edge in the global edge order (-1 for roots)."""
    rr, cc = np.indices((R, C))
    parent = np.where(rr > 0, (rr - 1) * C + cc, -1).ravel()
    eidx = np.where(rr > 0, R * (C - 1) + (rr - 1) * C + cc, -1).ravel()
    return _Forest(parent), eidx


def _comb(R: int, C: int, vertical: bool) -> tuple[_Forest, np.ndarray]:
    """Comb spanning tree with spine row 0 (``vertical``: all down edges + the right edges of
    row 0) or spine column 0 (all right edges + the down edges of column 0). Returns the forest and
    each node's parent-edge index in the global edge order (-1 for the root)."""
    rr, cc = np.indices((R, C))
    hor_parent = (rr * C + cc - 1, rr * (C - 1) + cc - 1)              # (r, c-1)
    ver_parent = ((rr - 1) * C + cc, R * (C - 1) + (rr - 1) * C + cc)  # (r-1, c)
    if vertical:
        use_ver = rr > 0
        use_hor = (rr == 0) & (cc > 0)
    else:
        use_hor = cc > 0
        use_ver = (cc == 0) & (rr > 0)
    parent = np.where(use_ver, ver_parent[0], np.where(use_hor, hor_parent[0], -1)).ravel()
    eidx = np.where(use_ver, ver_parent[1], np.where(use_hor, hor_parent[1], -1)).ravel()
    return _Forest(parent), eidx


# --------------------------------------------------------------------------------------------
# Structured mean field over vertical chains
# --------------------------------------------------------------------------------------------

def structured_mean_field(model: SpinGlass, *, tol: float = 1e-10, max_iter: int = 10000,
                          init: str = "mean_field", return_marginals: bool = False):
    """Structured mean field lower bound with ``q(x) = Π_c q_c(x[:, c])`` (vertical chains).

    Each ``q_c`` is the exact chain distribution with the column's own field and vertical
    couplings plus the mean-field term ``Σ_{j horizontal nbr} θ_ij m_j``. Even columns are updated
    together, then odd columns (block coordinate ascent; the bound never decreases). The value
    ``E_q[θ] + Σ_c H(q_c)`` is a lower bound at every iterate. ``init="mean_field"`` starts from
    the naive mean-field solution (so the result is ``>=`` :func:`mean_field`), ``"field"`` from
    ``m = tanh(field)``. Exact when all horizontal couplings are 0."""
    R, C = model.shape
    if init == "mean_field":
        m, _, _ = _mean_field_run(model, np.tanh(model.field), tol, max_iter)
    elif init == "field":
        m = np.tanh(model.field)
    else:
        raise ValueError(f"init must be 'mean_field' or 'field', got {init!r}")
    forest, _ = _column_forest(R, C)
    Jv = np.zeros((R, C))
    Jv[1:, :] = model.down                           # coupling of (r, c) to (r-1, c)
    Jv = Jv.ravel()
    pairs = np.zeros((R - 1, C))                     # E_q[x_r x_{r+1}] per column
    logZc = np.zeros(C)
    heff = np.array(model.field, dtype=float)        # field used for each column's q_c
    cols = np.arange(C)
    even = (cols % 2 == 0)

    def lateral(mm):
        out = np.zeros_like(mm)
        out[:, :-1] += model.right * mm[:, 1:]
        out[:, 1:] += model.right * mm[:, :-1]
        return out

    def update(mask, m):
        he = model.field + lateral(m)
        # solve all columns at once (one forest) and keep the columns in ``mask``
        logZ_all, mean, pair = _columns_infer(forest, he, Jv, R, C)
        m = np.where(mask[None, :], mean, m)
        pairs[:, mask] = pair[:, mask]
        logZc[mask] = logZ_all[mask]
        heff[:, mask] = he[:, mask]
        return m

    # Starting from the product distribution with means m (a member of the chain family), each
    # block update exactly maximises the bound over the updated columns given the others, so the
    # bound never drops below its value at the start (the naive MF bound for init="mean_field").
    residual = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        old = m.copy()
        m = update(even, m)
        m = update(~even, m)
        residual = float(np.max(np.abs(m - old)))
        if residual < tol:
            break
    converged = residual < tol
    if not converged:
        _warn_unconverged("structured_mean_field", it, residual, tol)
    # bound: E_q[θ] + Σ_c H(q_c), H(q_c) = logZ_c - <heff, m>_c - <down, pairs>_c
    energy = (np.sum(model.field * m) + np.sum(model.down * pairs)
              + np.sum(model.right * m[:, :-1] * m[:, 1:]))
    entropy = np.sum(logZc) - np.sum(heff * m) - np.sum(model.down * pairs)
    val = float(energy + entropy)
    _set_info(method="structured_mean_field", converged=converged, iterations=it,
              residual=residual)
    return (val, (1.0 + m) / 2.0) if return_marginals else val


def _columns_infer(forest: _Forest, he: np.ndarray, Jv: np.ndarray, R: int, C: int):
    """Exact inference on every column chain: ``(logZ (C,), E[x] (R, C), E[x_r x_{r+1}]
    (R-1, C))``."""
    _, mean, pair = tree_infer(forest, he.ravel(), Jv)
    mean = mean.reshape(R, C)
    pair = pair.reshape(R, C)[1:, :]
    # per-column log Z: recompute from the forest pass per column cheaply via chain recursion
    a = he[0][:, None] * _SPIN                       # (C, 2) forward messages along rows
    for r in range(1, R):
        J = Jv.reshape(R, C)[r][:, None]
        prev = a
        a = np.stack([np.logaddexp(J[:, 0] + prev[:, 0], -J[:, 0] + prev[:, 1]),
                      np.logaddexp(-J[:, 0] + prev[:, 0], J[:, 0] + prev[:, 1])], axis=1)
        a = a + he[r][:, None] * _SPIN
    logZ = np.logaddexp(a[:, 0], a[:, 1])
    return logZ, mean, pair


# --------------------------------------------------------------------------------------------
# Negative tree-reweighted bound (Liu & Ihler 2010)
# --------------------------------------------------------------------------------------------

def ntrw(model: SpinGlass, *, weights=(0.5, 2.0), tol: float = 1e-6,
         max_iter: int = 200, return_marginals: bool = False):
    """Negative tree-reweighted lower bound on log Z on the vertical and horizontal comb trees.

    What is implemented (the primal form of Liu & Ihler's bound). Reverse Jensen: for weights
    ``ρ_V = 1 + a > 0`` and ``ρ_H = -a < 0`` (``a > 0``, ``ρ_V + ρ_H = 1``) and any parameters
    ``θ^V`` on the vertical comb spanning tree V (all down edges + the right edges of row 0) and
    ``θ^H`` on the horizontal comb H (all right edges + the down edges of column 0) with
    ``ρ_V θ^V + ρ_H θ^H = θ``, convexity of ``Φ = log Z`` gives
    ``Φ(θ) >= ρ_V Φ(θ^V) + ρ_H Φ(θ^H)`` (``θ^V`` is a convex combination of ``θ`` and ``θ^H``).
    Edges in one tree only are forced (``θ^V_e = θ_e/ρ_V`` on down edges outside column 0,
    ``θ^H_e = θ_e/ρ_H`` on right edges outside row 0); the free parameters are ``θ^H`` on every
    node and on the edges shared by both trees, and ``θ^V`` follows. Both ``Φ`` are exact tree
    sums; the bound is maximised over the free parameters by L-BFGS (gradient
    ``ρ_H (μ^H - μ^V)`` on the free coordinates, μ the tree moments). The problem is not concave
    (difference of convex functions), but **every** point gives a valid lower bound. It is run
    for each ``a`` in ``weights`` and the best bound is returned; ``a -> 0`` is the structured
    mean-field limit named by Liu & Ihler. Exact (``θ^V = θ^H = θ``, the start point) when the
    model's edges all lie in both trees, e.g. a 1 x n or n x 1 chain.

    The returned marginals are the vertical comb's singleton marginals at the optimum (they
    equal the horizontal comb's at a stationary point). ``last_info`` holds ``weight`` (the best
    ``a``) and ``bounds`` (one per ``a``)."""
    R, C = model.shape
    n = model.n
    src, dst, J = _edges(model)
    E = J.size
    h = model.field.ravel()
    fV, eV = _comb(R, C, vertical=True)
    fH, eH = _comb(R, C, vertical=False)
    inV = np.zeros(E, bool)
    inV[eV[eV >= 0]] = True
    inH = np.zeros(E, bool)
    inH[eH[eH >= 0]] = True
    shared = np.flatnonzero(inV & inH)
    # map edges to node slots of each forest (the node whose parent edge it is)
    slotV = np.full(E, -1)
    slotV[eV[eV >= 0]] = np.flatnonzero(eV >= 0)
    slotH = np.full(E, -1)
    slotH[eH[eH >= 0]] = np.flatnonzero(eH >= 0)
    results = []
    for a in weights:
        a = float(a)
        if a <= 0:
            raise ValueError(f"NTRW weights must be > 0, got {a}")
        rV, rH = 1.0 + a, -a
        JV_fixed = np.zeros(n)
        onlyV = inV & ~inH
        JV_fixed[slotV[onlyV]] = J[onlyV] / rV
        JH_fixed = np.zeros(n)
        onlyH = inH & ~inV
        JH_fixed[slotH[onlyH]] = J[onlyH] / rH

        def unpack(z):
            hH = z[:n]
            eHs = z[n:]
            hV = (h - rH * hH) / rV
            JH = JH_fixed.copy()
            JH[slotH[shared]] = eHs
            JV = JV_fixed.copy()
            JV[slotV[shared]] = (J[shared] - rH * eHs) / rV
            return hH, JH, hV, JV

        def fun(z):
            hH, JH, hV, JV = unpack(z)
            zV, mV, pV = tree_infer(fV, hV, JV)
            zH, mH, pH = tree_infer(fH, hH, JH)
            val = rV * zV + rH * zH
            grad = np.concatenate([rH * (mH - mV),
                                   rH * (pH[slotH[shared]] - pV[slotV[shared]])])
            return -val, -grad

        z0 = np.concatenate([h, J[shared]])          # θ^H = θ^V = θ on the free coordinates
        res = scipy.optimize.minimize(fun, z0, jac=True, method="L-BFGS-B",
                                      options=dict(maxiter=max_iter, gtol=tol, ftol=1e-15))
        val = -float(res.fun)
        hH, JH, hV, JV = unpack(res.x)
        _, mV, _ = tree_infer(fV, hV, JV)
        results.append((val, a, mV, bool(res.success), int(res.nit),
                        float(np.max(np.abs(res.jac))) if res.jac is not None else np.nan))
    best = max(results, key=lambda t: t[0])
    val, a, mV, ok, nit, gnorm = best
    if not ok and gnorm > tol:
        warnings.warn(f"ntrw (a={a}) stopped after {nit} L-BFGS iterations with gradient "
                      f"{gnorm:.3g} > tol {tol:.3g}; the value is still a valid lower bound but "
                      f"may not be the tightest", VariationalWarning, stacklevel=2)
    _set_info(method="ntrw", converged=ok or gnorm <= tol, iterations=nit, residual=gnorm,
              weight=a, bounds=[r[0] for r in results])
    return (val, ((1.0 + mV) / 2.0).reshape(R, C)) if return_marginals else val
