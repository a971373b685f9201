"""Every registered figure, drawn on a small run of its experiment kind, labels both axes of every
panel with a quantity (and its unit where it has one); image grids (panels showing images, or with
their axes switched off) and colour bars are exempt.  A figure registered without a small run here
fails the coverage test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib.figure import Figure

from mixlab.errors import DataError
from mixlab.plugins import registry
from mixlab.run.context import execute
from mixlab.runfile.store import RunReader
from mixlab.spec.resolver import load_spec, resolve

REPO = Path(__file__).resolve().parents[2]
SPECS = REPO / "experiments"
HMC_TINY = ["hmc.chains=2", "hmc.burn_in=20", "hmc.samples=100", "hmc.keep=100"]
MNIST = ["data.name=mnist-5k"]
RBM_TINY = {"data": {"name": "usps", "binarize": 0.5},
            "train": {"trainer": "pcd", "hidden": 8, "epochs": 1, "monitor_size": 50}}

def _from_file(path, overrides):
    return lambda d: execute(load_spec(SPECS / path, overrides=overrides), d, quiet=True,
                             render=False)


def _from_dict(spec):
    return lambda d: execute(resolve(spec), d, quiet=True, render=False)


def _sample_run(d):
    from mixlab.cli import cli
    from mixlab.rbm.model import RBM

    rng = np.random.default_rng(0)
    model = d.parent / f"{d.name}-model.h5"
    RBM(rng.standard_normal((256, 6)).astype(np.float32) * 0.1, np.zeros(256, np.float32),
        np.zeros(6, np.float32)).save(model)
    r = CliRunner().invoke(cli, ["sample", str(model), "--n-samples", "20", "--emit", "both",
                                 "--data", "usps", "-o", str(d), "-q"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["evaluate", "isl", str(d), "--points", "3", "--test-max", "30"])
    assert r.exit_code == 0, r.output


def _logz_of_models(d):
    from mixlab.spinglass.model import random_spin_glass, save_npz

    d.mkdir(parents=True)
    save_npz(d.parent / "a.npz", random_spin_glass(2, 3, 1.0, 1.0, rng=np.random.default_rng(1)))
    spec = d.parent / "logz.yaml"
    spec.write_text(f"experiment: perturb_map.logz_of_models\nmodels: [{d.parent / 'a.npz'}]\n"
                    "perturbations: 4\ncopies: 5\nbaselines: [bethe_bp]\n")
    execute(load_spec(spec), d, quiet=True, render=False)


# experiment kind -> (the data set it needs or None, how to make a small run of it in a directory)
SMALL_RUNS = {
    "toy.gaussian": (None, _from_file("toy/gaussian.yaml", ["budget.draws=200", "chains=2"])),
    "austerity.tstat": ("mnist-5k", _from_file("austerity/fig1.yaml",
                                               MNIST + ["n=[50,100]", "resamples=20"])),
    "austerity.rw_decisions": ("mnist-5k", _from_file("austerity/fig2.yaml", MNIST + [
        "eps=[0.0,0.2]", "steps=10", "burn_in=0", "chains=1", "m=100"])),
    "austerity.rw_risk": ("mnist-5k", _from_file("austerity/fig3.yaml", MNIST + HMC_TINY + [
        "eps=[0.0,0.1]", "chains=2", "m=100", "seconds=0.2", "block=20"])),
    "austerity.rw_marginals": ("mnist-5k", _from_file("austerity/fig4.yaml", MNIST + HMC_TINY + [
        "eps=[0.0,0.1]", "chains=2", "m=100", "times=[0.1,0.2]", "block=20"])),
    # on the MNIST set the runs above load (parsing kdd99 costs ~9 CPU-s); the same figure code
    # draws it, and tests/austerity/test_experiments.py::test_fig5_tiny draws it on kdd99
    "austerity.sgld_variance": ("mnist-5k", _from_file("austerity/fig5.yaml", MNIST + HMC_TINY + [
        "data.classes=[7,9]", "data.pca=50", "eps=[0.1]", "chains=2", "seconds=0.2", "m=200",
        "batch=100", "step_size=1e-5", "block=20"])),
    "austerity.big_n": (None, _from_file("austerity/bign.yaml", HMC_TINY + [
        "data.synthetic={n: 1000, d: 4, seed: 1, test: 30}", "ns=[2000,3000]", "seconds=0.2",
        "block=10"])),
    "austerity.mrf_calibration": (None, _from_file("austerity/fig7.yaml", [
        "model.D=12", "minibatch=10", "eps=[0.0,0.2]", "chains=4", "budget.seconds=null",
        "budget.sweeps=30", "burn_in=5", "bins=5", "min_count=10", "block=16"])),
    "austerity.mrf_joint_error": (None, _from_file("austerity/fig8.yaml", [
        "model.D=9", "minibatch=7", "chains=2", "subsets.M=10", "truth.chains=4",
        "truth.sweeps=100", "truth.burn_in=10", "truth.cache_dir=null", "budget.seconds=null",
        "budget.sweeps=100", "points=5", "block=32",
        "samplers={exact: {method: exact}, eps=0.25: {method: approx, eps: 0.25}}"])),
    # every baseline but NTRW (its optimiser is 4/5 of this run; its curve is drawn as theirs)
    "perturb_map.logz_vs_coupling": (None, _from_file("perturb_map/fig1_left.yaml", [
        "grid.rows=3", "grid.cols=3", "couplings=[0.5,2.0]", "models=2", "perturbations=4",
        "copies=20", "probable_draws=1",
        "baselines=[structured_mean_field,bethe_bp,trw,mean_field]"])),
    "perturb_map.sampler_complexity": (None, _from_file("perturb_map/fig1_middle.yaml", [
        "sides=[2,3]", "models=2", "perturbations=4", "copies=20",
        "measure={max_side: 2, samples: 5, perturbations: 10}"])),
    "perturb_map.marginals_vs_coupling": (None, _from_file("perturb_map/fig1_right.yaml", [
        "grid.rows=2", "grid.cols=3", "couplings=[0.5,1.0]", "models=2", "samplers=[gibbs]",
        "mcmc.updates=600"])),
    "perturb_map.logz_of_models": (None, _logz_of_models),
    "perturb_map.marginal_vs_time": (None, _from_file("perturb_map/marginal_vs_time.yaml", [
        "grid.rows=2", "grid.cols=3", "seconds=0.1", "samplers=[gibbs]", "block=20"])),
    "rates_fpcd.isl": ("usps", _from_dict({
        "experiment": "rates_fpcd.isl", "name": "isl", **RBM_TINY,
        "samplers": {"gibbs": {"method": "gibbs"}, "rf": {"method": "rates-fpcd"}},
        "chains": 1, "budget": {"draws": 30},
        "isl": {"points": 3, "test_max": 30, "valid_max": 30, "reference": "gibbs",
                "speedup_at": [10]}, "sequence": {"length": 3}})),
    "rates_fpcd.sequences": ("usps", _from_file("rates_fpcd/fig1.yaml", [
        "train.hidden=8", "train.epochs=1", "data.max_train=200"])),
    "rates_fpcd.bias": ("usps", _from_dict({
        "experiment": "rates_fpcd.bias", "name": "bias", **RBM_TINY,
        "samplers": {"rf": {"method": "rates-fpcd", "eps_f": 0.01}},
        "budget": {"draws": 20}, "ll": {"points": 3}})),
    "rates_fpcd.sample": ("usps", _sample_run),
    "league.sample": (None, _from_dict({
        "experiment": "league.sample", "name": "sample", "family": "mrf", "target": "d12-s0.1",
        "samplers": {"exact": {"method": "exact"}}, "chains": 2, "budget": {"draws": 20}})),
}
ANY_RUN = "toy.gaussian"
# one pytest-xdist worker draws them all, so each small run is made once
pytestmark = pytest.mark.xdist_group("figure_axes")    # the run the figures of every experiment kind are drawn on


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """``small_run(kind)``: the directory of a small complete run of ``kind`` (made once)."""
    made = {}

    def get(kind):
        if kind not in made:
            need, make = SMALL_RUNS[kind]
            if need is not None:
                from mixlab.data import load
                try:
                    load(need)
                except DataError as exc:
                    pytest.skip(f"data set {need} not available: {exc}")
            d = tmp_path_factory.mktemp("figure-runs") / kind
            make(d)
            made[kind] = d
        return made[kind]
    return get


def unlabelled_axes(fig: Figure) -> list[str]:
    """Panels of ``fig`` missing an x or a y label.  A panel sharing its x axis with a labelled
    panel of the same column (or a twinx over it) has its x label; likewise y along a row."""
    missing = []
    for i, ax in enumerate(fig.axes):
        if (not ax.get_visible() or not ax.axison or ax.images
                or getattr(ax, "_colorbar", None) is not None):
            continue
        x0, y0, w, h = ax.get_position().bounds
        column = [a for a in ax.get_shared_x_axes().get_siblings(ax)
                  if np.allclose(a.get_position().bounds[::2], (x0, w))]
        row = [a for a in ax.get_shared_y_axes().get_siblings(ax)
               if np.allclose(a.get_position().bounds[1::2], (y0, h))]
        if not any(a.get_xlabel().strip() for a in column):
            missing.append(f"panel {i} ({ax.get_title()!r}): no x label")
        if not any(a.get_ylabel().strip() for a in row):
            missing.append(f"panel {i} ({ax.get_title()!r}): no y label")
    return missing


def test_every_registered_figure_has_a_small_run():
    kinds = {f.experiment for f in registry.all_figures().values()} - {"*"}
    assert kinds <= set(SMALL_RUNS), f"no small run for {sorted(kinds - set(SMALL_RUNS))}"


@pytest.mark.parametrize("name", sorted(registry.all_figures()))
def test_figure_axes_are_labelled(name, small_run):
    kind = registry.all_figures()[name]
    with RunReader(small_run(ANY_RUN if kind.experiment == "*" else kind.experiment)) as run:
        fig = Figure(figsize=kind.size)
        kind.draw(run, fig)
    assert fig.axes, f"{name} drew nothing"
    assert not unlabelled_axes(fig), f"{name}: {unlabelled_axes(fig)}"


def test_the_label_check_can_fail():
    fig = Figure()
    ax = fig.add_subplot(1, 3, 1)
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel("seconds")
    twin = ax.twinx()                    # its x label is the panel's; its own y label
    twin.set_ylabel("% of data used")
    fig.add_subplot(1, 3, 2).imshow(np.zeros((2, 2)))     # an image: exempt
    bare = fig.add_subplot(1, 3, 3)
    bare.set_ylabel("error")
    assert unlabelled_axes(fig) == ["panel 0 (''): no y label", "panel 3 (''): no x label"]
    ax.set_ylabel("samples")
    bare.set_xlabel("sweeps")
    assert unlabelled_axes(fig) == []
