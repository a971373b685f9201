"""``mixlab run SPEC --update`` through the CLI: after a plugin is fixed only its stream reruns
and the built-in streams' datasets (and segment files) stay byte for byte; a changed, added or
removed sampler reruns, adds or removes exactly its stream; the shared model stage is kept;
``mixlab show`` says which streams are stale and why, and which plugins' code it did not check;
without --update the refusal says what --update would do."""

import json

import h5py

from mixlab.runfile.segments import SEGMENT_DIR, stream_id

from .conftest import fresh_plugins, invoke_mixlab, run_mixlab, show_run

PLUGIN = '''
import numpy as np
from mixlab.api import SPINGLASS, sampler

class RandomScan:
    """Random-scan single-site Metropolis on a spin glass; R*C updates per step."""

    def __init__(self, t, chains):
        self.f, self.r, self.d, self.chains = t.field, t.right, t.down, chains
        self.R, self.C = t.field.shape

    def init(self, rng):
        return {"x": np.where(rng.random((self.chains, self.R, self.C)) < 0.5, 1.0, -1.0)}

    def step(self, state, rng):
        x = state["x"].copy()
        raise RuntimeError("boom")  # BUG
        for _ in range(self.R * self.C):
            i, j = rng.integers(self.R), rng.integers(self.C)
            h = np.full(self.chains, self.f[i, j])
            if j > 0:
                h += self.r[i, j - 1] * x[:, i, j - 1]
            if j < self.C - 1:
                h += self.r[i, j] * x[:, i, j + 1]
            if i > 0:
                h += self.d[i - 1, j] * x[:, i - 1, j]
            if i < self.R - 1:
                h += self.d[i, j] * x[:, i + 1, j]
            flip = rng.random(self.chains) < np.exp(-2 * x[:, i, j] * h)
            x[:, i, j] = np.where(flip, -x[:, i, j], x[:, i, j])
        return ({"x": x}, {"samples": x > 0},
                {"site_updates": np.full(self.chains, float(self.R * self.C))})

@sampler(SPINGLASS, "update-test-scan")
def make(target, params, chains):
    return RandomScan(target, chains)
'''

SPEC = """
name: update-test
experiment: perturb_map.marginal_vs_time
plugins: [./scan.py]
seed: 5
grid: {{rows: 3, cols: 4}}
mixed: true
samplers:
  gibbs: {{method: gibbs}}
{extra}  mine: {{method: update-test-scan}}
seconds: 0.2
mcmc: {{chains: 4}}
block: 20
"""

METROPOLIS = "  metropolis: {method: metropolis}\n"


def stream_bytes(run, name):
    """Every dataset of /streams/<name> as bytes, and every segment file's bytes."""
    out = {}
    with h5py.File(run / "run.h5", "r") as f:
        def visit(key, obj):
            if isinstance(obj, h5py.Dataset):
                out[key] = obj[()].tobytes()
        f[f"streams/{name}"].visititems(visit)
        out["_stage_model"] = f["stages/model/field"][()].tobytes()
    for p in sorted((run / SEGMENT_DIR / stream_id(name)).iterdir()):
        out[f"segment {p.name}"] = p.read_bytes()
    return out


def run_(*args):
    """``mixlab run ...`` in a process of its own (each one loads the plugin file as it is
    then), without figures: this file checks streams, results and messages, not figures."""
    return run_mixlab("run", *args, "--no-figures")


def check_(*args):
    """``mixlab run ...`` for a command that runs no stream (it refuses, or finds nothing to
    do): in this process, its plugin state that of a fresh process, so it too loads the plugin
    file as it is then. A result with ``returncode``, ``stdout`` and ``stderr``."""
    with fresh_plugins():
        r = invoke_mixlab("run", *args, "--no-figures")
    r.returncode = r.exit_code
    return r


def streams(run):
    with h5py.File(run / "run.h5", "r") as f:
        return sorted(f["streams"]), dict(f["results"].attrs)


