"""The austerity evaluators' state is data (AttributeState): written to a checkpoint group,
read back and loaded into a fresh evaluator, the curve continues exactly as without the break;
and an interrupted Fig 7 / Fig 8 run resumes to the same curves as an uninterrupted one."""

from pathlib import Path

import h5py
import numpy as np
import pytest

from mixlab.austerity.evaluators import Calibration, JointL1, PredictiveRisk, VarianceL1
from mixlab.austerity.mrf import ExactGibbs
from mixlab.austerity.target_mrf import build_model
from mixlab.plugins import registry
from mixlab.run.context import execute
from mixlab.runfile.checkpoint import read_state, write_state
from mixlab.runfile.store import RunReader
from mixlab.spec.resolver import load_spec

SPECS = Path(__file__).resolve().parents[2] / "experiments" / "austerity"


def _blocks(rng, C=3, n=40, D=6):
    X = rng.random((C, n, D)) < 0.4
    return [{"samples": X[:, :15], "p_exact": rng.random((C, 15, D)).astype(np.float32),
             "exact_decision": rng.random((C, 15, D)) < 0.4, "terms": np.ones((C, 15))},
            {"samples": X[:, 15:], "p_exact": rng.random((C, n - 15, D)).astype(np.float32),
             "exact_decision": rng.random((C, n - 15, D)) < 0.4, "terms": np.ones((C, n - 15))}]


def _evaluators(rng):
    th = rng.normal(size=(3, 40, 4))
    Xt = rng.normal(size=(5, 4)).astype(np.float32)
    sub = np.array([[0, 1, 2], [3, 4, 5], [0, 2, 4]])
    mrf_blocks = _blocks(rng)
    theta_blocks = [{"samples": th[:, :15]}, {"samples": th[:, 15:]}]
    return [
        (lambda: PredictiveRisk("r", Xt, rng.random(5) * 0 + 0.3, 3), theta_blocks),
        (lambda: VarianceL1("v", np.full(4, 0.5), 3), theta_blocks),
        (lambda: Calibration("c", 5, 4, paired=True), mrf_blocks),
        (lambda: JointL1("j", sub, np.full((3, 8), 1 / 8), np.array([5, 20, 33]), 6), mrf_blocks),
    ]


@pytest.mark.parametrize("which", range(4))
def test_state_round_trip_through_a_checkpoint_group(tmp_path, which):
    make, blocks = _evaluators(np.random.default_rng(0))[which]
    whole = make()
    whole.update(blocks[0], 15, 1.0)
    whole.update(blocks[1], 40, 2.5)
    first = make()
    first.update(blocks[0], 15, 1.0)
    with h5py.File(tmp_path / "ck.h5", "w") as f:
        write_state(f.create_group("ev"), first.state(), "ev")
    with h5py.File(tmp_path / "ck.h5", "r") as f:
        state = read_state(f["ev"])
    resumed = make()
    resumed.load_state(state)
    resumed.update(blocks[1], 40, 2.5)
    for a, b in zip(whole.curve(), resumed.curve()):
        if a is None:
            assert b is None
        else:
            assert np.array_equal(np.asarray(a), np.asarray(b))


class _InterruptOnce:
    """Exact Gibbs that raises KeyboardInterrupt (as Ctrl-C would) at its ``at``-th step, once."""

    armed = False

    def __init__(self, model, chains, at):
        self.inner, self.at, self.steps = ExactGibbs(model, chains), at, 0
        self.chains = chains

    def init(self, rng):
        return self.inner.init(rng)

    def step(self, state, rng):
        self.steps += 1
        if _InterruptOnce.armed and self.steps == self.at:
            _InterruptOnce.armed = False
            raise KeyboardInterrupt
        return self.inner.step(state, rng)


@registry.sampler("mrf", "test_interrupt_once", params={})
def _interrupting(model, params, chains):
    return _InterruptOnce(model, chains, at=70)


def test_interrupted_fig8_resumes_to_the_uninterrupted_curves(tmp_path, monkeypatch):
    monkeypatch.setenv("MIXLAB_CHECKPOINT_SECONDS", "0")          # a checkpoint every block
    spec = load_spec(SPECS / "fig8.yaml", overrides=[
        "model.D=7", "minibatch=5", "chains=2", "subsets.M=12", "truth.chains=4",
        "truth.sweeps=100", "truth.burn_in=5", "truth.cache_dir=null", "budget.seconds=null",
        "budget.sweeps=120", "points=6", "block=16",
        "samplers={gibbs: {method: test_interrupt_once}, approx: {method: approx, eps: 0.1}}"])
    _InterruptOnce.armed = True
    with pytest.raises(KeyboardInterrupt):
        execute(spec, tmp_path / "broken", quiet=True, render=False)
    assert not _InterruptOnce.armed
    assert execute(spec, tmp_path / "broken", quiet=True, render=False)[1] == "resumed"
    execute(spec, tmp_path / "whole", quiet=True, render=False)
    with RunReader(tmp_path / "broken") as a, RunReader(tmp_path / "whole") as b:
        for metric in ("joint_l1_vs_sweeps", "joint_l1_vs_terms"):
            for lab in ("gibbs", "approx"):
                ca, cb = a.metrics()[metric][lab], b.metrics()[metric][lab]
                assert np.array_equal(ca["x"], cb["x"]) and np.array_equal(ca["y"], cb["y"])
        assert a.results()["final_l1/gibbs"] == b.results()["final_l1/gibbs"]


def test_model_is_deterministic_in_model_seed():
    a = build_model({"D": 6, "s": 0.5, "s_is": "std", "seed": 3})
    b = build_model({"D": 6, "s": 0.5, "s_is": "std", "seed": 3})
    assert a.hash() == b.hash()
