"""The compiled random-walk MH step (mixlab/austerity/rwmh_steps.py) is the step the numpy calls
make, bit for bit: same proposals, same decisions, same points read, same kept states, for every
test (exact, per-point, blocks, blocks with one order) and for one and several chains."""

import numpy as np
import pytest

from mixlab.austerity.logistic import LogisticPosterior
from mixlab.austerity.samplers import RandomWalkMH, seed63


def synthetic(N, d0, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, d0)).astype(np.float32)
    w = rng.normal(0, 1.0, d0)
    y = (rng.random(N) < 1 / (1 + np.exp(-(X @ w)))).astype(int)
    return X, y


def chain(sampler, steps, seed):
    rng = np.random.default_rng(seed)
    st = sampler.init(rng)
    out = []
    for _ in range(steps):
        st, draws, stats = sampler.step(st, rng)
        out.append((draws["samples"], stats["accept"], stats["data_used"], st["ll"]))
    return out


@pytest.mark.parametrize("kw", [{"eps": 0.0}, {"eps": 0.05, "block": 1},
                                {"eps": 0.05, "block": 16},
                                {"eps": 0.05, "block": 16, "shared_order": True}])
@pytest.mark.parametrize("chains", [1, 3])
def test_compiled_step_is_the_numpy_step_bit_for_bit(kw, chains):
    X, y = synthetic(2000, 4, 0)
    post = LogisticPosterior(X, y, precision=10.0)
    args = {"chains": chains, "sigma": 0.05, "m": 100, **kw}
    fast = RandomWalkMH(post, **args)
    slow = RandomWalkMH(post, **args)
    slow.compiled_step = False
    a, b = chain(fast, 300, 1), chain(slow, 300, 1)
    for (ta, aa, ua, la), (tb, ab, ub, lb) in zip(a, b):
        assert ta.dtype == tb.dtype == np.float64 and ta.flags.c_contiguous
        assert np.array_equal(ta, tb) and np.array_equal(aa, ab)
        assert np.array_equal(ua, ub) and np.array_equal(la, lb, equal_nan=True)
    accepts = np.array([s[1] for s in a])
    assert 0.1 < accepts.mean() < 0.95                   # a real mix of decisions
    if kw["eps"] > 0:
        assert np.mean([s[2] for s in a]) < 0.9          # the test stopped early


def test_compiled_step_takes_a_state_of_another_layout():
    """A state restored from elsewhere (float32, or a strided view) steps as its float64 copy."""
    X, y = synthetic(500, 3, 1)
    post = LogisticPosterior(X, y, precision=10.0)
    s = RandomWalkMH(post, 2, sigma=0.05, eps=0.05, m=50, block=8)
    theta = np.asfortranarray(np.random.default_rng(2).normal(0, 0.3, (2, post.d)))
    st1, _, _ = s.step({"theta": theta, "ll": np.full(2, np.nan)}, np.random.default_rng(3))
    st2, _, _ = s.step({"theta": np.ascontiguousarray(theta), "ll": np.full(2, np.nan)},
                       np.random.default_rng(3))
    assert np.array_equal(st1["theta"], st2["theta"])


def test_seed63_is_numpys_integers_draw():
    """The minibatch seed is the draw every earlier version made, int(rng.integers(0, 2**63)),
    interleaved with the step's other draws (so runs keep their streams)."""
    for seed in range(50):
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        for _ in range(20):
            assert np.array_equal(a.standard_normal((2, 3)), b.standard_normal((2, 3)))
            assert np.array_equal(a.random(2), b.random(2))
            assert seed63(a) == int(b.integers(0, 2 ** 63))


@pytest.mark.parametrize("kw", [{"eps": 0.0}, {"eps": 0.05, "block": 8}])
def test_compiled_step_refuses_a_state_of_the_wrong_width(kw):
    """A θ of the wrong width is refused with the numpy step's message, not stepped on a
    truncated or zero-padded copy (the kernels pad θ to the tile width)."""
    X, y = synthetic(500, 3, 1)
    post = LogisticPosterior(X, y, precision=10.0)
    for compiled in (True, False):
        s = RandomWalkMH(post, 2, sigma=0.05, m=50, **kw)
        s.compiled_step = compiled
        with pytest.raises(ValueError, match=r"theta must be \(C, 4\), got shape \(2, 7\)"):
            s.step({"theta": np.zeros((2, 7)), "ll": np.zeros(2)}, np.random.default_rng(1))
