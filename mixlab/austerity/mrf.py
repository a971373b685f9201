"""Dense triplet MRF of Korattikara, Chen & Welling (2014), §6.3, with exact and approximate Gibbs.

Model
-----
``D`` binary variables ``x ∈ {0,1}^D``, one potential on every unordered triplet ``i<j<k``
(``T = D(D-1)(D-2)/6`` triplets; 161,700 for D = 100):

    log P(x) = sum_{i<j<k} log psi_ijk(x_i, x_j, x_k) - log Z

The paper: "the entries in the potential function tables are drawn randomly from a log-normal
distribution, log psi_ijk(x_i,x_j,x_k) ~ N(0, 0.02)", and "potential functions with permuted
indices are the same potential function".  So each triplet's 8 table entries (one per joint
state) are drawn i.i.d. from ``N(0, sigma^2)``.  The paper does not say whether 0.02 is the
variance or the standard deviation; :func:`make_mrf` takes ``s`` and ``s_is`` ("std" or
"variance").  The experiments default to ``s_is = "std"`` (sigma = 0.02), see
``target_mrf.py`` and docs/austerity.md for the measured reasons (with the variance reading the
D = 100 model is a strongly coupled 3-spin glass whose conditionals are almost all within 1e-3 of 0 or 1).

Conditionals
------------
For variable i, ``log P(x_i=1|x_-i) - log P(x_i=0|x_-i) = sum_{j<k; j,k != i} d_i(j,k; x_j, x_k)``
with ``d_i(j,k; a, b) = log psi(x_i=1, a, b) - log psi(x_i=0, a, b)`` (arguments in the
triplet's sorted order): ``N = (D-1)(D-2)/2`` terms, one per pair of other variables (4,851 for
D = 100).  Two ways to evaluate it:

* **quadratic form** (fast exact Gibbs): every function of three bits is a multilinear
  polynomial, so ``log P(x) = const + sum_i h_i x_i + sum_{i<j} W_ij x_i x_j +
  sum_{i<j<k} J_ijk x_i x_j x_k`` and, with ``x_j^2 = x_j``, the log-odds of ``x_i`` is
  ``h_i + x^T Q_i x`` where ``Q_i (D, D)`` holds ``W_ij`` on the diagonal and ``J_ijk / 2`` off
  it (row and column i are zero).  One update is one ``(B, D) @ (D, D)`` product for B chains.
* **pair tables** (what the sequential test samples from): ``delta[i] (N, 4)`` with the four
  values of ``d_i`` per pair and ``pj[i], pk[i] (N,)`` the pair's variables; the term of pair n
  in state x is ``delta[i, n, 2 x_pj + x_pk]``.

Samplers (systematic scan: one step = one sweep updating x_0, x_1, ..., x_{D-1} in order, for all
chains at once; chains are the batch axis)
---------------------------------------------------------------------------------------------
* :class:`ExactGibbs` — ``impl="quadratic"`` (the fast form above) or ``impl="lookup"`` (sums the
  N pair-table terms per update: the cost model of the paper's implementation).
* :class:`ApproxGibbs` — §5: draw u, ``mu0 = log(u/(1-u)) / N``, and the sequential test
  decides whether the mean of the N terms exceeds mu0, reading minibatches of ``m`` pairs
  without replacement; ``x_i = 1`` iff it says so.  ``eps = 0`` is exact Gibbs.  Sweeps run
  compiled (:mod:`.kernels`, the rule of :func:`mixlab.austerity.seqtest.sequential_test_batch`);
  :func:`update_approx` is the same update in numpy on the shared test function (the reference
  the kernel is tested against).

Both samplers draw, at the start of every sweep, the uniforms ``U = rng.random((B, D))`` (one
per update) and then (approximate only) one integer seeding the minibatch orders.  The pure
functions :func:`sweep_exact` and :func:`sweep_approx` take U explicitly, so the identity
"approximate with eps = 0 is exact Gibbs" is tested on the very same random numbers.

Exact enumeration for small D: :func:`enumerate_joint`, :func:`exact_conditionals`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from itertools import combinations
from typing import NamedTuple

import numpy as np
from scipy.special import expit

from ..spec.magnitude import check_potential
from .kernels import mrf_sweep_approx, mrf_sweep_approx_blocks, mrf_sweep_lookup
from .seqtest import sequential_test_batch, tcrit2_table

__all__ = ["BLOCK_DEFAULT", "BlockTables", "DenseMRF", "block_tables", "make_mrf", "triplets",
           "sweep_exact", "sweep_approx", "ExactGibbs",
           "ApproxGibbs", "update_approx", "pair_terms", "enumerate_joint", "exact_conditionals", "log_odds_all",
           "log_odds_tables", "logit", "random_subsets", "subset_codes",
           "joint_counts", "l1_joint_error"]


def triplets(D: int) -> np.ndarray:
    """All triplets ``i<j<k`` of ``range(D)`` in lexicographic order, ``(T, 3)`` int64."""
    if D < 3:
        raise ValueError(f"a triplet MRF needs D >= 3, got {D}")
    return np.array(list(combinations(range(D), 3)), dtype=np.int64)


def logit(u: np.ndarray) -> np.ndarray:
    """``log(u / (1 - u))`` (``-inf`` at 0)."""
    u = np.asarray(u, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.log(u) - np.log1p(-u)


@dataclass(frozen=True)
class DenseMRF:
    """A triplet MRF with its derived tables.

    Attributes (shapes): ``logpsi (T, 2, 2, 2)`` float64 tables indexed ``[t, x_i, x_j, x_k]``
    for triplet ``tri[t] = (i, j, k)``, i<j<k; ``h (D,)``, ``Q (D, D, D)`` the quadratic form of
    the log-odds (``L_i(x) = h_i + x^T Q[i] x``); ``pj, pk (D, N)`` int64 the pair of other
    variables of each term (pj < pk), ``delta (D, N, 4)`` float64 the term values indexed by
    ``2 x_pj + x_pk``.
    """

    D: int
    tri: np.ndarray
    logpsi: np.ndarray
    h: np.ndarray
    Q: np.ndarray
    pj: np.ndarray
    pk: np.ndarray
    delta: np.ndarray

    @property
    def N(self) -> int:
        """Number of terms (pairs of other variables) per conditional, ``(D-1)(D-2)/2``."""
        return (self.D - 1) * (self.D - 2) // 2

    @property
    def T(self) -> int:
        return self.tri.shape[0]

    @classmethod
    def from_tables(cls, logpsi: np.ndarray, D: int) -> DenseMRF:
        """Build the model (and its derived tables) from ``logpsi (T, 2, 2, 2)`` in the order of
        :func:`triplets` ``(D)``."""
        tri = triplets(D)
        logpsi = np.ascontiguousarray(logpsi, dtype=np.float64)
        if logpsi.shape != (tri.shape[0], 2, 2, 2):
            raise ValueError(f"logpsi must have shape {(tri.shape[0], 2, 2, 2)}, "
                             f"got {logpsi.shape}")
        # a state takes one entry of each table: Σ_t max|logpsi[t]| bounds every |θ(x)|
        check_potential({"logpsi": np.max(np.abs(logpsi), axis=(1, 2, 3))},
                        "triplet MRF log-potentials")
        a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
        P = logpsi
        # Möbius coefficients of the multilinear polynomial of each table
        c_a = P[:, 1, 0, 0] - P[:, 0, 0, 0]
        c_b = P[:, 0, 1, 0] - P[:, 0, 0, 0]
        c_c = P[:, 0, 0, 1] - P[:, 0, 0, 0]
        c_ab = P[:, 1, 1, 0] - P[:, 1, 0, 0] - P[:, 0, 1, 0] + P[:, 0, 0, 0]
        c_ac = P[:, 1, 0, 1] - P[:, 1, 0, 0] - P[:, 0, 0, 1] + P[:, 0, 0, 0]
        c_bc = P[:, 0, 1, 1] - P[:, 0, 1, 0] - P[:, 0, 0, 1] + P[:, 0, 0, 0]
        c_abc = (P[:, 1, 1, 1] - P[:, 1, 1, 0] - P[:, 1, 0, 1] - P[:, 0, 1, 1]
                 + P[:, 1, 0, 0] + P[:, 0, 1, 0] + P[:, 0, 0, 1] - P[:, 0, 0, 0])
        h = (np.bincount(a, c_a, D) + np.bincount(b, c_b, D) + np.bincount(c, c_c, D))
        W = np.zeros((D, D))
        for (p, q, coef) in ((a, b, c_ab), (a, c, c_ac), (b, c, c_bc)):
            np.add.at(W, (p, q), coef)
            np.add.at(W, (q, p), coef)
        Q = np.zeros((D, D, D))
        half = 0.5 * c_abc
        for (p, q, r) in ((a, b, c), (a, c, b), (b, a, c), (b, c, a), (c, a, b), (c, b, a)):
            np.add.at(Q, (p, q, r), half)
        idx = np.arange(D)
        Q[idx, idx, :] = 0.0
        Q[idx, :, idx] = 0.0
        Q[:, idx, idx] = W          # Q[i, j, j] = W[i, j] (W[i, i] = 0)

        # pair tables: for variable i, its N triplets in lexicographic order of the other pair
        N = (D - 1) * (D - 2) // 2
        pj = np.empty((D, N), dtype=np.int64)
        pk = np.empty((D, N), dtype=np.int64)
        delta = np.empty((D, N, 4))
        d_pos = (P[:, 1, :, :] - P[:, 0, :, :],        # i is the first of the triplet
                 P[:, :, 1, :] - P[:, :, 0, :],        # i is the second
                 P[:, :, :, 1] - P[:, :, :, 0])        # i is the third
        for i in range(D):
            rows, pos = np.nonzero(tri == i)
            others = tri[rows][tri[rows] != i].reshape(-1, 2)
            order = np.lexsort((others[:, 1], others[:, 0]))
            rows, pos, others = rows[order], pos[order], others[order]
            pj[i], pk[i] = others[:, 0], others[:, 1]
            for p in range(3):
                sel = pos == p
                delta[i, sel] = d_pos[p][rows[sel]].reshape(-1, 4)
        return cls(D, tri, logpsi, h, Q, pj, pk, delta)

    def hash(self) -> str:
        """SHA-256 (hex) of D and the potential tables: identifies the model across runs."""
        hs = hashlib.sha256()
        hs.update(f"mixlab.austerity.mrf/D={self.D}/".encode())
        hs.update(np.ascontiguousarray(self.logpsi, dtype="<f8").tobytes())
        return hs.hexdigest()

    def log_potential(self, X: np.ndarray) -> np.ndarray:
        """Unnormalised ``log P`` of states ``X (B, D)`` from the tables, ``(B,)``."""
        X = np.asarray(X, dtype=np.int64)
        a, b, c = (X[:, self.tri[:, 0]], X[:, self.tri[:, 1]], X[:, self.tri[:, 2]])
        flat = self.logpsi.reshape(-1, 8)
        return flat[np.arange(self.T)[None, :], 4 * a + 2 * b + c].sum(axis=1)


def make_mrf(D: int = 100, s: float = 0.02, s_is: str = "std",
             rng: np.random.Generator | None = None) -> DenseMRF:
    """Draw a dense triplet MRF: every triplet's 8 log-potentials i.i.d. ``N(0, sigma^2)`` with
    ``sigma = s`` (``s_is="std"``) or ``sigma = sqrt(s)`` (``s_is="variance"``)."""
    if s_is == "std":
        sigma = float(s)
    elif s_is == "variance":
        sigma = float(np.sqrt(s))
    else:
        raise ValueError(f"s_is must be 'std' or 'variance', got {s_is!r}")
    if rng is None:
        rng = np.random.default_rng(0)
    T = D * (D - 1) * (D - 2) // 6
    logpsi = sigma * rng.standard_normal((T, 2, 2, 2))
    return DenseMRF.from_tables(logpsi, D)


# ------------------------------------------------------------------------------------------------
# conditionals

def log_odds_all(model: DenseMRF, X: np.ndarray) -> np.ndarray:
    """Exact log-odds ``log P(x_i=1|x_-i)/P(x_i=0|x_-i)`` of every variable, ``(B, D)``, for
    states ``X (B, D)`` (quadratic form)."""
    Xf = np.asarray(X, dtype=np.float64)
    Y = np.einsum("bj,ijk->bik", Xf, model.Q)
    return model.h[None, :] + np.einsum("bik,bk->bi", Y, Xf)


def log_odds_tables(model: DenseMRF, X: np.ndarray, i: int) -> np.ndarray:
    """The same log-odds of variable ``i`` summed from the N pair-table terms, ``(B,)``."""
    X = np.asarray(X, dtype=np.int64)
    s = 2 * X[:, model.pj[i]] + X[:, model.pk[i]]
    return model.delta[i][np.arange(model.N)[None, :], s].sum(axis=1)


def pair_terms(model: DenseMRF, i: int, X: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Terms ``d_i`` at pair indices ``idx (B, b)`` for states ``X (B, D)``, ``(B, b)``."""
    X = np.ascontiguousarray(X)
    off = (np.arange(X.shape[0], dtype=np.int64) * X.shape[1])[:, None]
    xf = X.reshape(-1)
    s = 2 * xf[off + model.pj[i][idx]] + xf[off + model.pk[i][idx]]
    return model.delta[i].reshape(-1)[4 * idx + s]


