"""``mixlab run -j N``: independent streams in worker processes, the same bytes as ``-j 1``, one
writer, SIGKILL-safe, time budgets per stream, dependent streams serial.

Every test drives the real CLI in a subprocess, with the experiments of streams_plugin.py."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from mixlab.runlock import live_writer

from .test_crash_safety import mixlab, start, wait_for

HERE = Path(__file__).resolve().parent
ENV = {"MIXLAB_CHECKPOINT_SECONDS": "0"}     # a checkpoint (a hand-off) after every block


def write_spec(tmp_path: Path, experiment: str, **keys) -> Path:
    lines = [f"name: jobs-test", f"experiment: {experiment}", f"plugins: ['{HERE / 'streams_plugin.py'}']"]
    lines += [f"{k}: {v}" for k, v in keys.items()]
    path = tmp_path / "spec.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def contents(run_dir: Path) -> dict:
    """Every dataset and result of the run (not the timings), read through run.h5 alone."""
    out = {}
    with h5py.File(run_dir / "run.h5", "r") as f:
        assert f.attrs["status"] == "complete"

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and not name.endswith("/time"):
                if "/_checkpoint/" in name and not name.split("/")[-1] in ("x", "logp"):
                    return
                out[name] = (obj.dtype.str, obj.shape, obj[()].tobytes())
        f.visititems(visit)
        out["results"] = {k: np.asarray(v).tobytes() for k, v in f["results"].attrs.items()}
        out["draws"] = {k: int(g.attrs["draws"]) for k, g in f["streams"].items()}
    return out


def segments_are_exactly_the_linked_ones(run_dir: Path) -> None:
    files = {str(p.relative_to(run_dir)) for p in (run_dir / "segments").rglob("*") if p.is_file()}
    used = set()
    with h5py.File(run_dir / "run.h5", "r") as f:
        for name in f["streams"]:
            used |= {m.file_name for m in f[f"streams/{name}/samples"].virtual_sources()}
    assert files == used          # no orphan segment, no hand-off file left behind


@pytest.fixture(scope="module")
def draw_spec(tmp_path_factory):
    """A draw-budgeted spec of three streams and its -j 1 run."""
    d = tmp_path_factory.mktemp("draws")
    spec = write_spec(d, "jobs_test.independent", streams=3, draws=6000, block=200)
    r = mixlab("run", spec, "--out", d / "serial", "-q", "-j", "1")
    assert r.returncode == 0, r.stderr
    return spec, contents(d / "serial")


def test_jobs_2_gives_the_bytes_of_jobs_1(draw_spec, tmp_path):
    spec, serial = draw_spec
    r = mixlab("run", spec, "--out", tmp_path / "par", "-j", "2", env=ENV)
    assert r.returncode == 0, r.stderr
    assert "independent streams in 2 worker processes" in r.stderr
    par = contents(tmp_path / "par")
    assert par.keys() == serial.keys()
    for key in serial:
        assert par[key] == serial[key], key
    assert set(serial["draws"].values()) == {6000}
    segments_are_exactly_the_linked_ones(tmp_path / "par")
    again = mixlab("run", spec, "--out", tmp_path / "par", "-j", "2")
    assert again.returncode == 0 and "already complete" in again.stdout


def test_sigkill_of_a_jobs_2_run_resumes_to_the_same_bytes(draw_spec, tmp_path):
    """The parent is SIGKILLed at random instants; its workers die with it (the writer lock,
    which they inherit, comes free), and the same command finishes the run."""
    spec, serial = draw_spec
    out = tmp_path / "run"
    rng = np.random.default_rng(7)
    killed = 0
    for _ in range(4):
        p = start("run", spec, "--out", out, "-q", "-j", "2", env=ENV)
        try:
            wait_for(lambda p=p: (out / "run.h5").exists() or p.poll() is not None)
            time.sleep(float(rng.uniform(0.0, 0.6)))
        finally:
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
        killed += p.returncode == -signal.SIGKILL
        wait_for(lambda: live_writer(out) is None, seconds=30)   # every worker is gone
        shown = mixlab("show", out)
        assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    assert killed >= 2
    r = mixlab("run", spec, "--out", out, "-q", "-j", "2", env=ENV)
    assert r.returncode == 0, r.stderr
    resumed = contents(out)
    for key in serial:
        assert resumed[key] == serial[key], key
    segments_are_exactly_the_linked_ones(out)


def witness(run_dir: Path) -> dict:
    """Per stream: (process ids that sampled it, first and last draw's clock, seconds)."""
    out = {}
    with h5py.File(run_dir / "run.h5", "r") as f:
        for name, g in f["streams"].items():
            clock = g["stats/clock"][()]
            out[name] = (set(g["stats/pid"][()].astype(int)), clock[0], clock[-1],
                         float(g.attrs["seconds"]))
    return out


def test_time_budget_is_each_streams_own_on_its_own_core(tmp_path):
    spec = write_spec(tmp_path, "jobs_test.independent", streams=2, seconds=1.5, block=20,
                      witness="true")
    r = mixlab("run", spec, "--out", tmp_path / "run", "-q", "-j", "2")
    assert r.returncode == 0, r.stderr
    w = witness(tmp_path / "run")
    (pids0, start0, end0, sec0), (pids1, start1, end1, sec1) = w["s0"], w["s1"]
    assert len(pids0) == 1 and len(pids1) == 1 and pids0 != pids1   # one worker per stream
    assert sec0 >= 1.5 and sec1 >= 1.5                                # each its full budget
    assert max(start0, start1) < min(end0, end1)                      # at the same time


def test_dependent_streams_run_serially_under_jobs(tmp_path):
    spec = write_spec(tmp_path, "jobs_test.dependent", streams=3, draws=300, block=50,
                      witness="true")
    r = mixlab("run", spec, "--out", tmp_path / "par", "-q", "-j", "2")
    assert r.returncode == 0, r.stderr
    w = witness(tmp_path / "par")
    assert len(set.union(*(v[0] for v in w.values()))) == 1          # all in one process
    spans = sorted((v[1], v[2]) for v in w.values())
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))       # one after the other


