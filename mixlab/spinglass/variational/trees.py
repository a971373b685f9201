"""Exact inference on trees/forests given by parent pointers (used by structured mean field, NTRW
and tests), and the grid's column forest and comb spanning trees."""

from __future__ import annotations

import numpy as np

from .common import SPIN


class Forest:
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


def tree_infer(forest: Forest, h: np.ndarray, J: np.ndarray):
    """Exact inference on a forest of ±1 spins with ``θ(x) = Σ h_i x_i + Σ_i J_i x_i x_parent(i)``.

    ``h (n,)``, ``J (n,)`` (coupling of node i to its parent; ignored for roots). Returns
    ``(logZ, E[x_i] (n,), E[x_i x_parent(i)] (n,))`` (0 for roots)."""
    n = forest.n
    par = forest.parent
    a = h[:, None] * SPIN                          # a_i(x_i) = h_i x_i + Σ_children messages
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


def column_forest(R: int, C: int) -> tuple[Forest, np.ndarray]:
    """Vertical chains: parent of (r, c) is (r-1, c). Returns the forest and, per node, the index
    of its parent edge in the global edge order (-1 for roots)."""
    rr, cc = np.indices((R, C))
    parent = np.where(rr > 0, (rr - 1) * C + cc, -1).ravel()
    eidx = np.where(rr > 0, R * (C - 1) + (rr - 1) * C + cc, -1).ravel()
    return Forest(parent), eidx


def comb_tree(R: int, C: int, vertical: bool) -> tuple[Forest, np.ndarray]:
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
    return Forest(parent), eidx
