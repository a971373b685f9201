"""MAP assignments of (perturbed) grid spin glasses.

- :func:`map_graphcut`: attractive models (all couplings >= 0) by one s-t min cut with
  PyMaxflow's vectorised grid calls (``add_grid_nodes``, ``add_grid_edges`` with a structure
  array per edge direction, ``add_grid_tedges``) -- no Python loop over sites or edges.
- :func:`max_product` (re-exported from :mod:`.exact`): exact MAP for any couplings and pairwise
  perturbations on grids whose narrow side is at most ``exact.MAX_WIDTH``.
- :func:`map_solve`: picks graph cut when the problem is submodular, else max-product.
- :func:`perturbed_value`: ``θ(x) + Σ_i unary_i(x_i) [+ Σ pairwise]`` of given spins.

Spins are returned as int8 ±1 arrays ``(..., R, C)``; perturbation tables use index 0 for
spin -1 and 1 for spin +1 (see :mod:`.exact`).
"""

from __future__ import annotations

import maxflow
import numpy as np

from ..errors import MixlabError
from .exact import MAX_WIDTH, max_product
from .model import SpinGlass

__all__ = ["map_graphcut", "map_solve", "max_product", "perturbed_value", "RIGHT", "DOWN",
           "grid_graph"]

RIGHT = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 0]])
DOWN = np.array([[0, 0, 0], [0, 0, 0], [0, 1, 0]])


def _check_submodular(model: SpinGlass) -> None:
    neg = int(np.sum(model.right < 0) + np.sum(model.down < 0))
    if neg:
        raise MixlabError(f"graph-cut MAP needs attractive couplings (all >= 0); this model has "
                          f"{neg} negative coupling(s) of {model.right.size + model.down.size}: "
                          f"use max_product (method='max_product') for mixed couplings")


def grid_graph(model: SpinGlass, gain: np.ndarray):
    """Build the min-cut graph for maximising ``Σ gain_i [x_i = +1] + Σ θ_ij x_i x_j``.

    ``gain (R, C)`` is the log-potential difference between +1 and -1 at each site (fields and
    unary perturbations folded in). Returns ``(graph, nodes)``; after ``graph.maxflow()`` the
    sink segment (``get_grid_segments(nodes) == True``) is the set of +1 spins."""
    R, C = model.shape
    g = maxflow.Graph[float](R * C, 2 * R * C)
    nodes = g.add_grid_nodes((R, C))
    if C > 1:
        w = np.zeros((R, C))
        w[:, :-1] = 2.0 * model.right   # disagreeing neighbours lose 2 θ_ij
        g.add_grid_edges(nodes, weights=w, structure=RIGHT, symmetric=True)
    if R > 1:
        w = np.zeros((R, C))
        w[:-1, :] = 2.0 * model.down
        g.add_grid_edges(nodes, weights=w, structure=DOWN, symmetric=True)
    # A node in the sink segment (x = +1) pays its source capacity: cost(+1) - cost(-1) = -gain.
    g.add_grid_tedges(nodes, np.maximum(-gain, 0.0), np.maximum(gain, 0.0))
    return g, nodes


def map_graphcut(model: SpinGlass, unary: np.ndarray | None = None) -> np.ndarray:
    """Exact MAP of an attractive model ``argmax θ(x) + Σ_i unary[i, x_i]`` by graph cuts.

    ``unary (..., R, C, 2)`` may carry a batch shape (one cut per element). Returns int8 ±1
    spins ``(..., R, C)``. Raises MixlabError for a model with a negative coupling."""
    _check_submodular(model)
    R, C = model.shape
    base = 2.0 * model.field
    if unary is None:
        gains = base[None]
        batch: tuple = ()
    else:
        unary = np.asarray(unary, dtype=np.float64)
        if unary.shape[-3:] != (R, C, 2):
            raise ValueError(f"unary perturbation must be (..., {R}, {C}, 2), got {unary.shape}")
        batch = unary.shape[:-3]
        gains = (base + unary[..., 1] - unary[..., 0]).reshape(-1, R, C)
    out = np.empty(gains.shape, dtype=np.int8)
    for b in range(gains.shape[0]):   # one vectorised graph build + max-flow per perturbation
        g, nodes = grid_graph(model, gains[b])
        g.maxflow()
        out[b] = np.where(g.get_grid_segments(nodes), 1, -1)
    return out.reshape(batch + (R, C))


def perturbed_value(model: SpinGlass, x: np.ndarray, unary=None, pairwise=None) -> np.ndarray:
    """``θ(x) + Σ_i unary[i, x_i] + Σ_edges pairwise[e, x_i, x_j]`` for spins ``x (..., R, C)``
    and perturbations with the same leading shape."""
    x = np.asarray(x)
    v = model.score(x)
    b = (x > 0).astype(np.intp)
    if unary is not None:
        v = v + np.take_along_axis(np.asarray(unary), b[..., None], axis=-1)[..., 0].sum((-1, -2))
    if pairwise is not None:
        pr, pd = (np.asarray(p) for p in pairwise)
        ir = 2 * b[..., :, :-1] + b[..., :, 1:]
        idn = 2 * b[..., :-1, :] + b[..., 1:, :]
        vr = np.take_along_axis(pr.reshape(pr.shape[:-2] + (4,)), ir[..., None], -1)[..., 0]
        vd = np.take_along_axis(pd.reshape(pd.shape[:-2] + (4,)), idn[..., None], -1)[..., 0]
        v = v + vr.sum((-1, -2)) + vd.sum((-1, -2))
    return v


def map_solve(model: SpinGlass, unary=None, pairwise=None, method: str = "auto") -> np.ndarray:
    """MAP of the perturbed model with the right exact solver.

    ``method``: ``"auto"`` (graph cut when all couplings are >= 0 and there is no pairwise
    perturbation, else max-product), ``"graphcut"`` or ``"max_product"``. Raises MixlabError
    when no exact solver applies (non-submodular and narrow side > ``MAX_WIDTH``)."""
    if method not in ("auto", "graphcut", "max_product"):
        raise ValueError(f"unknown MAP method '{method}' (auto, graphcut, max_product)")
    if method == "auto":
        method = "graphcut" if (model.attractive and pairwise is None) else "max_product"
    if method == "graphcut":
        if pairwise is not None:
            raise MixlabError("graph-cut MAP does not take pairwise perturbations (they need "
                              "not be submodular); use max_product")
        return map_graphcut(model, unary)
    if min(model.shape) > MAX_WIDTH:
        why = ("it has pairwise perturbations" if pairwise is not None
               else "it has negative couplings")
        raise MixlabError(f"no exact MAP solver for this {model.rows}x{model.cols} grid: {why}, "
                          f"so graph cuts do not apply, and max-product needs min(rows, cols) "
                          f"<= {MAX_WIDTH}")
    return max_product(model, unary, pairwise)
