"""Tiny end-to-end runs of the Fig 1 right and marginal-vs-time specs."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mixlab.errors import SpecError
from mixlab.run.context import execute
from mixlab.runfile.store import RunReader
from mixlab.spec.resolver import load_spec

SPECS = Path(__file__).resolve().parents[2] / "experiments" / "perturb_map"
HAVE_PERTURB = importlib.util.find_spec("mixlab.spinglass.perturb") is not None
MCMC = ["gibbs", "metropolis", "swendsen_wang"]
ALL = (["local", "pairwise"] if HAVE_PERTURB else []) + MCMC


def _tiny(name, overrides):
    return load_spec(SPECS / name, overrides=overrides)


def test_specs_resolve_at_both_scales():
    for f in ("fig1_right.yaml", "marginal_vs_time.yaml"):
        for scale in ("quick", "paper"):
            load_spec(SPECS / f, scale=scale)
    paper = load_spec(SPECS / "fig1_right.yaml", scale="paper")
    assert paper["mcmc"]["updates"] == 100_000_000 and paper["field"] == 1.0
    with pytest.raises(SpecError, match="samplers"):
        load_spec(SPECS / "fig1_right.yaml", overrides=["samplers=[gibbs,hmc]"])


def test_fig1_right_tiny(tmp_path):
    spec = _tiny("fig1_right.yaml", ["grid.rows=3", "grid.cols=3", "couplings=[0.5,2.0]",
                                     "models=2", f"samplers=[{','.join(ALL)}]",
                                     "mcmc.updates=90000", "mcmc.chains=20",
                                     "perturb.samples=40", "perturb.chains=20"])
    d = tmp_path / "run"
    execute(spec, d, quiet=True)
    with RunReader(d) as r:
        assert r.status == "complete"
        m = r.metrics()["marginal_error"]
        res = r.results()
        for s in ALL:
            assert np.allclose(m[s]["x"], [0.5, 2.0])
            assert np.all(np.isfinite(m[s]["y"])) and np.all(m[s]["yerr"] >= 0)
            assert r.array(f"errors/{s}").shape == (2, 2)
            assert res[f"seconds_per_model/{s}"] > 0
        for s in MCMC:   # 3x3 grid, 5e4 site updates per chain: MCMC is accurate here
            assert np.all(m[s]["y"] < 0.03), (s, m[s]["y"])
        assert (d / "figures" / "perturb_map.fig1_right.png").stat().st_size > 0
    assert execute(spec, d, quiet=True)[1] == "complete"
    # the same spec and seed give the same errors (timings aside)
    d2 = tmp_path / "again"
    execute(spec, d2, quiet=True, render=False)
    with RunReader(d) as a, RunReader(d2) as b:
        for s in ALL:
            np.testing.assert_array_equal(a.array(f"errors/{s}"), b.array(f"errors/{s}"))


def test_fig1_right_resumes_per_coupling_point(tmp_path):
    spec = _tiny("fig1_right.yaml", ["grid.rows=2", "grid.cols=3", "couplings=[0.5,1.0]",
                                     "models=1", "samplers=[gibbs]", "mcmc.updates=6000"])
    d = tmp_path / "run"
    execute(spec, d, quiet=True, render=False)
    with RunReader(d) as r:
        first = r.array("errors/gibbs").copy()
        assert set(r.stage_names()) >= {"coupling_0", "coupling_1"}
    # a stored stage is reused, not recomputed: resuming gives identical values
    d2 = tmp_path / "again"
    execute(spec, d2, quiet=True, render=False)
    with RunReader(d2) as r:
        np.testing.assert_array_equal(r.array("errors/gibbs"), first)


def test_marginal_vs_time_tiny(tmp_path):
    spec = _tiny("marginal_vs_time.yaml", ["grid.rows=3", "grid.cols=4", "seconds=0.3",
                                           f"samplers=[{','.join(ALL)}]", "block=20"])
    d = tmp_path / "run"
    execute(spec, d, quiet=True)
    with RunReader(d) as r:
        met = r.metrics()
        res = r.results()
        assert r.array("exact_marginals").shape == (3, 4)
        for s in ALL:
            t = met["error_vs_seconds"][s]
            u = met["error_vs_updates"][s]
            assert len(t["x"]) >= 1 and np.all(np.diff(t["x"]) > 0)
            assert np.all(np.diff(u["x"]) > 0) and u["x"][-1] % 12 == 0
            assert res[f"final_error/{s}"] == pytest.approx(t["y"][-1])
            assert res[f"final_error/{s}"] == pytest.approx(u["y"][-1])
        assert (d / "figures" / "perturb_map.marginal_vs_time.png").stat().st_size > 0


def test_cli_run_and_plot(tmp_path):
    out = tmp_path / "cli"
    cmd = [sys.executable, "-m", "mixlab", "run", str(SPECS / "fig1_right.yaml"),
           "grid.rows=2", "grid.cols=2", "couplings=[1.0]", "models=1", "samplers=[metropolis]",
           "mcmc.updates=2000", "--out", str(out), "--quiet"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    p = subprocess.run([sys.executable, "-m", "mixlab", "plot", str(out)], check=True,
                       capture_output=True, text=True, timeout=120)
    assert "fig1_right" in p.stdout + p.stderr


def test_fig1_left_and_middle_tiny_with_certified_probable_bounds(tmp_path):
    for f in ("fig1_left.yaml", "fig1_middle.yaml"):
        for scale in ("quick", "paper"):
            assert load_spec(SPECS / f, scale=scale)["copies"] == 10_000   # the paper's m
    def run(name, overrides):
        d = tmp_path / name
        execute(_tiny(f"{name}.yaml", overrides), d, quiet=True)
        return d

    # every baseline but NTRW: the assertions are on the probable bound, and NTRW (seconds per
    # 4x4 model at c = 2) is checked against enumeration in test_variational.py and run inside
    # this experiment by test_stages_under_jobs.py; the figure draws its curve in the same loop
    # as the other baselines'
    d = run("fig1_left", ["grid.rows=4", "grid.cols=4", "couplings=[0.5,2.0]", "models=2",
                          "perturbations=4", "copies=500", "probable_draws=2",
                          "baselines=[structured_mean_field,bethe_bp,trw,mean_field]"])
    with RunReader(d) as r:
        assert r.status == "complete"
        res = r.results()
        assert res["copies"] == 500 and 0.0 <= res["probable_lb_max_gap"] < 1e-6
        err = r.array("logz_error/probable_lb")
        assert err.shape == (2, 2) and np.all(np.isfinite(err))
        se = r.array("se_over_draws/probable_lb")
        assert se.shape == (2, 2) and np.all(se > 0)
        assert set(r.metrics()["logz_error"]) == {"upper", "expected_lb", "probable_lb",
                                                   "structured_mean_field", "bethe_bp", "trw",
                                                   "mean_field"}
        assert (d / "figures" / "perturb_map.fig1_left.png").stat().st_size > 0
    d = run("fig1_middle", ["sides=[2,3]", "models=2", "perturbations=4", "copies=500",
                            "measure.max_side=2", "measure.samples=3", "measure.perturbations=10"])
    with RunReader(d) as r:
        assert r.status == "complete" and r.results()["probable_lb_max_gap"] < 1e-6
        assert set(r.metrics()["log_passes"]) >= {"U-logZ", "U-probable_lb", "measured"}
