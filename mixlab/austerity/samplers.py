"""Samplers for Bayesian logistic regression with exact and approximate (sequential) MH tests.

Every sampler follows the mixlab sampler contract (``init(rng) -> state``, ``step(state, rng) ->
(state, draws, stats)``) with chains as a batch axis: the state holds ``theta`` (C, d) and the
stats are per chain (C,):

* ``accept``     bool, the MH decision (always True for uncorrected SGLD)
* ``data_used``  float, fraction of the N data points read by the accept/reject test
                 (1 for the exact test, n_used/N for the sequential test, 0 without a test)
* ``points_read`` float, the family's cost statistic (mixlab.plugins.families): data points whose
                 log-likelihood or gradient term the step evaluated (a point read twice counts
                 twice; the ``wrong`` side pass below is not counted)
* ``wrong``      bool, only with ``track_errors=True``: the decision differs from the exact MH
                 decision with the same u (a full pass over the data on the side, not timed
                 apart: switch it off for wall-clock comparisons)

Random numbers per step are consumed in a fixed order whatever the test (proposal noise, then
u, then one integer seeding the minibatch orders of the sequential test), so the exact sampler
and the sequential one with ``eps = 0`` see the same proposals and the same u.  The sequential
test runs compiled (:class:`CompiledSequentialTest`), its minibatch orders drawn in the kernel
from that seed.
"""

from __future__ import annotations

import numpy as np

from .kernels import (
    column_tiles,
    minibatch_rows,
    seqtest_logistic,
    seqtest_logistic_blocks,
    seqtest_logistic_blocks_shared,
)
from .logistic import LogisticPosterior
from .rwmh_steps import rwmh_step_blocks, rwmh_step_exact, rwmh_step_points
from .seqtest import tcrit2_table

__all__ = ["BLOCK_DEFAULT", "SGLD", "TESTS", "CompiledSequentialTest", "RandomWalkMH",
           "block_rows", "mh_decide", "sgld_log_q_ratio"]

TESTS = ("auto", "exact", "sequential")
BLOCK_DEFAULT = 32     # rows per block of the sequential test (1: the per-point test)


def _resolve_test(test: str, eps: float) -> str:
    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, got {test!r}")
    if test == "auto":
        return "exact" if eps == 0 else "sequential"
    if test == "exact" and eps != 0:
        raise ValueError("the exact test has eps = 0")
    return test


def seed63(rng: np.random.Generator) -> int:
    """A uniform integer in [0, 2**63): the next 64-bit word of rng's bit generator, shifted.
    It is ``int(rng.integers(0, 2**63))`` (numpy's bounded draw of this range is Lemire's
    multiply-shift of one word, i.e. the word >> 1: tests/austerity/test_rwmh_steps.py), the
    draw every version of these samplers made, at a sixth of its cost (0.25 against 1.5 µs,
    3% of an MH step)."""
    return rng.bit_generator.random_raw() >> 1


def _init_theta(init, chains: int, d: int) -> np.ndarray:
    if init is None:
        return np.zeros((chains, d))
    init = np.asarray(init, dtype=np.float64)
    return np.array(np.broadcast_to(init, (chains, d)))


