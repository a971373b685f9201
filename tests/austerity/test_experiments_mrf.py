"""Figures 7-8 experiments end to end on tiny versions of the specs (draw budgets, small D)."""

from pathlib import Path

import numpy as np
import pytest

from mixlab.austerity.evaluators import JointL1
from mixlab.austerity.mrf import enumerate_joint, random_subsets
from mixlab.austerity.target_mrf import build_model, truth_joint
from mixlab.errors import SpecError
from mixlab.run.context import execute
from mixlab.runfile.store import RunReader
from mixlab.spec.resolver import load_spec

REPO = Path(__file__).resolve().parents[2]
SPECS = REPO / "experiments" / "austerity"


def test_specs_resolve_at_both_scales():
    for name in ("fig7.yaml", "fig8.yaml"):
        for scale in ("quick", "paper"):
            spec = load_spec(SPECS / name, scale=scale)
            assert spec["model"]["D"] == 100 and spec["minibatch"] == 500
    s8 = load_spec(SPECS / "fig8.yaml", scale="paper")
    assert s8["budget"]["seconds"] == 1000 and s8["subsets"] == {"M": 1600, "size": 5}
    assert sorted(sp["eps"] for sp in s8["samplers"].values() if sp["method"] == "approx") == \
        [0.01, 0.05, 0.1, 0.15, 0.2, 0.25]
    s7 = load_spec(SPECS / "fig7.yaml", scale="quick")
    assert s7["eps"] == [0.01, 0.05, 0.1, 0.15, 0.2, 0.25]
    with pytest.raises(SpecError):
        load_spec(SPECS / "fig8.yaml", overrides=["model.s_is=sd"])


def test_fig7_tiny_end_to_end(tmp_path):
    spec = load_spec(SPECS / "fig7.yaml", overrides=[
        "model.D=12", "minibatch=10", "eps=[0.0,0.2]", "chains=8", "budget.seconds=null",
        "budget.sweeps=60", "burn_in=5", "bins=5", "min_count=10", "block=16"])
    run_dir, what = execute(spec, tmp_path / "f7", quiet=True)
    assert what == "ran"
    with RunReader(run_dir) as run:
        res = run.results()
        cal = run.metrics()["calibration"]
        assert set(cal) == {"exact", "eps=0", "eps=0.2"}
        # eps = 0 is exact: no wrong decisions, all data used, zero paired error
        assert res["wrong_decisions/eps=0"] == 0.0
        assert res["data_used/eps=0"] == 1.0
        assert res["max_error/eps=0"] == 0.0
        assert res["data_used/eps=0.2"] < 1.0
        assert res["decisions/exact"] == 8 * 55 * 12
        assert res["sweeps/eps=0.2"] == 60
    assert (run_dir / "figures" / "austerity.fig7.png").stat().st_size > 10_000
    # a finished run is not redone
    assert execute(spec, tmp_path / "f7", quiet=True)[1] == "complete"


def test_fig8_tiny_end_to_end(tmp_path):
    cache = tmp_path / "cache"
    over = ["model.D=9", "minibatch=7", "chains=3", "subsets.M=40", "truth.chains=8",
            "truth.sweeps=400", "truth.burn_in=20", f"truth.cache_dir={cache}",
            "budget.seconds=null", "budget.sweeps=300", "points=10", "block=64",
            "samplers={exact: {method: exact}, exact-lookup: {method: exact_lookup}, "
            "eps=0: {method: approx, eps: 0.0}, eps=0.25: {method: approx, eps: 0.25}}"]
    spec = load_spec(SPECS / "fig8.yaml", overrides=over)
    run_dir, _ = execute(spec, tmp_path / "f8", quiet=True)
    with RunReader(run_dir) as run:
        res = run.results()
        m = run.metrics()
        assert res["sweeps_in_budget/eps=0.25"] == 300 and res["equal_sweeps"] == 300
        assert res["data_used/eps=0"] == 1.0 and res["data_used/eps=0.25"] < 1.0
        for lab in ("exact", "exact-lookup", "eps=0", "eps=0.25"):
            c = m["joint_l1_vs_sweeps"][lab]
            assert c["x"][-1] == 300 and np.all(np.diff(c["x"]) > 0)
            assert np.all(np.diff(m["joint_l1"][lab]["x"]) >= 0)       # time increases
            assert 0 < c["y"][-1] < c["y"][0]                            # error falls
            # work axis: exact reads D*N terms per sweep
        assert np.isclose(m["joint_l1_vs_terms"]["exact"]["x"][-1], 300 * 9 * 28)
        assert m["joint_l1_vs_terms"]["eps=0.25"]["x"][-1] < 300 * 9 * 28
        # exact, exact-lookup and eps=0 are the same Markov chain law: similar final errors
        finals = [res[f"final_l1/{k}"] for k in ("exact", "exact-lookup", "eps=0")]
        assert max(finals) < 2 * min(finals)
        truth = run.stage("truth")
    assert len(list(cache.glob("austerity_mrf_truth_*.npz"))) == 1
    assert (run_dir / "figures" / "austerity.fig8.png").stat().st_size > 10_000
    # the truth is close to the enumerated joint's marginals on the subsets
    model = build_model(spec["model"])
    S, p = enumerate_joint(model)
    sub = truth["subsets"]
    codes = (S[:, sub] * (1 << np.arange(sub.shape[1]))).sum(-1)          # (2^D, M)
    exact = np.stack([np.bincount(codes[:, j], p, 32) for j in range(sub.shape[0])])
    l1 = np.abs(exact - truth["probs"]).sum(1).mean()
    assert l1 < 4 * truth["noise_l1"] + 0.02, (l1, truth["noise_l1"])
    # a second run with another seed reuses the cached truth (same model, same subsets)
    spec2 = load_spec(SPECS / "fig8.yaml", overrides=over, seed=123)
    run2, _ = execute(spec2, tmp_path / "f8b", quiet=True, render=False)
    with RunReader(run2) as r2:
        assert np.array_equal(r2.stage("truth")["probs"], truth["probs"])
    assert "loaded from cache" in (run2 / "log.txt").read_text()


def test_joint_l1_evaluator_matches_direct_computation():
    model = build_model({"D": 10, "s": 0.5, "s_is": "std", "seed": 1})
    rng = np.random.default_rng(0)
    sub = random_subsets(10, 30, 5, rng)
    truth = rng.dirichlet(np.ones(32), size=30)
    ev = JointL1("x", sub, truth, np.array([3, 50, 77]), 10)
    X = rng.random((2, 100, 10)) < 0.4
    ev.update({"samples": X[:, :60], "terms": np.ones((2, 60))}, 60, 1.0)
    ev.update({"samples": X[:, 60:], "terms": np.ones((2, 40))}, 100, 2.0)
    assert ev.xs_sweeps == [3, 50, 60, 77, 100]
    assert np.allclose(ev.xs_sec, [3 / 60, 50 / 60, 1.0, 1 + 17 / 40, 2.0])
    for n, y in zip(ev.xs_sweeps, ev.ys):
        errs = []
        for c in range(2):
            codes = (X[c, :n][:, sub].astype(int) * (1 << np.arange(5))).sum(-1)
            emp = np.stack([np.bincount(codes[:, j], minlength=32) / n for j in range(30)])
            errs.append(np.abs(emp - truth).sum(1).mean())
        assert np.isclose(y, np.mean(errs))
    out = truth_joint(model, sub, 4, 50, 5, np.random.default_rng(1))
    assert out["probs"].shape == (30, 32) and np.allclose(out["probs"].sum(1), 1)
    assert out["noise_l1"] > 0
