"""The MRF and RBM calibration sets against exact distributions on models small enough to
enumerate (a 6-variable triplet MRF, an RBM with 6 visible and 4 hidden units): each correct
variant samples p, each wrong one samples its own model, which is far from p."""

import numpy as np
import pytest

from mixlab.austerity.mrf import enumerate_joint, make_mrf
from mixlab.league.calibration import mrf as cal_mrf
from mixlab.league.calibration import rbm as cal_rbm
from mixlab.plugins import registry
from mixlab.rbm.target import RBMTarget

TV_MAX = 0.03        # i.i.d. noise for 2e5 draws over 64 states is about 0.007
CODES = 1 << np.arange(6)


def _build(family, entry, target, chains):
    kind = registry.samplers_for(family)[entry["method"]]
    return kind.factory(target, {k: v for k, v in entry.items() if k != "method"}, chains)


def _freq(sampler, rng, burn=100, steps=500):
    st = sampler.init(rng)
    counts = np.zeros(64)
    for t in range(burn + steps):
        st, d, stats = sampler.step(st, rng)
        if t >= burn:
            counts += np.bincount(d["samples"].astype(np.int64) @ CODES, minlength=64)
    return counts / counts.sum()


def _tv(p, q):
    return 0.5 * float(np.abs(p - q).sum())


# -- MRF ------------------------------------------------------------------------------------------

def _mrf():
    return make_mrf(6, 0.6, "std", np.random.default_rng(5))


def _mrf_joint(model):
    states, probs = enumerate_joint(model)
    p = np.zeros(64)
    p[states.astype(np.int64) @ CODES] = probs
    return p


@pytest.mark.parametrize("label", ["random_scan", "partial_sweep"])
def test_mrf_correct_variants_sample_p(label):
    model = _mrf()
    q = _freq(_build("mrf", cal_mrf.SET[label][0], model, 400), np.random.default_rng(1))
    assert _tv(_mrf_joint(model), q) < TV_MAX


@pytest.mark.parametrize("label,wrong", [
    ("gibbs_beta0.6", lambda m: cal_mrf.tempered(m, 0.6)),
    ("sign_error", lambda m: cal_mrf.tempered(m, -1.0)),
    ("dropped_term", cal_mrf.dropped_term)])
def test_mrf_wrong_variants_sample_their_model_not_p(label, wrong):
    model = _mrf()
    p, pw = _mrf_joint(model), _mrf_joint(wrong(model))
    assert _tv(p, pw) > 2 * TV_MAX
    q = _freq(_build("mrf", cal_mrf.SET[label][0], model, 400), np.random.default_rng(2))
    assert _tv(pw, q) < TV_MAX and _tv(p, q) > TV_MAX


# -- RBM ------------------------------------------------------------------------------------------

def _rbm():
    rng = np.random.default_rng(3)
    W = rng.normal(0, 1.0, (6, 4)).astype(np.float32)
    W[:, -1] = [2, -2, 2, -2, 2, -2]    # the hidden unit the dropped-hidden sampler drops
    b = rng.normal(0, 0.5, 6).astype(np.float32)
    c = rng.normal(0, 0.5, 4).astype(np.float32)
    return RBMTarget(W, b, c, train_X=None, init="noise", emit="binary")


def _rbm_joint(t):
    v = ((np.arange(64)[:, None] >> np.arange(6)) & 1).astype(np.float64)
    logp = v @ t.b.astype(np.float64) + np.logaddexp(
        0, v @ t.W.astype(np.float64) + t.c.astype(np.float64)).sum(axis=1)
    p = np.exp(logp - logp.max())
    return p / p.sum()


def test_rbm_partial_visible_samples_p():
    t = _rbm()
    q = _freq(_build("rbm", cal_rbm.SET["partial_visible"][0], t, 400),
              np.random.default_rng(4))
    assert _tv(_rbm_joint(t), q) < TV_MAX


@pytest.mark.parametrize("label,wrong", [
    ("gibbs_beta0.6", lambda t: cal_rbm.tempered(t, 0.6)),
    ("bias_sign", cal_rbm.bias_flipped), ("dropped_hidden", cal_rbm.dropped_hidden)])
def test_rbm_wrong_variants_sample_their_model_not_p(label, wrong):
    t = _rbm()
    p, pw = _rbm_joint(t), _rbm_joint(wrong(t))
    assert _tv(p, pw) > 2 * TV_MAX
    q = _freq(_build("rbm", cal_rbm.SET[label][0], t, 400), np.random.default_rng(5))
    assert _tv(pw, q) < TV_MAX and _tv(p, q) > TV_MAX


def test_every_family_set_declares_what_each_sampler_is():
    from mixlab.league import calibration

    for fam in calibration.families():
        mod = calibration.load(fam)
        words = [w for _, w in mod.SET.values()]
        assert set(words) == {"correct", "wrong"}, fam
        for label, (entry, word) in mod.SET.items():
            assert calibration.expected(fam, label, entry) == word
        assert calibration.expected(fam, "x", mod.power_entry(0.9)) == "wrong"
