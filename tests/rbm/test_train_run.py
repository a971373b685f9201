"""``mixlab train`` as a run (mixlab.rbm.train_run, mixlab.rbm.model_file, mixlab.cli.train_cmd):
killed at random instants and run again it trains the same bits; show, sample and a spec's
model_file read what it wrote; one writer at a time; usage errors name the option."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.rbm.model import RBM
from mixlab.rbm.partition import log_likelihood, log_partition_exact
from mixlab.runfile.store import RunReader


@pytest.fixture(scope="module")
def data_file(tmp_path_factory) -> Path:
    """1000 noisy copies of 4 binary prototypes, 30 pixels (a 5x6 image set of 0/1 floats)."""
    rng = np.random.default_rng(5)
    protos = rng.random((4, 30)) < 0.5
    X = protos[rng.integers(0, 4, 1000)] ^ (rng.random((1000, 30)) < 0.1)
    path = tmp_path_factory.mktemp("data") / "x30.npy"
    np.save(path, X.astype(np.float32))
    return path


def train_args(data_file: Path, *extra: str) -> list[str]:
    return ["train", "--data-file", str(data_file), "--trainer", "fpcd", "--hidden", "12",
            "--epochs", "3", "--batch-size", "20", "--lr", "0.1", "--seed", "3", "--quiet",
            *extra]


def invoke(args: list[str], cwd: Path):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, args, catch_exceptions=True)
    finally:
        os.chdir(old)


def model_datasets(path: Path) -> dict[str, np.ndarray]:
    """Every dataset of a model file, by path."""
    out: dict[str, np.ndarray] = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, obj[()])
                     if isinstance(obj, h5py.Dataset) else None)
    return out


def model_root_attrs(path: Path) -> dict:
    with h5py.File(path, "r") as f:
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in f.attrs.items()}


# ---------------------------------------------------------------- one training, end to end


def test_train_writes_a_run_and_a_model_file(tmp_path, data_file):
    r = invoke(train_args(data_file, "-o", "m.h5"), tmp_path)
    assert r.exit_code == 0, r.output + repr(r.exception)
    model, run_dir = tmp_path / "m.h5", tmp_path / "m.h5.run"
    assert {"spec.yaml", "run.h5", "log.txt"} <= set(os.listdir(run_dir))
    assert not (run_dir / "writer.lock").exists()          # complete: no lock left
    with RunReader(run_dir) as run:
        assert run.status == "complete" and run.attrs["experiment"] == "rbm.train"
        assert {"git_commit", "mixlab_version", "packages", "spec"} <= set(run.attrs)
        assert set(run.stage_names()) == {"train", "eval"}  # the epoch checkpoint is dropped
        stage, res = run.stage("train"), run.results()
    m, attrs, mon = RBM.load_with_attrs(model)
    np.testing.assert_array_equal(m.W, stage["W"])
    assert m.n_hidden == 12 and attrs["trainer"] == "fpcd" and attrs["log_z_method"] == "exact"
    assert mon["epoch"].tolist() == [1.0, 2.0, 3.0]
    # the test log-likelihood is the exact one of the stored model on the data file's test rows
    X = np.load(data_file)
    test = (X[900:] > 0.5).astype(np.float32)               # the last 10% (test_fraction)
    ll, _ = log_likelihood(m, test, log_partition_exact(m))
    assert res["test_ll"] == pytest.approx(ll, abs=1e-9) == attrs["test_ll"]
    assert f"{ll:.4f}" in r.output
    assert attrs["run_dir"] == "m.h5.run"
    assert attrs["training_spec"] == (run_dir / "spec.yaml").read_text()
    # again: a no-op that says where the model is, and leaves the model file's bytes alone
    before = model.read_bytes()
    r = invoke(train_args(data_file, "-o", "m.h5"), tmp_path)
    assert r.exit_code == 0 and "already complete: m.h5" in r.output, r.output
    assert model.read_bytes() == before
    # model file gone: written again from the run, without training (the same bytes)
    model.unlink()
    r = invoke(train_args(data_file, "-o", "m.h5"), tmp_path)
    assert r.exit_code == 0 and model.read_bytes() == before
    with RunReader(run_dir) as run:
        assert run.stage("train")["monitor_seconds"].tolist() == \
            stage["monitor_seconds"].tolist()                # not retrained


def test_show_reads_the_run_and_the_model_file(tmp_path, data_file):
    assert invoke(train_args(data_file, "-o", "m.h5"), tmp_path).exit_code == 0
    r = invoke(["show", "m.h5.run"], tmp_path)
    assert r.exit_code == 0, r.output
    assert "rbm.train" in r.output and "status    complete" in r.output
    assert "test_ll" in r.output and "git " in r.output
    r = invoke(["show", "m.h5"], tmp_path)
    assert r.exit_code == 0, r.output
    assert "RBM 30 visible x 12 hidden" in r.output and "fpcd" in r.output
    assert "experiment: rbm.train" in r.output              # the training spec it stores
    assert "'mixlab show m.h5.run' for the run" in r.output
    r = invoke(["show", "m.h5", "--json"], tmp_path)
    import json

    info = json.loads(r.output)
    assert info["n_hidden"] == 12 and info["provenance"]["git_commit"]
    assert info["run_dir"] == "m.h5.run" and "rbm.train" in info["spec"]
    # an HDF5 file that is not a model is still refused as before
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f["x"] = 1
    r = invoke(["show", "other.h5"], tmp_path)
    assert r.exit_code == 1 and "not a mixlab run" in r.output


def test_sample_and_a_specs_model_file_read_it(tmp_path, data_file):
    assert invoke(train_args(data_file, "-o", "m.h5"), tmp_path).exit_code == 0
    W = RBM.load(tmp_path / "m.h5").W
    for model, out in (("m.h5", "s1"), ("m.h5.run", "s2")):
        r = invoke(["sample", model, "--method", "gibbs", "--n-samples", "40", "--data-file",
                    str(data_file), "-o", out, "--quiet"], tmp_path)
        assert r.exit_code == 0, r.output + repr(r.exception)
        with RunReader(tmp_path / out) as run:
            np.testing.assert_array_equal(run.stage("train")["W"], W)
            assert run.stream("gibbs").shape == (1, 40, 30)
    # a spec naming the model file (the papers' model_file key), and naming the run directory
    spec = tmp_path / "s.yaml"
    spec.write_text(f"experiment: rates_fpcd.sample\ndata: {{file: {data_file}}}\n"
                    f"samplers: {{g: {{method: gibbs}}}}\nbudget: {{draws: 10}}\n"
                    f"isl: {{enabled: false}}\n")
    for model, out in (("m.h5", "r1"), ("m.h5.run", "r2")):
        r = invoke(["run", "s.yaml", f"model_file={model}", "-o", out, "--quiet",
                    "--no-figures"], tmp_path)
        assert r.exit_code == 0, r.output + repr(r.exception)
        with RunReader(tmp_path / out) as run:
            np.testing.assert_array_equal(run.stage("train")["W"], W)


def test_the_same_model_as_a_papers_spec_trains_itself(tmp_path, data_file):
    """The trainer's generator depends on the seed only: a rates-FPCD spec's train: section
    trains bit for bit the model that 'mixlab train' trains with the same keys."""
    assert invoke(train_args(data_file, "-o", "m.h5", "--no-eval"), tmp_path).exit_code == 0
    spec = tmp_path / "s.yaml"
    spec.write_text(f"experiment: rates_fpcd.sample\nseed: 3\ndata: {{file: {data_file}}}\n"
                    f"train: {{trainer: fpcd, hidden: 12, epochs: 3, batch_size: 20, lr: 0.1}}\n"
                    f"samplers: {{g: {{method: gibbs}}}}\nbudget: {{draws: 2}}\n"
                    f"isl: {{enabled: false}}\n")
    r = invoke(["run", "s.yaml", "-o", "r", "--quiet", "--no-figures"], tmp_path)
    assert r.exit_code == 0, r.output
    with RunReader(tmp_path / "r") as run:
        st = run.stage("train")
    m = RBM.load(tmp_path / "m.h5")
    for k in ("W", "b", "c"):
        np.testing.assert_array_equal(getattr(m, k), st[k])


def test_mixlab_run_of_the_shipped_train_spec(tmp_path, data_file):
    r = invoke(["run", "rates_fpcd/train", f"data.file={data_file}",
                "train.hidden=6", "train.epochs=1", "-o", "run", "--quiet", "--no-figures"],
               tmp_path)
    assert r.exit_code == 0, r.output + repr(r.exception)
    with RunReader(tmp_path / "run") as run:
        assert run.status == "complete" and run.stage("train")["W"].shape == (30, 6)
    r = invoke(["sample", "run", "--method", "gibbs", "--n-samples", "5", "--data-file",
                str(data_file), "-o", "s", "--quiet"], tmp_path)
    assert r.exit_code == 0, r.output


# ---------------------------------------------------------------- refusals


def test_other_settings_and_foreign_files_are_refused(tmp_path, data_file):
    assert invoke(train_args(data_file, "-o", "m.h5"), tmp_path).exit_code == 0
    before = (tmp_path / "m.h5").read_bytes()
    r = invoke(train_args(data_file, "-o", "m.h5", "--lr", "0.2"), tmp_path)
    assert r.exit_code == 1
    assert "train.lr=0.1 (now 0.2)" in r.output and "--force" in r.output
    assert (tmp_path / "m.h5").read_bytes() == before
    # --force trains afresh with the new settings and replaces the model once complete
    r = invoke(train_args(data_file, "-o", "m.h5", "--lr", "0.2", "--force"), tmp_path)
    assert r.exit_code == 0, r.output
    assert "0.2" in model_root_attrs(tmp_path / "m.h5")["trainer_config"]
    # a file that is not a model is never overwritten, and --force is not offered for it
    (tmp_path / "notes.h5").write_text("mine")
    r = invoke(train_args(data_file, "-o", "notes.h5"), tmp_path)
    assert r.exit_code == 1 and "not a mixlab model file" in r.output
    assert "--force" not in r.output and (tmp_path / "notes.h5").read_text() == "mine"


@pytest.mark.parametrize("extra, option", [
    (["--trainer", "pcd", "--fast-lr", "0.1"], "--fast-lr"),
    (["--trainer", "cd", "--chains", "5"], "--chains"),
    (["--lr-final", "0.1"], "--lr-final"),
    (["--binarize", "2"], "--binarize"),
    (["--binarize", "abc"], "--binarize"),
    (["--data", "uspz"], "--data"),
    (["--data", "usps", "--data-file", "x.npy"], "--data-file"),
])
def test_usage_errors_name_the_option(tmp_path, extra, option):
    r = invoke(["train", "-o", "x.h5", "--hidden", "3", "--epochs", "1", *extra], tmp_path)
    assert r.exit_code == 2, (extra, r.output)
    assert option in r.output, r.output
    assert os.listdir(tmp_path) == []                       # nothing written


# ---------------------------------------------------------------- kill at random instants


def _command(data_file: Path, ais_betas: int = 15000) -> list[str]:
    """A training whose 40 epochs and AIS estimate each last long enough to be hit."""
    return [sys.executable, "-m", "mixlab", "train", "--data-file", str(data_file),
            "--trainer", "fpcd", "--hidden", "16", "--epochs", "40", "--batch-size", "5",
            "--momentum", "0.5", "--lr-schedule", "linear", "--seed", "11", "--log-z", "ais",
            "--ais-runs", "40", "--ais-betas", str(ais_betas), "-o", "m.h5"]


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _wait_for(path: Path, text: str, proc: subprocess.Popen, start: int = 0,
              limit: float = 120) -> bool:
    """Wait until ``text`` appears in ``path`` past its first ``start`` bytes (True) or
    ``proc`` ends (False)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        try:
            if text in path.read_bytes()[start:].decode():
                return True
        except OSError:
            pass
        time.sleep(0.005)
    raise AssertionError(f"'{text}' never appeared in {path}")


