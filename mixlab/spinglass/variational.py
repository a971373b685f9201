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


def _bp_stages(R: int, C: int) -> list[np.ndarray]:
    """Directed-edge groups of the sequential schedule: a left-to-right sweep of the rightward
    messages (all rows at once, one column step per stage), then right-to-left of the leftward
    ones, then top-to-bottom and bottom-to-top of the vertical ones. Directed edge ``e`` is
    ``src -> dst`` of undirected edge ``e`` and ``e + E`` is ``dst -> src``."""
    ER = R * (C - 1)
    E = ER + (R - 1) * C
    rows, cols = np.arange(R), np.arange(C)
    st = [rows * (C - 1) + c for c in range(C - 1)]
    st += [E + rows * (C - 1) + c for c in reversed(range(C - 1))]
    st += [ER + r * C + cols for r in range(R - 1)]
    st += [E + ER + r * C + cols for r in reversed(range(R - 1))]
    return [s for s in st if s.size]


def _reweighted_bp(model: SpinGlass, rho: np.ndarray, damping: float, tol: float,
                   max_iter: int, name: str, schedule: str = "sequential", init=None):
    """Damped log-domain message passing of TRW-BP with edge weights ``rho (E,)``.

    Message ``t -> s``: ``m_ts(x_s) = log Σ_{x_t} exp(θ_st x_s x_t / ρ_st + L_t(x_t) - m_st(x_t))``
    with ``L_t(x) = θ_t x + Σ_{v ∈ N(t)} ρ_vt m_vt(x)`` (Wainwright et al. 2005; ρ = 1 is BP).
    ``schedule="sequential"``: one iteration is four sweeps over the grid (see
    :func:`_bp_stages`), each stage updating the messages of one column (or row) of edges for all
    rows (columns) at once with the messages just computed upstream; ``"parallel"``: all
    directed edges at once (flooding). Damping is in the log domain,
    ``log m <- damping log m_old + (1 - damping) log m_new`` (messages normalised to zero mean
    over the two states). Convergence check: after every iteration the full fixed-point residual
    ``max |F(M) - M|`` of the *parallel* update map ``F`` at the current messages (undamped, so
    it does not shrink with the damping) must be below ``tol``. ``init``: starting log messages
    ``(2E, 2)`` (default 0). Returns ``(logZ, P(x=+1) (n,), info, M)`` where logZ is the
    reweighted free energy ``Σ_s <θ_s, b_s> + Σ_e <θ_e, b_e> + Σ_s H(b_s) - Σ_e ρ_e I_e(b_e)``."""
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    if schedule not in ("sequential", "parallel"):
        raise ValueError(f"schedule must be 'sequential' or 'parallel', got {schedule!r}")
    n = model.n
    R, C = model.shape
    h = model.field.ravel()
    src, dst, J = _edges(model)
    E = J.size
    if E == 0:
        logZ = float(np.sum(np.logaddexp(h, -h)))
        return logZ, 1.0 / (1.0 + np.exp(-2.0 * h)), dict(converged=True, iterations=0,
                                                           residual=0.0), np.zeros((0, 2))
    frm = np.concatenate([src, dst])            # directed edge d: frm[d] -> to[d]
    to = np.concatenate([dst, src])
    rev = np.concatenate([np.arange(E, 2 * E), np.arange(E)])
    Jd = np.concatenate([J / rho, J / rho])
    rhod = np.concatenate([rho, rho])
    A = scipy.sparse.csr_matrix((rhod, (to, np.arange(2 * E))), shape=(n, 2 * E))
    hs = h[:, None] * _SPIN
    alld = np.arange(2 * E)
    stages = [alld] if schedule == "parallel" else _bp_stages(R, C)
    Afrm = [A[frm[d]] for d in stages]          # rows of A for the sending nodes of each stage

    def update(M, d, Ad):
        cav = hs[frm[d]] + Ad @ M - M[rev[d]]    # function of x_frm
        c0, c1 = cav[:, 0], cav[:, 1]
        j = Jd[d]
        new = np.stack([np.logaddexp(j + c0, -j + c1), np.logaddexp(-j + c0, j + c1)], 1)
        return new - new.mean(axis=1, keepdims=True)

    Afull = A[frm]
    M = np.zeros((2 * E, 2)) if init is None else np.array(init, dtype=float)
    residual = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        for d, Ad in zip(stages, Afrm):
            M[d] = damping * M[d] + (1.0 - damping) * update(M, d, Ad)
        residual = float(np.max(np.abs(update(M, alld, Afull) - M)))
        if not np.isfinite(residual):
            break
        if residual < tol:
            break
    converged = bool(residual < tol)
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
    return logZ, bs[:, 1], dict(converged=converged, iterations=it, residual=residual), M