class CompiledSequentialTest:
    """The sequential MH test for C logistic-regression chains, one compiled call per step (the
    rule of :mod:`.seqtest`).

    block = 1: the paper's population, the N points, read in minibatches of m points in a random
    order (:func:`mixlab.austerity.kernels.seqtest_logistic`).  block = b > 1: the
    rows are shuffled once (a fixed permutation, :func:`block_rows`) and cut into K = ceil(N/b)
    blocks of b consecutive rows; the test's population is the K block values (K/N) Σ_block l_i
    (mean = the mean of the l_i exactly), read in minibatches of ceil(m/b) blocks, with the
    block sums at the current state cached across steps
    (:func:`mixlab.austerity.kernels.seqtest_logistic_blocks`).  A block is stored as column
    tiles (:func:`mixlab.austerity.kernels.column_tiles`): its products are the exact pass's
    vectorised products, and it costs one random number.

    shared_order (block > 1 only): one random block order per call for all chains, so a block is
    read once for every undecided chain (:func:`.kernels.seqtest_logistic_blocks_shared`); each chain's test is unchanged, but the chains' decisions
    in a step read the same blocks (they are no longer independent given the states)."""

    def __init__(self, post: LogisticPosterior, eps: float, m: int, block: int = 1,
                 shared_order: bool = False):
        if int(block) < 1:
            raise ValueError(f"block must be >= 1, got {block}")
        if shared_order and int(block) == 1:
            raise ValueError("shared_order needs block > 1")
        # a block of more than N rows is all the data (K = 1): store it as N rows, not as the
        # tiles of an oversized block
        self.post, self.m, self.block = post, int(m), min(int(block), post.N)
        self.shared_order = bool(shared_order)
        N = post.N
        if self.block == 1:
            self.K, self.mb = N, self.m
        else:
            self.K, self.mb = -(-N // self.block), -(-self.m // self.block)
            self.Xt = column_tiles(post.Xs[block_rows(N)], self.block)
            self.cache = None
            self._cache_for(0)
        self.tcrit2 = tcrit2_table(self.K, self.mb, float(eps))
        self.perm = np.arange(self.K, dtype=np.int64)
        self.swaps = np.empty(self.K, np.int64)
        self._kernel = (seqtest_logistic_blocks_shared if self.shared_order
                        else seqtest_logistic_blocks)
        zero = np.zeros((1, post.d))                   # load/compile the kernel now, untimed
        self(zero, zero, np.zeros(1), 0)

    def _cache_for(self, C: int) -> None:
        """The per-chain cache of the block sums of log σ(x_i·θ) for C chains: kept when it has
        C rows, else (re)allocated empty."""
        if self.cache is not None and self.cache.shape[0] == C:
            return
        W = self.post.tile_width
        self.cache = np.zeros((C, self.K))
        self.stamp = np.full((C, self.K), -1, np.int64)
        self.version = np.zeros(C, np.int64)
        self.cache_theta = np.full((C, W), np.nan, np.float32)

    def __call__(self, theta: np.ndarray, prop: np.ndarray, mu0: np.ndarray, seed: int):
        """theta, prop (C, d); mu0 (C,); seed an integer in [0, 2**64) -> accept (C,) bool,
        n_used (C,) int64 (points read), mean (C,) and standard error (C,) of the test's values
        at the decision (per-point values for block = 1, block values otherwise)."""
        C = theta.shape[0]
        accept = np.empty(C, bool)                     # the kernels write every entry
        n_used = np.empty(C, np.int64)
        mean, se = np.empty(C), np.empty(C)
        post = self.post
        prop, theta = post.theta_2d(prop), post.theta_2d(theta)   # the kernels pad them
        mu0 = np.asarray(mu0, np.float64)
        seed = int(seed)
        if self.block == 1:
            seqtest_logistic(post.Xk, prop, theta, mu0, self.m, self.tcrit2, seed,
                             accept, n_used, mean, se, self.perm, self.swaps)
        else:
            self._cache_for(C)
            self._kernel(self.Xt, post.tile_width, post.N, self.block, prop, theta, mu0,
                         self.mb, self.tcrit2, seed, accept, n_used, mean, se, self.perm,
                         self.swaps, self.cache, self.stamp, self.version, self.cache_theta)
        return accept, n_used, mean, se

    def mh_step(self, theta: np.ndarray, z: np.ndarray, sigma: float, log_u: np.ndarray,
                seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """A whole random-walk MH step with this test, compiled (:mod:`.rwmh_steps`): θ' = θ + σ z,
        the prior term, the threshold from log u, this test, the kept state.  theta, z (C, d)
        float64 C-contiguous; log_u (C,) -> (θ kept (C, d), accept (C,), data used (C,) = points
        read / N, NaN (C,) for the log-likelihood not computed); the same numbers as
        :func:`mh_decide` with this test."""
        C = theta.shape[0]
        post = self.post
        if self.block == 1:
            return rwmh_step_points(post.Xk, post.N, theta, z, sigma, log_u, post.precision,
                                    seed, self.m, self.tcrit2, self.perm, self.swaps)
        self._cache_for(C)
        return rwmh_step_blocks(self.shared_order, self.Xt, post.tile_width, post.N, self.block,
                                theta, z, sigma, log_u, post.precision, seed, self.mb,
                                self.tcrit2, self.perm, self.swaps, self.cache, self.stamp,
                                self.version, self.cache_theta)


def block_rows(N: int) -> np.ndarray:
    """The fixed permutation (N,) of the rows that the block test cuts into blocks: shuffled
    once, with a seed depending on N only, so every run (and every resume) sees the same
    blocks."""
    return np.random.default_rng([0x5EED_B10C, N]).permutation(N)


def mh_decide(post: LogisticPosterior, theta: np.ndarray, prop: np.ndarray, extra: np.ndarray,
              ll_cur: np.ndarray, u: np.ndarray, mb_seed: int, *, test: str,
              seqtest: CompiledSequentialTest | None, track_errors: bool):
    """The MH accept/reject decision for C chains.

    theta, prop (C, d); extra (C,) = log p(θ') - log p(θ) + log q(θ|θ') - log q(θ'|θ) (prior
    and proposal terms); ll_cur (C,) full-data log-likelihood at θ (needed by the exact test
    and by ``track_errors``; NaN otherwise); u (C,) uniforms; mb_seed seeds the minibatch
    orders of the sequential test ``seqtest`` (used iff test == "sequential").
    The rule: accept iff mean_i l_i > mu0 = (log u - extra) / N.

    Returns accept (C,) bool, data_used (C,) float, wrong (C,) bool or None, ll_new (C,) (the
    full-data log-likelihood at the kept state, NaN when not computed)."""
    N = post.N
    mu0 = (np.log(u) - extra) / N
    C = theta.shape[0]
    if test == "exact" or track_errors:
        ll_prop = post.loglik(prop)
        exact_acc = (ll_prop - ll_cur) / N > mu0
    if test == "exact":
        accept = exact_acc
        data_used = np.ones(C)
        wrong = np.zeros(C, dtype=bool) if track_errors else None
    else:
        accept, n_used, _, _ = seqtest(theta, prop, mu0, mb_seed)
        data_used = n_used / N
        wrong = (accept != exact_acc) if track_errors else None
    if test == "exact" or track_errors:
        ll_new = np.where(accept, ll_prop, ll_cur)
    else:
        ll_new = np.full(C, np.nan)
    return accept, data_used, wrong, ll_new


def points_read(data_used: np.ndarray, N: int) -> np.ndarray:
    """The data points an MH test read, (C,) float64, from its fraction ``data_used`` (C,)."""
    return np.rint(np.asarray(data_used, dtype=np.float64) * N)


def _init_state(post: LogisticPosterior, theta0: np.ndarray, need_ll: bool) -> dict:
    """Initial state {"theta": (C, d), "ll": (C,)}; the full-data log-likelihood is computed only
    when the exact test (or the wrong-decision side computation) needs it, NaN otherwise."""
    theta = theta0.copy()
    ll = post.loglik(theta) if need_ll else np.full(theta.shape[0], np.nan)
    return {"theta": theta, "ll": ll}


class RandomWalkMH:
    """Random-walk MH ``θ' = θ + σ ξ`` with the exact or the sequential (ε > 0) MH test.

    post : LogisticPosterior; chains : C; sigma : proposal std (paper 0.01); eps : tolerance of
    the sequential test; m : its minibatch size (paper 500); test : "auto" (exact iff eps == 0),
    "exact" or "sequential" (eps = 0 then reads all data through the sequential code path);
    track_errors : compute the 'wrong decision' flag (a full pass per step); init : (d,) or
    (C, d) initial θ (default zeros); block : rows per block of the sequential test's population
    (1: the paper's per-point test; see :class:`CompiledSequentialTest`); shared_order : one
    block order per step for all chains (see :class:`CompiledSequentialTest`)."""

    def __init__(self, post: LogisticPosterior, chains: int, sigma: float = 0.01, eps: float = 0.0,
                 m: int = 500, test: str = "auto", track_errors: bool = False, init=None,
                 block: int = BLOCK_DEFAULT, shared_order: bool = False):
        self.post, self.chains = post, int(chains)
        self.sigma, self.eps, self.m = float(sigma), float(eps), int(m)
        self.test = _resolve_test(test, self.eps)
        self.track_errors = bool(track_errors)
        self.theta0 = _init_theta(init, self.chains, post.d)
        self.seqtest = (CompiledSequentialTest(post, self.eps, self.m, block, shared_order)
                        if self.test == "sequential" else None)
        # one compiled call per step after the random numbers (not with track_errors, whose
        # side pass stays in Python); False runs the same step in numpy calls (the benchmark
        # times the test call alone that way)
        self.compiled_step = True
        if not self.track_errors:                      # load/compile that call now, untimed
            zero = np.zeros((1, post.d))
            self._compiled_step(zero, np.zeros(1), zero, np.ones(1), 0)

    def init(self, rng: np.random.Generator) -> dict:
        return _init_state(self.post, self.theta0, self.test == "exact" or self.track_errors)

    def step(self, state: dict, rng: np.random.Generator):
        theta, ll = state["theta"], state["ll"]
        C, d = theta.shape
        z = rng.standard_normal((C, d))
        u = rng.random(C)
        mb_seed = seed63(rng)
        if self.compiled_step and not self.track_errors:
            return self._compiled_step(theta, ll, z, u, mb_seed)
        prop = theta + self.sigma * z
        extra = self.post.log_prior_diff(prop, theta)   # the symmetric proposal cancels
        accept, used, wrong, ll_new = mh_decide(
            self.post, theta, prop, extra, ll, u, mb_seed, test=self.test,
            seqtest=self.seqtest, track_errors=self.track_errors)
        theta_new = np.where(accept[:, None], prop, theta)
        stats = {"accept": accept, "data_used": used, "points_read": points_read(used, self.post.N)}
        if wrong is not None:
            stats["wrong"] = wrong
        return {"theta": theta_new, "ll": ll_new}, {"samples": theta_new}, stats

    def _compiled_step(self, theta: np.ndarray, ll: np.ndarray, z: np.ndarray, u: np.ndarray,
                       mb_seed: int):
        """The step after its random numbers, in one compiled call (:mod:`.rwmh_steps`): the
        same numbers as the Python path above (tests/austerity/test_rwmh_steps.py)."""
        post = self.post
        theta = post.theta_2d(theta)                   # the width checked, as the numpy step does
        if theta.dtype != np.float64:                  # e.g. a float32 state from elsewhere
            theta = theta.astype(np.float64)
        log_u = np.log(u)
        if self.test == "exact":
            theta_new, accept, used, ll_new = rwmh_step_exact(
                post.Xt, post.tile_width, post.N, theta, z, self.sigma, log_u, post.precision,
                np.ascontiguousarray(ll, np.float64))
        else:
            theta_new, accept, used, ll_new = self.seqtest.mh_step(theta, z, self.sigma, log_u,
                                                                   mb_seed)
        return ({"theta": theta_new, "ll": ll_new}, {"samples": theta_new},
                {"accept": accept, "data_used": used, "points_read": points_read(used, post.N)})


def sgld_log_q_ratio(post: LogisticPosterior, theta: np.ndarray, prop: np.ndarray,
                     idx: np.ndarray, step_size: float, grad_theta: np.ndarray | None = None):
    """log q(θ|θ', X_n) - log q(θ'|θ, X_n) for the Langevin proposal with the *same* minibatch
    ``idx`` (C, n) (or (n,) shared, or None = all data) in both directions:
    q(θ'|θ, X_n) = N(θ'; θ + (α/2) g(θ, X_n), α I), g = (N/n) Σ ∇log p(x|θ) + ∇log p(θ).

    theta, prop (C, d) -> (C,)."""
    a = float(step_size)
    if grad_theta is None:
        grad_theta = post.grad_log_posterior(theta, idx)
    grad_prop = post.grad_log_posterior(prop, idx)
    fwd = prop - theta - 0.5 * a * grad_theta
    rev = theta - prop - 0.5 * a * grad_prop
    return (np.sum(fwd * fwd, axis=1) - np.sum(rev * rev, axis=1)) / (2.0 * a)


class SGLD:
    """Stochastic gradient Langevin dynamics, optionally corrected by an MH test.

    ``θ' = θ + (α/2) [ (N/n) Σ_{x∈X_n} ∇log p(x|θ) + ∇log p(θ) ] + η``,  ``η ~ N(0, α I)``,
    X_n a minibatch of ``batch`` points drawn without replacement (independently per chain).

    correction : "none" (plain SGLD, every proposal kept), "exact" (full-data MH test) or
    "sequential" (the approximate test with tolerance eps, minibatches of m); the MH ratio uses
    q(·|·, X_n) with the same minibatch both ways (paper §6.2), so every minibatch's kernel is
    reversible.  Other arguments (block) as :class:`RandomWalkMH`."""

    def __init__(self, post: LogisticPosterior, chains: int, step_size: float, batch: int = 500,
                 correction: str = "none", eps: float = 0.0, m: int = 500,
                 track_errors: bool = False, init=None, block: int = BLOCK_DEFAULT):
        if correction not in ("none", "exact", "sequential"):
            raise ValueError(f"correction must be none, exact or sequential, got {correction!r}")
        if correction != "sequential" and eps != 0:
            raise ValueError("eps applies to correction='sequential' only")
        if not 1 <= batch <= post.N:
            raise ValueError(f"batch must be in [1, N={post.N}], got {batch}")
        self.post, self.chains = post, int(chains)
        self.step_size, self.batch = float(step_size), int(batch)
        self.correction, self.eps, self.m = correction, float(eps), int(m)
        self.track_errors = bool(track_errors) and correction != "none"
        self.theta0 = _init_theta(init, self.chains, post.d)
        self.seqtest = (CompiledSequentialTest(post, self.eps, self.m, block)
                        if correction == "sequential" else None)
        self._perm = np.arange(post.N, dtype=np.int64)     # scratch of the minibatch draws
        self._swaps = np.empty(post.N, np.int64)

    def init(self, rng: np.random.Generator) -> dict:
        return _init_state(self.post, self.theta0,
                           self.correction == "exact" or self.track_errors)

    def _minibatch(self, rng: np.random.Generator) -> np.ndarray | None:
        """(C, batch) int64: each chain's minibatch, a simple random sample without replacement
        (:func:`.kernels.minibatch_rows`, seeded by one 64-bit draw of rng), or None for the
        full data (a deterministic kernel)."""
        if self.batch == self.post.N:
            return None
        return minibatch_rows(seed63(rng), self.chains, self.post.N, self.batch, self._perm,
                              self._swaps)

    def step(self, state: dict, rng: np.random.Generator):
        theta, ll = state["theta"], state["ll"]
        C, d = theta.shape
        a = self.step_size
        idx = self._minibatch(rng)
        noise = rng.standard_normal((C, d))
        u = rng.random(C)
        mb_seed = seed63(rng)
        g = self.post.grad_log_posterior(theta, idx)
        prop = theta + 0.5 * a * g + np.sqrt(a) * noise
        grad_points = self.batch if idx is not None else self.post.N   # per gradient
        if self.correction == "none":
            stats = {"accept": np.ones(C, dtype=bool), "data_used": np.zeros(C),
                     "points_read": np.full(C, float(grad_points))}
            return {"theta": prop, "ll": ll}, {"samples": prop}, stats
        extra = (self.post.log_prior_diff(prop, theta)
                 + sgld_log_q_ratio(self.post, theta, prop, idx, a, grad_theta=g))
        test = "exact" if self.correction == "exact" else "sequential"
        accept, used, wrong, ll_new = mh_decide(
            self.post, theta, prop, extra, ll, u, mb_seed, test=test, seqtest=self.seqtest,
            track_errors=self.track_errors)
        theta_new = np.where(accept[:, None], prop, theta)
        # gradients at θ and θ' on the minibatch (the proposal and its reverse), then the test
        stats = {"accept": accept, "data_used": used,
                 "points_read": 2.0 * grad_points + points_read(used, self.post.N)}
        if wrong is not None:
            stats["wrong"] = wrong
        return {"theta": theta_new, "ll": ll_new}, {"samples": theta_new}, stats


# ------------------------------------------------------------------------------------------------
# Registration of the built-in samplers (mixlab.plugins.registry.sampler); the classes above and in
# .mrf are the algorithms, the factories below are what a spec's ``{method: NAME, ...}`` builds.
#
# logistic family: ``target`` is a :class:`mixlab.austerity.target_logistic.LogisticTarget`
# (``posterior``: LogisticPosterior, ``theta0`` (chains, d): the start the spec's ``init`` chose).
# mrf family: ``target`` is a :class:`mixlab.austerity.mrf.DenseMRF`.
# A parameter whose default is null takes the experiment's top-level key of the same name (the
# spec's ``sigma``, ``m``, ``step_size``, ``batch``, ``minibatch``); see series.py.

from ..errors import SpecError  # noqa: E402
from ..plugins.registry import sampler as _register  # noqa: E402
from ..spec.schema import Param  # noqa: E402
from .hmc import HMC  # noqa: E402
from .limits import MINIBATCH_MAX  # noqa: E402
from .mrf import ApproxGibbs, ExactGibbs  # noqa: E402


def _need(params: dict, key: str):
    """The value of a shared parameter, or a SpecError naming the key when nothing set it."""
    value = params.get(key)
    if value is None:
        raise SpecError(f"this sampler ({params.get('method')}) needs '{key}': set it in its "
                        f"entry (the experiment has no top-level '{key}' to lend it)", key)
    return value


def _batch(target, params: dict) -> int:
    batch, N = _need(params, "batch"), target.posterior.N
    if batch > N:
        raise SpecError(f"must be <= N = {N}, the number of training points", "batch")
    return batch


_EPS = Param(0.0, float, lo=0, hi=0.5, help="tolerance of the sequential MH test; 0 = the exact "
                                             "test over all N data points")
_M = Param(None, int, lo=2, hi=MINIBATCH_MAX, nullable=True,
           help="minibatch of the sequential test (null: the spec's top-level m)")
_STEP = Param(None, float, lo=0, lo_open=True, nullable=True,
              help="SGLD step size α (null: the spec's top-level step_size)")
_BATCH = Param(None, int, lo=1, hi=MINIBATCH_MAX, nullable=True,
               help="SGLD gradient minibatch (null: the spec's top-level batch)")
_TRACK = Param(False, bool, help="also compute the exact decision with the same u (stat "
                                 "'wrong'; a full data pass per step, slows the sampler)")
_BLOCK = Param(None, int, lo=1, hi=MINIBATCH_MAX, nullable=True,
               help="rows (pair terms) per block of the sequential test's population; 1: the "
                    "paper's per-point test (null: the spec's top-level test_block, else 1); "
                    "logistic regression keeps each block in whole tiles of 32 rows, so a "
                    "multiple of 32 wastes no memory and b < 32 takes 32/b times the data's")


def _block(params: dict) -> int:
    return int(params.get("test_block") or 1)


@_register("logistic", "rw_mh", params={
    "sigma": Param(None, float, lo=0, lo_open=True, nullable=True,
                   help="random-walk proposal std (null: the spec's top-level sigma)"),
    "eps": _EPS, "m": _M, "track_errors": _TRACK, "test_block": _BLOCK},
    help="random-walk MH, θ' = θ + σξ, with the exact (eps = 0) or the sequential MH test")
def _rw_mh(target, params: dict, chains: int) -> RandomWalkMH:
    return RandomWalkMH(target.posterior, chains, sigma=_need(params, "sigma"),
                        eps=params["eps"], m=_need(params, "m") if params["eps"] > 0 else 500,
                        track_errors=params["track_errors"], init=target.theta0,
                        block=_block(params))


@_register("logistic", "sgld", params={"step_size": _STEP, "batch": _BATCH},
           help="stochastic gradient Langevin dynamics, every proposal kept")
def _sgld(target, params: dict, chains: int) -> SGLD:
    return SGLD(target.posterior, chains, _need(params, "step_size"),
                batch=_batch(target, params), correction="none", init=target.theta0, block=1)


@_register("logistic", "sgld_mh", params={"step_size": _STEP, "batch": _BATCH, "eps": _EPS,
                                          "m": _M, "track_errors": _TRACK, "test_block": _BLOCK},
           help="SGLD proposals corrected by the exact (eps = 0) or the sequential MH test")
def _sgld_mh(target, params: dict, chains: int) -> SGLD:
    eps = params["eps"]
    return SGLD(target.posterior, chains, _need(params, "step_size"), batch=_batch(target, params),
                correction="sequential" if eps > 0 else "exact", eps=eps,
                m=_need(params, "m") if eps > 0 else 500,
                track_errors=params["track_errors"], init=target.theta0, block=_block(params))


@_register("logistic", "hmc", params={
    "leapfrog_step": Param(0.4, float, lo=0, lo_open=True,
                           help="leapfrog step (in Laplace-whitened units with mass: laplace)"),
    "n_leapfrog": Param(10, int, lo=1, hi=10_000, help="leapfrog steps per HMC step"),
    "mass": Param("laplace", str, choices=("laplace", "identity"),
                  help="mass matrix: the Laplace precision at the mode, or the identity")},
    help="Hamiltonian Monte Carlo with full-data gradients (the ground truth's sampler)")
def _hmc(target, params: dict, chains: int) -> HMC:
    post = target.posterior

    def logp_grad(th):
        return post.log_posterior(th), post.grad_log_posterior(th)

    mass = target.laplace()[1] if params["mass"] == "laplace" else None
    return HMC(logp_grad, chains, target.theta0, params["leapfrog_step"], params["n_leapfrog"],
               mass=mass, grad=post.grad_log_posterior, points_per_gradient=post.N)


_MRF_TRACK = Param(False, bool, help="also emit p_exact (and, approx, exact_decision) per "
                                     "update (the calibration experiment sets it)")


@_register("mrf", "exact", params={"track": _MRF_TRACK},
           help="exact systematic-scan Gibbs, the conditional by the quadratic form")
def _gibbs_exact(model, params: dict, chains: int) -> ExactGibbs:
    return ExactGibbs(model, chains, impl="quadratic", track=params["track"])


@_register("mrf", "exact_lookup", params={"track": _MRF_TRACK},
           help="exact Gibbs summing the N pair-table terms per update (the paper's cost model)")
def _gibbs_lookup(model, params: dict, chains: int) -> ExactGibbs:
    return ExactGibbs(model, chains, impl="lookup", track=params["track"])


@_register("mrf", "approx", params={
    "eps": Param(0.0, float, lo=0, hi=1, hi_open=True, help="tolerance of the sequential test"),
    "minibatch": Param(None, int, lo=1, hi=MINIBATCH_MAX, nullable=True,
                       help="pairs of potentials per minibatch (null: the spec's minibatch)"),
    "track": _MRF_TRACK, "test_block": _BLOCK},
    help="approximate Gibbs (paper §5): each conditional decided by the sequential test")
def _gibbs_approx(model, params: dict, chains: int) -> ApproxGibbs:
    return ApproxGibbs(model, chains, eps=params["eps"], m=_need(params, "minibatch"),
                       track=params["track"], block=_block(params))
