"""Per-draw summaries for mixing diagnostics, against hand computations, and wired into the
Fig 3 and Fig 8 streams."""

from pathlib import Path

import numpy as np
import pytest

from mixlab.austerity.mrf import all_states, random_subsets
from mixlab.austerity.summaries import MRFEnergy, mrf_summaries, theta_dims, theta_summaries
from mixlab.austerity.target_mrf import build_model
from mixlab.errors import DataError, SpecError
from mixlab.run.context import execute
from mixlab.runfile.store import RunReader
from mixlab.spec.resolver import load_spec

SPECS = Path(__file__).resolve().parents[2] / "experiments" / "austerity"


def test_theta_summaries_are_the_coordinates():
    th = np.random.default_rng(0).normal(size=(3, 7, 5))
    out = theta_summaries(theta_dims([0, -1, 2], 5))({"samples": th})
    assert sorted(out) == ["theta_0", "theta_2", "theta_4"]
    for j in (0, 2, 4):
        assert out[f"theta_{j}"].shape == (3, 7)
        assert np.array_equal(out[f"theta_{j}"], th[:, :, j])    # chain c, draw n = θ_j
    assert theta_dims(None, 3) == [0, 1, 2]
    with pytest.raises(SpecError, match="summary_dims"):
        theta_dims([5], 5)


def test_energy_is_minus_the_log_potential():
    model = build_model({"D": 7, "s": 0.7, "s_is": "std", "seed": 2})
    S = all_states(7)                                               # every state, (128, 7)
    assert np.allclose(MRFEnergy(model, rows=50)(S), -model.log_potential(S), atol=1e-10)


@pytest.mark.parametrize("D", [7, MRFEnergy.TABLE_MAX_D, MRFEnergy.TABLE_MAX_D + 1])
def test_energy_of_bits_by_table_is_the_computed_one(D):
    """Boolean draws of a small model are looked up in the table of every state's energy."""
    model = build_model({"D": D, "s": 0.7, "s_is": "std", "seed": 2})
    energy = MRFEnergy(model)
    assert (energy.table is not None) == (D <= MRFEnergy.TABLE_MAX_D)
    S = np.random.default_rng(5).random((300, D)) < 0.5
    for X in (S, S.astype(np.uint8)):
        np.testing.assert_allclose(energy(X), energy(S.astype(np.float64)), rtol=0, atol=1e-12)
    assert np.allclose(energy(S), -model.log_potential(S.astype(np.uint8)), atol=1e-10)


@pytest.mark.parametrize("D", [8, MRFEnergy.TABLE_MAX_D + 1])   # looked up, computed
def test_mrf_summaries_by_hand(D):
    model = build_model({"D": D, "s": 0.5, "s_is": "std", "seed": 1})
    rng = np.random.default_rng(3)
    sub = random_subsets(D, 6, 5, rng)
    probs = rng.dirichlet(np.ones(32), size=6)
    X = rng.random((2, 9, D)) < 0.5
    X[0, 0, sub[1]] = (np.argmax(probs[1]) >> np.arange(5)) & 1     # hit subset 1's config
    out = mrf_summaries(model, sub, probs, k=4)({"samples": X})
    assert sorted(out) == ["energy", "ones", "subset_0", "subset_1", "subset_2", "subset_3"]
    for c in range(2):
        for n in range(9):
            x = X[c, n]
            assert np.isclose(out["energy"][c, n], -model.log_potential(x[None])[0])
            assert out["ones"][c, n] == x.sum() / D
            for m in range(4):
                code = sum(int(x[sub[m, b]]) << b for b in range(5))
                assert out[f"subset_{m}"][c, n] == float(code == np.argmax(probs[m]))
    assert out["subset_1"][0, 0] == 1.0


def test_fig8_streams_carry_the_summaries(tmp_path):
    spec = load_spec(SPECS / "fig8.yaml", overrides=[
        "model.D=8", "minibatch=5", "chains=2", "subsets.M=10", "truth.chains=4",
        "truth.sweeps=100", "truth.burn_in=5", "truth.cache_dir=null", "budget.seconds=null",
        "budget.sweeps=40", "points=4", "block=16", "record=true",
        "samplers={exact: {method: exact}}"])
    run_dir, _ = execute(spec, tmp_path / "f8", quiet=True, render=False)
    with RunReader(run_dir) as run:
        summ = run.stream_summaries("exact")
        X = run.stream("exact", "samples")                        # (chain, draw, D)
        model = build_model(spec["model"])
        assert summ["energy"].shape == (2, 40)
        assert np.allclose(summ["energy"], -model.log_potential(X.reshape(-1, 8)).reshape(2, 40))
        assert np.array_equal(summ["ones"], X.mean(2))
        code = run.results()["summary_config/subset_0"]
        sub = run.stage("truth")["subsets"][0]
        hit = ((X[:, :, sub] * (1 << np.arange(5))).sum(2) == code)
        assert np.array_equal(summ["subset_0"], hit * 1.0)


def test_fig3_streams_carry_theta_summaries(tmp_path):
    from mixlab.data import load
    try:
        load("mnist-5k")
    except DataError as exc:
        pytest.skip(f"mnist-5k not available: {exc}")
    spec = load_spec(SPECS / "fig3.yaml", overrides=[
        "data.name=mnist-5k", "eps=[0.1]", "chains=2", "m=100", "seconds=0.3",
        "summary_dims=[0,-1]", "hmc.chains=2", "hmc.burn_in=20", "hmc.samples=100",
        "hmc.keep=100"])
    run_dir, _ = execute(spec, tmp_path / "f3", quiet=True, render=False)
    with RunReader(run_dir) as run:
        summ = run.stream_summaries("eps=0.1")
        d = run.results()["data/d"]
        assert sorted(summ) == ["theta_0", f"theta_{d - 1}"]
        assert summ["theta_0"].shape == (2, run.results()["eps=0.1/samples"])
        assert np.all(np.isfinite(summ["theta_0"])) and summ["theta_0"].std() > 0