BP_INITS = ("zero", "plus", "minus")


def bethe_bp(model: SpinGlass, *, damping: float = 0.5, tol: float = 1e-10,
             max_iter: int = 10000, schedule: str = "sequential", inits=BP_INITS,
             return_marginals: bool = False):
    """Loopy sum-product belief propagation; log Z ≈ minus the Bethe free energy (an
    approximation, not a bound in general).

    Exact on trees and forests. ``schedule="sequential"`` (default): four sweeps over the grid
    per iteration, vectorised across rows/columns (:func:`_reweighted_bp`); ``"parallel"``:
    flooding over all directed edges. Damped in the log domain,
    ``log m <- damping log m_old + (1 - damping) log m_new``; converged when the undamped
    fixed-point residual ``max |F(M) - M|`` of the full update is below ``tol`` (else a
    :class:`VariationalWarning`).

    At strong coupling loopy BP has several fixed points (e.g. one near each of the two
    magnetised phases); which one is reached depends on the starting messages. The Bethe
    approximation is the *global* minimum of the Bethe free energy, so BP is started from every
    message initialisation in ``inits`` -- ``"zero"`` (uniform messages), ``"plus"`` / ``"minus"``
    (every log message ratio ``log m(+1) - log m(-1) = ±2``, i.e. biased towards all +1 / all -1)
    -- and the converged fixed point with the lowest free energy (largest log Z estimate) is
    returned (unconverged runs are used only if none converged). ``last_info["values"]`` holds
    the estimate of every start. Returns ``logZ`` or ``(logZ, P(x=+1) (R, C))``."""
    rho = _rho_vector(model, 1.0)
    E = rho.size
    runs = []
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always", VariationalWarning)
        for name in inits:
            if name not in BP_INITS:
                raise ValueError(f"unknown BP init {name!r} (choose from {BP_INITS})")
            M0 = np.zeros((2 * E, 2))
            if name != "zero":
                M0[:, 1] = 1.0 if name == "plus" else -1.0
                M0[:, 0] = -M0[:, 1]
            runs.append(_reweighted_bp(model, rho, damping, tol, max_iter, "bethe_bp", schedule,
                                       init=M0)[:3])
    ok = [r for r in runs if r[2]["converged"]] or runs
    logZ, p, info = max(ok, key=lambda r: r[0])
    if not info["converged"]:
        _warn_unconverged("bethe_bp", info["iterations"], info["residual"], tol)
    _set_info(method="bethe_bp", schedule=schedule, values=[r[0] for r in runs],
              converged_runs=[r[2]["converged"] for r in runs], **info)
    return (logZ, p.reshape(model.shape)) if return_marginals else logZ


def trw(model: SpinGlass, *, rho=None, damping: float = 0.5, tol: float = 1e-10,
        max_iter: int = 10000, schedule: str = "parallel", return_marginals: bool = False):
    """Tree-reweighted BP upper bound on log Z (Wainwright, Jaakkola & Willsky 2005).

    ``rho``: edge appearance probabilities -- ``None`` for the comb-tree mixture
    (:func:`comb_rho`), a scalar, or ``(rho_right (R, C-1), rho_down (R-1, C))``. Log-domain
    damping and convergence check as in :func:`bethe_bp`; the default schedule is
    ``"parallel"`` (TRW has a unique fixed point; on 10x10 grids at c = 3 the sequential sweeps
    need about half as many iterations but each costs ~15x more, and both converge slowly --
    residual ~1e-5 after 3000 iterations on some models). The value is an upper bound
    only when ``rho`` lies in the spanning-tree polytope **and** the messages converged (the
    free energy is evaluated at the fixed point; at unconverged messages the beliefs are not
    the optimum of the TRW problem and the value is **not guaranteed to be an upper bound** --
    a :class:`VariationalWarning` says so and ``last_info["converged"]`` is False). With
    ``rho = 1`` on a tree it is exact (it is then BP)."""
    r = _rho_vector(model, comb_rho(model) if rho is None else rho)
    logZ, p, info, _ = _reweighted_bp(model, r, damping, tol, max_iter, "trw", schedule)
    _set_info(method="trw", schedule=schedule, **info)
    return (logZ, p.reshape(model.shape)) if return_marginals else logZ


