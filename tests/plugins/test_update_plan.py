"""mixlab.run.update.plan on hand-made records: which streams and stages a spec change makes stale."""

import io

import h5py

from mixlab.plugins.sampler_builds import Built
from mixlab.run.update import plan as plan_records
from mixlab.run.update import stage_inputs, stream_inputs
from mixlab.runfile.records import read_records, write_record

SPEC = {"name": "x", "experiment": "toy.gaussian", "seed": 1, "seed_key": [], "scale": "quick",
        "chains": 4, "samplers": {"a": {"method": "gibbs"}, "b": {"method": "metropolis"}}}
MOD = "mixlab.spinglass.samplers"


def run_file(spec):
    f = h5py.File(io.BytesIO(), "w")
    for label in spec["samplers"]:
        g = f.create_group(f"streams/{label}")
        write_record(g, stream_inputs(spec, "mixlab.toy.generic",
                                      Built("spinglass", spec["samplers"][label]["method"], MOD,
                                            label, {})))
        g.create_group("_checkpoint").attrs["complete"] = True
    model = f.create_group("stages/model")         # before the streams, built no sampler
    model.attrs["done"] = True
    write_record(model, stage_inputs(spec, "mixlab.toy.generic", [], []))
    per_a = f.create_group("stages/curve_a")       # built sampler a
    per_a.attrs["done"] = True
    write_record(per_a, stage_inputs(spec, "mixlab.toy.generic",
                                     [Built("spinglass", "gibbs", MOD, "a", {})], []))
    after = f.create_group("stages/after_b")       # computed from stream b's draws
    after.attrs["done"] = True
    write_record(after, stage_inputs(spec, "mixlab.toy.generic", [], ["b"]))
    return f


def plan(f, spec, live=True):
    """The plan of the records the open file ``f`` holds (mixlab.runfile.records)."""
    return plan_records(read_records(f), spec, live)


def test_nothing_changed_nothing_stale():
    p = plan(run_file(SPEC), SPEC)
    assert p.empty and p.keep == ["a", "b"]


def test_one_sampler_changed_reruns_its_stream_and_what_depends_on_it():
    f = run_file(SPEC)
    new = dict(SPEC, samplers={"a": {"method": "gibbs"}, "b": {"method": "metropolis",
                                                                 "init": "plus"}})
    p = plan(f, new)
    assert p.rerun == {"b": ["samplers.b changed"]} and p.keep == ["a"]
    assert set(p.stages) == {"after_b"}            # the model and a's stage are kept


def test_added_removed_and_shared_settings():
    f = run_file(SPEC)
    p = plan(f, dict(SPEC, samplers={"a": {"method": "gibbs"}, "c": {"method": "gibbs"}}))
    assert p.remove == {"b": ["sampler 'b' is no longer in the spec"]} and p.add == ["c"]
    assert set(p.stages) == {"after_b"}
    p = plan(f, dict(SPEC, chains=8))
    assert set(p.rerun) == {"a", "b"} and set(p.stages) == {"model", "curve_a", "after_b"}
    p = plan(f, dict(SPEC, name="renamed", description="same numbers"))
    assert p.empty
