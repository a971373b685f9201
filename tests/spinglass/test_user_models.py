"""A user's own spin glass (``model: {file: grid.npz}``) through the CLI: mixed couplings end to
end with the exact log Z and marginals in the run, graph cuts refused on negative couplings,
and every bad file named with the key and the fix."""

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from mixlab.spinglass import SpinGlass, random_spin_glass, save_npz
from mixlab.spinglass.exact import brute_force

REPO = Path(__file__).resolve().parents[2]
SPEC = """experiment: perturb_map.marginal_vs_time
model: {{file: {file}}}
samplers:
  gibbs: {{method: gibbs}}
  sw: {{method: swendsen_wang}}
  pm: {{method: local, map: {map}}}
seconds: 0.3
block: 20
"""


def mixlab(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "mixlab", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def mixlab_here(*args, cwd, monkeypatch):
    """``mixlab *args`` through the CLI in this process (no process start-up), for the
    commands whose success is what is checked; refusals run as real processes (above)."""
    from click.testing import CliRunner

    from mixlab.cli import cli

    monkeypatch.chdir(cwd)
    out = CliRunner().invoke(cli, [*map(str, args)])
    err = out.stderr
    if out.exception is not None and not isinstance(out.exception, SystemExit):
        err += repr(out.exception)
    return SimpleNamespace(returncode=out.exit_code, stdout=out.stdout, stderr=err)


def write_spec(tmp_path, file, map_="auto"):
    p = tmp_path / "s.yaml"
    p.write_text(SPEC.format(file=file, map=map_))
    return p


def test_mixed_couplings_end_to_end_with_exact_log_z(tmp_path, monkeypatch):
    model = random_spin_glass(4, 4, 1.0, 1.5, mixed=True, rng=np.random.default_rng(7))
    assert (model.right < 0).any() and (model.down > 0).any()
    save_npz(tmp_path / "grid.npz", model)
    r = mixlab_here("run", write_spec(tmp_path, "grid.npz"), "--out", "run", "-q",
                    "--no-figures", cwd=tmp_path, monkeypatch=monkeypatch)
    assert r.returncode == 0, r.stderr
    shown = mixlab_here("show", "run", "--json", cwd=tmp_path, monkeypatch=monkeypatch)
    assert shown.returncode == 0, shown.stderr
    shown = json.loads(shown.stdout)
    res = shown["results"]
    log_z, marg_bf = brute_force(model)                 # all 2^16 states
    assert res["log_z_exact"] == pytest.approx(log_z, abs=1e-9)
    assert res["model/couplings"].startswith("mixed")
    assert res["model/file"] == "grid.npz"
    for s in ("gibbs", "sw", "pm"):
        assert res[f"final_error/{s}"] < 0.2, res   # every sampler ran on the user's model
    from mixlab.runfile.store import RunReader

    with RunReader(tmp_path / "run") as run:
        marg = run.array("exact_marginals")
        assert set(run.stream_summaries("sw")) >= {"magnetisation", "energy"}
    assert np.allclose(marg, marg_bf, atol=1e-12)


def test_graph_cuts_refused_on_negative_couplings(tmp_path):
    model = random_spin_glass(4, 4, 1.0, 1.5, mixed=True, rng=np.random.default_rng(7))
    save_npz(tmp_path / "grid.npz", model)
    r = mixlab("run", write_spec(tmp_path, "grid.npz", "graphcut"), "--out", "run", "-q",
               cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "spec key 'samplers.pm.map'" in r.stderr and "negative" in r.stderr
    assert "max_product" in r.stderr


def _bad(tmp_path, name, **arrays):
    np.savez(tmp_path / name, **arrays)
    return name


@pytest.mark.parametrize("case,code,words", [
    ("nan", 2, ["'model.file'", "non-finite"]),
    ("missing_array", 2, ["'model.file'", "lacks array(s) down"]),
    ("shape", 2, ["'model.file'", "'right' couplings must have shape (3, 2)"]),
    ("wide", 2, ["'model.file'", "min(rows, cols) <= 22", "23x23"]),
    ("not_npz", 1, ["model.file", "cannot read"]),
    ("absent", 1, ["model.file", "not found"]),
])
def test_bad_model_files_are_named(tmp_path, case, code, words):
    f, r, d = np.zeros((3, 3)), np.ones((3, 2)), np.ones((2, 3))
    if case == "nan":
        f[1, 1] = np.nan
        name = _bad(tmp_path, "g.npz", field=f, right=r, down=d)
    elif case == "missing_array":
        name = _bad(tmp_path, "g.npz", field=f, right=r)
    elif case == "shape":
        name = _bad(tmp_path, "g.npz", field=f, right=np.ones((3, 3)), down=d)
    elif case == "wide":
        m = SpinGlass(np.zeros((23, 23)), np.ones((23, 22)), np.ones((22, 23)))
        save_npz(tmp_path / "g.npz", m)
        name = "g.npz"
    elif case == "not_npz":
        (tmp_path / "g.npz").write_text("field,right\n1,2\n")
        name = "g.npz"
    else:
        name = "nothere.npz"
    res = mixlab("run", write_spec(tmp_path, name), "--out", "run", "-q", cwd=tmp_path)
    assert res.returncode == code, res.stderr
    assert "Traceback" not in res.stderr and res.stderr.count("\n") <= 2, res.stderr
    for w in words:
        assert w in res.stderr, (w, res.stderr)


BOUNDS = """experiment: perturb_map.logz_of_models
models: [{files}]
perturbations: 200
copies: 50
baselines: [bethe_bp, trw]
"""


def test_bounds_on_a_list_of_files(tmp_path, monkeypatch):
    a = random_spin_glass(3, 4, 1.0, 1.0, rng=np.random.default_rng(1))
    b = random_spin_glass(4, 3, 1.0, 2.0, mixed=True, rng=np.random.default_rng(2))
    save_npz(tmp_path / "a.npz", a)
    save_npz(tmp_path / "b.npz", b)
    (tmp_path / "s.yaml").write_text(BOUNDS.format(files="a.npz, b.npz"))
    r = mixlab_here("run", "s.yaml", "--out", "run", "-q", cwd=tmp_path, monkeypatch=monkeypatch)
    assert r.returncode == 0, r.stderr
    shown = mixlab_here("show", "run", "--json", cwd=tmp_path, monkeypatch=monkeypatch)
    assert shown.returncode == 0, shown.stderr
    res = json.loads(shown.stdout)["results"]
    for label, model in (("a", a), ("b", b)):
        log_z = brute_force(model)[0]
        assert res[f"log_z_exact/{label}"] == pytest.approx(log_z, abs=1e-9)
        # Gumbel U is an upper bound in expectation and the expected LB a lower one (200
        # perturbations: s.e. ~0.1 nats); TRW is a deterministic upper bound
        assert res[f"upper/{label}"] > log_z - 0.4
        assert res[f"expected_lb/{label}"] < log_z + 0.4
        assert res[f"trw/{label}"] >= log_z - 1e-6
    assert res["model/b"].startswith("4x3, mixed")
    assert (tmp_path / "run" / "figures" / "perturb_map.logz_of_models.png").exists()
    # a bad file in the list is named by its index
    np.savez(tmp_path / "c.npz", field=np.zeros((2, 2)))
    (tmp_path / "s.yaml").write_text(BOUNDS.format(files="a.npz, c.npz"))
    r = mixlab("run", "s.yaml", "--out", "run2", "-q", cwd=tmp_path)
    assert r.returncode == 2 and "spec key 'models[1]'" in r.stderr and "lacks array" in r.stderr
