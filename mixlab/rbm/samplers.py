"""Samplers for a trained binary RBM (ALGORITHMS.md §A.4): Gibbs, rates-FPCD, rates-herding and
sample penalization (SP), every one stepping many chains at once.

Each sampler follows the mixlab sampler contract::

    state = sampler.init(rng)                       # dict of numpy arrays
    state, draws, stats = sampler.step(state, rng)  # one emitted draw per chain

``draws`` holds ``"samples"`` (bool, ``(chains, V)``, the binary state ``x``) and/or ``"means"``
(float32, ``(chains, V)``, ``E[x | h; θ⁻]`` from the last Gibbs half-step), chosen by ``emit``
(``"binary" | "means" | "both"``).  ``stats`` holds per-chain floats ``(chains,)``.

For speed, ``step`` updates the arrays of ``state`` in place (the fast weights can be
``(chains, V, H)``) and returns the same dict; the draws it returns are fresh arrays.

Notation (shapes): ``V`` visible, ``H`` hidden units, ``C`` chains, ``F`` fast-weight sets
(``F = C`` for per-chain fast weights — the exact algorithm — and ``F = 1`` for the shared
variant or a single chain).  See :class:`_FastWeights` for the state layout.

Random numbers: every block-Gibbs step draws ``rng.random((C, H), float32)`` then
``rng.random((C, V), float32)`` and nothing else is drawn while stepping, so rates-FPCD and SP
with ``ε_F = 0`` reproduce Gibbs' stream bit for bit (same seed), and rates-herding draws nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mixlab.plugins.registry import sampler as register_sampler
from mixlab.rbm.fast_weights import mean_abs_diff, sparse_vis_to_hid, update_weights
from mixlab.spec.schema import Param

EMIT_CHOICES = ("binary", "means", "both")
INIT_CHOICES = ("data", "noise")
# the built-in samplers (every one registered below for the "rbm" family; plugins add more)
METHODS = ("gibbs", "rates-fpcd", "rates-herding", "sample-penalization")

_F32 = np.float32
_EMPTY = np.empty((0, 0), _F32)  # "absent" for the compiled kernels' optional matrices
_EMPTY1 = np.empty(0, _F32)
_ONE = np.ones(1, _F32)


def _params(rbm: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(W (V,H), b (V,), c (H,)) as C-contiguous float32 arrays from anything with W, b, c."""
    W = np.ascontiguousarray(rbm.W, dtype=_F32)
    b = np.ascontiguousarray(rbm.b, dtype=_F32).reshape(-1)
    c = np.ascontiguousarray(rbm.c, dtype=_F32).reshape(-1)
    if W.ndim != 2 or W.shape != (b.size, c.size):
        raise ValueError(f"RBM shapes disagree: W {W.shape}, b {b.shape}, c {c.shape}")
    return W, b, c


def compute_rates(rbm: Any, X: np.ndarray, block: int = 4096) -> dict[str, np.ndarray]:
    """The rates of ALGORITHMS.md §A.3 from a trained RBM and its (binary) training set.

    X: (N, V) in {0,1}.  Returns float32 ``{"W": (V,H) mean_n x_n E[h|x_n]ᵀ, "b": (V,) mean_n x_n,
    "c": (H,) mean_n E[h|x_n]}`` (accumulated in float64 over blocks of rows)."""
    W, b, c = _params(rbm)
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] != W.shape[0]:
        raise ValueError(f"training set must be (N, {W.shape[0]}), got {X.shape}")
    n = X.shape[0]
    if n == 0:
        raise ValueError("compute_rates needs at least one training example")
    RW = np.zeros(W.shape, np.float64)
    Rb = np.zeros(W.shape[0], np.float64)
    Rc = np.zeros(W.shape[1], np.float64)
    for i in range(0, n, block):
        xb = np.asarray(X[i:i + block], dtype=_F32)
        hb = xb @ W
        hb += c
        _sigmoid_(hb)
        RW += xb.T @ hb
        Rb += xb.sum(0, dtype=np.float64)
        Rc += hb.sum(0, dtype=np.float64)
    return {"W": (RW / n).astype(_F32), "b": (Rb / n).astype(_F32), "c": (Rc / n).astype(_F32)}


