"""Each example plugin sampler against an exact distribution on an enumerable model.

Thresholds: the statistic of a correct sampler with these budgets (seeded) is several times
below the threshold; a broken variant (noted per test) is several times above it."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "plugin" / "src"))

from mixlab_example_samplers.logistic_mala import MALA  # noqa: E402
from mixlab_example_samplers.mrf_blocked import BlockedGibbs  # noqa: E402
from mixlab_example_samplers.rbm_tempering import ParallelTemperingGibbs  # noqa: E402
from mixlab_example_samplers.spinglass_houdayer import HoudayerGibbs  # noqa: E402

from mixlab.austerity.logistic import LogisticPosterior  # noqa: E402
from mixlab.austerity.mrf import enumerate_joint, make_mrf  # noqa: E402
from mixlab.plugins.contract import check_step_output  # noqa: E402
from mixlab.spinglass.exact import all_configurations  # noqa: E402
from mixlab.spinglass.model import SpinGlass  # noqa: E402


def tv(p, q):
    return 0.5 * np.abs(np.asarray(p) - np.asarray(q)).sum()


def codes(bits):
    """(n, k) 0/1 -> (n,) integers, bit j = column j."""
    bits = np.asarray(bits).reshape(len(bits), -1).astype(np.int64)
    return (bits << np.arange(bits.shape[1])).sum(axis=1)


def histogram(sampler, n_states, steps=80, burn=10, key="samples", seed=0):
    rng = np.random.default_rng(seed)
    state = sampler.init(rng)
    counts = np.zeros(n_states)
    for t in range(steps):
        out = sampler.step(state, rng)
        if t == 0:
            check_step_output(sampler, out, "test")
        state, draws, _ = out
        if t >= burn:
            counts += np.bincount(codes(draws[key] > 0), minlength=n_states)
    return counts / counts.sum()


# -- RBM: parallel tempering ----------------------------------------------------------------------

def small_rbm(scale=1.0, seed=1):
    rng = np.random.default_rng(seed)
    W = scale * rng.normal(0, 1.5, (6, 4))
    b, c = rng.normal(0, 1, 6), rng.normal(0, 1, 4)
    S = ((np.arange(64)[:, None] >> np.arange(6)) & 1).astype(float)
    lp = S @ (b) + np.logaddexp(0, S @ W + c).sum(1)
    P = np.exp(lp - lp.max())
    return W, b, c, P / P.sum()


TV_RBM = 0.01  # 140k correlated draws over 64 states: a correct sampler gives ~0.004


@pytest.mark.parametrize("replicas,beta_min", [(2, 0.5), (4, 0.3)])
def test_pt_gibbs_matches_exact_rbm(replicas, beta_min):
    W, b, c, P = small_rbm()
    s = ParallelTemperingGibbs(W, b, c, 2000, replicas=replicas, beta_min=beta_min)
    q = histogram(s, 64)
    assert tv(q, P) < TV_RBM
    # power: the same histogram is far from an RBM whose weights differ by 15%
    assert tv(q, small_rbm(scale=1.15)[3]) > 2 * TV_RBM


def test_pt_gibbs_swaps_without_acceptance_fail():
    """Broken variant: every swap accepted (the hot replicas leak into replica 0)."""
    W, b, c, P = small_rbm()
    s = ParallelTemperingGibbs(W, b, c, 2000, replicas=4, beta_min=0.05)
    s._log_marginal = lambda x, beta: np.zeros(x.shape[:-1])
    assert tv(histogram(s, 64), P) > 2.5 * TV_RBM   # measured 0.029


# -- spin glass: Houdayer --------------------------------------------------------------------------

def mixed_glass(R, C, seed=1):
    rng = np.random.default_rng(seed)
    return SpinGlass(rng.normal(0, 1, (R, C)), rng.normal(0, 1.5, (R, C - 1)),
                     rng.normal(0, 1.5, (R - 1, C)))


def exact(model):
    X = all_configurations(model.n).reshape(-1, model.rows, model.cols)
    s = model.score(X)
    P = np.exp(s - s.max())
    return X, P / P.sum()


def test_houdayer_matches_exact_mixed_couplings():
    m = mixed_glass(3, 3)
    _, P = exact(m)
    q = histogram(HoudayerGibbs(m.field, m.right, m.down, 1000), 512, steps=110)
    assert tv(q, P) < 0.035   # 100k correlated draws over 512 states: a correct one ~0.016


class FlipOneReplica(HoudayerGibbs):
    """Broken: the cluster is flipped in replica 1 only."""

    def _houdayer(self, x, rng):
        y = x.copy()
        size = super()._houdayer(y, rng)
        x[0] = y[0]
        return size


@pytest.mark.parametrize("cls,ok", [(HoudayerGibbs, True), (FlipOneReplica, False)])
def test_houdayer_move_leaves_the_pair_law_invariant(cls, ok):
    """From exact i.i.d. pairs (x¹, x²) ~ p ⊗ p, one cluster move alone must give p ⊗ p again
    (4096 joint states, 400k pairs: a correct move gives TV ~0.006)."""
    m = mixed_glass(2, 3, seed=2)
    X, P = exact(m)
    n = 400_000
    rng = np.random.default_rng(5)
    x = np.stack([X[rng.choice(64, n, p=P)], X[rng.choice(64, n, p=P)]]).astype(np.float32)
    s = cls(m.field, m.right, m.down, n)
    size = s._houdayer(x, rng)
    assert size.mean() > 0.5          # the move does something
    joint = np.bincount(codes(x[0] > 0) * 64 + codes(x[1] > 0), minlength=4096) / n
    assert (tv(joint, np.outer(P, P).ravel()) < 0.02) == ok


# -- logistic posterior: MALA ---------------------------------------------------------------------

def one_d_posterior():
    rng = np.random.default_rng(1)
    X = rng.normal(0, 1, (30, 1)).astype(np.float32)
    y = (rng.random(30) < 1 / (1 + np.exp(-1.5 * X[:, 0]))).astype(np.int64)
    post = LogisticPosterior(X, y, precision=1.0, bias=False)
    edges = np.linspace(-1.5, 5.5, 41)
    fine = np.linspace(-4, 8, 120_001)
    lp = post.log_posterior(fine[:, None])
    dens = np.exp(lp - lp.max())
    cdf = np.concatenate([[0], np.cumsum((dens[1:] + dens[:-1]) / 2)])
    cdf /= cdf[-1]
    probs = np.diff(np.interp(np.concatenate([[-4], edges, [8]]), fine, cdf))
    return post, edges, probs


def mala_tv(sampler_cls=None, step=1.2, chol=None):
    post, edges, probs = one_d_posterior()
    cls = sampler_cls or MALA
    s = cls(lambda th: (post.log_posterior(th), post.grad_log_posterior(th)),
            np.zeros((1000, 1)), step, 1000, chol)
    rng = np.random.default_rng(0)
    state = s.init(rng)
    xs = []
    for t in range(250):
        state, draws, _ = s.step(state, rng)
        if t >= 50:
            xs.append(draws["samples"][:, 0])
    xs = np.concatenate(xs)
    q = np.bincount(np.searchsorted(edges, xs), minlength=len(probs)) / len(xs)
    return tv(q, probs)


@pytest.mark.parametrize("chol", [None, np.array([[0.6]])])
def test_mala_matches_quadrature(chol):
    assert mala_tv(chol=chol) < 0.012   # 200k correlated draws, 42 bins: correct ~0.004


class MALAWithoutCorrection(MALA):
    """Broken: the proposal densities are left out of the acceptance ratio."""

    def _log_q(self, to, frm, grad_frm):
        return np.zeros(len(to))


def test_mala_without_proposal_correction_fails():
    assert mala_tv(MALAWithoutCorrection, step=1.6) > 0.024


# -- dense triplet MRF: blocked Gibbs ---------------------------------------------------------------

@pytest.mark.parametrize("block", [1, 2, 3, 4])
def test_blocked_gibbs_matches_exact_mrf(block):
    m = make_mrf(D=6, s=0.7, rng=np.random.default_rng(3))
    _, P = enumerate_joint(m)
    q = histogram(BlockedGibbs(m.h, m.Q, 2000, block=block), 64)
    assert tv(q, P) < 0.015          # 140k correlated draws over 64 states: correct ~0.004
    other = make_mrf(D=6, s=0.7, rng=np.random.default_rng(4))
    assert tv(q, enumerate_joint(other)[1]) > 0.05


def test_blocked_gibbs_without_triple_terms_fails():
    """Broken: the block's third-order coefficient J_ijk is dropped."""
    m = make_mrf(D=6, s=1.0, rng=np.random.default_rng(3))
    _, P = enumerate_joint(m)
    s = BlockedGibbs(m.h, m.Q, 2000, block=3)
    for key, (E, pairs, EP, ET, QB, J3) in s.tables.items():
        s.tables[key] = (E, pairs, EP, ET, QB, 0 * J3)
    assert tv(histogram(s, 64), P) > 0.05