def test_a_failing_worker_fails_the_run_with_its_message(tmp_path):
    spec = write_spec(tmp_path, "jobs_test.independent", streams=3, draws=20000, block=50,
                      fail=1)
    out = tmp_path / "run"
    r = mixlab("run", spec, "--out", out, "-j", "2")
    assert r.returncode == 1
    assert "the sampler diverged (planted by the test)" in r.stderr
    assert "Traceback" not in r.stderr
    with h5py.File(out / "run.h5", "r") as f:
        assert f.attrs["status"] == "failed"
    assert live_writer(out) is None


def test_jobs_setting_is_not_part_of_the_run(tmp_path):
    """`jobs:` in the spec, MIXLAB_JOBS and -j choose workers; the run's identity ignores them."""
    spec = write_spec(tmp_path, "jobs_test.independent", streams=2, draws=100, jobs=2)
    out = tmp_path / "run"
    r = mixlab("run", spec, "--out", out, "-q")
    assert r.returncode == 0, r.stderr
    assert "\njobs:" not in (out / "spec.yaml").read_text()
    assert "independent streams in 2 worker processes" in (out / "log.txt").read_text()
    again = mixlab("run", spec, "--out", out, "-j", "1", "jobs=1")
    assert again.returncode == 0 and "already complete" in again.stdout, again.stderr
    bad = mixlab("run", spec, "--out", tmp_path / "other", env={"MIXLAB_JOBS": "many"})
    assert bad.returncode == 0, bad.stderr            # the spec's jobs wins over the environment
    plain = write_spec(tmp_path, "jobs_test.independent", streams=2, draws=100)
    bad = mixlab("run", plain, "--out", tmp_path / "third", env={"MIXLAB_JOBS": "many"})
    assert bad.returncode == 2 and "MIXLAB_JOBS" in bad.stderr, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    zero = mixlab("run", plain, "--out", tmp_path / "third", "-j", "0")
    assert zero.returncode == 2
