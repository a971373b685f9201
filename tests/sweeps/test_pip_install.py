"""A pip-installed (non-editable) mixlab runs the papers' specs by name, from any directory.

A fresh virtual environment gets the package from a copy of the source tree (``pip install
--no-deps --no-build-isolation --no-index``: no network); its dependencies (and pip, setuptools,
wheel) come from the environment running the tests through a ``.pth`` file, as
``--system-site-packages`` would give them. The commands run from another directory with no
PYTHONPATH, so only the installed copy can answer."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MIRROR = os.environ.get("MIXLAB_DATA_MIRROR")
FAST_FIG2 = ["budget.draws=50", "train.epochs=1", "train.hidden=20", "data.max_train=500",
             "isl.test_max=200", "isl.valid_max=200", "isl.points=5", "isl.speedup_at=[10]"]


def _run(args, cwd, env, timeout=300):
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"{args}\n{p.stdout}\n{p.stderr}"
    return p


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv bin directory, environment for commands, a directory outside the source tree)."""
    try:
        import wheel  # noqa: F401  (setuptools < 70.1 builds wheels through it)
    except ImportError:
        pytest.skip("the 'wheel' package is missing (it is in the dev extra)")
    tmp = tmp_path_factory.mktemp("pip")
    src = tmp / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, src / name)
    for name in ("mixlab", "experiments"):  # mixlab/specs stays a link to ../experiments
        shutil.copytree(REPO / name, src / name, symlinks=True, ignore=ignore)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    bindir = venv / "bin"
    py = bindir / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], capture_output=True, text=True, check=True,
                             timeout=60).stdout.strip()
    # the test environment's site-packages (inside the clone when it is `make test`'s .venv):
    # a path in a .pth file is added as is, its own .pth files (the editable install's finder)
    # are not run, so only the installed copy of mixlab can be imported
    deps = [p for p in [*site.getsitepackages(), site.getusersitepackages()]
            if Path(p).is_dir() and Path(p).resolve() != REPO]
    (Path(purelib) / "_dev_site.pth").write_text("\n".join(deps) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}",
               MIXLAB_DATA_DIR=str(tmp / "data-cache"))
    _run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
          "--no-index", str(src)], cwd=tmp, env=env)
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    where = _run([str(py), "-c", "import mixlab; print(mixlab.__file__)"], elsewhere, env)
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout  # not the source tree
    return bindir, env, elsewhere


def test_installed_package_lists_and_copies_specs(installed):
    bindir, env, cwd = installed
    listed = _run([str(bindir / "mixlab"), "specs", "list", "--json"], cwd, env)
    specs = {s["name"]: s for s in json.loads(listed.stdout)}
    assert {"rates_fpcd/fig2", "austerity/fig1", "perturb_map/fig1_left", "toy/gaussian"} <= set(
        specs)
    assert all(Path(s["path"]).is_file() and not Path(s["path"]).is_symlink()
               for s in specs.values())
    assert specs["rates_fpcd/fig2"]["path"].startswith(str(bindir.parent))
    want = {p.relative_to(REPO / "experiments").with_suffix("").as_posix()
            for p in (REPO / "experiments").glob("*/*.yaml")}
    assert set(specs) == want  # every spec of the repository is shipped
    copied = _run([str(bindir / "mixlab"), "specs", "copy", "toy/gaussian", "mine.yaml"], cwd,
                  env)
    assert (cwd / "mine.yaml").read_text() == (REPO / "experiments/toy/gaussian.yaml").read_text()
    assert "mixlab run mine.yaml" in copied.stdout


def test_installed_package_runs_fig2_by_name(installed):
    if not MIRROR or not (Path(MIRROR) / "usps" / "usps.h5").is_file():
        pytest.skip("MIXLAB_DATA_MIRROR does not hold usps/usps.h5")
    bindir, env, cwd = installed
    env = dict(env, MIXLAB_DATA_MIRROR=str(Path(MIRROR).resolve()))
    ran = _run([str(bindir / "mixlab"), "run", "rates_fpcd/fig2", *FAST_FIG2, "--out", "fig2",
                "-q"], cwd, env)
    assert "complete: fig2" in ran.stdout
    shown = json.loads(_run([str(bindir / "mixlab"), "show", "fig2", "--json"], cwd, env).stdout)
    assert shown["status"] == "complete"
    assert {"isl_final/gibbs", "isl_final/rates-fpcd"} <= set(shown["results"])
    assert list((cwd / "fig2" / "figures").glob("*.png"))
