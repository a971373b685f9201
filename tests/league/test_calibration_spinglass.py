"""The spin glass calibration set against exact distributions on a 3x3 grid (512 states): each
correct variant samples p, each wrong one samples the model it is meant to (and that model is
far from p), and the set stays out of ordinary leagues."""

import numpy as np
import pytest

from mixlab.league.calibration import spinglass as cal
from mixlab.plugins import registry
from mixlab.spinglass.target import SpinGlassTarget
from tests.spinglass.test_mcmc import MODELS, TV_MAX, exact_joint, run


def _sampler(entry, model, chains=200, init="random"):
    kind, = [k for n, k in registry.samplers_for("spinglass").items() if n == entry["method"]]
    params = {k: v for k, v in entry.items() if k != "method"}
    params.setdefault("init", None)
    return kind.factory(SpinGlassTarget.of(model, init), params, chains)


def _tv(p, q):
    return 0.5 * float(np.abs(p - q).sum())


CORRECT = [label for label, (e, word) in cal.SET.items()
           if word == "correct" and e["method"].startswith("cal-")]
WRONG = {"gibbs_beta0.6": lambda m: cal.tempered(m, 0.6),
         "gibbs_beta0.9": lambda m: cal.tempered(m, 0.9),
         "metropolis_beta0.6": lambda m: cal.tempered(m, 0.6),
         "field_sign": cal.field_flipped, "dropped_row": cal.dropped_row}


@pytest.mark.parametrize("kind", list(MODELS))
@pytest.mark.parametrize("label", CORRECT)
def test_correct_variants_sample_p(kind, label):
    model = MODELS[kind]()
    p, _ = exact_joint(model)
    q = run(_sampler(cal.SET[label][0], model), np.random.default_rng(11))
    assert _tv(p, q) < TV_MAX


@pytest.mark.parametrize("kind", list(MODELS))
@pytest.mark.parametrize("label", list(WRONG))
def test_wrong_variants_sample_their_own_model_not_p(kind, label):
    """Each wrong sampler is exact for its wrong model (TV < TV_MAX against it), that model is
    more than 1.5 TV_MAX from p, and the draws fail the test the correct variants pass."""
    model = MODELS[kind]()
    p, _ = exact_joint(model)
    wrong, _ = exact_joint(WRONG[label](model))
    assert _tv(p, wrong) > 1.5 * TV_MAX
    q = run(_sampler(cal.SET[label][0], model), np.random.default_rng(12))
    assert _tv(wrong, q) < TV_MAX
    assert _tv(p, q) > TV_MAX


def test_every_set_entry_declares_what_it_is():
    assert {word for _, word in cal.SET.values()} == {"correct", "wrong"}
    assert sum(word == "correct" for _, word in cal.SET.values()) >= 6
    assert sum(word == "wrong" for _, word in cal.SET.values()) >= 6


def test_plus_minus_starts_alternate_across_chains():
    model = MODELS["attractive"]()
    for entry in ({"method": "cal-heat-bath-scan"}, {"method": "gibbs"},
                  {"method": "swendsen_wang"}, {"method": "cal-tempered-gibbs", "beta": 0.9}):
        s = _sampler(entry, model, chains=4, init="plus_minus")
        st = s.init(np.random.default_rng(0))
        x = np.asarray(st["x"])
        spins = x[1:-1, 1:-1].transpose(2, 0, 1) if x.shape[-1] == 4 else x
        assert [float(np.unique(spins[c])[0]) for c in range(4)] == [1.0, -1.0, 1.0, -1.0]
        assert all(len(np.unique(spins[c])) == 1 for c in range(4))


def test_calibration_samplers_stay_out_of_ordinary_leagues():
    from mixlab.league.league import sampler_entries

    base = {"family": "spinglass", "samplers": {}, "only_samplers": None}
    ordinary = sampler_entries({**base, "calibration": False})
    assert not [k for k, e in ordinary.items() if e["method"].startswith("cal-")]
    assert set(ordinary) >= {"gibbs", "metropolis", "swendsen_wang", "local", "pairwise"}
    calibrating = sampler_entries({**base, "calibration": True})
    assert set(calibrating) == set(cal.SET)


def test_calibrate_on_a_family_without_exact_truth_is_a_usage_error(tmp_path):
    from click.testing import CliRunner

    from mixlab.cli import cli

    r = CliRunner().invoke(cli, ["league", "logistic", "--calibrate", "-o", str(tmp_path / "x")])
    assert r.exit_code == 2 and "no calibration set" in r.output
    assert not (tmp_path / "x").exists()


def test_mixlab_plugins_does_not_list_the_calibration_samplers():
    from tests.plugins.conftest import run_mixlab

    r = run_mixlab("plugins")
    assert r.returncode == 0 and "gibbs" in r.stdout and "cal-" not in r.stdout