# --------------------------------------------------------------------------------------------
# Mean field
# --------------------------------------------------------------------------------------------

MF_INITS = ("field", "uniform", "plus", "minus", "map")


def _neighbour_field(model: SpinGlass, m: np.ndarray) -> np.ndarray:
    """``Σ_j θ_ij m_j`` for every site ``i``: ``m (..., R, C)`` -> ``(..., R, C)``."""
    out = np.zeros_like(m)
    out[..., :, :-1] += model.right * m[..., :, 1:]
    out[..., :, 1:] += model.right * m[..., :, :-1]
    out[..., :-1, :] += model.down * m[..., 1:, :]
    out[..., 1:, :] += model.down * m[..., :-1, :]
    return out


def _mf_value(model: SpinGlass, m: np.ndarray) -> np.ndarray:
    """``E_q[θ] + H(q)`` of the product distributions with means ``m (..., R, C)``: ``(...)``."""
    e = (np.sum(model.field * m, axis=(-2, -1))
         + np.sum(model.right * m[..., :, :-1] * m[..., :, 1:], axis=(-2, -1))
         + np.sum(model.down * m[..., :-1, :] * m[..., 1:, :], axis=(-2, -1)))
    return e + np.sum(_binary_entropy((1.0 + m) / 2.0), axis=(-2, -1))


def _mean_field_run(model, m, tol, max_iter):
    """Checkerboard coordinate ascent on a batch of means ``m (K, R, C)``; returns
    ``(m, iterations, residual (K,))``."""
    R, C = model.shape
    rr, cc = np.indices((R, C))
    colour = (rr + cc) % 2 == 0
    residual = np.full(m.shape[0], np.inf)
    it = 0
    for it in range(1, max_iter + 1):
        old = m.copy()
        for mask in (colour, ~colour):
            m = np.where(mask, np.tanh(model.field + _neighbour_field(model, m)), m)
        residual = np.max(np.abs(m - old), axis=(-2, -1))
        if np.all(residual < tol):
            break
    return m, it, residual


def _mf_starts(model: SpinGlass, inits, restarts: int, seed, init):
    """Starting means ``(K, R, C)`` and their names (see :func:`mean_field`)."""
    shape = model.shape
    if init is not None:
        return np.array(init, dtype=float).reshape((1,) + shape), ["init"], None
    starts, names, skipped = [], [], None
    for name in inits:
        if name == "field":
            starts.append(np.tanh(model.field))
        elif name == "uniform":
            starts.append(np.zeros(shape))
        elif name == "plus":
            starts.append(np.ones(shape))
        elif name == "minus":
            starts.append(-np.ones(shape))
        elif name == "map":
            from ..errors import MixlabError
            from .map import map_solve
            try:
                starts.append(np.asarray(map_solve(model), dtype=float))
            except MixlabError as exc:      # no exact MAP solver (mixed couplings, wide grid)
                skipped = str(exc)
                continue
        else:
            raise ValueError(f"unknown mean-field init {name!r} (choose from {MF_INITS})")
        names.append(name)
    if restarts < 0:
        raise ValueError(f"restarts must be >= 0, got {restarts}")
    if restarts:
        rng = np.random.default_rng(seed)
        starts.extend(rng.uniform(-1.0, 1.0, (restarts,) + shape))
        names.extend(f"random{i}" for i in range(restarts))
    if not starts:
        raise ValueError("mean field needs at least one starting point")
    return np.stack(starts), names, skipped