# ------------------------------------------------------------------------------------------------
# sweeps (pure: state and random numbers in, state out)

def sweep_exact(model: DenseMRF, X: np.ndarray, U: np.ndarray, impl: str = "quadratic",
                p_out: np.ndarray | None = None) -> np.ndarray:
    """One systematic-scan exact Gibbs sweep, in place.

    X : (B, D) uint8 states (modified in place and returned).  U : (B, D) uniforms in [0, 1);
    update i sets ``x_i = 1`` iff ``log(u/(1-u)) < L_i(x)``, i.e. ``u < P(x_i=1|x_-i)``.
    impl : "quadratic" (``L_i = h_i + x^T Q_i x``, one (B,D)@(D,D) product) or "lookup" (sum of
    the N pair-table terms).  p_out : optional (B, D) array receiving ``P(x_i=1|x_-i)`` at the
    moment of each update.
    """
    D = model.D
    LU = logit(U)
    if impl == "quadratic":
        Xf = X.astype(np.float64)
        Q, h = model.Q, model.h
        for i in range(D):
            L = h[i] + np.einsum("bk,bk->b", Xf @ Q[i], Xf)
            new = LU[:, i] < L
            X[:, i] = new
            Xf[:, i] = new
            if p_out is not None:
                p_out[:, i] = expit(L)
    elif impl == "lookup":
        if p_out is not None:
            for i in range(D):
                L = log_odds_tables(model, X, i)
                X[:, i] = LU[:, i] < L
                p_out[:, i] = expit(L)
        else:                                           # compiled: the paper's cost model
            if X.dtype != np.uint8 or not X.flags.c_contiguous:
                raise ValueError("X must be a C-contiguous uint8 array")
            mrf_sweep_lookup(model.delta, model.pj, model.pk, X, np.ascontiguousarray(LU))
    else:
        raise ValueError(f"impl must be 'quadratic' or 'lookup', got {impl!r}")
    return X


