"""Checkerboard Gibbs plus Houdayer's two-replica cluster move for grid spin glasses (the
``spinglass`` family's ``houdayer``); exact for any couplings (mixed signs) and fields.

Model ``p(x) ∝ exp(Σ field·x + Σ right·x_{r,c} x_{r,c+1} + Σ down·x_{r,c} x_{r+1,c})``, x ∈ ±1.
Every chain is a pair of replicas (x¹, x²) of the model (the product ``p(x¹) p(x²)`` is the
invariant law).  A step is one checkerboard Gibbs sweep of both replicas, then one Houdayer move
(Houdayer 2001, Eur. Phys. J. B 22, 479): with overlap ``q = x¹ x²``, pick a site uniformly among
those with ``q = -1``, take its connected cluster of ``q = -1`` sites (4-neighbourhood) and flip
it in both replicas.  The move changes no term of ``log p(x¹) + log p(x²)``: a flipped site has
``x¹ = -x²``, so its field terms cancel before and after; an edge inside the cluster keeps its
products; an edge leaving it ends at a ``q = +1`` site (``x¹_j = x²_j = s``) whose two terms
``J s (x¹_i + x²_i) = 0`` cancel too.  The overlap is unchanged, so the reverse move has the same
probability: it is accepted always.  Replica 1 is emitted.

State ``x (2, chains, R, C)`` float32 ±1.  Draws ``samples (chains, R, C)`` bool (True = +1).
Stats: ``accept (chains,)`` fraction of replica 1's spins changed by the step,
``cluster (chains,)`` fraction of sites in the flipped cluster, ``site_updates (chains,)`` = R·C.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import ndimage

from mixlab.api import SPINGLASS, Param, sampler

# 4-neighbour connectivity inside each (R, C) grid, none across the leading (pair) axis
_GRID = np.zeros((3, 3, 3), bool)
_GRID[1] = [[0, 1, 0], [1, 1, 1], [0, 1, 0]]


class HoudayerGibbs:
    """Gibbs sweeps + Houdayer cluster moves on a grid spin glass (see the module docstring)."""

    def __init__(self, field: np.ndarray, right: np.ndarray, down: np.ndarray, chains: int,
                 init: str = "random", houdayer: bool = True):
        self.field = np.asarray(field, np.float64)
        R, C = self.field.shape
        self.R, self.C, self.n, self.chains = R, C, R * C, int(chains)
        self.init_mode, self.houdayer = init, houdayer
        # couplings to the four neighbours of every site (0 at the border)
        self.JL, self.JR = np.zeros((R, C)), np.zeros((R, C))
        self.JU, self.JD = np.zeros((R, C)), np.zeros((R, C))
        self.JR[:, :-1] = self.JL[:, 1:] = right
        self.JD[:-1, :] = self.JU[1:, :] = down
        ii, jj = np.indices((R, C))
        self.colours = [(ii + jj) % 2 == 0, (ii + jj) % 2 == 1]

    def init(self, rng: np.random.Generator) -> dict:
        shape = (2, self.chains, self.R, self.C)
        if self.init_mode == "plus":
            return {"x": np.ones(shape, np.float32)}
        if self.init_mode == "minus":
            return {"x": -np.ones(shape, np.float32)}
        return {"x": np.where(rng.random(shape) < 0.5, 1.0, -1.0).astype(np.float32)}

    def _local_field(self, x: np.ndarray) -> np.ndarray:
        """``h_i = field_i + Σ_j J_ij x_j`` for x (..., R, C)."""
        h = np.broadcast_to(self.field, x.shape).copy()
        h[..., :, 1:] += self.JL[:, 1:] * x[..., :, :-1]
        h[..., :, :-1] += self.JR[:, :-1] * x[..., :, 1:]
        h[..., 1:, :] += self.JU[1:, :] * x[..., :-1, :]
        h[..., :-1, :] += self.JD[:-1, :] * x[..., 1:, :]
        return h

    def _gibbs_sweep(self, x: np.ndarray, rng: np.random.Generator) -> None:
        """Red then black sites, each ``P(x_i = +1 | rest) = sigmoid(2 h_i)``; in place."""
        for mask in self.colours:
            p_plus = 0.5 * (1.0 + np.tanh(self._local_field(x)))           # sigmoid(2h)
            new = np.where(rng.random(x.shape) < p_plus, 1.0, -1.0)
            x[..., mask] = new[..., mask]

    def _houdayer(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One Houdayer move per chain, in place; returns the cluster sizes (chains,)."""
        neg = (x[0] * x[1]) < 0                                              # (chains, R, C)
        labels, _ = ndimage.label(neg, structure=_GRID)                      # unique across chains
        flat = neg.reshape(self.chains, -1)
        count = flat.sum(axis=1)
        # the k-th negative-overlap site of each chain, k uniform in [0, count)
        k = np.floor(rng.random(self.chains) * count).astype(np.int64)
        site = np.argmax(np.cumsum(flat, axis=1) > k[:, None], axis=1)
        seed = labels.reshape(self.chains, -1)[np.arange(self.chains), site]
        seed = np.where(count > 0, seed, -1)                                 # no move: no cluster
        flip = labels == seed[:, None, None]
        x[:, flip] *= -1.0
        return flip.reshape(self.chains, -1).sum(axis=1)

    def step(self, state: dict, rng: np.random.Generator):
        x = np.array(state["x"], copy=True)
        before = x[0].copy()
        self._gibbs_sweep(x, rng)
        size = self._houdayer(x, rng) if self.houdayer else np.zeros(self.chains)
        changed = np.count_nonzero(x[0] != before, axis=(1, 2))
        stats = {"accept": changed / self.n, "cluster": size / self.n,
                 "site_updates": np.full(self.chains, float(self.n))}
        return {"x": x}, {"samples": x[0] > 0}, stats


@sampler(SPINGLASS, "houdayer", params={
    "moves": Param(True, bool, help="Houdayer cluster moves on (false: plain checkerboard "
                                    "Gibbs on two replicas, for comparison)")},
    help="checkerboard Gibbs + Houdayer two-replica cluster moves, any couplings "
         "(example plugin)")
def make_houdayer(target: Any, params: dict, chains: int) -> HoudayerGibbs:
    """``target``: a grid spin glass (``field (R, C)``, ``right (R, C-1)``, ``down (R-1, C)``);
    an ``init`` attribute ("random", "plus", "minus") is honoured if present."""
    return HoudayerGibbs(target.field, target.right, target.down, chains,
                         init=getattr(target, "init", "random"), houdayer=params["moves"])
