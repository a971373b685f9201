"""``mixlab run SPEC --scheduler ADDRESS``: a figure spec's independent streams on a real Dask
cluster (a scheduler and two workers, each in its own directory: no file shared with the
client) write every dataset of ``-j 1``, and still do after a worker is killed mid-run, or the
client is killed and the same command run again (mixlab.run.remote); a figure spec's
independent stages (``ctx.once_each``) computed there write the values of ``-j 1``."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from .test_sweep_dask import _env, _wait, cluster  # noqa: F401  (the cluster fixture)

pytest.importorskip("dask.distributed")
# the RBM kernels are compiled (numba's cache) by the tests of their family's group
pytestmark = pytest.mark.xdist_group("kernels-rbm")

# rates_fpcd/fig2 made small: four samplers (independent streams) of 400 draws in blocks of 50,
# a checkpoint at least every 0.2 s, so a stream is a chain of tasks on the cluster
OVERRIDES = ["train.hidden=12", "train.epochs=1", "train.monitor_size=100", "chains=2",
             "budget.draws=400", "block=50", "isl.points=6", "isl.test_max=150",
             "isl.valid_max=150", "isl.speedup_at=[10]"]
DRAWS = 4 * 400
# perturb_map/fig1_left made small: one independent stage per coupling (ctx.once_each)
STAGES = ["grid.rows=3", "grid.cols=3", "couplings=[0.5,1.0]", "models=2", "perturbations=3",
          "copies=5"]
TIMED = ("seconds/", "ms_per_sample/")


def _need_usps():
    from mixlab.data import info

    try:
        inf = info("usps")
    except Exception as exc:  # pragma: no cover
        pytest.skip(f"usps unavailable: {exc}")
    if not (inf["installed"] or inf["installable_offline"]):
        pytest.skip("USPS is not installed and no MIXLAB_DATA_MIRROR is set")


def _contents(run_dir: Path) -> dict:
    """Every dataset and result of a complete run but the clock's (sampling times)."""
    out = {}
    with h5py.File(run_dir / "run.h5", "r") as f:
        assert f.attrs["status"] == "complete"

        def visit(name, obj):
            leaf = name.rsplit("/", 1)[-1]
            if isinstance(obj, h5py.Dataset) and leaf != "time" and "seconds" not in leaf:
                out[name] = np.asarray(obj[()]).tobytes()
        f.visititems(visit)
        for k, v in f["results"].attrs.items():
            if not k.startswith(TIMED):
                out[f"results/{k}"] = np.asarray(v).tobytes()
    return out


def _run(client: Path, out: str, address: str | None, spec: str = "rates_fpcd/fig2",
         overrides: list[str] = OVERRIDES) -> subprocess.Popen:
    where = ["--scheduler", address] if address else ["-j", "1"]
    return subprocess.Popen([sys.executable, "-m", "mixlab", "run", spec, *overrides,
                             *where, "-o", out, "-q", "--no-figures"],
                            cwd=client, env=_env(MIXLAB_CHECKPOINT_SECONDS="0.2"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _checkpoints(run_dir: Path) -> int:
    """Stream checkpoints taken into the run's published file so far."""
    try:
        with h5py.File(run_dir / "run.h5", "r", locking=False) as f:
            return sum(int(g["_checkpoint"].attrs["count"]) for g in f.get("streams", {}).values()
                       if "_checkpoint" in g)
    except (OSError, KeyError):
        return 0


def test_run_on_a_cluster_writes_the_bytes_of_jobs_1(tmp_path, cluster):  # noqa: F811
    _need_usps()
    address, workers = cluster
    client = tmp_path / "client"
    client.mkdir()
    run = _run(client, "serial", None)                     # the same command at -j 1
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    expected = _contents(client / "serial")
    assert "metrics/isl/rates-fpcd/y" in expected and len(expected) > 20

    # 1. the whole run on the cluster
    run = _run(client, "dask", address)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert "on the Dask cluster at" in (client / "dask" / "log.txt").read_text()
    got = _contents(client / "dask")
    assert got.keys() == expected.keys()
    assert [k for k in expected if got[k] != expected[k]] == []
    for _, home in workers.values():                        # nothing written on the workers
        assert not (home / "dask").exists() and not list(home.rglob("run.h5"))

    # 2. independent stages on the cluster
    for out, where in (("stages-serial", None), ("stages-dask", address)):
        run = _run(client, out, where, "perturb_map/fig1_left", STAGES)
        assert run.wait(timeout=120) == 0, run.stderr.read()
    serial, remote = _contents(client / "stages-serial"), _contents(client / "stages-dask")
    assert "stages/coupling_1/upper" in serial and remote.keys() == serial.keys()
    assert [k for k in serial if remote[k] != serial[k]] == []

    # 3. the client killed mid-run; the same command resumes to the same bytes
    run = _run(client, "resumed", address)
    _wait(lambda: _checkpoints(client / "resumed") > 0, 60, "a first checkpoint", [run])
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=10)
    assert _checkpoints(client / "resumed") < DRAWS, "the run ended before the kill"
    run = _run(client, "resumed", address)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0 and "resumed and completed" in out, err
    got = _contents(client / "resumed")
    assert [k for k in expected if got.get(k) != expected[k]] == []

    # 4. a worker killed mid-run: its task runs again on the other one
    run = _run(client, "killed", address)
    _wait(lambda: _checkpoints(client / "killed") > 0, 60, "a first checkpoint", [run])
    victim, _ = workers["wa"]
    victim.send_signal(signal.SIGKILL)
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert _checkpoints(client / "killed") < DRAWS, "the run ended before the kill"
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    got = _contents(client / "killed")
    assert [k for k in expected if got.get(k) != expected[k]] == []
