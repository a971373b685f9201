"""Figures 1-6 experiments end to end on tiny versions of the specs (mnist-5k / kdd99 from the
mirror; skipped with the reason when the data is absent), plus the evaluators' arithmetic."""

from pathlib import Path

import numpy as np
import pytest

from mixlab.austerity.evaluators import PredictiveRisk, VarianceL1
from mixlab.errors import DataError
from mixlab.plotting import render
from mixlab.run.context import execute
from mixlab.runfile.store import RunReader
from mixlab.spec.resolver import load_spec

REPO = Path(__file__).resolve().parents[2]
SPECS = REPO / "experiments" / "austerity"


def _need(name):
    from mixlab.data import load
    try:
        load(name)
    except DataError as exc:
        pytest.skip(f"data set {name} not available: {exc}")


def test_specs_resolve_at_both_scales():
    for i in range(1, 7):
        for scale in ("quick", "paper"):
            spec = load_spec(SPECS / f"fig{i}.yaml", scale=scale)
            assert spec["experiment"].startswith("austerity.")
    s3 = load_spec(SPECS / "fig3.yaml", scale="paper")
    assert s3["seconds"] == 400 and s3["eps"] == [0.0, 0.01, 0.05, 0.1, 0.2]
    assert s3["chains"] == 8 and s3["data"]["name"] == "mnist"
    assert load_spec(SPECS / "fig5.yaml")["step_size"] == 5e-4
    assert load_spec(SPECS / "fig6.yaml")["step_size"] == 1e-4
    assert load_spec(SPECS / "fig4.yaml", scale="paper")["times"] == [50, 100, 400]


def test_evaluators():
    rng = np.random.default_rng(0)
    Xt = rng.normal(size=(7, 3)).astype(np.float32)
    th = rng.normal(size=(2, 10, 3))
    truth = rng.random(7)
    ev = PredictiveRisk("a", Xt, truth, 2)
    ev.update({"samples": th[:, :4]}, 4, 1.0)
    ev.update({"samples": th[:, 4:]}, 10, 2.0)
    p = 1 / (1 + np.exp(-(th @ Xt.T.astype(np.float64))))            # (2, 10, 7)
    ref = np.mean((p.mean(1) - truth) ** 2)
    x, y, _ = ev.curve()
    assert np.allclose(x, [1, 2]) and np.isclose(y[-1], ref, rtol=1e-5)
    var_truth = rng.random(3)
    ev2 = VarianceL1("b", var_truth, 2)
    ev2.update({"samples": th[:, :3]}, 3, 1.0)
    ev2.update({"samples": th[:, 3:]}, 10, 2.0)
    ref2 = np.abs(th.var(1) - var_truth).sum(1).mean()
    assert np.isclose(ev2.curve()[1][-1], ref2)


def _render(run_dir, name, tmp_path):
    with RunReader(run_dir) as run:
        assert render(run, name, tmp_path / f"{name}.png").stat().st_size > 0


HMC_TINY = ["hmc.chains=2", "hmc.burn_in=20", "hmc.samples=100", "hmc.keep=100"]