def _mean_field_all(model, tol, max_iter, inits, restarts, seed, init):
    """Run coordinate ascent from every start: ``(m (K, R, C), values (K,), names, it,
    residual (K,), skipped)``."""
    m0, names, skipped = _mf_starts(model, inits, restarts, seed, init)
    m, it, residual = _mean_field_run(model, m0, tol, max_iter)
    return m, _mf_value(model, m), names, it, residual, skipped


def mean_field(model: SpinGlass, *, tol: float = 1e-10, max_iter: int = 10000,
               inits=MF_INITS, restarts: int = 4, seed=0, init: np.ndarray | None = None,
               return_marginals: bool = False):
    """Naive mean field lower bound ``max_q E_q[θ] + H(q)`` over product distributions.

    Checkerboard coordinate ascent ``m_i <- tanh(θ_i + Σ_j θ_ij m_j)`` (all sites of one colour
    at once, which is exact since they are not neighbours); the bound increases monotonically and
    is valid at every iterate. The objective is not concave: at strong coupling it has many
    local maxima (domain walls, the symmetric saddle), so the ascent is run from several starting
    points at once (a batch axis) and the **largest** bound is returned -- every one of them is
    a lower bound, so their maximum is too. ``inits`` (any of ``MF_INITS``):

    - ``"field"``: ``m = tanh(θ_i)`` (the field alone);
    - ``"uniform"``: ``m = 0`` (the uniform distribution);
    - ``"plus"`` / ``"minus"``: the point masses on all +1 / all -1;
    - ``"map"``: the point mass on a MAP configuration ``x*`` (:func:`~mixlab.spinglass.map.
      map_solve`; skipped, with a note in ``last_info["skipped"]``, when no exact MAP solver
      applies). Its starting bound is ``θ(x*)`` and the ascent only increases it, so the result
      is ``>= max_x θ(x)``;

    plus ``restarts`` random starts ``m ~ U[-1, 1]`` from ``np.random.default_rng(seed)``.
    ``init``: starting means ``(R, C)``; when given it is the only start (``inits``/``restarts``
    ignored). ``last_info``: ``best_init``, ``values`` (one bound per start), ``inits`` (names).
    A warning is emitted if any start stops before ``tol``."""
    m, vals, names, it, residual, skipped = _mean_field_all(model, tol, max_iter, inits,
                                                            restarts, seed, init)
    converged = bool(np.all(residual < tol))
    if not converged:
        _warn_unconverged("mean_field", it, float(np.max(residual)), tol)
    b = int(np.argmax(vals))
    _set_info(method="mean_field", converged=converged, iterations=it,
              residual=float(np.max(residual)), best_init=names[b], values=vals.tolist(),
              inits=names, skipped=skipped)
    val = float(vals[b])
    return (val, (1.0 + m[b]) / 2.0) if return_marginals else val


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

def _chains_infer(he: np.ndarray, Jd: np.ndarray):
    """Exact inference on every vertical chain of a batch: ``he (K, R, C)`` fields, ``Jd (R-1,
    C)`` vertical couplings. Returns ``(logZ (K, C), E[x] (K, R, C), E[x_r x_{r+1}]
    (K, R-1, C))`` (forward-backward in the log domain, vectorised over K and the columns)."""
    K, R, C = he.shape
    alpha = np.empty((K, R, C, 2))
    alpha[:, 0] = he[:, 0, :, None] * _SPIN
    for r in range(1, R):
        j, p = Jd[r - 1], alpha[:, r - 1]
        alpha[:, r, :, 0] = -he[:, r] + np.logaddexp(j + p[..., 0], -j + p[..., 1])
        alpha[:, r, :, 1] = he[:, r] + np.logaddexp(-j + p[..., 0], j + p[..., 1])
    beta = np.zeros((K, R, C, 2))
    pair = np.empty((K, R - 1, C))
    for r in range(R - 2, -1, -1):
        j = Jd[r]
        g0 = -he[:, r + 1] + beta[:, r + 1, :, 0]       # g(y) = he_{r+1} y + beta_{r+1}(y)
        g1 = he[:, r + 1] + beta[:, r + 1, :, 1]
        beta[:, r, :, 0] = np.logaddexp(j + g0, -j + g1)
        beta[:, r, :, 1] = np.logaddexp(-j + g0, j + g1)
        a0, a1 = alpha[:, r, :, 0], alpha[:, r, :, 1]
        ag = np.logaddexp(j + a0 + g0, j + a1 + g1)
        dg = np.logaddexp(-j + a0 + g1, -j + a1 + g0)
        pair[:, r] = np.tanh((ag - dg) / 2.0)
    s = alpha + beta
    mean = np.tanh((s[..., 1] - s[..., 0]) / 2.0)
    logZ = np.logaddexp(alpha[:, R - 1, :, 0], alpha[:, R - 1, :, 1])
    return logZ, mean, pair