BLOCK_DEFAULT = 64     # pair terms per block of the approximate Gibbs test (1: per term)


class BlockTables(NamedTuple):
    """Variable i's pair terms in a once-shuffled order, for the block test: ``delta (D, N, 4)``
    float64, ``pj, pk (D, N)`` int32 (the model's tables with row i permuted by ``order[i]``),
    ``order (D, N)`` int64, ``block`` terms per block."""
    delta: np.ndarray
    pj: np.ndarray
    pk: np.ndarray
    order: np.ndarray
    block: int


def block_tables(model: DenseMRF, block: int) -> BlockTables:
    """The pair tables of ``model`` with each variable's terms shuffled once (a fixed
    permutation seeded by D only, so every run and resume sees the same blocks), for
    :func:`sweep_approx` with ``block`` > 1."""
    D, N = model.D, model.N
    order = np.argsort(np.random.default_rng([0x5EED_B10C, D]).random((D, N)), axis=1)
    rows = np.arange(D)[:, None]
    return BlockTables(np.ascontiguousarray(model.delta[rows, order]),
                       np.ascontiguousarray(model.pj[rows, order], dtype=np.int32),
                       np.ascontiguousarray(model.pk[rows, order], dtype=np.int32),
                       order, int(block))


def update_approx(model: DenseMRF, X: np.ndarray, i: int, mu0: np.ndarray, eps: float, m: int,
                  rng: np.random.Generator, order: np.ndarray | None = None):
    """Approximate update of variable ``i`` in every row of ``X (B, D)`` uint8 (in place): the
    sequential test (vectorised over the B rows) of ``mean_n d_i(n; x) > mu0 (B,)``.
    ``order`` : optional (B, N) permutations of the pairs (else the test draws lazy orders
    from ``rng``).  Returns the :class:`~mixlab.austerity.seqtest.BatchTestResult`."""

    def l_fn(rows, idx):
        return pair_terms(model, i, X[rows], idx)

    res = sequential_test_batch(l_fn, model.N, mu0, eps, m, rng, order=order)
    X[:, i] = res.accept
    return res


