"""Naive mean field: checkerboard coordinate ascent from several starts (a lower bound for any
iterate)."""

from __future__ import annotations

import numpy as np

from ..model import SpinGlass
from .common import binary_entropy, set_info, warn_unconverged

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
    return e + np.sum(binary_entropy((1.0 + m) / 2.0), axis=(-2, -1))


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
            from ...errors import MixlabError
            from ..map import map_solve
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


def mean_field_all(model, tol, max_iter, inits, restarts, seed, init):
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
    m, vals, names, it, residual, skipped = mean_field_all(model, tol, max_iter, inits,
                                                            restarts, seed, init)
    converged = bool(np.all(residual < tol))
    if not converged:
        warn_unconverged("mean_field", it, float(np.max(residual)), tol)
    b = int(np.argmax(vals))
    set_info(method="mean_field", converged=converged, iterations=it,
              residual=float(np.max(residual)), best_init=names[b], values=vals.tolist(),
              inits=names, skipped=skipped)
    val = float(vals[b])
    return (val, (1.0 + m[b]) / 2.0) if return_marginals else val