# ---------------------------------------------------------------------------------------------
# vectorised kernels.  The weights acting on chain i are Wb + Wf[i]: Wb (V,H) is shared by all
# chains (θ, or θ⁻ for shared fast weights) and Wf (C,V,H) holds per-chain fast weights, or is
# None.  Keeping Wb apart makes x Wb one GEMM whose result is bit-identical to Gibbs' when the
# fast weights are zero.  b (F,V), c (F,H) with F in {1, C} are the (effective) biases.

def _vis_to_hid(x: np.ndarray, Wb: np.ndarray, Wf: np.ndarray | None = None) -> np.ndarray:
    """x (C,V) float32 -> x (Wb + Wf[i]) (C,H): one GEMM, plus a batched GEMV for Wf."""
    a = x @ Wb
    if Wf is not None:
        a += np.matmul(x[:, None, :], Wf)[:, 0, :]
    return a


def _hid_to_vis(h: np.ndarray, Wb: np.ndarray, Wf: np.ndarray | None = None) -> np.ndarray:
    """h (C,H) float32 -> h (Wb + Wf[i])ᵀ (C,V)."""
    a = h @ Wb.T
    if Wf is not None:
        a += np.matmul(Wf, h[:, :, None])[:, :, 0]
    return a


def _set(A: np.ndarray, i: int) -> np.ndarray:
    """Fast-weight set i of a stacked state array as a matrix: ``A[i]`` of (F,V,H) weights,
    ``A[i:i+1]`` (one row) of (F,V) biases."""
    return A[i] if A.ndim == 3 else A[i:i + 1]


def _sigmoid_(a: np.ndarray) -> None:
    """In-place logistic function of a float32 array, as ``0.5 + 0.5 tanh(a/2)`` (the formula of
    :func:`mixlab.rbm.model.sigmoid`: SIMD tanh, ~7x faster than scipy's expit, error within float32
    rounding)."""
    a *= np.float32(0.5)
    np.tanh(a, out=a)
    a *= np.float32(0.5)
    a += np.float32(0.5)


