"""The austerity experiments find their samplers in the registry: the built-in ones are
registered like a plugin's, and a sampler registered by anyone appears as one more series of
Figs 3-6 and 8 under the same budget."""

from pathlib import Path

import numpy as np
import pytest

from mixlab.errors import DataError, SpecError
from mixlab.plotting import render
from mixlab.plugins import registry
from mixlab.run.context import execute
from mixlab.runfile.store import RunReader
from mixlab.spec.resolver import load_spec

SPECS = Path(__file__).resolve().parents[2] / "experiments" / "austerity"
HMC_TINY = ["hmc.chains=2", "hmc.burn_in=20", "hmc.samples=100", "hmc.keep=100"]


class _Frozen:
    """A 'sampler' that never moves: the draws are the start, every step (no stats at all)."""

    def __init__(self, start: np.ndarray):
        self.start = np.array(start)
        self.chains = self.start.shape[0]

    def init(self, rng):
        return {"x": self.start.copy()}

    def step(self, state, rng):
        return state, {"samples": state["x"].copy()}, {}


@registry.sampler("logistic", "test_frozen", params={})
def _frozen_logistic(target, params, chains):
    return _Frozen(target.theta0)


@registry.sampler("mrf", "test_frozen", params={})
def _frozen_mrf(model, params, chains):
    return _Frozen(np.zeros((chains, model.D), bool))


def test_builtins_are_registered():
    assert {"rw_mh", "sgld", "sgld_mh", "hmc"} <= set(registry.samplers_for("logistic"))
    assert {"exact", "exact_lookup", "approx"} <= set(registry.samplers_for("mrf"))
    kind = registry.get_sampler("logistic", "rw_mh")
    assert kind.module == "mixlab.austerity.samplers" and "eps" in kind.params


def _need(name):
    from mixlab.data import load
    try:
        load(name)
    except DataError as exc:
        pytest.skip(f"data set {name} not available: {exc}")


def test_fig3_plugin_is_one_more_series(tmp_path):
    _need("mnist-5k")
    spec = load_spec(SPECS / "fig3.yaml", overrides=[
        "data.name=mnist-5k", "eps=[0.1]", "chains=2", "m=100", "seconds=0.15",
        "samplers={frozen: {method: test_frozen}, hmc: {method: hmc, n_leapfrog: 3}}"]
        + HMC_TINY)
    run_dir, _ = execute(spec, tmp_path / "f3", quiet=True, render=False)
    with RunReader(run_dir) as run:
        risk = run.metrics()["risk"]
        res = run.results()
        assert set(risk) == {"eps=0.1", "frozen", "hmc"}
        for lab in risk:                                    # the same wall-clock budget each
            assert 0.15 <= res[f"{lab}/seconds"] < 5 and res[f"{lab}/samples"] > 0
        # a chain that never leaves theta = 0 predicts 1/2 everywhere: its risk is exact
        truth = run.stage("hmc_truth")["pred"]
        assert np.allclose(risk["frozen"]["y"], np.mean((0.5 - truth) ** 2), rtol=1e-6)
        assert np.isnan(res["frozen/accept"]) and res["hmc/accept"] > 0
        assert res["best_eps"] == 0.1                    # among the RW-MH series only
        assert render(run, "austerity.fig3", tmp_path / "f3.png").stat().st_size > 0


def test_fig8_plugin_is_one_more_series(tmp_path):
    spec = load_spec(SPECS / "fig8.yaml", overrides=[
        "model.D=8", "minibatch=5", "chains=2", "subsets.M=10", "truth.chains=4",
        "truth.sweeps=200", "truth.burn_in=10", "truth.cache_dir=null", "budget.seconds=null",
        "budget.sweeps=50", "points=5", "block=16",
        "samplers={exact: {method: exact}, frozen: {method: test_frozen}}"])
    run_dir, _ = execute(spec, tmp_path / "f8", quiet=True)
    with RunReader(run_dir) as run:
        res = run.results()
        assert res["sweeps_in_budget/frozen"] == res["sweeps_in_budget/exact"] == 50
        # no data_used statistic: charged a full sweep of pair terms
        assert run.metrics()["joint_l1_vs_terms"]["frozen"]["x"][-1] == 50 * 8 * 21
        assert res["final_l1/frozen"] > res["final_l1/exact"]
    assert (run_dir / "figures" / "austerity.fig8.png").stat().st_size > 0


def test_bad_sampler_entries_are_spec_errors(tmp_path):
    base = SPECS / "fig8.yaml"
    with pytest.raises(SpecError, match="samplers.a.method"):
        load_spec(base, overrides=["samplers={a: {method: gibs}}"])
    with pytest.raises(SpecError, match="samplers.a.eps"):
        load_spec(base, overrides=["samplers={a: {method: exact, eps: 0.1}}"])
    spec = load_spec(SPECS / "fig3.yaml", overrides=["samplers={eps=0: {method: rw_mh}}"])
    with pytest.raises(SpecError, match="samplers.eps=0"):       # before any data is loaded
        execute(spec, tmp_path / "f3", quiet=True, render=False)


def test_a_plugin_entry_missing_a_shared_parameter_names_its_key(tmp_path):
    _need("mnist-5k")
    base = ["data.name=mnist-5k", "eps=[]", "chains=2", "seconds=0.1"] + HMC_TINY
    # rw_risk has no top-level step_size or batch to lend an SGLD entry
    spec = load_spec(SPECS / "fig3.yaml", overrides=base + ["samplers={s: {method: sgld}}"])
    with pytest.raises(SpecError, match="needs 'step_size'") as err:
        execute(spec, tmp_path / "a", quiet=True, render=False)
    assert err.value.key == "samplers.s.step_size"
    spec = load_spec(SPECS / "fig3.yaml", overrides=base + [
        "samplers={s: {method: sgld, step_size: 1.0e-4, batch: 5000}}"])
    with pytest.raises(SpecError, match="N = 1000") as err:
        execute(spec, tmp_path / "b", quiet=True, render=False)
    assert err.value.key == "samplers.s.batch"


def test_fig4_plugin_is_one_more_row(tmp_path):
    _need("mnist-5k")
    spec = load_spec(SPECS / "fig4.yaml", overrides=[
        "data.name=mnist-5k", "eps=[0.1]", "chains=2", "m=100", "times=[0.1,0.2]",
        "samplers={frozen: {method: test_frozen}}"] + HMC_TINY)
    run_dir, _ = execute(spec, tmp_path / "f4", quiet=True, render=False)
    with RunReader(run_dir) as run:
        x = run.stream("frozen", "marginal")                  # never moves from theta = 0
        assert x.shape[0] == 2 and x.shape[1] > 0 and not x.any()
        assert run.results()["frozen/samples"] == x.shape[1]
        assert np.allclose(run.results()["mean/frozen"], 0.0)
        assert render(run, "austerity.fig4", tmp_path / "f4.png").stat().st_size > 0