def test_killed_at_random_instants_it_resumes_to_the_same_bits(tmp_path, data_file):
    env = dict(os.environ, MIXLAB_CHECKPOINT_SECONDS="0")
    ref, work = tmp_path / "ref", tmp_path / "work"
    ref.mkdir()
    work.mkdir()
    t0 = time.monotonic()
    subprocess.run(_command(data_file), cwd=ref, env=env, check=True, capture_output=True)
    whole = time.monotonic() - t0
    rng = random.Random(20261204)
    log = work / "m.h5.run" / "log.txt"
    # (what this process must have logged, then a random delay): during start-up (before the
    # imports end: a later instant can fall after the whole training, on a fast host), twice
    # during training (an epoch done), during AIS, then anywhere
    plan = [(None, rng.uniform(0.05, 0.3)), ("epoch ", rng.uniform(0, 0.05)),
            ("epoch ", rng.uniform(0, 0.05)), ("AIS:", rng.uniform(0.05, 0.4)),
            (None, rng.uniform(0.1, 0.9) * whole)]
    seen = []
    for marker, delay in plan:
        start = _size(log)
        proc = subprocess.Popen(_command(data_file), cwd=work, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            alive = True if marker is None else _wait_for(log, marker, proc, start)
            if alive:
                time.sleep(delay)
                proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait()
        if proc.returncode == -signal.SIGKILL and (work / "m.h5.run" / "run.h5").exists():
            with RunReader(work / "m.h5.run") as run:
                stages = set(run.stage_names())
            seen.append(stages)
            if "eval" not in stages:                        # killed before completion:
                assert not (work / "m.h5").exists()         # no model file presented as done
    # the kills hit the training between epochs and the AIS estimate
    assert any("train_checkpoint" in s and "train" not in s for s in seen), seen
    assert any("train" in s and "eval" not in s for s in seen), seen
    done = subprocess.run(_command(data_file), cwd=work, env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    a, b = model_datasets(ref / "m.h5"), model_datasets(work / "m.h5")
    assert a.keys() == b.keys() and {"W", "b", "c", "monitor/pseudo_ll"} <= a.keys()
    for k in a:
        if k != "monitor/seconds":                          # wall-clock, not data
            assert a[k].tobytes() == b[k].tobytes() and a[k].dtype == b[k].dtype, k
    ra, rb = model_root_attrs(ref / "m.h5"), model_root_attrs(work / "m.h5")
    assert ra.keys() == rb.keys()
    for k in ra:
        if k not in ("created",):
            assert ra[k] == rb[k], k                         # the AIS estimate included
    assert ra["log_z_method"] == "AIS" and ra["log_z_se"] > 0


def test_a_second_writer_is_refused_with_the_first_ones_pid(tmp_path, data_file):
    slow = _command(data_file, ais_betas=10**7)       # AIS for minutes: the first stays alive
    proc = subprocess.Popen(slow, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        assert _wait_for(tmp_path / "m.h5.run" / "log.txt", "AIS:", proc)
        second = subprocess.run(slow, cwd=tmp_path, capture_output=True, text=True,
                                timeout=120)
        assert second.returncode == 1, second.stderr
        assert f"pid {proc.pid}" in second.stderr and "another -o" in second.stderr
        forced = subprocess.run([*slow, "--force"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120)
        assert forced.returncode == 1 and f"pid {proc.pid}" in forced.stderr
    finally:
        proc.kill()
        proc.wait()


def test_show_of_an_older_model_file_and_of_a_link(tmp_path, data_file):
    """A model file without a stored spec (RBM.save, as older mixlab wrote them) is shown with
    what it has; a link to a model is not followed (refused as for a run file)."""
    rng = np.random.default_rng(0)
    RBM(rng.normal(size=(5, 3)), np.zeros(5), np.zeros(3)).save(tmp_path / "old.h5",
                                                                 trainer="pcd", seed=1)
    r = invoke(["show", "old.h5"], tmp_path)
    assert r.exit_code == 0, r.output
    assert "RBM 5 visible x 3 hidden" in r.output and "none stored" in r.output
    os.symlink(tmp_path / "old.h5", tmp_path / "link.h5")
    r = invoke(["show", "link.h5"], tmp_path)
    assert r.exit_code != 0 and "RBM 5 visible" not in r.output
    # training into it: refused, the file kept
    before = (tmp_path / "old.h5").read_bytes()
    r = invoke(train_args(data_file, "-o", "old.h5"), tmp_path)
    assert r.exit_code == 1 and "older mixlab" in r.output
    assert (tmp_path / "old.h5").read_bytes() == before