def _smf_run(model: SpinGlass, m: np.ndarray, tol: float, max_iter: int):
    """Block coordinate ascent (even columns, then odd) from product distributions with means
    ``m (K, R, C)``. Returns ``(value (K,), m, heff (K, R, C), iterations, residual (K,))``;
    ``heff`` and ``model.down`` are the natural parameters of each column chain ``q_c``."""
    K, (R, C) = m.shape[0], model.shape
    even = np.arange(C) % 2 == 0
    pairs = np.zeros((K, R - 1, C))                  # E_q[x_r x_{r+1}] per column
    logZc = np.zeros((K, C))
    heff = np.zeros((K, R, C))

    def lateral(mm):
        out = np.zeros_like(mm)
        out[..., :, :-1] += model.right * mm[..., :, 1:]
        out[..., :, 1:] += model.right * mm[..., :, :-1]
        return out

    # Starting from product distributions (members of the chain family), each block update
    # exactly maximises the bound over the updated columns given the others (the even columns
    # are not adjacent to each other), so the bound never drops below its starting value.
    residual = np.full(K, np.inf)
    it = 0
    for it in range(1, max_iter + 1):
        old = m.copy()
        for mask in (even, ~even):
            he = model.field + lateral(m)
            lz, mean, pair = _chains_infer(he, model.down)
            m = np.where(mask, mean, m)
            pairs[..., mask] = pair[..., mask]
            logZc[:, mask] = lz[:, mask]
            heff[..., mask] = he[..., mask]
        residual = np.max(np.abs(m - old), axis=(-2, -1))
        if np.all(residual < tol):
            break
    # bound: E_q[θ] + Σ_c H(q_c), H(q_c) = logZ_c - <heff, m>_c - <down, pairs>_c
    energy = (np.sum(model.field * m, axis=(1, 2)) + np.sum(model.down * pairs, axis=(1, 2))
              + np.sum(model.right * m[..., :, :-1] * m[..., :, 1:], axis=(1, 2)))
    entropy = (np.sum(logZc, axis=1) - np.sum(heff * m, axis=(1, 2))
               - np.sum(model.down * pairs, axis=(1, 2)))
    return energy + entropy, m, heff, it, residual


def _smf_best(model, tol, max_iter, init, inits, restarts, seed):
    if init == "mean_field":
        m0, _, names, _, _, skipped = _mean_field_all(model, tol, max_iter, inits, restarts,
                                                      seed, None)
    elif init == "field":
        m0, names, skipped = np.tanh(model.field)[None], ["field"], None
    else:
        raise ValueError(f"init must be 'mean_field' or 'field', got {init!r}")
    vals, m, heff, it, residual = _smf_run(model, m0, tol, max_iter)
    b = int(np.argmax(vals))
    return dict(value=float(vals[b]), m=m[b], heff=heff[b], iterations=it,
                residual=float(np.max(residual)), converged=bool(np.all(residual < tol)),
                best_init=names[b], values=vals.tolist(), inits=names, skipped=skipped)


