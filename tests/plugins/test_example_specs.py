"""Each example spec (``examples/plugin/specs/*.yaml``) runs through the CLI with the installed
example plugin, and the plugin's sampler is one more series of the papers' benchmark: in the
results next to the papers' samplers, and in the figure's run file."""

import json

import pytest

from .conftest import ON_EXAMPLE_SITE, REPO, mixlab_env, run_mixlab, show_run

SPECS = REPO / "examples" / "plugin" / "specs"

# Tiny budgets: the specs' own sizes are for a person at a terminal. The test checks structure
# (every series has a float result, a figure is drawn), so each series samples for 0.2 s (a
# stream always makes at least one step), each ground truth is as short as its schema allows
# a useful one to be, and the RBM is trained on the first 1,000 digits (10 minibatch updates,
# not 63); the truth's and the model's accuracy are what tests/austerity and tests/rbm check,
# not this file.
CASES = {
    "rbm": (["data.max_train=1000", "train.epochs=1", "budget.draws=100", "isl.points=3",
             "isl.test_max=100", "isl.valid_max=50"], "isl_final/{}",
            ["gibbs", "rates-fpcd", "pt-gibbs"]),
    "logistic": (["seconds=0.2", "hmc.samples=20", "hmc.burn_in=10", "data.test_max=200"],
                 "{}/final_risk", ["eps=0", "eps=0.05", "mala"]),
    "mrf": (["budget.seconds=0.2", "truth.burn_in=50", "truth.sweeps=100",
             "truth.cache_dir=null", "subsets.M=20"],
            "final_l1/{}", ["exact", "eps=0.1", "blocked-2", "blocked-3"]),
    "spinglass": (["seconds=0.2"], "final_error/{}", ["gibbs", "swendsen-wang", "houdayer"]),
    "potts": (["budget.seconds=0.2"], "error/{}", ["gibbs", "swendsen-wang", "biased-gibbs"]),
    "mysampler": (["budget.seconds=0.2", "truth.burn_in=50", "truth.sweeps=100",
                   "truth.cache_dir=null"], "final_l1/{}", ["exact", "eps=0.1", "random-scan"]),
}


# the data sets these specs use (logistic: data.name auto = fashion-mnist, else mnist-5k)
DATA = {"rbm": ["usps"], "logistic": ["fashion-mnist", "mnist-5k"]}


def _need_data(name):
    """Skip, saying why, where none of the spec's data sets is installed or in a mirror."""
    from mixlab.data import load
    from mixlab.errors import DataError

    reasons = []
    for data_set in DATA.get(name, []):
        try:
            load(data_set)
            return
        except DataError as exc:
            reasons.append(str(exc))
    if reasons:
        pytest.skip(f"no data set for examples/plugin/specs/{name}.yaml: {'; '.join(reasons)}")


@ON_EXAMPLE_SITE
@pytest.mark.parametrize("name", sorted(CASES))
def test_example_spec_shows_the_plugin_sampler_beside_the_papers(name, tmp_path,
                                                                 example_site):
    overrides, key, series = CASES[name]
    _need_data(name)
    out = tmp_path / name
    r = run_mixlab("run", SPECS / f"{name}.yaml", *overrides, "--out", out, "--quiet",
                   env=mixlab_env(example_site), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # the run needs a real process (the plugin is an installed entry point); show reads the
    # finished run file and needs none
    shown = json.loads(show_run(out, "--json").stdout)
    assert shown["status"] == "complete"
    for s in series:
        assert isinstance(shown["results"][key.format(s)], float), (key.format(s), shown)
    assert list((out / "figures").glob("*.png"))
