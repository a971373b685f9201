"""mixlab.plugins.discovery.BUILTIN_GROUPS says which of mixlab's own modules register which experiments,
figures and samplers, so that a registry read imports only what it needs. These tests check the
tables against what the modules register when each group is imported alone, in a process of its
own (imports are process-wide, so one process per group), and that a toy run imports no family.

The processes per group are forked from one fresh interpreter that has imported mixlab's plugin
tables and no group: each starts from what a fresh process would hold, without starting Python
again. Third-party libraries (which register nothing of mixlab's) are imported once before the
forks; numba and scipy only after the toy group's fork, whose process must import neither."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from mixlab.plugins import discovery as plugins
from mixlab.plugins import registry

REGISTERED = """
import json, os, sys
from mixlab.plugins import discovery as plugins, registrations as r


def registered(groups):
    \"\"\"What loading ``groups`` (None: every group) registers, in a child forked now.\"\"\"
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            plugins.load_builtin(groups)
            os.write(write, json.dumps({
                "experiments": sorted(r._EXPERIMENTS),
                "figures": sorted(f"{n}@{f.experiment}" for n, f in r._FIGURES.items()),
                "samplers": sorted(f"{fam}/{n}" for fam, kinds in r._SAMPLERS.items()
                                   for n in kinds),
                "modules": sorted(m for m in sys.modules
                                  if m.split(".")[0] in ("numba", "scipy")),
            }).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        out = fh.read()
    status = os.waitpid(pid, 0)[1]
    if status != 0:
        raise SystemExit(f"loading group(s) {groups} failed (wait status {status})")
    return json.loads(out)


import h5py, numpy, yaml  # noqa: E401,F401  (registers nothing of mixlab's)
report = {"toy": registered(("toy",))}
import maxflow, numba, scipy.special, scipy.stats  # noqa: E401,F401  (nor do these)
for group in sys.argv[1:]:
    report[group] = registered((group,))
report["*"] = registered(None)
print(json.dumps(report))
"""


def registered_alone() -> tuple[dict, dict]:
    """(what every group together registers, {group: what it registers alone})."""
    env = {k: v for k, v in os.environ.items() if k != "MIXLAB_PLUGINS"}
    groups = [g for g in plugins.BUILTIN_GROUPS if g != "toy"]
    out = subprocess.run([sys.executable, "-c", REGISTERED, *groups], env=env, check=True,
                         capture_output=True, text=True).stdout
    report = json.loads(out)
    return report.pop("*"), report


def test_each_group_registers_what_the_tables_say_it_does():
    everything, alone = registered_alone()
    assert alone.keys() == plugins.BUILTIN_GROUPS.keys()
    for name in everything["experiments"]:
        group = name.split(".")[0]
        assert group in plugins.BUILTIN_GROUPS, f"experiment {name}: no group '{group}'"
        assert name in alone[group]["experiments"], (
            f"experiment {name} is not registered by group {group}'s modules alone")
    for item in everything["figures"]:
        name, experiment = item.split("@")
        group = "diagnostics" if experiment == "*" else experiment.split(".")[0]
        assert item in alone[group]["figures"], (
            f"figure {name} (of {experiment}) is not registered by group {group}'s modules alone")
    for item in everything["samplers"]:
        family = item.split("/")[0]
        group = plugins.FAMILY_GROUPS[family]
        assert item in alone[group]["samplers"], (
            f"sampler {item} is not registered by group {group}'s modules alone")
    # and the groups together are everything: no module registers outside the tables
    for kind in ("experiments", "figures", "samplers"):
        union = set().union(*(set(a[kind]) for a in alone.values()))
        assert union == set(everything[kind]), kind
    # a toy experiment's group needs neither numba nor scipy
    assert alone["toy"]["modules"] == [], alone["toy"]["modules"]


def test_a_toy_spec_resolves_without_importing_any_family(tmp_path):
    code = ("import sys\nfrom mixlab.spec.resolver import load_spec\nfrom mixlab.spec.builtin import resolve_spec\n"
            "load_spec(resolve_spec('toy/gaussian'))\n"
            "print(sorted(m for m in sys.modules if m.startswith(('mixlab.rbm', "
            "'mixlab.spinglass', 'mixlab.austerity', 'mixlab.league', 'numba'))))")
    env = {k: v for k, v in os.environ.items() if k != "MIXLAB_PLUGINS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                         text=True, cwd=tmp_path).stdout
    assert out.strip() == "[]", out


def test_a_family_read_loads_that_family_and_a_full_read_loads_all():
    # in this process everything may already be loaded; the tables must still agree with it
    assert set(registry.samplers_for("spinglass")) >= {"gibbs", "metropolis", "swendsen_wang"}
    assert "toy.gaussian" in registry.experiments()
    assert registry.find_experiment("no.such.experiment") is None
    assert "diagnostics" in registry.figures_of_run("toy.gaussian")