def structured_mean_field(model: SpinGlass, *, tol: float = 1e-10, max_iter: int = 10000,
                          init: str = "mean_field", inits=MF_INITS, restarts: int = 4, seed=0,
                          return_marginals: bool = False):
    """Structured mean field lower bound with ``q(x) = Π_c q_c(x[:, c])`` (vertical chains).

    Each ``q_c`` is the exact chain distribution with the column's own field and vertical
    couplings plus the mean-field term ``Σ_{j horizontal nbr} θ_ij m_j``. Even columns are updated
    together, then odd columns (block coordinate ascent; the bound never decreases). The value
    ``E_q[θ] + Σ_c H(q_c)`` is a lower bound at every iterate. ``init="mean_field"``: the ascent
    is started from **every** converged naive mean-field solution of :func:`mean_field` (same
    ``inits``, ``restarts``, ``seed``; a batch axis) and the largest bound is returned, so the
    result is ``>=`` :func:`mean_field` with the same arguments (each start's value is at least
    its own mean-field value); ``init="field"``: a single start at ``m = tanh(field)``. Exact
    when all horizontal couplings are 0. ``last_info``: ``best_init``, ``values`` (per start)."""
    r = _smf_best(model, tol, max_iter, init, inits, restarts, seed)
    if not r["converged"]:
        _warn_unconverged("structured_mean_field", r["iterations"], r["residual"], tol)
    _set_info(method="structured_mean_field", converged=r["converged"],
              iterations=r["iterations"], residual=r["residual"], best_init=r["best_init"],
              values=r["values"], inits=r["inits"], skipped=r["skipped"])
    return (r["value"], (1.0 + r["m"]) / 2.0) if return_marginals else r["value"]


# --------------------------------------------------------------------------------------------
# Negative tree-reweighted bound (Liu & Ihler 2010)
# --------------------------------------------------------------------------------------------