def sweep_approx(model: DenseMRF, X: np.ndarray, U: np.ndarray, eps: float, m: int,
                 rng: np.random.Generator, p_out: np.ndarray | None = None,
                 n_out: np.ndarray | None = None,
                 tables: BlockTables | None = None) -> np.ndarray:
    """One systematic-scan approximate Gibbs sweep (§5), in place, compiled
    (:func:`mixlab.austerity.kernels.mrf_sweep_approx`).

    For each variable i and chain b: ``mu0 = log(u/(1-u)) / N`` and the sequential test
    (minibatches of ``m`` pairs without replacement; the rule of
    :func:`~mixlab.austerity.seqtest.sequential_test_batch`, which :func:`update_approx` runs in
    numpy) decides whether the mean of the N terms ``d_i`` exceeds mu0; ``x_i = 1`` iff it does.
    Every test reads its own uniformly random order of the pairs, drawn in the kernel from one
    seed taken from ``rng``.

    X : (B, D) uint8 (modified in place).  U : (B, D) uniforms.  p_out : optional (B, D) exact
    conditionals ``P(x_i=1|x_-i)`` at each update (costs one quadratic form per update).
    n_out : optional (B, D) int64 receiving the number of terms each test used.
    tables : None (the paper's test: the N terms are the population, minibatches of m terms), or
    :func:`block_tables` (the block test: the population is the K = ceil(N/b) block
    values (K/N) Σ_block terms of each variable's once-shuffled terms, minibatches of
    ceil(m/b) blocks; :func:`mixlab.austerity.kernels.mrf_sweep_approx_blocks`).
    """
    D, N = model.D, model.N
    B = X.shape[0]
    if X.dtype != np.uint8 or not X.flags.c_contiguous:
        raise ValueError("X must be a C-contiguous uint8 array")
    mu0 = np.ascontiguousarray(logit(U) / N)
    n = np.empty((B, D), np.int64) if n_out is None else n_out
    L = np.empty((B, D)) if p_out is not None else np.empty((0, 0))
    seed = np.uint64(rng.integers(0, 2 ** 63))
    if tables is None or tables.block == 1:
        perm, swaps = np.arange(N, dtype=np.int64), np.empty(N, np.int64)
        mrf_sweep_approx(model.delta, model.pj, model.pk, model.Q, model.h, X, mu0, int(m),
                         tcrit2_table(N, int(m), float(eps)), seed, n, L, perm, swaps)
    else:
        b = tables.block
        K, mb = -(-N // b), -(-int(m) // b)
        perm, swaps = np.arange(K, dtype=np.int64), np.empty(K, np.int64)
        mrf_sweep_approx_blocks(tables.delta, tables.pj, tables.pk, b, model.Q, model.h, X, mu0,
                                mb, tcrit2_table(K, mb, float(eps)), seed, n, L, perm, swaps)
    if p_out is not None:
        p_out[:] = expit(L)
    return X


# ------------------------------------------------------------------------------------------------
# samplers (mixlab sampler contract: init(rng) -> state; step(state, rng) -> state, draws, stats)

def _warm_up(model: DenseMRF, impl: str, tables: BlockTables | None = None) -> None:
    """Run one throwaway sweep of one chain so the compiled kernel is loaded (or compiled) when a
    sampler is built, not inside its wall-clock budget."""
    X = np.zeros((1, model.D), np.uint8)
    U = np.full((1, model.D), 0.5)
    if impl == "lookup":
        sweep_exact(model, X, U, "lookup")
    elif impl == "approx":
        sweep_approx(model, X, U, 0.1, 500, np.random.default_rng(0), tables=tables)
        sweep_approx(model, X, U, 0.1, 500, np.random.default_rng(0),
                     p_out=np.empty((1, model.D)), tables=tables)


class ExactGibbs:
    """Exact systematic-scan Gibbs on a :class:`DenseMRF`, ``chains`` chains at once.

    State ``{"x": (chains, D) uint8}`` (initialised uniformly at random).  One step = one sweep.
    Draws: ``samples (chains, D) bool``; with ``track=True`` also ``p_exact (chains, D) float32``
    (the conditional ``P(x_i=1|x_-i)`` each update used).  Stats: ``data_used (chains,)`` = 1,
    ``pair_terms_read (chains,)`` = D·N (each update charged its N pair terms).
    """

    def __init__(self, model: DenseMRF, chains: int = 1, impl: str = "quadratic",
                 track: bool = False):
        if impl not in ("quadratic", "lookup"):
            raise ValueError(f"impl must be 'quadratic' or 'lookup', got {impl!r}")
        self.model, self.chains, self.impl, self.track = model, int(chains), impl, bool(track)
        _warm_up(model, impl)

    def init(self, rng: np.random.Generator) -> dict:
        return {"x": (rng.random((self.chains, self.model.D)) < 0.5).astype(np.uint8)}

    def step(self, state: dict, rng: np.random.Generator) -> tuple[dict, dict, dict]:
        X = np.array(state["x"], dtype=np.uint8, copy=True)
        U = rng.random(X.shape)
        p = np.empty(X.shape) if self.track else None
        sweep_exact(self.model, X, U, self.impl, p_out=p)
        draws = {"samples": X.astype(bool)}
        if self.track:
            draws["p_exact"] = p.astype(np.float32)
        # the family's cost statistic: every update is charged its N pair terms (D·N a sweep)
        return {"x": X}, draws, {"data_used": np.ones(self.chains),
                                 "pair_terms_read": np.full(self.chains,
                                                            float(self.model.D * self.model.N))}


class ApproxGibbs:
    """Approximate Gibbs (§5) with the sequential test at tolerance ``eps``, minibatches of ``m``
    pairs; ``chains`` chains at once.  ``eps = 0`` makes the exact Gibbs decisions.

    State ``{"x": (chains, D) uint8}``.  One step = one sweep.  Draws: ``samples (chains, D)
    bool``; with ``track=True`` also ``p_exact (chains, D) float32`` and ``exact_decision
    (chains, D) bool`` (what exact Gibbs would have decided with the same u).  Stats: ``data_used
    (chains,)`` the fraction of the N terms read, averaged over the sweep's D updates,
    ``pair_terms_read (chains,)`` the terms the sweep's tests read in all; with
    ``track=True`` also ``wrong (chains,)`` the fraction of the sweep's decisions that differ from
    the exact decision with the same u.

    block : terms per block of the test's population (1: the paper's per-term test; b > 1: the
    block test of :func:`sweep_approx`, the terms of each variable shuffled once).
    """

    def __init__(self, model: DenseMRF, chains: int = 1, eps: float = 0.01, m: int = 500,
                 track: bool = False, block: int = BLOCK_DEFAULT):
        if not (0.0 <= eps < 1.0):
            raise ValueError(f"eps must be in [0, 1), got {eps}")
        if m < 1:
            raise ValueError(f"m must be >= 1, got {m}")
        self.model, self.chains, self.eps, self.m = model, int(chains), float(eps), int(m)
        self.track = bool(track)
        if int(block) < 1:
            raise ValueError(f"block must be >= 1, got {block}")
        self.block = int(block)
        self.tables = block_tables(model, self.block) if self.block > 1 else None
        _warm_up(model, "approx", self.tables)

    def init(self, rng: np.random.Generator) -> dict:
        return {"x": (rng.random((self.chains, self.model.D)) < 0.5).astype(np.uint8)}

    def step(self, state: dict, rng: np.random.Generator) -> tuple[dict, dict, dict]:
        X = np.array(state["x"], dtype=np.uint8, copy=True)
        U = rng.random(X.shape)
        n_used = np.empty(X.shape, dtype=np.int64)
        p = np.empty(X.shape) if self.track else None
        sweep_approx(self.model, X, U, self.eps, self.m, rng, p_out=p, n_out=n_used,
                     tables=self.tables)
        draws = {"samples": X.astype(bool)}
        stats = {"data_used": n_used.mean(axis=1) / self.model.N,
                 "pair_terms_read": n_used.sum(axis=1).astype(np.float64)}
        if self.track:
            draws["p_exact"] = p.astype(np.float32)
            # the exact decision with the same u (u < P(x_i=1|x_-i)), for paired estimates
            exact = U < p
            draws["exact_decision"] = exact
            stats["wrong"] = (exact != X.astype(bool)).mean(axis=1)
        return {"x": X}, draws, stats


# ------------------------------------------------------------------------------------------------
# exact enumeration (small D)

def all_states(D: int) -> np.ndarray:
    """All ``2^D`` states, ``(2^D, D)`` uint8; row r is the binary expansion of r with x_0 the
    least significant bit."""
    r = np.arange(2 ** D, dtype=np.int64)
    return ((r[:, None] >> np.arange(D)[None, :]) & 1).astype(np.uint8)


def enumerate_joint(model: DenseMRF) -> tuple[np.ndarray, np.ndarray]:
    """``(states (2^D, D) uint8, probs (2^D,))`` of the exact joint (D <= 20)."""
    if model.D > 20:
        raise ValueError(f"enumeration needs D <= 20, got {model.D}")
    S = all_states(model.D)
    lp = model.log_potential(S)
    p = np.exp(lp - lp.max())
    return S, p / p.sum()


def exact_conditionals(model: DenseMRF, X: np.ndarray) -> np.ndarray:
    """``P(x_i = 1 | x_-i)`` for every i from the tables by brute force (flip x_i, compare the
    two unnormalised log-probabilities), ``(B, D)``; independent of the quadratic form."""
    X = np.asarray(X, dtype=np.uint8)
    B, D = X.shape
    out = np.empty((B, D))
    for i in range(D):
        X1 = X.copy()
        X1[:, i] = 1
        X0 = X.copy()
        X0[:, i] = 0
        out[:, i] = expit(model.log_potential(X1) - model.log_potential(X0))
    return out


# ------------------------------------------------------------------------------------------------
# joint distributions on random 5-variable subsets (Figure 8)

def random_subsets(D: int, M: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``M`` random subsets of ``size`` distinct variables (sorted within a row), ``(M, size)``."""
    keys = rng.random((M, D))
    return np.sort(np.argsort(keys, axis=1)[:, :size], axis=1)


def subset_codes(X: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """State codes on the subsets: ``X (..., D)`` binary, ``subsets (M, k)`` → ``(..., M)`` int64,
    code = sum_b x[subsets[m, b]] << b."""
    k = subsets.shape[1]
    Xs = np.asarray(X, dtype=np.int64)[..., subsets]            # (..., M, k)
    return Xs @ (1 << np.arange(k, dtype=np.int64))


def joint_counts(X: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """Counts of the ``2^k`` joint states on each subset over samples ``X (n, D)``, ``(M, 2^k)``."""
    M, k = subsets.shape
    codes = subset_codes(X, subsets)                            # (n, M)
    flat = (codes + (np.arange(M, dtype=np.int64) << k)[None, :]).ravel()
    return np.bincount(flat, minlength=M << k).reshape(M, 1 << k).astype(np.float64)


def l1_joint_error(counts: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Average over subsets of the L1 distance between the empirical joint (``counts (..., M, S)``
    normalised per subset) and ``truth (M, S)``, shape ``(...)``."""
    tot = counts.sum(axis=-1, keepdims=True)
    emp = counts / np.maximum(tot, 1)
    return np.abs(emp - truth).sum(axis=-1).mean(axis=-1)
