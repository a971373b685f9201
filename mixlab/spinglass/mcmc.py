"""MCMC baselines for grid spin glasses: Gibbs, Metropolis, Swendsen-Wang; marginal-error evaluator.

Samplers follow the mixlab sampler contract (``init(rng) -> state``; ``step(state, rng) ->
(state, draws, stats)``) and are vectorised over chains (a batch axis): no Python loop over
chains, sites or edges. One ``step`` is one **sweep** = ``n = R*C`` site updates per chain (for
Swendsen-Wang: one bond-and-cluster-flip update of all ``n`` spins), so ``site updates = draws *
n`` per chain. Draws: ``samples (chain, R, C)`` bool, True = +1. Stats (per chain):
``accept`` (fraction of the n site updates that changed a spin; for SW the fraction of spins
flipped), ``site_updates`` (= n). The Gibbs and Metropolis sweeps also run at a per-chain
inverse temperature (``sweep(X, rng, beta)``: the potential times β), which replica exchange
(mixlab.spinglass.tempering) uses.

- :class:`Gibbs`: checkerboard (red/black) Gibbs -- all sites of one colour of every chain are
  resampled at once from ``P(x_i = +1 | rest) = sigmoid(2 h_i)``, ``h_i = θ_i + Σ_j θ_ij x_j``;
  a sweep is the red half then the black half. Exact heat-bath kernel per site; sites of one
  colour are conditionally independent, so the parallel update is exactly sequential Gibbs in
  checkerboard order.
- :class:`Metropolis`: checkerboard single-site Metropolis -- every site of one colour proposes
  its own flip, accepted with ``min(1, exp(-2 x_i h_i))``; red half then black half (a
  deterministic-scan composition of reversible single-site kernels, each leaving p invariant).
- :class:`SwendsenWang`: Swendsen-Wang with general couplings and fields. For each edge a bond
  is placed, with probability ``1 - exp(-2 |θ_ij|)``, only if the edge is satisfied
  (``θ_ij x_i x_j > 0``: agreeing spins when ``θ_ij > 0``, disagreeing when ``θ_ij < 0``).
  Given the bonds, the joint ``p(x, b) ∝ Π_i e^{θ_i x_i} Π_e [(1-p_e) + p_e b_e 1(θ_e x_i x_j > 0)]``
  makes each cluster's spins rigid up to a global sign ``f ∈ {±1}`` relative to the current
  configuration; the cluster's field term is ``f · h_cl`` with ``h_cl = Σ_{i ∈ cl} θ_i x_i``, so
  ``P(f = +1) = e^{h_cl} / (e^{h_cl} + e^{-h_cl}) = sigmoid(2 h_cl)`` (for a ferromagnetic
  cluster of common spin s this is ``P(new spin = +1) = sigmoid(2 Σ_i θ_i)``). The clusters are
  labelled by a compiled (numba) union-find kernel, :func:`_sw_sweep`, one chain after another:
  labelling is a chain of data-dependent pointer chases that no array expression does well (the
  scipy ``connected_components`` call on a block-diagonal sparse graph built per step that this
  replaced made a sweep 4-7x a Gibbs sweep; now it is about 1.6x, two thirds of it the kernel,
  bonds to flips, and one third drawing its uniforms). The uniforms are drawn from the step's
  ``rng`` in numpy, so runs are reproducible from the seed.

:class:`MarginalError` (in :mod:`.evaluators`, re-exported) is a streaming evaluator: mean absolute error of the running single-site
marginal estimate (pooled over chains and draws) against exact marginals, at log-spaced points,
versus site updates or versus seconds.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..compiled.numba_cache import CACHE
from .evaluators import MarginalError  # its home is evaluators.py; re-exported here
from .model import SpinGlass

__all__ = ["Gibbs", "Metropolis", "SwendsenWang", "MarginalError"]

# The registered samplers (names, spec keys) are in mixlab/spinglass/samplers.py.

# error_model="numpy": float division without a Python zero check (as mixlab.austerity.kernels)
_JIT = {"cache": CACHE, "nogil": True, "boundscheck": False, "error_model": "numpy"}


#: the initial states a spin glass sampler accepts: i.i.d. uniform spins, all +1, all -1, or
#: ``plus_minus``: even-numbered chains all +1 and odd-numbered ones all -1 (the league's
#: overdispersed starts: a ferromagnet's two ground states, so chains that have not crossed
#: between them disagree)
INITS = ("random", "plus", "minus", "plus_minus")


def init_spins(shape: tuple, init: str, rng: np.random.Generator,
               chain_axis: int = 0) -> np.ndarray:
    """Initial spins ±1 of ``shape`` (the chains along ``chain_axis``) for ``init`` in
    :data:`INITS`."""
    if init == "random":
        return np.where(rng.random(shape) < 0.5, 1.0, -1.0)
    if init == "plus":
        return np.ones(shape)
    if init == "minus":
        return -np.ones(shape)
    if init == "plus_minus":
        sign = np.where(np.arange(shape[chain_axis]) % 2 == 0, 1.0, -1.0)
        view = [1] * len(shape)
        view[chain_axis] = shape[chain_axis]
        return np.broadcast_to(sign.reshape(view), shape).copy()
    raise ValueError(f"init must be one of {', '.join(INITS)}, got {init!r}")


def _check_chains_init(chains: int, init: str) -> tuple[int, str]:
    """Validate the options every sampler here shares; returns (chains, init)."""
    if chains < 1:
        raise ValueError(f"chains must be >= 1, got {chains}")
    if init not in INITS:
        raise ValueError(f"init must be one of {', '.join(INITS)}, got {init!r}")
    return int(chains), init


class _Checkerboard:
    """Shared machinery: spins kept as a zero-padded ``(R+2, C+2, chains)`` float32 array (chains
    last, so every neighbour term is a strided slice whose inner runs are contiguous). The grid is
    split into the four sub-lattices of (row parity, column parity); red = (0,0)+(1,1), black =
    (0,1)+(1,0). Each sub-lattice is updated from slices of its four neighbours with couplings
    precomputed per sub-lattice, so no work is spent on the other colour (no masks)."""

    def __init__(self, model: SpinGlass, chains: int = 1, init: str = "random",
                 dtype=np.float32):
        self.model, self.chains, self.init_mode = model, *_check_chains_init(chains, init)
        self.dtype = np.dtype(dtype)
        R, C = model.shape
        self.n = R * C
        dt = self.dtype
        JL = np.zeros((R, C), dt)
        JR = np.zeros((R, C), dt)
        JU = np.zeros((R, C), dt)
        JD = np.zeros((R, C), dt)
        JL[:, 1:] = model.right
        JR[:, :-1] = model.right
        JU[1:, :] = model.down
        JD[:-1, :] = model.down
        F = model.field.astype(dt)
        self.blocks = []            # per colour: list of (centre, left, right, up, down, J..., u)
        for colour in (((0, 0), (1, 1)), ((0, 1), (1, 0))):
            subs = []
            for a, b in colour:
                if a >= R or b >= C:
                    continue
                sl = (slice(a, R, 2), slice(b, C, 2))
                idx = dict(
                    centre=(slice(1 + a, R + 1, 2), slice(1 + b, C + 1, 2)),
                    left=(slice(1 + a, R + 1, 2), slice(b, C, 2)),
                    right=(slice(1 + a, R + 1, 2), slice(2 + b, C + 2, 2)),
                    up=(slice(a, R, 2), slice(1 + b, C + 1, 2)),
                    down=(slice(2 + a, R + 2, 2), slice(1 + b, C + 1, 2)),
                    u=sl)
                J = tuple(np.ascontiguousarray(M[sl])[:, :, None] for M in (JL, JR, JU, JD, F))
                subs.append((idx, J))
            self.blocks.append(subs)
        self._ones = np.ones(self.chains)

    def init(self, rng: np.random.Generator) -> dict:
        R, C = self.model.shape
        X = np.zeros((R + 2, C + 2, self.chains), self.dtype)
        X[1:-1, 1:-1] = init_spins((R, C, self.chains), self.init_mode, rng, chain_axis=2)
        return {"x": X}

    @staticmethod
    def _field(X: np.ndarray, idx: dict, J: tuple) -> np.ndarray:
        """``h = θ_i + Σ_j θ_ij x_j`` on one sub-lattice: (r, c, chains)."""
        jl, jr, ju, jd, f = J
        h = jl * X[idx["left"]]
        h += jr * X[idx["right"]]
        h += ju * X[idx["up"]]
        h += jd * X[idx["down"]]
        h += f
        return h

    def local_field(self, X: np.ndarray) -> np.ndarray:
        """``h`` for every site and chain: (R, C, chains) (used by tests and diagnostics)."""
        R, C = self.model.shape
        out = np.empty((R, C, self.chains), self.dtype)
        for subs in self.blocks:
            for idx, J in subs:
                out[idx["u"]] = self._field(X, idx, J)
        return out

    def step(self, state: dict, rng: np.random.Generator):
        X = state["x"]
        changed = self.sweep(X, rng)
        return state, *self._emit(X, changed)

    def sweep(self, X: np.ndarray, rng: np.random.Generator, beta=None) -> np.ndarray:
        """One sweep of ``X (R+2, C+2, chains)`` in place at inverse temperature ``beta``
        (``(chains,)`` or None for 1); returns the spins changed per chain."""
        raise NotImplementedError

    def _emit(self, X: np.ndarray, changed: np.ndarray) -> tuple[dict, dict]:
        samples = np.ascontiguousarray(X[1:-1, 1:-1].transpose(2, 0, 1) > 0)
        stats = {"accept": changed / self.n, "site_updates": self._ones * self.n}
        return {"samples": samples}, stats


class Gibbs(_Checkerboard):
    """Checkerboard Gibbs sampler (see module doc). ``model``: SpinGlass; ``chains``;
    ``init``: one of :data:`INITS`."""

    def sweep(self, X: np.ndarray, rng: np.random.Generator, beta=None) -> np.ndarray:
        """One heat-bath sweep of the padded spins ``X (R+2, C+2, chains)`` in place, at
        inverse temperature ``beta`` (a ``(chains,)`` array, one per chain, or None for 1):
        ``P(x = +1 | rest) = sigmoid(2 β h)``. Returns the spins changed per chain."""
        R, C = self.model.shape
        u = rng.random((R, C, self.chains), dtype=np.float32)   # one uniform per site update
        changed = np.zeros(self.chains)
        one, mone = self.dtype.type(1), self.dtype.type(-1)
        for subs in self.blocks:
            for idx, J in subs:
                h = self._field(X, idx, J)
                if beta is not None:
                    h *= beta
                # P(x = +1 | rest) = sigmoid(2h)  <=>  u * (1 + exp(-2h)) < 1
                h *= -2.0
                np.minimum(h, 80.0, out=h)     # exp stays finite in float32 (u = 0 gives +1)
                np.exp(h, out=h)
                h += 1.0
                h *= u[idx["u"]]
                new = np.where(h < 1.0, one, mone)
                centre = X[idx["centre"]]
                changed += np.count_nonzero(new != centre, axis=(0, 1))
                centre[...] = new
        return changed


class Metropolis(_Checkerboard):
    """Checkerboard single-site Metropolis (every site of one colour proposes a flip at once)."""

    def sweep(self, X: np.ndarray, rng: np.random.Generator, beta=None) -> np.ndarray:
        """One Metropolis sweep of ``X (R+2, C+2, chains)`` in place at inverse temperature
        ``beta`` (``(chains,)`` or None for 1): a flip is accepted with ``min(1, exp(-2 β x
        h))``. Returns the spins changed per chain."""
        R, C = self.model.shape
        u = rng.random((R, C, self.chains), dtype=np.float32)
        changed = np.zeros(self.chains)
        for subs in self.blocks:
            for idx, J in subs:
                h = self._field(X, idx, J)
                if beta is not None:
                    h *= beta
                centre = X[idx["centre"]]
                # flip x -> -x changes θ by -2 x h; accept with prob min(1, exp(-2 x h))
                h *= centre
                h *= -2.0
                np.minimum(h, 80.0, out=h)
                np.exp(h, out=h)
                acc = u[idx["u"]] < h
                changed += np.count_nonzero(acc, axis=(0, 1))
                np.negative(centre, out=centre, where=acc)
        return changed


@njit(**_JIT)
def _union(parent, a, b):
    """Merge the sets of sites ``a`` and ``b`` in the forest ``parent`` (int32, ``parent[i] <=
    i``): Rem's algorithm with splicing. Every write lowers an entry, so ``parent[i] <= i`` holds
    throughout and every root is the smallest site of its set."""
    pa = parent[a]
    pb = parent[b]
    while pa != pb:
        if pa > pb:
            parent[a] = pb
            if a == pa:                 # a was a root: now linked under pb < a
                return
            a = pa
            pa = parent[a]
        else:
            parent[b] = pa
            if b == pb:
                return
            b = pb
            pb = parent[b]


@njit(**_JIT)
def _sw_sweep(x, cols, sign, pbond, field, u, samples, changed, labels):
    """One Swendsen-Wang update of every chain, spins changed in place.

    ``x (K, n)`` float32 ±1: the spins of ``K`` chains on an ``R x C`` grid, row-major (``n =
    R*C``, ``cols = C``). Edges are addressed by ``2n - C`` slots: slot ``i < n`` is the edge from
    site ``i`` to its right neighbour ``i + 1`` (unused, and ignored, in the last column), slot
    ``n + i`` (``i < n - C``) the edge from site ``i`` down to ``i + C``. ``sign (2n - C,)``
    float32: sign of the coupling ``θ_ij``; ``pbond (2n - C,)`` float32: ``1 - exp(-2|θ_ij|)``;
    ``field (n,)`` float32: ``θ_i``. ``u (K, 3n - C)`` float32 uniforms in [0, 1): ``u[k, i]``
    (``i < n``) decides the flip of the cluster whose smallest site is ``i``, ``u[k, n + s]`` the
    bond on slot ``s``.

    Outputs: ``samples (K, n)`` bool, new spin > 0; ``changed (K,)`` int64, spins flipped;
    ``labels``: ``(K, n)`` int32 to receive each site's cluster as its smallest site, or ``(0,
    n)`` for none.

    Per chain: bonds (vectorised), the row runs of right bonds by a branch-free scan, the down
    bonds by union-find (:func:`_union`), one forward pass that compresses every path (as
    ``parent[i] <= i``, ``parent[parent[i]]`` is already a root) and sums ``θ_i x_i`` per cluster,
    then one draw per cluster root and the flips. Selects are written as integer masks and
    counts, so the only data-dependent branches are in :func:`_union`."""
    K, n = x.shape
    C = cols
    nv = n - C                                   # down edges
    sp = np.empty(2 * n - C, np.float32)         # sign * pbond: bond iff u < x_i x_j sp
    for s in range(2 * n - C):
        sp[s] = sign[s] * pbond[s]
    for i in range(C - 1, n, C):
        sp[i] = 0                                # no right edge from the last column
    bond = np.zeros(2 * n, np.int32)
    par = np.empty(n, np.int32)
    h = np.empty(n)                              # per-root field sum (float64)
    roots = np.empty(n, np.int32)
    flip = np.empty(n, np.float32)               # per root: +1 keep, -1 flip
    for k in range(K):
        xk, uk = x[k], u[k]
        # bond on a satisfied edge (θ_ij x_i x_j > 0) with probability 1 - exp(-2|θ_ij|):
        # u < x_i x_j sign pbond (false whenever the product is <= 0, as u >= 0)
        for i in range(n - 1):
            bond[i] = uk[n + i] < xk[i] * xk[i + 1] * sp[i]
        for i in range(nv):
            bond[n + i] = uk[2 * n + i] < xk[i] * xk[i + C] * sp[n + i]
        # runs of right bonds: parent = the run's first site (cur kept if bonded to the left)
        cur = np.int32(0)
        par[0] = 0
        for i in range(1, n):
            keep = bond[i - 1] - np.int32(1)     # 0 if bonded to the left, else all ones
            cur = (cur & ~keep) | (np.int32(i) & keep)
            par[i] = cur
        # down bonds: list them without branching, then union
        m = 0
        for i in range(nv):
            roots[m] = i
            m += bond[n + i]
        for j in range(m):
            i = roots[j]
            _union(par, i, i + C)
        # compress, sum θ_i x_i per cluster, list the roots
        for i in range(n):
            h[i] = 0.0
        m = 0
        for i in range(n):
            r = par[par[i]]
            par[i] = r
            h[r] += field[i] * xk[i]
            roots[m] = i
            m += r == i
        # cluster orientation f: P(f = +1) = sigmoid(2 h_cl)
        for j in range(m):
            r = roots[j]
            flip[r] = np.float32(2 * (uk[r] < 1.0 / (1.0 + np.exp(-2.0 * h[r]))) - 1)
        flips = 0
        for i in range(n):
            f = flip[par[i]]
            v = xk[i] * f
            xk[i] = v
            flips += f < 0
            samples[k, i] = v > 0
        changed[k] = flips
        if labels.shape[0]:
            for i in range(n):      # a loop: a slice copy compiles numba's shape-check message
                labels[k, i] = par[i]


class SwendsenWang:
    """Swendsen-Wang cluster sampler for general couplings and fields (see module doc).

    State ``x (chains, R, C)`` float32 ±1, updated in place. A step draws ``3n - C`` float32
    uniforms per chain from ``rng`` (one per site, used by the clusters' smallest sites, and one
    per edge slot) and runs the compiled :func:`_sw_sweep` on them. ``sign`` and ``pbond`` (per
    edge slot: right edge of each site, zero in the last column, then down edge of each site in
    the first ``R - 1`` rows) and ``field`` (per site) are read at every step."""

    def __init__(self, model: SpinGlass, chains: int = 1, init: str = "random"):
        self.model, self.chains, self.init_mode = model, *_check_chains_init(chains, init)
        R, C = model.shape
        self.n = R * C
        right = np.zeros((R, C))
        right[:, :-1] = model.right
        J = np.concatenate([right.ravel(), model.down.ravel()])           # 2n - C edge slots
        self.pbond = (-np.expm1(-2.0 * np.abs(J))).astype(np.float32)    # 1 - exp(-2|θ_ij|)
        self.sign = np.sign(J).astype(np.float32)
        self.field = model.field.astype(np.float32).ravel()
        self._ones = np.ones(self.chains)
        self._no_labels = np.empty((0, self.n), np.int32)
        # one throwaway sweep loads (or compiles) the kernel now, outside any timed budget
        _sw_sweep(np.ones((1, self.n), np.float32), model.cols, self.sign, self.pbond,
                  self.field, np.zeros((1, 3 * self.n - model.cols), np.float32),
                  np.empty((1, self.n), np.bool_), np.empty(1, np.int64), self._no_labels)

    def init(self, rng: np.random.Generator) -> dict:
        R, C = self.model.shape
        return {"x": init_spins((self.chains, R, C), self.init_mode, rng).astype(np.float32)}

    def step(self, state: dict, rng: np.random.Generator):
        K, n, C = self.chains, self.n, self.model.cols
        x = np.ascontiguousarray(state["x"], dtype=np.float32)   # (normally already: no copy)
        u = rng.random((K, 3 * n - C), dtype=np.float32)
        samples = np.empty(x.shape, np.bool_)
        changed = np.empty(K, np.int64)
        _sw_sweep(x.reshape(K, n), C, self.sign, self.pbond, self.field, u,
                  samples.reshape(K, n), changed, self._no_labels)
        stats = {"accept": changed / n, "site_updates": self._ones * n}
        return {"x": x}, {"samples": samples}, stats
