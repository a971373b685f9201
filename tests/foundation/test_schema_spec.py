import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixlab.errors import SpecError
from mixlab.spec.resolver import parse_override, parse_yaml, resolve
from mixlab.spec.schema import ListOf, MapOf, Param, validate

SCHEMA = {
    "chains": Param(4, int, lo=1),
    "step": Param(0.5, float, lo=0, lo_open=True),
    "method": Param("gibbs", str, choices=("gibbs", "rates-fpcd")),
    "samplers": MapOf({"eps": Param(0.0, float, lo=0)}),
    "layers": ListOf({"units": Param(type=int, lo=1)}),
    "budget": {"draws": Param(10, int, lo=1, nullable=True)},
}


def test_defaults_filled():
    out = validate({}, SCHEMA)
    assert out == {"chains": 4, "step": 0.5, "method": "gibbs", "samplers": {}, "layers": [],
                   "budget": {"draws": 10}}


def test_unknown_key_names_closest():
    with pytest.raises(SpecError) as e:
        validate({"budget": {"drawz": 3}}, SCHEMA)
    assert "budget.drawz" in str(e.value) and "did you mean 'draws'" in str(e.value)


@pytest.mark.parametrize("spec,key,words", [
    ({"chains": 0}, "chains", ">= 1"),
    ({"step": -0.1}, "step", "> 0"),
    ({"step": 0}, "step", "> 0"),
    ({"chains": 2.5}, "chains", "integer"),
    ({"chains": True}, "chains", "integer"),
    ({"method": "gibs"}, "method", "did you mean 'gibbs'"),
    ({"samplers": {"a": {"eps": -1}}}, "samplers.a.eps", ">= 0"),
    ({"layers": [{"units": 3}, {}]}, "layers[1].units", "required"),
    ({"budget": 5}, "budget", "mapping"),
])
def test_bad_values_name_the_key(spec, key, words):
    with pytest.raises(SpecError) as e:
        validate(spec, SCHEMA)
    assert f"'{key}'" in str(e.value) and words in str(e.value)


def test_int_accepted_for_float_and_null_budget():
    out = validate({"step": 1, "budget": {"draws": None}}, SCHEMA)
    assert out["step"] == 1.0 and isinstance(out["step"], float)
    assert out["budget"]["draws"] is None


def test_override_parsing():
    assert parse_override("a.b=1e-3") == ("a.b", 0.001)
    assert parse_override("x=[1, 2]") == ("x", [1, 2])
    assert parse_override("name=hello") == ("name", "hello")
    with pytest.raises(SpecError):
        parse_override("novalue")


def test_scales_then_overrides_then_seed():
    raw = {"experiment": "toy.gaussian", "dim": 2, "seed": 3,
           "scales": {"quick": {"budget.draws": 7}, "paper": {"budget.draws": 900}}}
    q = resolve(raw)
    assert q["budget"]["draws"] == 7 and q["scale"] == "quick" and "scales" not in q
    p = resolve(raw, scale="paper", overrides=["dim=5"], seed=11)
    assert p["budget"]["draws"] == 900 and p["dim"] == 5 and p["seed"] == 11


def test_unknown_experiment_suggests():
    with pytest.raises(SpecError) as e:
        resolve({"experiment": "toy.gausian"})
    assert "did you mean 'toy.gaussian'" in str(e.value)


def test_malformed_yaml_names_line():
    with pytest.raises(SpecError) as e:
        parse_yaml("experiment: toy.gaussian\ndim: [1, 2\n", "spec.yaml")
    assert "spec.yaml" in str(e.value) and "line" in str(e.value)


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10)
keys = st.sampled_from(["experiment", "dim", "chains", "step", "budget", "thin", "seed", "name",
                        "scales", "block", "budget.draws", "budget.seconds", "bogus", "sweep"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(keys, yaml_values, max_size=6), st.sampled_from(["quick", "paper"]))
def test_fuzz_resolve_never_crashes(raw, scale):
    """Any mapping either resolves to a valid spec or fails with a SpecError (exit code 2)."""
    raw.setdefault("experiment", "toy.gaussian")
    try:
        out = resolve(raw, scale=scale)
    except SpecError as exc:
        assert exc.exit_code == 2 and str(exc)
    else:
        assert out["experiment"] == "toy.gaussian"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_yaml_text_never_crashes(text):
    try:
        parse_yaml(text)
    except SpecError as exc:
        assert exc.exit_code == 2
