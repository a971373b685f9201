"""Install the example plugin package for the tests that drive it through the CLI.

``pip install --no-deps --no-build-isolation --target DIR examples/plugin`` (offline: no index,
the build backend is the setuptools already installed) into a session temporary directory;
subprocesses get it on PYTHONPATH, so its ``mixlab.plugins`` entry point is seen exactly as an
installed package's would be, and the test environment itself is left untouched."""

import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "plugin"


#: the mark of every test that uses ``example_site``: under ``--dist loadgroup`` they share a
#: worker, so the package is built and installed once rather than once per worker
ON_EXAMPLE_SITE = pytest.mark.xdist_group("example-plugin-site")


@pytest.fixture(scope="session")
def example_site(tmp_path_factory):
    target = tmp_path_factory.mktemp("example-plugin-site")
    build = tmp_path_factory.mktemp("example-plugin-build")
    # build from a copy: setuptools writes build/ and *.egg-info next to the sources
    import shutil

    src = build / "plugin"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                        "--no-build-isolation", "--no-index", "--quiet", "--target",
                        str(target), str(src)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"installing examples/plugin failed:\n{r.stdout}\n{r.stderr}")
    return target


def mixlab_env(*paths, **extra):
    """The environment of a mixlab subprocess: this checkout first, then ``paths``."""
    env = dict(os.environ)
    env.pop("MIXLAB_PLUGINS", None)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *map(str, paths)])
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_mixlab(*args, env=None, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "mixlab", *map(str, args)],
                          capture_output=True, text=True, env=env or mixlab_env(), cwd=cwd,
                          timeout=timeout)


@contextmanager
def fresh_plugins():
    """Inside, this process's plugin state is that of a fresh process (the installed plugins
    loaded, no plugin file); what is loaded inside is forgotten afterwards (registry, plugin
    records and the plugin files' modules), so a plugin file edited between two commands is
    loaded as it is then, under the module name a fresh process gives it."""
    from mixlab.plugins import discovery as plugins
    from mixlab.plugins import registry

    registry.load_plugins()
    before, loaded = registry.snapshot(), dict(plugins._PLUGINS)
    files = {m: sys.modules.pop(m) for m in list(sys.modules) if m.startswith("mixlab_plugin_")}
    try:
        yield
    finally:
        registry.restore(before)
        plugins._PLUGINS.clear()
        plugins._PLUGINS.update(loaded)
        for name in [m for m in sys.modules if m.startswith("mixlab_plugin_")]:
            sys.modules.pop(name)
        sys.modules.update(files)


@pytest.fixture
def clean_registry():
    """The plugins a test loads in this process are forgotten afterwards."""
    with fresh_plugins():
        yield


def invoke_mixlab(*args):
    """``mixlab ARGS`` in this process (a CliRunner result: ``exit_code``, ``stdout``,
    ``stderr``), for a command whose exit code and message the test checks but that proves
    nothing about a real process; the test uses ``clean_registry`` when the command loads
    plugins."""
    from click.testing import CliRunner

    from mixlab.cli import cli

    return CliRunner().invoke(cli, [*map(str, args)])


def show_run(*args):
    """``mixlab show ARGS`` in this process (a CliRunner result with ``.stdout``): show loads
    no plugin and opens no file a run names, so it needs no process of its own, and this
    process has loaded none of the plugin files a test writes."""
    from click.testing import CliRunner

    from mixlab.cli import cli

    r = CliRunner().invoke(cli, ["show", *map(str, args)])
    assert r.exit_code == 0, r.output
    return r
