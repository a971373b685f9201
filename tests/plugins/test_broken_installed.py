"""A broken installed plugin stops only what uses it.

A real (if tiny) package is installed the cheap way: its ``*.dist-info`` directory with an
``entry_points.txt`` on a temporary PYTHONPATH entry is exactly what ``importlib.metadata``
reads for a pip-installed package. Its module fails to import (a missing dependency), or
imports and registers a sampler before failing. Each case runs the real CLI in a subprocess.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import mixlab_env, run_mixlab

PACKAGE = "brokenplug_mixlab_test"


def install(site: Path, code: str) -> Path:
    """``site`` holding package PACKAGE (``__init__.py`` = ``code``) with one
    ``mixlab.plugins`` entry point, as pip would leave it."""
    (site / PACKAGE).mkdir(parents=True)
    (site / PACKAGE / "__init__.py").write_text(code)
    dist = site / f"{PACKAGE}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[mixlab.plugins]\nbroken-samplers = {PACKAGE}\n")
    return site


MISSING_DEP = "import not_a_module_mixlab_xyz\n"
FAILS_AFTER_REGISTERING = """
from mixlab.api import sampler

@sampler("rbm", "half-done")
def make(target, params, chains):
    raise NotImplementedError

raise RuntimeError("the plugin's set-up failed")
"""


@pytest.fixture(params=["missing_dependency", "fails_after_registering"])
def broken_site(request, tmp_path):
    code = MISSING_DEP if request.param == "missing_dependency" else FAILS_AFTER_REGISTERING
    return install(tmp_path / "site", code), request.param


def warnings_of(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning: plugin")]


def test_a_spec_that_does_not_use_it_runs_with_one_warning_line(broken_site, tmp_path):
    site, case = broken_site
    r = run_mixlab("run", "rates_fpcd/fig2", "--dry-run", env=mixlab_env(site), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "# would run experiment 'rates_fpcd.isl'" in r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert line.startswith("warning: plugin entry point 'broken-samplers = "
                           f"{PACKAGE}'") and f"package {PACKAGE} 0.1" in line
    assert "pip uninstall the package" in line          # the fix
    why = ("No module named 'not_a_module_mixlab_xyz'" if case == "missing_dependency"
           else "RuntimeError: the plugin's set-up failed")
    assert why in line


def test_a_spec_naming_its_sampler_fails_with_the_whole_message(broken_site, tmp_path):
    site, case = broken_site
    name = "half-done" if case == "fails_after_registering" else "from-the-broken-plugin"
    r = run_mixlab("run", "rates_fpcd/fig2", f"samplers.x.method={name}", "--dry-run",
                   env=mixlab_env(site), cwd=tmp_path)
    assert r.returncode == 1, r.stdout
    err = r.stderr
    assert "Traceback" not in err
    assert "spec key 'samplers.x.method'" in err and f"unknown rbm sampler '{name}'" in err
    assert f"{PACKAGE}/__init__.py" in err                # the whole message: file and line
    lead = ("it comes from a plugin that failed to load" if case == "fails_after_registering"
            else "it may come from an installed plugin that failed to load")
    assert lead in err
    # the half-registered sampler was undone: it is not runnable
    assert not (tmp_path / "runs").exists()


def test_mixlab_plugins_lists_it_as_broken(broken_site, tmp_path):
    site, _ = broken_site
    r = run_mixlab("plugins", env=mixlab_env(site), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(warnings_of(r.stderr)) == 1
    out = r.stdout
    assert "broken plugins" in out and f"{PACKAGE}  [entry point]  BROKEN" in out
    assert "rbm/gibbs" in out                             # the rest is listed as usual
    assert "rbm/half-done" not in out
    r = run_mixlab("--debug", "plugins", env=mixlab_env(site), cwd=tmp_path)
    assert "Traceback" in r.stderr


def test_a_broken_plugin_in_the_environment_variable_only_warns(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(MISSING_DEP)
    r = run_mixlab("run", "toy/gaussian", "--dry-run", env=mixlab_env(MIXLAB_PLUGINS=bad),
                   cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    [line] = r.stderr.strip().splitlines()
    assert str(bad) in line and "remove it from MIXLAB_PLUGINS" in line
