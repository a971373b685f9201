"""Plugins through the CLI: discovery from the three sources, 'mixlab plugins', provenance in
the run, and one clear paragraph (exit 1) for a broken plugin. Subprocesses wherever the test
needs a real process (installed plugins, MIXLAB_PLUGINS, exit codes, tracebacks); a second
command on the same error path runs in this process."""

import json
from pathlib import Path

import h5py
import pytest

from .conftest import ON_EXAMPLE_SITE, REPO, invoke_mixlab, mixlab_env, run_mixlab, show_run

# A one-file plugin with an experiment kind of its own that runs any registered mrf sampler on a
# 6-variable triplet MRF (the family's target) and records the exact joint's TV: the whole path
# spec -> plugin -> SamplerEntry lookup -> stream -> provenance, independent of the papers' kinds.
HARNESS = '''
import numpy as np
from mixlab.api import MRF, MapOf, Param, SamplerEntry, experiment, figure, sampler, samplers_for

class SweepGibbs:
    """Reference: systematic-scan single-site Gibbs from the exact conditionals."""

    def __init__(self, model, chains):
        self.m, self.chains = model, chains

    def init(self, rng):
        return {"x": (rng.random((self.chains, self.m.D)) < 0.5).astype(np.uint8)}

    def step(self, state, rng):
        x = state["x"].astype(np.float64)
        for i in range(self.m.D):
            logit = self.m.h[i] + np.einsum("cj,jk,ck->c", x, self.m.Q[i], x)
            x[:, i] = rng.random(self.chains) * (1 + np.exp(-logit)) < 1
        return {"x": x.astype(np.uint8)}, {"samples": x > 0}, {}


@sampler(MRF, "plugintest-sweep")
def make_sweep(target, params, chains):
    return SweepGibbs(target, chains)


@experiment("plugintest.mrf_tv", schema={
    "samplers": MapOf(SamplerEntry(MRF), min_len=1),
    "chains": Param(200, int, lo=1), "draws": Param(200, int, lo=1)})
def run(ctx):
    from mixlab.austerity.mrf import enumerate_joint, make_mrf
    model = make_mrf(D=6, s=0.7, rng=np.random.default_rng(3))
    _, P = enumerate_joint(model)
    for label, entry in ctx.params["samplers"].items():
        kind = samplers_for(MRF)[entry["method"]]
        params = {k: v for k, v in entry.items() if k != "method"}
        s = kind.factory(model, params, ctx.params["chains"])
        ctx.stream(label, s, draws=ctx.params["draws"], rng=ctx.rng(label))
        x = ctx.store.stream(label, "samples")
        codes = (x.reshape(-1, 6).astype(int) << np.arange(6)).sum(1)
        q = np.bincount(codes, minlength=64) / len(codes)
        ctx.store.set_result(f"tv/{label}", float(0.5 * np.abs(q - P).sum()))

@figure("plugintest.tv", experiment="plugintest.mrf_tv")
def fig(run, f):
    ax = f.add_subplot()
    r = run.results()
    ax.bar(range(len(r)), list(r.values()))
'''

