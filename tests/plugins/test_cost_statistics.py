"""Every built-in sampler reports its family's cost statistic (mixlab.plugins.families), with the value
the family's definition gives for that sampler's step."""

import numpy as np
import pytest

from mixlab.austerity.logistic import LogisticPosterior
from mixlab.austerity.mrf import make_mrf
from mixlab.austerity.target_logistic import LogisticTarget
from mixlab.plugins import registry
from mixlab.plugins.families import FAMILY_INFO, cost_statistic
from mixlab.rbm.target import RBMTarget
from mixlab.spinglass.model import random_spin_glass
from mixlab.spinglass.target import SpinGlassTarget

C = 3


def defaults(kind, **over) -> dict:
    params = {k: getattr(p, "default", None) for k, p in kind.params.items()}
    params.update(over)
    return params


def rbm_target():
    rng = np.random.default_rng(1)
    V, H = 6, 4
    X = (rng.random((20, V)) < 0.5).astype(np.float32)
    return RBMTarget(rng.normal(0, 1, (V, H)), rng.normal(0, 1, V), rng.normal(0, 1, H),
                     train_X=X), V + H


def logistic_target():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 2))
    y = (rng.random(200) < 0.5).astype(int)
    post = LogisticPosterior(X, y)
    return LogisticTarget(post, np.zeros((C, post.d))), post.N


def one_step(kind, target, params):
    s = kind.factory(target, params, C)
    rng = np.random.default_rng(0)
    _, draws, stats = s.step(s.init(rng), rng)
    return draws, stats


def test_each_family_declares_one_cost_statistic():
    # mixlab's own families (a plugin imported by another test may have added one)
    assert {f: cost_statistic(f) for f in registry.BUILTIN_FAMILIES} == {
        "rbm": "site_updates", "spinglass": "site_updates", "logistic": "points_read",
        "mrf": "pair_terms_read"}
    assert set(FAMILY_INFO) == set(registry.BUILTIN_FAMILIES) <= set(registry.FAMILIES)
    assert registry.family_info("mrf").cost == "pair_terms_read"


@pytest.mark.parametrize("name,params,per_step", [
    ("gibbs", {"k": 2}, 2), ("rates-fpcd", {"eps_f": 0.05, "alpha": 0.9, "k": 3}, 3),
    ("sample-penalization", {"eps_f": 0.05, "alpha": 0.5, "k": 1}, 1)])
def test_rbm_samplers_count_k_sweeps_of_all_units(name, params, per_step):
    target, units = rbm_target()
    kind = registry.samplers_for("rbm")[name]
    _, stats = one_step(kind, target, defaults(kind, **params))
    np.testing.assert_array_equal(stats["site_updates"], np.full(C, per_step * units))


def test_rbm_herding_counts_its_rounds():
    target, units = rbm_target()
    kind = registry.samplers_for("rbm")["rates-herding"]
    _, stats = one_step(kind, target, defaults(kind, eps_f=0.05, alpha=1.0, k=10))
    np.testing.assert_array_equal(stats["site_updates"], stats["rounds"] * units)


@pytest.mark.parametrize("name", ["gibbs", "metropolis", "swendsen_wang", "local", "pairwise"])
def test_spinglass_samplers_count_one_update_per_site(name):
    model = random_spin_glass(3, 4, rng=np.random.default_rng(0))
    kind = registry.samplers_for("spinglass")[name]
    _, stats = one_step(kind, SpinGlassTarget.of(model), defaults(kind))
    np.testing.assert_array_equal(stats["site_updates"], np.full(C, 12.0))


@pytest.mark.parametrize("replicas", [1, 5])
def test_replica_exchange_counts_every_replica(replicas):
    model = random_spin_glass(3, 4, rng=np.random.default_rng(0))
    kind = registry.samplers_for("spinglass")["parallel_tempering"]
    _, stats = one_step(kind, SpinGlassTarget.of(model), defaults(kind, replicas=replicas))
    np.testing.assert_array_equal(stats["site_updates"], np.full(C, 12.0 * replicas))


def test_logistic_samplers_count_the_points_they_read():
    target, N = logistic_target()
    kinds = registry.samplers_for("logistic")
    _, st = one_step(kinds["rw_mh"], target, defaults(kinds["rw_mh"], sigma=0.1))
    np.testing.assert_array_equal(st["points_read"], np.full(C, N))          # exact test
    _, st = one_step(kinds["rw_mh"], target, defaults(kinds["rw_mh"], sigma=0.1, eps=0.2, m=20))
    np.testing.assert_array_equal(st["points_read"], np.rint(st["data_used"] * N))
    assert (st["points_read"] >= 20).all() and (st["points_read"] <= N).all()
    _, st = one_step(kinds["sgld"], target, defaults(kinds["sgld"], step_size=1e-3, batch=10))
    np.testing.assert_array_equal(st["points_read"], np.full(C, 10))
    _, st = one_step(kinds["sgld_mh"], target,
                     defaults(kinds["sgld_mh"], step_size=1e-3, batch=10))
    np.testing.assert_array_equal(st["points_read"], np.full(C, 2 * 10 + N))
    _, st = one_step(kinds["hmc"], target, defaults(kinds["hmc"], n_leapfrog=7, mass="identity"))
    np.testing.assert_array_equal(st["points_read"], np.full(C, 7 * N))


def test_mrf_samplers_count_the_pair_terms_they_read():
    model = make_mrf(D=6, s=0.7, rng=np.random.default_rng(3))
    kinds = registry.samplers_for("mrf")
    for name in ("exact", "exact_lookup"):
        _, st = one_step(kinds[name], model, defaults(kinds[name]))
        np.testing.assert_array_equal(st["pair_terms_read"], np.full(C, model.D * model.N))
    _, st = one_step(kinds["approx"], model, defaults(kinds["approx"], eps=0.1, minibatch=2))
    np.testing.assert_allclose(st["pair_terms_read"], st["data_used"] * model.N * model.D)
    assert (st["pair_terms_read"] < model.D * model.N).any()
