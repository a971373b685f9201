"""A sampler registered for the ``rbm`` family from outside mixlab.rbm (as a plugin would) runs in
the rates-FPCD experiments and appears as one more series in their figures."""

import pytest
from matplotlib.figure import Figure

from mixlab.errors import SpecError
from mixlab.plugins import registry
from mixlab.rbm import samplers as S
from mixlab.run.context import execute
from mixlab.runfile.store import RunReader
from mixlab.spec.resolver import resolve
from mixlab.spec.schema import Param

from .test_experiments import TINY, _need_usps

NAME = "test-binary-gibbs"


class BinaryGibbs:
    """Gibbs(k) emitting binary samples only, with no ``draw_keys`` attribute (the experiment
    must find its keys by itself) and no fast weights."""

    def __init__(self, target, k, chains):
        self.inner = S.Gibbs(target, k=k, chains=chains, init=target.init,
                             init_data=target.train_X, emit="binary")
        self.chains = chains

    def init(self, rng):
        return self.inner.init(rng)

    def step(self, state, rng):
        return self.inner.step(state, rng)


@pytest.fixture
def plugin_sampler():
    registry.load_plugins()

    @registry.sampler("rbm", NAME, params={"k": Param(2, int, lo=1, help="sweeps")},
                      help="test plugin")
    def factory(target, params, chains):
        return BinaryGibbs(target, params["k"], chains)

    yield factory
    registry._SAMPLERS["rbm"].pop(NAME, None)


def test_plugin_sampler_is_one_more_series(plugin_sampler, tmp_path):
    _need_usps()
    raw = {**TINY, "samplers": {"gibbs": {"method": "gibbs"},
                                "mine": {"method": NAME, "k": 3}},
           "budget": {"draws": 60}, "record": ["samples", "means"]}
    raw["isl"] = {**TINY["isl"], "reference": "gibbs", "speedup_at": []}
    spec = resolve(raw)
    assert spec["samplers"]["mine"] == {"method": NAME, "k": 3}
    execute(spec, tmp_path / "r", quiet=True)
    with RunReader(tmp_path / "r") as r:
        res = r.results()
        assert set(r.metrics()["isl"]) == {"gibbs", "mine"}
        assert res["isl_centres/mine"] == "samples" and res["isl_centres/gibbs"] == "means"
        assert "speedup/mine" in res
        assert r.stream_keys("mine") == ["samples"]
        assert r.array("sequence/mine").shape == (5, 256)
        assert set(r.stream_summaries("mine")) >= {"free_energy", "active_pixels"}
        # the ISL figure and the sequences figure both draw the plugin's series
        for fig_name, n_axes in (("rates_fpcd.isl_curves", 1), ("rates_fpcd.fig1", 2)):
            fig = Figure()
            registry.all_figures()[fig_name].draw(r, fig)
            assert len(fig.axes) == n_axes
            if fig_name == "rates_fpcd.isl_curves":
                labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
                assert any(t.startswith("mine (") and "[binary centres]" in t for t in labels)
            else:
                assert fig.axes[1].get_title(loc="left") == f"{NAME}, k=3"
    assert (tmp_path / "r" / "figures" / "rates_fpcd.isl_curves.png").stat().st_size > 0


def test_unknown_sampler_and_unknown_key_name_the_spec_key(plugin_sampler):
    with pytest.raises(SpecError, match=r"samplers\.x\.method.*did you mean 'rates-fpcd'"):
        resolve({**TINY, "samplers": {"x": {"method": "rates-fpdc"}}})
    with pytest.raises(SpecError, match=r"samplers\.x\.eps_f"):
        resolve({**TINY, "samplers": {"x": {"method": NAME, "eps_f": 0.1}}})
    with pytest.raises(SpecError, match=r"samplers\.x\.eps_f"):
        resolve({**TINY, "samplers": {"x": {"method": "gibbs", "eps_f": 0.1}}})