SPEC = """
experiment: plugintest.mrf_tv
plugins: [./harness.py, {extra}]
samplers:
  ref: {{method: plugintest-sweep}}
  mine: {{method: {method}}}
chains: 200
draws: 150
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def one_paragraph(r):
    err = r.stderr.strip()
    assert "Traceback" not in err, err
    assert err.startswith("Error:") and "\n\n" not in err, err
    return err


@ON_EXAMPLE_SITE
def test_mixlab_plugins_lists_the_installed_example(example_site):
    r = run_mixlab("plugins", "--json", env=mixlab_env(example_site))
    assert r.returncode == 0, r.stderr
    inv = json.loads(r.stdout)
    ours = {(s["family"], s["name"]): s for s in inv["samplers"]
            if s["plugin"] == "mixlab_example_samplers"}
    assert set(ours) == {("rbm", "pt-gibbs"), ("spinglass", "houdayer"), ("logistic", "mala"),
                         ("mrf", "blocked-gibbs"), ("potts", "gibbs"),
                         ("potts", "swendsen-wang"), ("potts", "biased-gibbs")}
    assert {p["key"] for p in ours[("rbm", "pt-gibbs")]["params"]} == {"replicas", "beta_min",
                                                                        "k"}
    (plug,) = [p for p in inv["plugins"] if p["module"] == "mixlab_example_samplers"]
    assert plug["source"] == "entry point" and plug["distribution"] == "mixlab-example-samplers"
    assert plug["version"] == "0.1.0" and len(plug["registered"]) == 8   # potts: 1 + 3
    text = run_mixlab("plugins", env=mixlab_env(example_site)).stdout
    assert "mrf/blocked-gibbs" in text and "plugin mixlab_example_samplers" in text
    assert "block            = 2" in text


@ON_EXAMPLE_SITE
def test_py_plugin_via_spec_runs_and_is_recorded(tmp_path, example_site):
    write(tmp_path / "harness.py", HARNESS)
    (tmp_path / "plugs").mkdir()
    write(tmp_path / "plugs" / "mine.py",
          (REPO / "examples/plugin/specs/mysampler.py").read_text())
    spec = write(tmp_path / "s.yaml", SPEC.format(extra="plugs/mine.py", method="random-scan"))
    out = tmp_path / "run"
    # run from another directory: relative plugin paths are relative to the spec file
    r = run_mixlab("run", spec, "--out", out, "--quiet", cwd=REPO / "docs",
                   env=mixlab_env(example_site))
    assert r.returncode == 0, r.stderr
    with h5py.File(out / "run.h5", "r") as f:
        recs = json.loads(f.attrs["plugins"])
        tv = {k: float(v) for k, v in f["results"].attrs.items()}
    by_file = {Path(p["file"]).name: p for p in recs if p["file"]}
    assert by_file["mine.py"]["source"] == "spec"
    assert by_file["mine.py"]["registered"] == ["sampler mrf/random-scan"]
    import hashlib

    assert by_file["mine.py"]["sha256"] == hashlib.sha256(
        (tmp_path / "plugs/mine.py").read_bytes()).hexdigest()
    assert any(p["distribution"] == "mixlab-example-samplers" for p in recs)
    assert tv["tv/ref"] < 0.03 and tv["tv/mine"] < 0.03     # 30k draws, 64 states
    # show reads the run file alone: no plugin is needed (this process loaded none of them)
    r = show_run(out, "--json")
    assert json.loads(r.stdout)["status"] == "complete"
    shown = {Path(p["file"]).name: p for p in json.loads(r.stdout)["provenance"]["plugins"]
             if p["file"]}
    assert shown["mine.py"]["sha256"] == by_file["mine.py"]["sha256"]
    assert "mine.py sha256 " + by_file["mine.py"]["sha256"][:12] in show_run(out).stdout


@ON_EXAMPLE_SITE
def test_py_plugin_via_environment_and_figure(tmp_path, example_site):
    harness = write(tmp_path / "harness.py", HARNESS)
    spec = write(tmp_path / "s.yaml", SPEC.replace("plugins: [./harness.py, {extra}]\n", "")
                 .format(method="blocked-gibbs"))
    env = mixlab_env(example_site, MIXLAB_PLUGINS=f"{harness}")
    out = tmp_path / "run"
    r = run_mixlab("run", spec, "--out", out, "--quiet", env=env)
    assert r.returncode == 0, r.stderr
    assert (out / "figures" / "plugintest.tv.png").exists()
    with h5py.File(out / "run.h5", "r") as f:
        srcs = {p["source"] for p in json.loads(f.attrs["plugins"])}
        assert float(f["results"].attrs["tv/mine"]) < 0.03
    assert srcs == {"entry point", "MIXLAB_PLUGINS"}
    # a figure registered by a plugin is found when the plugin is loaded
    r = run_mixlab("plot", out, "-o", tmp_path / "f.png", env=env)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "f.png").exists()


BROKEN = {
    "import": ("import numpy\nimport not_a_module_mixlab_xyz\n",
               "failed to import: ModuleNotFoundError: No module named 'not_a_module_mixlab_xyz'"),
    "family": ("from mixlab.api import sampler\n@sampler('isingish', 'x')\n"
               "def make(t, p, c):\n    return None\n",
               "registered something invalid: unknown sampler family 'isingish'"),
    "shadow": ("from mixlab.api import experiment\n@experiment('toy.gaussian', schema={})\n"
               "def run(ctx):\n    pass\n",
               "registered something invalid: experiment 'toy.gaussian' is already registered "
               "by mixlab.toy.generic"),
    "schema": ("from mixlab.api import sampler\n@sampler('mrf', 'y', params={'a': 3})\n"
               "def make(t, p, c):\n    return None\n",
               "its parameter schema is not made of Param"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_plugin_one_paragraph_exit_1(tmp_path, case, clean_registry):
    code, msg = BROKEN[case]
    bad = write(tmp_path / f"bad_{case}.py", code)
    # named on the command line: an error in one paragraph, exit 1 from a real process
    r = run_mixlab("plugins", bad)
    assert r.returncode == 1
    err = one_paragraph(r)
    assert str(bad) in err and msg in err, err
    # the same through a spec: named by its key, nothing run (in this process, its registry
    # restored afterwards: the exit code and the message are the command's own)
    write(tmp_path / "harness.py", HARNESS)
    spec = write(tmp_path / "s.yaml", SPEC.format(extra=bad.name, method="plugintest-sweep"))
    r = invoke_mixlab("run", spec, "--out", tmp_path / "run")
    assert r.exit_code == 1 and "plugins[1]" in one_paragraph(r)
    assert str(bad) in r.stderr and msg in r.stderr, r.stderr
    assert not (tmp_path / "run").exists()


def test_broken_installed_plugins_each_warn_in_one_line_and_are_listed(tmp_path):
    """Every case of BROKEN and a missing module installed at once (MIXLAB_PLUGINS): the
    cases are independent, so one process shows each one's warning line, BROKEN entry with
    the whole message, and (--debug) traceback."""
    bad = {case: write(tmp_path / f"bad_{case}.py", code) for case, (code, _) in BROKEN.items()}
    env = mixlab_env(MIXLAB_PLUGINS=":".join([*map(str, bad.values()), "no_such_module_xyz"]))
    r = run_mixlab("plugins", env=env)
    assert r.returncode == 0, r.stderr
    warnings = r.stderr.strip().splitlines()
    assert len(warnings) == len(bad) + 1, r.stderr
    assert all(w.startswith("warning: plugin") for w in warnings), r.stderr
    for case, path in bad.items():
        [warning] = [w for w in warnings if str(path) in w]        # one line per plugin
        assert r.stdout.count(f"{path}  [MIXLAB_PLUGINS]  BROKEN") == 1, r.stdout
        assert BROKEN[case][1] in r.stdout, (case, r.stdout)
    [warning] = [w for w in warnings if "no_such_module_xyz" in w]
    assert "there is no module 'no_such_module_xyz'" in r.stdout
    assert r.stdout.count("BROKEN") == len(bad) + 1, r.stdout
    r = run_mixlab("--debug", "plugins", env=env)
    traces = r.stderr.split("Traceback (most recent call last)")[1:]
    for case, path in bad.items():
        assert any(BROKEN[case][1].split(": ")[-1] in t for t in traces), (case, r.stderr)


def test_missing_plugin_file_or_module_in_spec_is_a_spec_error(tmp_path, clean_registry):
    write(tmp_path / "harness.py", HARNESS)
    # a missing file: a spec error (exit 2) from a real process
    spec = write(tmp_path / "s.yaml", SPEC.format(extra="nothere.py", method="plugintest-sweep"))
    r = run_mixlab("run", spec, "--out", tmp_path / "run")
    assert r.returncode == 2
    assert "spec key 'plugins[1]'" in one_paragraph(r)
    # a missing module: the same loader and error path, in this process (its registry
    # restored afterwards)
    spec = write(tmp_path / "s.yaml", SPEC.format(extra="no_such_module_xyz",
                                                  method="plugintest-sweep"))
    r = invoke_mixlab("run", spec, "--out", tmp_path / "run")
    assert r.exit_code == 2
    assert "spec key 'plugins[1]'" in one_paragraph(r)
    assert not (tmp_path / "run").exists()
    r = run_mixlab("plugins", "no_such_module_xyz")
    assert r.returncode == 1 and "there is no module 'no_such_module_xyz'" in one_paragraph(r)
    # installed (MIXLAB_PLUGINS), a missing module is listed as broken: see
    # test_broken_installed_plugins_each_warn_in_one_line_and_are_listed


WRONG_SHAPES = '''
import numpy as np
from mixlab.api import MRF, sampler

class Bad:
    def __init__(self, chains):
        self.chains = chains
    def init(self, rng):
        return {"x": np.zeros((self.chains, 6), np.uint8)}
    def step(self, state, rng):
        return state, {"samples": np.zeros((self.chains + 1, 6), bool)}, {}

@sampler(MRF, "wrong-shapes")
def make(target, params, chains):
    return Bad(chains)
'''


def test_sampler_with_wrong_step_shapes_fails_the_run_clearly(tmp_path, clean_registry):
    """In this process (its registry restored afterwards): a failing run's exit code and
    paragraph from a real process are tests/plugins/test_plugin_failures.py's subprocess
    test's."""
    write(tmp_path / "harness.py", HARNESS)
    write(tmp_path / "wrong.py", WRONG_SHAPES)
    spec = write(tmp_path / "s.yaml", SPEC.format(extra="./wrong.py", method="wrong-shapes"))
    out = tmp_path / "run"
    r = invoke_mixlab("run", spec, "--out", out, "--quiet")
    assert r.exit_code == 1
    err = one_paragraph(r)
    assert "breaks the sampler contract" in err and "wrong.py" in err
    assert "draw 'samples' has shape (201, 6), expected (chains, ...) with chains = 200" in err
    assert json.loads(show_run(out, "--json").stdout)["status"] == "failed"