def ntrw(model: SpinGlass, *, weights=(0.01, 0.1), tol: float = 1e-6,
         max_iter: int = 500, inits=MF_INITS, restarts: int = 4, seed=0,
         return_marginals: bool = False):
    """Negative tree-reweighted lower bound on log Z on the vertical and horizontal comb trees.

    What is implemented (the primal form of Liu & Ihler's bound). Reverse Jensen: for weights
    ``ρ_V = 1 + a > 0`` and ``ρ_H = -a < 0`` (``a > 0``, ``ρ_V + ρ_H = 1``) and any parameters
    ``θ^V`` on the vertical comb spanning tree V (all down edges + the right edges of row 0) and
    ``θ^H`` on the horizontal comb H (all right edges + the down edges of column 0) with
    ``ρ_V θ^V + ρ_H θ^H = θ``, convexity of ``Φ = log Z`` gives
    ``B_a = ρ_V Φ(θ^V) + ρ_H Φ(θ^H) <= Φ(θ)`` (``θ^V`` is a convex combination of ``θ`` and
    ``θ^H``). Edges in one tree only are forced (``θ^V_e = θ_e/ρ_V`` on down edges outside
    column 0, ``θ^H_e = θ_e/ρ_H`` on right edges outside row 0). The free variables are ``θ^V``
    on every node and on the edges both trees share, and ``θ^H = ((1+a) θ^V - θ)/a`` follows
    there; this parametrisation keeps the gradient ``(1+a)(μ^V - μ^H)`` (μ = tree moments) on
    the same scale for every ``a``. Both Φ are exact tree sums; ``B_a`` is maximised by L-BFGS
    (``max_iter`` iterations, gradient tolerance ``tol``). The problem is not concave, but
    **every** point is a valid lower bound.

    **The limiting case.** For ``a > 0`` and ``q`` the V-tree distribution of ``θ^V``,
    ``B_a <= E_q[θ] + H(q) - a (H_H(q) - H(q)) <= E_q[θ] + H(q)`` (``H_H(q)`` is the entropy of
    the H-tree distribution with ``q``'s marginals on H, which is ``>= H(q)``), i.e. in this
    two-tree parametrisation NTRW is at most *structured mean field over V-tree distributions*,
    and that is what the bound tends to as ``a -> 0`` (its dual). Product-of-vertical-chains
    distributions are V-tree distributions (zero couplings on the spine, row 0), so the
    vertical-chain structured mean-field optimum of :func:`structured_mean_field` (same
    ``inits``/``restarts``/``seed``) is a point of that limit, and its value is a valid lower
    bound. The returned value is the **best valid bound found** over the limit point and the
    runs ``a ∈ weights``; each ``a`` is started from whichever of two points has the larger
    bound: the same structured-MF solution (``θ^V`` = its chain parameters: effective fields,
    vertical couplings, 0 on the spine) or ``θ^V = θ^H = θ``. Hence NTRW ``>=`` structured MF by
    construction, and NTRW can exceed it only through the ``a > 0`` runs. Exact (start point
    ``θ^V = θ^H = θ``) when all edges lie in both trees, e.g. a 1 x n or n x 1 chain.

    Marginals: the vertical comb's singleton marginals at the best ``a > 0`` optimum, or the
    structured-MF marginals when the limit wins. ``last_info``: ``weight`` (the best ``a``, 0.0
    for the limit), ``bounds`` (``{a: best bound}``, key 0.0 for the limit), ``smf``."""
    R, C = model.shape
    n = model.n
    src, dst, J = _edges(model)
    E = J.size
    h = model.field.ravel()
    weights = [float(a) for a in weights]
    for a in weights:
        if a <= 0:
            raise ValueError(f"NTRW weights must be > 0, got {a}")
    smf = _smf_best(model, 1e-10, 10000, "mean_field", inits, restarts, seed)
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
    onlyV = inV & ~inH
    onlyH = inH & ~inV
    # structured-MF start: θ^V = the chains' natural parameters (heff on nodes, the model's
    # vertical couplings on down edges, 0 on the spine's right edges)
    ER = R * (C - 1)
    z_smf = np.concatenate([smf["heff"].ravel(), np.where(shared >= ER, J[shared], 0.0)])
    z_sym = np.concatenate([h, J[shared]])
    results = [dict(value=smf["value"], a=0.0, marg=(1.0 + smf["m"]) / 2.0,
                    converged=smf["converged"], nit=smf["iterations"], gnorm=smf["residual"])]
    for a in weights:
        rV, rH = 1.0 + a, -a
        JV_fixed = np.zeros(n)
        JV_fixed[slotV[onlyV]] = J[onlyV] / rV
        JH_fixed = np.zeros(n)
        JH_fixed[slotH[onlyH]] = J[onlyH] / rH

        def unpack(z, a=a, JV_fixed=JV_fixed, JH_fixed=JH_fixed):
            hV = z[:n]
            hH = ((1.0 + a) * hV - h) / a
            JV = JV_fixed.copy()
            JV[slotV[shared]] = z[n:]
            JH = JH_fixed.copy()
            JH[slotH[shared]] = ((1.0 + a) * z[n:] - J[shared]) / a
            return hV, JV, hH, JH

        def fun(z, a=a, unpack=unpack):
            hV, JV, hH, JH = unpack(z)
            zV, mV, pV = tree_infer(fV, hV, JV)
            zH, mH, pH = tree_infer(fH, hH, JH)
            val = (1.0 + a) * zV - a * zH
            grad = (1.0 + a) * np.concatenate([mV - mH, pV[slotV[shared]] - pH[slotH[shared]]])
            return -val, -grad

        z0 = min((z_smf, z_sym), key=lambda z: fun(z)[0])     # the start with the larger bound
        best = scipy.optimize.minimize(fun, z0, jac=True, method="L-BFGS-B",
                                       options=dict(maxiter=max_iter, gtol=tol, ftol=1e-15,
                                                    maxfun=4 * max_iter))
        hV, JV, _, _ = unpack(best.x)
        _, mV, _ = tree_infer(fV, hV, JV)
        gnorm = float(np.max(np.abs(best.jac)))
        results.append(dict(value=-float(best.fun), a=a, marg=((1.0 + mV) / 2.0).reshape(R, C),
                            converged=gnorm <= tol, nit=int(best.nit), gnorm=gnorm))
    r = max(results, key=lambda t: t["value"])
    if not r["converged"]:
        warnings.warn(f"ntrw (a={r['a']}) stopped after {r['nit']} iterations with residual "
                      f"{r['gnorm']:.3g} > tol; the value is still a valid lower bound but may "
                      f"not be the tightest", VariationalWarning, stacklevel=2)
    _set_info(method="ntrw", converged=r["converged"], iterations=r["nit"], residual=r["gnorm"],
              weight=r["a"], bounds={t["a"]: t["value"] for t in results}, smf=smf["value"])
    return (r["value"], r["marg"]) if return_marginals else r["value"]