def _bernoulli(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A 0/1 float32 sample of independent Bernoulli(p); draws exactly ``p.size`` float32 uniforms."""
    u = rng.random(p.shape, dtype=_F32)
    return np.less(u, p).astype(_F32)


def gibbs_sweeps(x: np.ndarray, Wb: np.ndarray, Wf: np.ndarray | None, b: np.ndarray,
                 c: np.ndarray, k: int, rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """k block-Gibbs steps from x.

    x (C,V) float32 in {0,1}; Wb (V,H); Wf (C,V,H) or None; b (F,V); c (F,H), F in {1, C}.
    Each step: h ~ P(h|x) then x ~ P(x|h).  Returns (x (C,V), h (C,H), px (C,V) = P(x=1|h)) of the
    last step.  Consumes rng.random((C,H)) then rng.random((C,V)) per step."""
    h = px = None
    for _ in range(k):
        a = _vis_to_hid(x, Wb, Wf)
        a += c
        _sigmoid_(a)
        h = _bernoulli(a, rng)
        px = _hid_to_vis(h, Wb, Wf)
        px += b
        _sigmoid_(px)
        x = _bernoulli(px, rng)
    return x, h, px


def hill_climb(x: np.ndarray, Wb: np.ndarray, Wf: np.ndarray | None, b: np.ndarray,
               c: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Deterministic block coordinate descent of E(x,h) from x (herding's inner loop).

    Alternates ``h ← 1[c + xW > 0]`` and ``x ← 1[b + W h > 0]`` until x no longer changes (a fixed
    point: then h = 1[c + xW > 0] too) or k rounds.  Chains that reached their fixed point stay
    there.  x (C,V) float32; weights and biases as in :func:`gibbs_sweeps`.
    Returns (x (C,V), h (C,H), rounds (C,) int: the round at which each chain stopped moving,
    or k + 1 when it had not converged after k rounds)."""
    C = x.shape[0]
    rounds = np.full(C, k + 1, dtype=np.int64)
    done = np.zeros(C, dtype=bool)
    h = None
    for r in range(1, k + 1):
        h = (_vis_to_hid(x, Wb, Wf) + c > 0).astype(_F32)
        x_new = (_hid_to_vis(h, Wb, Wf) + b > 0).astype(_F32)
        same = np.all(x_new == x, axis=1)
        rounds[same & ~done] = r
        done |= same
        x = x_new
        if done.all():
            break
    return x, h, rounds


def energy(x: np.ndarray, h: np.ndarray, W: np.ndarray, b: np.ndarray, c: np.ndarray
           ) -> np.ndarray:
    """E(x,h) = -bᵀx - cᵀh - xᵀWh for rows of x (C,V), h (C,H); W (V,H).  Float64 (C,)."""
    x = np.asarray(x, np.float64)
    h = np.asarray(h, np.float64)
    return -(x @ np.asarray(b, np.float64)) - h @ np.asarray(c, np.float64) \
        - np.einsum("cv,vh,ch->c", x, np.asarray(W, np.float64), h)


# ---------------------------------------------------------------------------------------------

class _Base:
    """Shared constructor bits: model arrays, chains, initial state, emitted keys."""

    method = ""
    binary_only = False

    def __init__(self, rbm: Any, *, chains: int = 1, k: int = 1, init: str = "data",
                 init_data: np.ndarray | None = None, emit: str = "means"):
        self.W, self.b, self.c = _params(rbm)
        if int(chains) < 1:
            raise ValueError(f"chains must be >= 1, got {chains}")
        if int(k) < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if init not in INIT_CHOICES:
            raise ValueError(f"init must be one of {INIT_CHOICES}, got {init!r}")
        if emit not in EMIT_CHOICES:
            raise ValueError(f"emit must be one of {EMIT_CHOICES}, got {emit!r}")
        if self.binary_only and emit != "binary":
            raise ValueError(f"{self.method} produces binary samples only: emit must be 'binary',"
                             f" got {emit!r}")
        self.chains, self.k, self.init_mode, self.emit = int(chains), int(k), init, emit
        self.V, self.H = self.W.shape
        # the family's cost statistic (mixlab.plugins.families): k block-Gibbs sweeps update V + H units
        self._site_updates = np.full(self.chains, float(self.k * (self.V + self.H)))
        if init == "data":
            if init_data is None:
                raise ValueError("init='data' needs init_data (training examples, (N, V))")
            init_data = np.asarray(init_data)
            if init_data.ndim != 2 or init_data.shape[1] != self.V or init_data.shape[0] == 0:
                raise ValueError(f"init_data must be (N, {self.V}) with N >= 1, "
                                 f"got {init_data.shape}")
        self.init_data = init_data

    def _init_x(self, rng: np.random.Generator) -> np.ndarray:
        """(C,V) float32 0/1: random training examples (thresholded at 0.5) or uniform noise."""
        if self.init_mode == "data":
            idx = rng.integers(0, self.init_data.shape[0], size=self.chains)
            return (np.asarray(self.init_data[idx], dtype=_F32) > 0.5).astype(_F32)
        return (rng.random((self.chains, self.V)) < 0.5).astype(_F32)

    @property
    def draw_keys(self) -> tuple[str, ...]:
        """The keys of the draws ``step`` emits (``samples`` and/or ``means``)."""
        return {"binary": ("samples",), "means": ("means",),
                "both": ("samples", "means")}[self.emit]

    def _draws(self, x: np.ndarray, px: np.ndarray | None) -> dict[str, np.ndarray]:
        out = {}
        if self.emit in ("binary", "both"):
            out["samples"] = x.astype(bool)
        if self.emit in ("means", "both"):
            out["means"] = np.array(px, dtype=_F32, copy=True)
        return out


class Gibbs(_Base):
    """Gibbs(k): k block-Gibbs steps with θ between emitted samples.

    State: ``x`` (C,V) float32.  Stats: ``flip`` (C,) fraction of visible units that changed,
    ``site_updates`` (C,) = k·(V + H) unit updates."""

    method = "gibbs"

    def __init__(self, rbm: Any, *, k: int = 1, chains: int = 1, init: str = "data",
                 init_data: np.ndarray | None = None, emit: str = "means"):
        super().__init__(rbm, chains=chains, k=k, init=init, init_data=init_data, emit=emit)
        self._b2, self._c2 = self.b[None], self.c[None]

    def init(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": self._init_x(rng)}

    def step(self, state: dict, rng: np.random.Generator) -> tuple[dict, dict, dict]:
        x0 = state["x"]
        x, _, px = gibbs_sweeps(x0, self.W, None, self._b2, self._c2, self.k, rng)
        flip = np.mean(x != x0, axis=1, dtype=_F32)
        state["x"] = x
        return state, self._draws(x, px), {"flip": flip, "site_updates": self._site_updates}


class _FastWeights(_Base):
    """Common machinery of rates-FPCD, rates-herding and SP (fast weights θ_F, rates R).

    State layout (F = 1 for shared fast weights or a single chain, F = C otherwise):

    - always ``x`` (C,V) float32 and the effective biases ``b_eff`` (F,V), ``c_eff`` (F,H);
    - F = 1: ``W_eff`` (1,V,H) = θ⁻'s weights (one GEMM per half-step);
    - F = C > 1: ``W_fast`` (C,V,H) = θ_F's weights (θ⁻ = θ + θ_F is never formed: ``x θ⁻`` is a
      GEMM with θ plus a batched GEMV with θ_F);
    - α < 1: the fast parameters are kept too (``W_fast``, ``b_fast``, ``c_fast``), decayed and
      updated, and θ⁻ is recomputed from them.
    """

    use_rates = True

    def __init__(self, rbm: Any, *, eps_f: float, alpha: float = 1.0, k: int = 1,
                 chains: int = 1, shared: bool = False, rates: dict | None = None,
                 init: str = "data", init_data: np.ndarray | None = None,
                 emit: str = "means"):
        super().__init__(rbm, chains=chains, k=k, init=init, init_data=init_data, emit=emit)
        eps_f, alpha = float(eps_f), float(alpha)
        if not np.isfinite(eps_f) or eps_f < 0:
            raise ValueError(f"eps_f must be a finite number >= 0, got {eps_f}")
        if not (0.0 <= alpha <= 1.0):
            raise ValueError(f"alpha must be in [0, 1], got {alpha}")
        self.eps_f, self.alpha, self.shared = eps_f, alpha, bool(shared)
        self.F = 1 if (self.shared or self.chains == 1) else self.chains
        if self.use_rates:
            if rates is None:
                raise ValueError(f"{self.method} needs the rates R (see compute_rates)")
            R = {key: np.asarray(rates[key], dtype=_F32) for key in ("W", "b", "c")}
            if R["W"].shape != self.W.shape or R["b"].shape != self.b.shape \
                    or R["c"].shape != self.c.shape:
                raise ValueError("rates shapes do not match the RBM")
            # ε_F R, added to θ_F every step; biases as one-row matrices for the kernel
            self._eR = {key: (self.eps_f * v).astype(_F32).reshape(-1, v.shape[-1])
                        for key, v in R.items()}
        else:
            self._eR = None
        self._b2, self._c2 = self.b[None], self.c[None]
        self._G = None  # (V,H) buffer for the shared θ_F's summed statistics
        self._hh1 = np.empty((1, self.H), _F32)  # ĥ of a single chain
        # load (or compile) the kernels now, outside any timed budget
        t1, v1 = np.zeros((1, 1), _F32), np.zeros(1, _F32)
        update_weights(t1, _F32(1), t1, _F32(0), v1, v1, _EMPTY, _EMPTY, _EMPTY)
        sparse_vis_to_hid(v1, t1, v1)
        mean_abs_diff(t1, v1)

    # -- state -------------------------------------------------------------------------------
    def init(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        F, V, H = self.F, self.V, self.H
        state = {"x": self._init_x(rng),
                 "b_eff": np.broadcast_to(self.b, (F, V)).copy(),
                 "c_eff": np.broadcast_to(self.c, (F, H)).copy()}
        if F == 1:
            state["W_eff"] = self.W[None].copy()
        if F > 1 or self.alpha < 1.0:
            state["W_fast"] = np.zeros((F, V, H), _F32)
        if self.alpha < 1.0:
            state["b_fast"] = np.zeros((F, V), _F32)
            state["c_fast"] = np.zeros((F, H), _F32)
        return state

    def _weights(self, state: dict) -> tuple[np.ndarray, np.ndarray | None]:
        """(Wb (V,H), Wf (C,V,H) or None) such that chain i samples with Wb + Wf[i]."""
        if self.F == 1:
            return state["W_eff"][0], None
        return self.W, state["W_fast"]

    # -- θ_F ← α θ_F + ε_F (R − s(x, h)) -----------------------------------------------------
    def _update(self, state: dict, x: np.ndarray, h: np.ndarray) -> None:
        """x (C,V), h (C,H) float32: the statistics s(x,h) = (x hᵀ, x, h) of this step.

        Each of W, b, c takes one compiled pass per fast-weight set (:func:`update_weights`; a
        bias vector is a one-row matrix whose "rank-one" statistics are 1 · x or 1 · h); with
        several chains and one shared θ_F the summed statistics are computed first (xᵀh: one
        numpy GEMM)."""
        C, F = self.chains, self.F
        decay = self.alpha < 1.0
        alpha = _F32(self.alpha)
        # per parameter W, b, c: (the fast-weight sets that receive α(·) + ε_F (R − s), ε_F R or
        # empty, (θ, θ⁻) when θ⁻ = θ + θ_F is rebuilt in the same pass — θ_F decays; per-chain
        # W⁻ is never formed — or None)
        E = self._eR if self._eR is not None else {"W": _EMPTY, "b": _EMPTY, "c": _EMPTY}
        params = (
            (state["W_fast"] if (decay or F > 1) else state["W_eff"], E["W"],
             (self.W, state["W_eff"]) if (decay and F == 1) else None),
            (state["b_fast"] if decay else state["b_eff"], E["b"],
             (self._b2, state["b_eff"]) if decay else None),
            (state["c_fast"] if decay else state["c_eff"], E["c"],
             (self._c2, state["c_eff"]) if decay else None))
        summed = F == 1 and C > 1  # one θ_F for several chains: their summed statistics
        if summed:
            s = _F32(self.eps_f / C)
            if self._G is None:
                self._G = np.empty((self.V, self.H), _F32)
            # numpy's BLAS (not scipy's: two OpenBLAS thread pools spinning against each other
            # made this step 4x slower on 2 cores)
            np.matmul(x.T, h, out=self._G)
            stats = [((_EMPTY1, _EMPTY1), G) for G in (self._G, x.sum(0)[None], h.sum(0)[None])]
        else:  # one θ_F per chain, or a single chain: rank-one statistics
            s = _F32(self.eps_f)
        for i in range(F):
            if not summed:  # (rank-one factors u, v; dense G): W gets x hᵀ, b gets 1·x, c 1·h
                stats = [((x[i], h[i]), _EMPTY), ((_ONE, x[i]), _EMPTY), ((_ONE, h[i]), _EMPTY)]
            for (T, ER, rebuild), ((u, v), G) in zip(params, stats):
                Wb, Weff = rebuild if rebuild is not None else (_EMPTY, None)
                update_weights(_set(T, i), alpha, ER, s, u, v, G, Wb,
                               _EMPTY if Weff is None else _set(Weff, i))

    def _fast_stats(self, state: dict) -> dict[str, np.ndarray]:
        """Cheap per-chain magnitudes of θ_F (biases only: O(V+H) per fast-weight set)."""
        fb = mean_abs_diff(state["b_eff"], self.b)
        fc = mean_abs_diff(state["c_eff"], self.c)
        if self.F == 1 and self.chains > 1:
            fb = np.repeat(fb, self.chains)
            fc = np.repeat(fc, self.chains)
        return {"fast_b": fb, "fast_c": fc}

    def effective_params(self, state: dict) -> list[dict[str, np.ndarray]]:
        """θ⁻ = θ + θ_F of every fast-weight set: a list of F dicts {"W", "b", "c"} (float32)."""
        out = []
        for i in range(self.F):
            W = state["W_eff"][0] if self.F == 1 else self.W + state["W_fast"][i]
            out.append({"W": np.array(W), "b": state["b_eff"][i].copy(),
                        "c": state["c_eff"][i].copy()})
        return out


class RatesFPCD(_FastWeights):
    """Rates-FPCD(ε_F, α, k), the paper's Algorithm 1, per emitted sample:

    1. k block-Gibbs steps with θ⁻ = θ + θ_F from the current x;
    2. ĥ = E[h | x; θ⁻];
    3. θ_F ← α θ_F + ε_F (R − s(x, ĥ));
    4. emit x (and/or E[x | h; θ⁻] from step 1's last half-step).

    ``shared=False`` (default, the exact algorithm): one θ_F per chain.
    ``shared=True``: one θ_F for all chains, updated with the chains' mean statistics.
    With one chain both are the same algorithm (and the same code path).
    Stats: ``flip``, ``fast_b``, ``fast_c`` (mean |θ_F| of the biases), ``site_updates``
    (k·(V + H)), each (C,)."""

    method = "rates-fpcd"

    def step(self, state: dict, rng: np.random.Generator) -> tuple[dict, dict, dict]:
        x0 = state["x"]
        Wb, Wf = self._weights(state)
        b, c = state["b_eff"], state["c_eff"]
        x, _, px = gibbs_sweeps(x0, Wb, Wf, b, c, self.k, rng)
        # ĥ = E[h | x; θ⁻]; for one chain as a sum of the rows where x_i = 1 (x is binary)
        if Wf is None and self.chains == 1:
            hh = self._hh1
            sparse_vis_to_hid(x[0], Wb, hh[0])
        else:
            hh = _vis_to_hid(x, Wb, Wf)
        hh += c
        _sigmoid_(hh)
        self._update(state, x, hh)
        state["x"] = x
        stats = {"flip": np.mean(x != x0, axis=1, dtype=_F32), **self._fast_stats(state),
                 "site_updates": self._site_updates}
        return state, self._draws(x, px), stats


class SamplePenalization(RatesFPCD):
    """SP(ε_F, α): rates-FPCD with R = 0, i.e. θ_F ← α θ_F − ε_F s(x, ĥ).  Needs α < 1 (with
    α = 1 the fast weights drift without bound and the chain tends to the uniform distribution)."""

    method = "sample-penalization"
    use_rates = False

    def __init__(self, rbm: Any, *, eps_f: float, alpha: float, k: int = 1, chains: int = 1,
                 shared: bool = False, init: str = "data", init_data: np.ndarray | None = None,
                 emit: str = "means", rates: dict | None = None):
        if float(alpha) >= 1.0:
            raise ValueError(f"sample penalization needs a decay alpha < 1 (got alpha={alpha}): "
                             "with alpha = 1 the penalties accumulate without bound and the "
                             "chain drifts to the uniform distribution")
        super().__init__(rbm, eps_f=eps_f, alpha=alpha, k=k, chains=chains, shared=shared,
                         rates=None, init=init, init_data=init_data, emit=emit)


class RatesHerding(_FastWeights):
    """Rates-herding(ε_F, α, k): as rates-FPCD but step 1 is the deterministic hill-climb under θ⁻
    (:func:`hill_climb`, to a fixed point or at most k rounds) and the statistics use the binary
    h of the climb.  Emits binary samples only; draws no random numbers after ``init``.
    Stats: ``flip``, ``fast_b``, ``fast_c``, ``rounds`` (rounds used; k + 1 = not converged),
    ``site_updates`` (rounds·(V + H))."""

    method = "rates-herding"
    binary_only = True

    def __init__(self, rbm: Any, *, eps_f: float, alpha: float = 1.0, k: int = 100,
                 chains: int = 1, shared: bool = False, rates: dict | None = None,
                 init: str = "data", init_data: np.ndarray | None = None,
                 emit: str = "binary"):
        super().__init__(rbm, eps_f=eps_f, alpha=alpha, k=k, chains=chains, shared=shared,
                         rates=rates, init=init, init_data=init_data, emit=emit)

    def step(self, state: dict, rng: np.random.Generator) -> tuple[dict, dict, dict]:
        x0 = state["x"]
        Wb, Wf = self._weights(state)
        x, h, rounds = hill_climb(x0, Wb, Wf, state["b_eff"], state["c_eff"], self.k)
        self._update(state, x, h)
        state["x"] = x
        stats = {"flip": np.mean(x != x0, axis=1, dtype=_F32), **self._fast_stats(state),
                 "rounds": rounds.astype(_F32),
                 "site_updates": rounds.astype(np.float64) * (self.V + self.H)}
        return state, self._draws(x, None), stats


# ---------------------------------------------------------------------------------------------
# registration: the "rbm" family's built-in samplers (mixlab.plugins.registry.sampler).  A factory gets
# the target (mixlab.rbm.target.RBMTarget: an RBM with W (V,H), b (V,), c (H,), plus the binary
# training set ``train_X`` (N,V), the rates ``rates`` (or None: computed here from train_X), the
# initial-state mode ``init`` and the draws wanted ``emit``), the spec entry's params and the
# number of chains.

_K = Param(1, int, lo=1, help="block-Gibbs steps per emitted sample")
_EPS_F = Param(0.0, float, lo=0, help="fast-weight step size ε_F")
_ALPHA = Param(1.0, float, lo=0, hi=1, help="fast-weight decay α")
_SHARED = Param(False, bool, help="one θ_F shared by all chains (mean statistics) instead of one "
                                  "per chain")
FAST_WEIGHT_PARAMS = {"eps_f": _EPS_F, "alpha": _ALPHA, "k": _K, "shared": _SHARED}


def _start(target: Any) -> dict:
    """The keyword arguments every built-in sampler takes from the target."""
    return {"init": getattr(target, "init", "data"),
            "init_data": getattr(target, "train_X", None),
            "emit": getattr(target, "emit", "both")}


def _rates(target: Any) -> dict:
    """The target's rates R, computed from its training set when it carries none."""
    R = getattr(target, "rates", None)
    if R is None:
        X = getattr(target, "train_X", None)
        if X is None:
            raise ValueError("rates-FPCD needs the rates R or the training set they come from "
                             "(target.rates or target.train_X)")
        R = compute_rates(target, X)
    return R


@register_sampler("rbm", "gibbs", params={"k": _K},
                  help="block Gibbs sampling, k steps with θ between emitted samples")
def gibbs_factory(target: Any, params: dict, chains: int) -> Gibbs:
    return Gibbs(target, k=params["k"], chains=chains, **_start(target))


@register_sampler("rbm", "rates-fpcd", params=FAST_WEIGHT_PARAMS,
                  help="rates-FPCD (the paper's Algorithm 1): Gibbs with θ + θ_F, θ_F pulled "
                       "towards the rates R and away from the chain's own statistics")
def rates_fpcd_factory(target: Any, params: dict, chains: int) -> RatesFPCD:
    return RatesFPCD(target, eps_f=params["eps_f"], alpha=params["alpha"], k=params["k"],
                     chains=chains, shared=params["shared"], rates=_rates(target),
                     **_start(target))


@register_sampler("rbm", "rates-herding", params=FAST_WEIGHT_PARAMS,
                  help="rates-herding: the deterministic hill-climb under θ + θ_F (k = most "
                       "rounds); binary samples only")
def rates_herding_factory(target: Any, params: dict, chains: int) -> RatesHerding:
    return RatesHerding(target, eps_f=params["eps_f"], alpha=params["alpha"], k=params["k"],
                        chains=chains, shared=params["shared"], rates=_rates(target),
                        **{**_start(target), "emit": "binary"})


@register_sampler("rbm", "sample-penalization",
                  params={**FAST_WEIGHT_PARAMS,
                          "alpha": Param(0.95, float, lo=0, hi=1, hi_open=True,
                                         help="fast-weight decay α; must be < 1 (with α = 1 the "
                                              "penalties grow without bound and the chain "
                                              "drifts to the uniform distribution)")},
                  help="sample penalization: rates-FPCD with R = 0 (needs α < 1)")
def sample_penalization_factory(target: Any, params: dict, chains: int) -> SamplePenalization:
    return SamplePenalization(target, eps_f=params["eps_f"], alpha=params["alpha"],
                              k=params["k"], chains=chains, shared=params["shared"],
                              **_start(target))
