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


def install(site: Path, code: str, package: str = PACKAGE) -> Path:
    """``site`` holding ``package`` (``__init__.py`` = ``code``) with one ``mixlab.plugins``
    entry point, as pip would leave it."""
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(code)
    dist = site / f"{package}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[mixlab.plugins]\nbroken-samplers = {package}\n")
    return site


MISSING_DEP = "import not_a_module_mixlab_xyz\n"
FAILS_AFTER_REGISTERING = """
from mixlab.api import sampler

@sampler("rbm", "half-done")
def make(target, params, chains):
    raise NotImplementedError

raise RuntimeError("the plugin's set-up failed")
"""


CODE = {"missing_dependency": MISSING_DEP, "fails_after_registering": FAILS_AFTER_REGISTERING}
WHY = {"missing_dependency": "No module named 'not_a_module_mixlab_xyz'",
       "fails_after_registering": "RuntimeError: the plugin's set-up failed"}


@pytest.fixture(params=sorted(CODE))
def broken_site(request, tmp_path):
    return install(tmp_path / "site", CODE[request.param]), request.param


@pytest.fixture
def both_broken_site(tmp_path):
    """One site holding both broken packages, ``PACKAGE_<case>``: the cases are independent,
    so where a test needs no case alone one process checks both."""
    site = tmp_path / "site"
    for case, code in CODE.items():
        install(site, code, f"{PACKAGE}_{case}")
    return site


def warnings_of(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning: plugin")]


def test_a_spec_that_does_not_use_it_runs_with_one_warning_line(both_broken_site, tmp_path):
    r = run_mixlab("run", "rates_fpcd/fig2", "--dry-run", env=mixlab_env(both_broken_site),
                   cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "# would run experiment 'rates_fpcd.isl'" in r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == len(CODE), r.stderr                # one line per broken plugin
    for case in CODE:
        package = f"{PACKAGE}_{case}"
        [line] = [x for x in lines if f"'broken-samplers = {package}'" in x]
        assert line.startswith("warning: plugin entry point 'broken-samplers = "
                               f"{package}'") and f"package {package} 0.1" in line
        assert "pip uninstall the package" in line      # the fix
        assert WHY[case] in line


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


def test_mixlab_plugins_lists_it_as_broken(both_broken_site, tmp_path):
    r = run_mixlab("plugins", env=mixlab_env(both_broken_site), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(warnings_of(r.stderr)) == len(CODE), r.stderr   # one line per broken plugin
    out = r.stdout
    assert "broken plugins" in out
    for case in CODE:
        assert out.count(f"{PACKAGE}_{case}  [entry point]  BROKEN") == 1, out
    assert "rbm/gibbs" in out                             # the rest is listed as usual
    assert "rbm/half-done" not in out
    r = run_mixlab("--debug", "plugins", env=mixlab_env(both_broken_site), cwd=tmp_path)
    traces = r.stderr.split("Traceback (most recent call last)")[1:]
    for case in CODE:                                     # each one's own traceback
        assert any(f"{PACKAGE}_{case}/__init__.py" in t and WHY[case] in t for t in traces), \
            (case, r.stderr)


def test_a_broken_plugin_in_the_environment_variable_only_warns(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(MISSING_DEP)
    r = run_mixlab("run", "toy/gaussian", "--dry-run", env=mixlab_env(MIXLAB_PLUGINS=bad),
                   cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    [line] = r.stderr.strip().splitlines()
    assert str(bad) in line and "remove it from MIXLAB_PLUGINS" in line
