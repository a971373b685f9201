"""Reweighted sum-product BP on the grid spin glass: Bethe (``rho = 1``) and TRW (``rho`` in the
spanning tree polytope; the comb-tree mixture by default)."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.optimize
import scipy.sparse

from ..model import SpinGlass
from .common import SPIN, VariationalWarning, edges, entropy2, set_info, warn_unconverged


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
    src, dst, J = edges(model)
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
    hs = h[:, None] * SPIN
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
        warn_unconverged(name, it, residual, tol)
    L = hs + A @ M
    bs = np.exp(L - L.max(axis=1, keepdims=True))
    bs /= bs.sum(axis=1, keepdims=True)          # (n, 2)
    cs = L[src] - M[E:]                           # (E, 2) over x_src (message dst->src removed)
    ct = L[dst] - M[:E]                           # (E, 2) over x_dst
    pair = SPIN[:, None] * SPIN[None, :]        # x_s x_t, (2, 2)
    le = (J / rho)[:, None, None] * pair + cs[:, :, None] + ct[:, None, :]
    le -= le.max(axis=(1, 2), keepdims=True)
    be = np.exp(le)
    be /= be.sum(axis=(1, 2), keepdims=True)     # (E, 2, 2)
    energy = np.sum(bs * hs) + np.sum(be * (J[:, None, None] * pair))
    Hs = entropy2(bs)
    He = entropy2(be.reshape(E, 4))
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
        warn_unconverged("bethe_bp", info["iterations"], info["residual"], tol)
    set_info(method="bethe_bp", schedule=schedule, values=[r[0] for r in runs],
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
    set_info(method="trw", schedule=schedule, **info)
    return (logZ, p.reshape(model.shape)) if return_marginals else logZ
