"""Integer spec keys of the austerity experiments are bounded by what the code can hold (issue
19 item 4): huge values are refused at validation, naming the key and the bound."""

from pathlib import Path

import pytest

from mixlab.errors import SpecError
from mixlab.plugins import registry
from mixlab.spec.resolver import load_spec
from mixlab.spec.schema import ListOf, MapOf, Param, SamplerEntry

SPECS = Path(__file__).resolve().parents[2] / "experiments" / "austerity"


@pytest.mark.parametrize("spec, override, key, bound", [
    ("fig8.yaml", "minibatch=1e12", "minibatch", "<= 10000000"),
    ("fig8.yaml", "minibatch=1e30", "minibatch", "64-bit integer"),   # the generic int64 bound
    ("fig8.yaml", "model.seed=1e30", "model.seed", "64-bit integer"),
    ("fig7.yaml", "model.seed=-1", "model.seed", ">= 0"),
    ("fig3.yaml", "hmc.samples=1e9", "hmc.samples", "<= 1000000"),
    ("fig3.yaml", "hmc.samples=1e30", "hmc.samples", "64-bit integer"),
    ("fig3.yaml", "block=1e9", "block", "<= 100000"),
    ("fig8.yaml", "samplers={a: {method: approx, minibatch: 1.0e+12}}", "samplers.a.minibatch",
     "<= 10000000"),
])
def test_huge_values_are_refused_naming_key_and_bound(spec, override, key, bound):
    with pytest.raises(SpecError) as err:
        load_spec(SPECS / spec, overrides=[override])
    assert err.value.key == key and bound in str(err.value)


def _int_params(schema, path=""):
    if isinstance(schema, Param):
        if schema.type is int or schema.item is int:
            yield path, schema
    elif isinstance(schema, (MapOf, ListOf)):
        yield from _int_params(schema.schema, path + ".<name>")
    elif isinstance(schema, SamplerEntry):
        for name, kind in registry.samplers_for(schema.family).items():
            if kind.module.startswith("mixlab.austerity"):
                yield from _int_params(kind.params, f"{path}.<{name}>")
    elif isinstance(schema, dict):
        for k, v in schema.items():
            yield from _int_params(v, f"{path}.{k}" if path else k)


def test_every_integer_key_has_an_upper_bound():
    kinds = {n: k for n, k in registry.experiments().items() if n.startswith("austerity.")}
    assert len(kinds) == 8   # the seven kinds behind Figs 1-8, and austerity.big_n
    unbounded = [f"{n}: {p}" for n, k in kinds.items() for p, prm in _int_params(k.schema)
                 if prm.hi is None]
    assert not unbounded, unbounded
