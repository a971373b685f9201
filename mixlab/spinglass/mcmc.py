"""MCMC baselines for grid spin glasses: Gibbs, Metropolis, Swendsen-Wang; marginal-error evaluator.

Samplers follow the mixlab sampler contract (``init(rng) -> state``; ``step(state, rng) ->
(state, draws, stats)``) and are vectorised over chains (a batch axis): no Python loop over
chains, sites or edges. One ``step`` is one **sweep** = ``n = R*C`` site updates per chain (for
Swendsen-Wang: one bond-and-cluster-flip update of all ``n`` spins), so ``site updates = draws *
n`` per chain. Draws: ``samples (chain, R, C)`` bool, True = +1. Stats (per chain):
``accept`` (fraction of the n site updates that changed a spin; for SW the fraction of spins
flipped), ``site_updates`` (= n).

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
  cluster of common spin s this is ``P(new spin = +1) = sigmoid(2 Σ_i θ_i)``). Clusters of all
  chains are found in one call of ``scipy.sparse.csgraph.connected_components`` on one
  block-diagonal bond graph.

:class:`MarginalError` is a streaming evaluator: mean absolute error of the running single-site
marginal estimate (pooled over chains and draws) against exact marginals, at log-spaced points,
versus site updates or versus seconds.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse
import scipy.sparse.csgraph

from .model import SpinGlass

__all__ = ["Gibbs", "Metropolis", "SwendsenWang", "MarginalError", "SAMPLERS", "make_sampler"]


def _init_spins(shape: tuple, init: str, rng: np.random.Generator) -> np.ndarray:
    if init == "random":
        return np.where(rng.random(shape) < 0.5, 1.0, -1.0)
    if init == "plus":
        return np.ones(shape)
    if init == "minus":
        return -np.ones(shape)
    raise ValueError(f"init must be 'random', 'plus' or 'minus', got {init!r}")


class _Checkerboard:
    """Shared machinery: spins kept as a zero-padded ``(R+2, C+2, chains)`` float32 array (chains
    last, so neighbour sums are contiguous slices), couplings as ``(R, C, 1)`` arrays of the
    four neighbour directions (0 at the border)."""

    def __init__(self, model: SpinGlass, chains: int = 1, init: str = "random",
                 dtype=np.float32):
        if chains < 1:
            raise ValueError(f"chains must be >= 1, got {chains}")
        self.model = model
        self.chains = int(chains)
        self.init_mode = init
        self.dtype = np.dtype(dtype)
        R, C = model.shape
        self.n = R * C
        dt = self.dtype
        self.F = model.field.astype(dt)[:, :, None]
        self.JL = np.zeros((R, C, 1), dt)
        self.JR = np.zeros((R, C, 1), dt)
        self.JU = np.zeros((R, C, 1), dt)
        self.JD = np.zeros((R, C, 1), dt)
        self.JL[:, 1:, 0] = model.right
        self.JR[:, :-1, 0] = model.right
        self.JU[1:, :, 0] = model.down
        self.JD[:-1, :, 0] = model.down
        rr, cc = np.indices((R, C))
        red = ((rr + cc) % 2 == 0)[:, :, None]
        self.masks = (red, ~red)
        self._ones = np.ones(self.chains)
        if init not in ("random", "plus", "minus"):
            raise ValueError(f"init must be 'random', 'plus' or 'minus', got {init!r}")

    def init(self, rng: np.random.Generator) -> dict:
        R, C = self.model.shape
        X = np.zeros((R + 2, C + 2, self.chains), self.dtype)
        X[1:-1, 1:-1] = _init_spins((R, C, self.chains), self.init_mode, rng)
        return {"x": X}

    def local_field(self, X: np.ndarray) -> np.ndarray:
        """``h = θ_i + Σ_j θ_ij x_j`` for every site and chain: (R, C, chains)."""
        h = self.JL * X[1:-1, :-2]
        h += self.JR * X[1:-1, 2:]
        h += self.JU * X[:-2, 1:-1]
        h += self.JD * X[2:, 1:-1]
        h += self.F
        return h

    def _emit(self, X: np.ndarray, changed: np.ndarray) -> tuple[dict, dict]:
        samples = np.ascontiguousarray(X[1:-1, 1:-1].transpose(2, 0, 1) > 0)
        stats = {"accept": changed / self.n, "site_updates": self._ones * self.n}
        return {"samples": samples}, stats


class Gibbs(_Checkerboard):
    """Checkerboard Gibbs sampler (see module doc). ``model``: SpinGlass; ``chains``;
    ``init``: 'random' | 'plus' | 'minus'."""

    def step(self, state: dict, rng: np.random.Generator):
        X = state["x"]
        u = rng.random(X[1:-1, 1:-1].shape, dtype=np.float32)   # one uniform per site update
        changed = np.zeros(self.chains)
        inner = X[1:-1, 1:-1]
        for mask in self.masks:
            h = self.local_field(X)
            # P(x = +1 | rest) = sigmoid(2h)  <=>  u * (1 + exp(-2h)) < 1
            np.multiply(h, -2.0, out=h)
            np.minimum(h, 80.0, out=h)      # exp stays finite in float32 (u = 0 then gives +1)
            np.exp(h, out=h)
            h += 1.0
            h *= u
            new = np.where(h < 1.0, self.dtype.type(1), self.dtype.type(-1))
            upd = np.where(mask, new, inner)
            changed += np.count_nonzero(upd != inner, axis=(0, 1))
            inner[...] = upd
        return state, *self._emit(X, changed)


class Metropolis(_Checkerboard):
    """Checkerboard single-site Metropolis (every site of one colour proposes a flip at once)."""

    def step(self, state: dict, rng: np.random.Generator):
        X = state["x"]
        u = rng.random(X[1:-1, 1:-1].shape, dtype=np.float32)
        changed = np.zeros(self.chains)
        inner = X[1:-1, 1:-1]
        for mask in self.masks:
            h = self.local_field(X)
            # flip x -> -x changes θ by -2 x h; accept with prob min(1, exp(-2 x h))
            with np.errstate(over="ignore"):
                acc = mask & (u < np.exp(-2.0 * inner * h))
            changed += np.count_nonzero(acc, axis=(0, 1))
            inner[...] = np.where(acc, -inner, inner)
        return state, *self._emit(X, changed)


class SwendsenWang:
    """Swendsen-Wang cluster sampler for general couplings and fields (see module doc).

    State ``x (chains, R, C)`` float64 ±1."""

    def __init__(self, model: SpinGlass, chains: int = 1, init: str = "random"):
        if chains < 1:
            raise ValueError(f"chains must be >= 1, got {chains}")
        if init not in ("random", "plus", "minus"):
            raise ValueError(f"init must be 'random', 'plus' or 'minus', got {init!r}")
        self.model = model
        self.chains = int(chains)
        self.init_mode = init
        R, C = model.shape
        self.n = R * C
        K, n = self.chains, self.n
        idx = np.arange(n).reshape(R, C)
        src = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
        dst = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
        J = np.concatenate([model.right.ravel(), model.down.ravel()])
        off = (np.arange(K) * n)[:, None]
        self.src = (off + src[None, :])                  # (K, E) global node ids
        self.dst = (off + dst[None, :])
        self.J = J
        self.pbond = -np.expm1(-2.0 * np.abs(J))         # 1 - exp(-2|θ_ij|)
        self.esrc, self.edst = src, dst
        self.field = model.field.ravel()
        self._ones = np.ones(K)

    def init(self, rng: np.random.Generator) -> dict:
        R, C = self.model.shape
        return {"x": _init_spins((self.chains, R, C), self.init_mode, rng)}

    def step(self, state: dict, rng: np.random.Generator):
        x = state["x"]
        K, n = self.chains, self.n
        xf = x.reshape(K, n)
        sat = (self.J * xf[:, self.esrc] * xf[:, self.edst]) > 0          # (K, E)
        bond = sat & (rng.random(sat.shape) < self.pbond)
        a, b = self.src[bond], self.dst[bond]
        g = scipy.sparse.coo_matrix((np.ones(a.size, np.int8), (a, b)), shape=(K * n, K * n))
        ncl, labels = scipy.sparse.csgraph.connected_components(g, directed=False)
        hcl = np.bincount(labels, weights=(xf * self.field).ravel(), minlength=ncl)
        keep = rng.random(ncl) < 1.0 / (1.0 + np.exp(-2.0 * hcl))         # P(f=+1)=sigmoid(2h)
        f = np.where(keep, 1.0, -1.0)[labels].reshape(K, n)
        new = xf * f
        changed = np.count_nonzero(f < 0, axis=1)
        state = {"x": new.reshape(x.shape)}
        draws = {"samples": new.reshape(x.shape) > 0}
        stats = {"accept": changed / n, "site_updates": self._ones * n}
        return state, draws, stats


SAMPLERS = {"gibbs": Gibbs, "metropolis": Metropolis, "swendsen_wang": SwendsenWang}


def make_sampler(method: str, model: SpinGlass, chains: int, init: str = "random"):
    """Build one of :data:`SAMPLERS` by name."""
    if method not in SAMPLERS:
        raise ValueError(f"unknown MCMC method {method!r}; known: {', '.join(SAMPLERS)}")
    return SAMPLERS[method](model, chains=chains, init=init)


class MarginalError:
    """Streaming mean absolute error of single-site marginal estimates.

    ``exact_marginals (R, C)``: the true ``P(x = +1)``. The estimate after ``d`` draws per chain
    is the fraction of +1 over all chains' first ``d`` draws (``samples`` key, (chain, draw, R,
    C) bool). ``x``: ``"updates"`` -- points at log-spaced draw counts (``points_per_decade``),
    x = total site updates over all chains (``d * chains * updates_per_draw``), identical however
    the stream is blocked; or ``"seconds"`` -- one point per block end, x = cumulative sampling
    seconds. The last draw is always a point."""

    def __init__(self, exact_marginals: np.ndarray, metric: str = "marginal_error",
                 series: str = "sampler", x: str = "updates", updates_per_draw: float = 1.0,
                 points_per_decade: int = 10, key: str = "samples"):
        if x not in ("updates", "seconds"):
            raise ValueError(f"x must be 'updates' or 'seconds', got {x!r}")
        self.exact = np.asarray(exact_marginals, dtype=np.float64)
        self.metric, self.series, self.xmode, self.key = metric, series, x, key
        self.updates_per_draw = float(updates_per_draw)
        self.ppd = int(points_per_decade)
        self.x_label = "site updates (all chains)" if x == "updates" else "seconds"
        self.y_label = "mean |marginal error|"
        self.sum = np.zeros(self.exact.shape)
        self.draws = 0                 # draws per chain seen so far
        self.chains = 0
        self.next_k = 0                # index of the next log-spaced target
        self.last_t = 0                # last recorded target (draws per chain)
        self.xs: list[float] = []
        self.ys: list[float] = []
        self.last = (0.0, np.nan)

    def _target(self, k: int) -> int:
        return int(np.ceil(10.0 ** (k / self.ppd) - 1e-9))

    def update(self, draws: dict, count: int, seconds: float) -> None:
        s = np.asarray(draws[self.key])
        K, B = s.shape[:2]
        self.chains = K
        per = s.sum(axis=0, dtype=np.float64)                    # (B, R, C)
        start = self.draws
        if self.xmode == "updates":
            cum = np.cumsum(per, axis=0)
            while True:
                t = self._target(self.next_k)
                if t <= max(start, self.last_t):      # already passed, or a repeated target
                    self.next_k += 1
                    continue
                if t > start + B:
                    break
                est = (self.sum + cum[t - start - 1]) / (K * t)
                self._record(t * K * self.updates_per_draw, est)
                self.last_t = t
                self.next_k += 1
            self.sum += cum[-1]
        else:
            self.sum += per.sum(axis=0)
        self.draws = start + B
        est = self.sum / (K * self.draws)
        err = float(np.mean(np.abs(est - self.exact)))
        xv = (self.draws * K * self.updates_per_draw) if self.xmode == "updates" else seconds
        self.last = (float(xv), err)
        if self.xmode == "seconds":
            self.xs.append(float(seconds))
            self.ys.append(err)

    def _record(self, xv: float, est: np.ndarray) -> None:
        self.xs.append(float(xv))
        self.ys.append(float(np.mean(np.abs(est - self.exact))))

    def value(self) -> float:
        """Error of the current estimate (nan before any draw)."""
        return self.last[1]

    def curve(self):
        xs, ys = list(self.xs), list(self.ys)
        if self.draws and (not xs or xs[-1] != self.last[0]):
            xs.append(self.last[0])
            ys.append(self.last[1])
        return np.asarray(xs, float), np.asarray(ys, float), None