def test_update_reruns_only_what_changed(tmp_path):
    plugin, spec, out = tmp_path / "scan.py", tmp_path / "s.yaml", tmp_path / "run"
    plugin.write_text(PLUGIN)
    spec.write_text(SPEC.format(extra=METROPOLIS))
    r = run_(spec, "--out", out, "--quiet")
    assert r.returncode == 1 and "stream 'mine' at step 1" in r.stderr, r.stderr
    before = {n: stream_bytes(out, n) for n in ("gibbs", "metropolis")}

    plugin.write_text(PLUGIN.replace('raise RuntimeError("boom")  # BUG', "pass"))
    r = check_(spec, "--out", out, "--quiet")        # refused, and says why
    assert r.returncode == 1 and "--update" in r.stderr and "rerun 'mine'" in r.stderr, r.stderr
    assert "keeping 2 complete stream(s) as they are (gibbs, metropolis)" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr

    r = run_(spec, "--out", out, "--update")
    assert r.returncode == 0, r.stderr
    assert "update: rerun 'mine' (its sampler's code changed" in r.stderr, r.stderr
    assert "updated and complete" in r.stdout
    for n in ("gibbs", "metropolis"):
        assert stream_bytes(out, n) == before[n], n
    names, results = streams(out)
    assert names == ["gibbs", "metropolis", "mine"]
    assert {"final_error/gibbs", "final_error/metropolis", "final_error/mine"} <= set(results)

    r = check_(spec, "--out", out, "--update")        # nothing left to do
    assert r.returncode == 0 and "already complete" in r.stdout, r.stdout + r.stderr
    r = show_run(out, "--json")
    assert json.loads(r.stdout).get("stale", {}) == {}, r.stdout

    # an edit of the plugin makes its stream stale: run says what --update does; show, which
    # opens no file a run names, says the plugin's code was not checked and how to check it
    plugin.write_text(PLUGIN.replace('raise RuntimeError("boom")  # BUG', "pass  # edited"))
    r = show_run(out)
    assert "stale:" not in r.stdout, r.stdout
    assert f"plugin code not checked: {plugin} (show opens no file a run names" in r.stdout
    r = check_(spec, "--out", out)
    assert r.returncode == 0 and "but stale: --update would rerun 'mine'" in r.stdout, r.stdout
    mine_before = stream_bytes(out, "mine")
    before["gibbs"] = stream_bytes(out, "gibbs")

    # one sampler's parameters change, one is removed, one is added: exactly those change
    spec.write_text(SPEC.format(extra="  sw: {method: swendsen_wang}\n").replace(
        "gibbs: {method: gibbs}", "gibbs: {method: gibbs, init: plus}"))
    r = check_(spec, "--out", out, "--quiet")
    assert r.returncode == 1 and "holds a run of a different spec; pass --update to" in r.stderr
    assert "rerun 'gibbs' (samplers.gibbs changed); 'mine' (its sampler's code" in r.stderr
    assert "add 'sw'; remove 'metropolis'" in r.stderr, r.stderr
    r = run_(spec, "--out", out, "--update", "--quiet")
    assert r.returncode == 0, r.stderr
    names, results = streams(out)
    assert names == ["gibbs", "mine", "sw"]
    assert "final_error/metropolis" not in results and "final_error/sw" in results
    assert not (out / SEGMENT_DIR / stream_id("metropolis")).exists()
    after = stream_bytes(out, "gibbs")
    assert after["_stage_model"] == before["gibbs"]["_stage_model"]   # the shared model kept
    assert after["samples" if "samples" in after else "stats/accept"] != \
        before["gibbs"]["samples" if "samples" in after else "stats/accept"]
    assert stream_bytes(out, "mine") != mine_before                   # the edited plugin's


def test_update_without_out_takes_the_latest_run_of_the_name(tmp_path, monkeypatch):
    """The default run directory is named by the spec's hash: --update moves the latest run of
    the same name there and reruns what the change makes stale (here every stream: a shared
    setting changed), keeping the file's other settings."""
    from click.testing import CliRunner

    from mixlab.cli import cli

    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "toy.yaml"
    spec.write_text("name: upd\nexperiment: toy.gaussian\ndim: 2\nchains: 2\n"
                    "budget: {draws: 100}\nblock: 50\n")
    r = CliRunner().invoke(cli, ["run", str(spec), "--quiet"])
    assert r.exit_code == 0, r.output
    (old,) = list((tmp_path / "runs" / "upd").iterdir())
    r = CliRunner().invoke(cli, ["run", str(spec), "step=0.4", "--update"])
    assert r.exit_code == 0, r.output
    assert "rerun 'rwm' (the spec's shared settings changed)" in r.output, r.output
    (new,) = list((tmp_path / "runs" / "upd").iterdir())
    assert new != old and "updated and complete" in r.output
    with h5py.File(new / "run.h5", "r") as f:
        assert "step: 0.4" in f.attrs["spec"] and f.attrs["status"] == "complete"
        assert f["streams/rwm/samples"].shape[:2] == (2, 100)
