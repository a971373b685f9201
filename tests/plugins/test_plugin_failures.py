"""Every failure in a plugin sampler's code names it: an exception in its factory, init or step,
a draw of the wrong trailing shape or dtype for its family, a state that changes shape, a NaN
where the family forbids it.  Each gives one paragraph naming the plugin (module, file), the
stream and the step (exit 1), and the run is marked failed."""

import numpy as np
import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.runfile.store import RunReader

from .conftest import mixlab_env, run_mixlab, show_run

HARNESS = '''
import numpy as np
from mixlab.plugins import registry
from mixlab.api import LOGISTIC, MRF, MapOf, Param, SamplerEntry, experiment

def target(family):
    if family == MRF:
        from mixlab.austerity.mrf import make_mrf
        return make_mrf(D=6, s=0.7, rng=np.random.default_rng(3))
    from mixlab.austerity.logistic import LogisticPosterior
    from mixlab.austerity.target_logistic import LogisticTarget
    rng = np.random.default_rng(2)
    post = LogisticPosterior(rng.normal(size=(50, 2)), (rng.random(50) < 0.5).astype(int))
    return LogisticTarget(post, np.zeros((4, post.d)))

def kind(family):
    def run(ctx):
        tgt = target(family)
        for label, entry in ctx.params["samplers"].items():
            k = registry.get_sampler(family, entry["method"], f"samplers.{label}.method")
            params = {key: v for key, v in entry.items() if key != "method"}
            ctx.stream(label, k.factory(tgt, params, 4), draws=ctx.params["draws"],
                       block=ctx.params["block"])
    experiment(f"failtest.{family}", schema={
        "samplers": MapOf(SamplerEntry(family), min_len=1),
        "draws": Param(12, int, lo=1), "block": Param(5, int, lo=1)})(run)

kind(MRF)
kind(LOGISTIC)
'''

BAD = '''
import numpy as np
from mixlab.api import LOGISTIC, MRF, Param, sampler

class Bad:
    def __init__(self, D, chains, mode):
        self.D, self.chains, self.mode = D, chains, mode
    def init(self, rng):
        if self.mode == "init":
            raise KeyError("no such table")
        return {"x": np.zeros((self.chains, self.D)), "t": np.zeros(())}
    def step(self, state, rng):
        t = state["t"] + 1
        x = rng.random((self.chains, self.D))
        if self.mode == "step" and t == 3:
            raise RuntimeError("boom")
        if self.mode == "nan" and t == 7:
            x[2, 1] = np.nan
        if self.mode == "state":
            return {"x": x[:, :-1], "t": t}, {"samples": x < 0.5}, {}
        draw = {"shape": x[:, :-1] < 0.5, "dtype": x, "nan": x}.get(self.mode, x < 0.5)
        return {"x": x, "t": t}, {"samples": draw}, {}

@sampler(MRF, "bad", params={"mode": Param("step", str)})
def make(target, params, chains):
    if params["mode"] == "factory":
        return target.no_such_attribute
    return Bad(target.D, chains, params["mode"])

@sampler(LOGISTIC, "bad-logistic", params={"mode": Param("nan", str)})
def make_logistic(target, params, chains):
    return Bad(target.posterior.d, chains, params["mode"])
'''

SPEC = """
experiment: failtest.{family}
plugins: [./harness.py, ./bad.py]
samplers:
  ref: {{method: {ref}}}
  mine: {{method: {method}, mode: {mode}}}
draws: 12
block: 5
"""


def write_spec(tmp_path, mode, family="mrf"):
    (tmp_path / "harness.py").write_text(HARNESS)
    (tmp_path / "bad.py").write_text(BAD)
    ref = "exact" if family == "mrf" else "rw_mh"
    method = "bad" if family == "mrf" else "bad-logistic"
    spec = tmp_path / "s.yaml"
    text = SPEC.format(family=family, ref=ref, method=method, mode=mode)
    if family == "logistic":
        text = text.replace("{method: rw_mh}", "{method: rw_mh, sigma: 0.1}")
    spec.write_text(text)
    return spec


def paragraph(r) -> str:
    text = (r.stderr or r.output).strip()
    assert "Traceback" not in text, text
    assert text.startswith("Error:") and "\n\n" not in text, text
    return " ".join(text.split())


def failed_run(tmp_path, mode, family="mrf") -> str:
    spec = write_spec(tmp_path, mode, family)
    out = tmp_path / "run"
    r = CliRunner().invoke(cli, ["run", str(spec), "--out", str(out), "--quiet"])
    assert r.exit_code == 1, r.output
    with RunReader(out) as run:
        assert run.status == "failed"
    text = paragraph(r)
    assert f"file {tmp_path / 'bad.py'}" in text and "module mixlab_plugin_bad" in text, text
    return text


@pytest.mark.parametrize("mode,words", [
    ("step", ["stream 'mine' at step 3", "RuntimeError: boom", "bad.py:16 in step",
              "in the plugin's step"]),
    ("init", ["stream 'mine' in init", "KeyError", "bad.py:10 in init"]),
    ("factory", ["'mine'", "AttributeError", "no_such_attribute", "in make",
                 "in the plugin's factory"]),
    ("shape", ["stream 'mine', step 1", "draw 'samples' has shape (4, 5)",
               "(C, D) = (4, 6)"]),
    ("dtype", ["stream 'mine', step 1", "draw 'samples' has dtype float64", "astype(bool)"]),
    ("state", ["stream 'mine', step 1", "'x' is (4, 5) (init gave (4, 6))"]),
])
def test_plugin_failure_names_the_plugin_stream_and_step(tmp_path, clean_registry, mode, words):
    text = failed_run(tmp_path, mode)
    assert "sampler 'bad' (family mrf) from plugin" in text, text
    for w in words:
        assert w in text, (w, text)


def test_nan_draw_names_the_step_and_chain(tmp_path, clean_registry):
    text = failed_run(tmp_path, "nan", family="logistic")
    assert "sampler 'bad-logistic' (family logistic)" in text
    assert "non-finite value (NaN or inf) in draw 'samples' of stream 'mine' at step 7 " \
           "(chain 2)" in text, text
    with RunReader(tmp_path / "run") as run:     # the draws before the bad block are kept
        assert run.status == "failed"


def test_step_failure_through_the_cli_subprocess(tmp_path):
    spec = write_spec(tmp_path, "step")
    out = tmp_path / "run"
    r = run_mixlab("run", spec, "--out", out, "--quiet", env=mixlab_env())
    assert r.returncode == 1, r.stderr
    text = paragraph(r)
    assert f"from plugin {tmp_path / 'bad.py'}" in text and "stream 'mine' at step 3" in text
    assert "RuntimeError: boom" in text and r.stdout == ""
    r = show_run(out, "--json")          # show loads no plugin: no process of its own
    assert '"status": "failed"' in r.stdout
    r = run_mixlab("--debug", "run", spec, "--out", out, "--quiet", "--force")
    assert r.returncode == 1 and "Traceback" in r.stderr and "RuntimeError: boom" in r.stderr


def test_builtin_failure_keeps_its_own_exception():
    from mixlab.plugins.contract import code_failure

    try:
        np.zeros(2).reshape(3)
    except ValueError as exc:
        assert code_failure(object(), exc, "s", 4) is None
