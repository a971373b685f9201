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


def test_field_sign_counts_as_correct_where_every_field_is_zero():
    """Flipping zero fields leaves the model as it is: on the critical ferromagnet and the ±J
    glass ``field_sign`` is Gibbs itself, so a calibration table must not count its verdict
    there as a miss; on the random grids (fields U[-1, 1]) it stays wrong."""
    from mixlab.league import calibration
    from mixlab.league.rank import Entry
    from mixlab.league.target_spinglass import spinglass_model
    from mixlab.league.targets import standard_targets

    defs = standard_targets("spinglass")
    entry = cal.SET["field_sign"][0]
    for name in ("critical-16x64", "pmj-16x16-b3"):
        model = spinglass_model(defs[name])
        flipped = cal.field_flipped(model)
        assert np.array_equal(flipped.field, model.field)
        assert calibration.expected("spinglass", "field_sign", entry, defs[name]) == "correct"
        assert calibration.expected("spinglass", "dropped_row", cal.SET["dropped_row"][0],
                                    defs[name]) == "wrong"
    assert calibration.expected("spinglass", "field_sign", entry,
                                defs["mixed-c0.5"]) == "wrong"
    assert calibration.expected("spinglass", "field_sign", entry) == "wrong"

    labels = {"gibbs": cal.SET["gibbs"][0], "field_sign": entry}
    entries = [Entry(t, s, "complete", "", {"verdict/verdict": "ok"})
               for t in ("critical-16x64", "mixed-c0.5") for s in labels]
    rows = {r[0]: r for r in calibration.summary(entries, "spinglass", labels, defs)}
    assert rows["critical-16x64"][1:3] == (2, 2) and rows["critical-16x64"][5] == 0
    assert rows["mixed-c0.5"][1:3] == (1, 1) and rows["mixed-c0.5"][5:10:3] == (1, 1)