def test_fig1_fig2_tiny(tmp_path):
    _need("mnist-5k")
    spec = load_spec(SPECS / "fig1.yaml", overrides=["data.name=mnist-5k", "resamples=200"])
    run_dir, _ = execute(spec, tmp_path / "f1", quiet=True, render=False)
    with RunReader(run_dir) as run:
        r = run.results()
        assert r["data/name"] == "mnist-5k" and r["data/N"] == 1000
        assert r["tstat/n500/n_eff"] == round(500 * 1000 / 12214)       # rescaled to N
        assert r["tstat/n10000/n_eff"] == round(10000 * 1000 / 12214)
        assert all(r[f"tstat/n{n}/ks_stat"] < 0.15 for n in (500, 5000, 10000))
    _render(run_dir, "austerity.fig1", tmp_path)

    spec = load_spec(SPECS / "fig2.yaml", overrides=[
        "data.name=mnist-5k", "eps=[0.0,0.2]", "steps=60", "burn_in=5", "chains=2", "m=100"])
    run_dir, _ = execute(spec, tmp_path / "f2", quiet=True, render=False)
    with RunReader(run_dir) as run:
        r = run.results()
        assert r["eps=0/data_used"] == 1.0 and r["eps=0/wrong"] == 0.0
        assert r["eps=0.2/data_used"] < 1.0
        m = run.metrics()["decisions"]
        assert np.allclose(m["data_used"]["x"], [0.0, 0.2])
        assert "blocks" not in _title(run, "austerity.fig2")        # the paper's per-point test
    _render(run_dir, "austerity.fig2", tmp_path)
    spec = load_spec(SPECS / "fig2.yaml", overrides=[
        "data.name=mnist-5k", "eps=[0.2]", "steps=20", "burn_in=5", "chains=2", "m=100",
        "test_block=8"])
    run_dir, _ = execute(spec, tmp_path / "f2-blocks", quiet=True, render=False)
    with RunReader(run_dir) as run:                  # a figure says when the test used blocks
        assert _title(run, "austerity.fig2").endswith("sequential test over blocks of 8 rows")


def _title(run, name):
    from matplotlib.figure import Figure

    from mixlab.plugins import registry

    fig = Figure()
    registry.all_figures()[name].draw(run, fig)
    return fig.axes[0].get_title()


def test_fig3_fig4_tiny_and_truth_cache(tmp_path):
    _need("mnist-5k")
    over = ["data.name=mnist-5k", "eps=[0.0,0.1]", "chains=2", "m=100", "sigma=0.05"] + HMC_TINY
    spec = load_spec(SPECS / "fig3.yaml", overrides=over + ["seconds=0.25"])
    run_dir, _ = execute(spec, tmp_path / "f3", quiet=True, render=False)
    with RunReader(run_dir) as run:
        r = run.results()
        assert r["eps=0/samples"] > 0 and r["eps=0.1/samples"] > 0
        assert r["eps=0/data_used"] == 1.0 and r["eps=0.1/data_used"] < 1.0
        assert r["best_eps"] in (0.0, 0.1)
        truth = run.stage("hmc_truth")
        assert truth["pred"].shape == (2037,) and 0.5 < truth["accept"] <= 1.0
    _render(run_dir, "austerity.fig3", tmp_path)
    from mixlab.austerity.target_logistic import truth_cache_dir
    cached = list(truth_cache_dir().glob("*.npz"))
    assert cached                                            # shared with the next run
    spec = load_spec(SPECS / "fig4.yaml", overrides=over + ["times=[0.1,0.2]"])
    run_dir, _ = execute(spec, tmp_path / "f4", quiet=True, render=False)
    with RunReader(run_dir) as run:
        var = run.stage("hmc_truth")["var"]          # the cache may hold other runs' truths too
        assert any(np.array_equal(var, np.load(c)["var"]) for c in cached)
        x = run.stream("eps=0.1", "marginal")
        assert x.shape[0] == 2 and x.shape[2] == 2
    _render(run_dir, "austerity.fig4", tmp_path)


def test_fig5_tiny(tmp_path):
    _need("kdd99")
    spec = load_spec(SPECS / "fig5.yaml", overrides=[
        "data.subsample=3000", "eps=[0.1]", "chains=2", "seconds=0.25", "m=200", "batch=100",
        "step_size=1e-5"] + HMC_TINY)
    run_dir, _ = execute(spec, tmp_path / "f5", quiet=True, render=False)
    with RunReader(run_dir) as run:
        r = run.results()
        assert r["data/name"] == "kdd99" and r["data/N"] == 3000 and r["data/d"] == 41
        for lab in ("SGLD", "MH", "eps=0.1"):
            assert r[f"{lab}/samples"] > 0 and np.isfinite(r[f"{lab}/final_l1"])
        assert r["SGLD/accept"] == 1.0 and r["MH/data_used"] == 1.0
    _render(run_dir, "austerity.fig5_6", tmp_path)
