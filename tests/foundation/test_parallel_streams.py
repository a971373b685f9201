"""``mixlab run -j N``: independent streams in worker processes, the same bytes as ``-j 1``, one
writer, SIGKILL-safe, time budgets per stream, dependent streams serial.

The experiments are those of streams_plugin.py (a spec plugin). Runs go through ``execute`` in
this process (its workers are forked from it) or, where the command line matters, the CLI."""

from __future__ import annotations

import hashlib
import os
import signal
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from mixlab.run.context import execute
from mixlab.run.workers import available_cores
from mixlab.runfile.lock import live_writer
from mixlab.spec.resolver import load_spec

from .test_crash_safety import here, mixlab, wait_for

HERE = Path(__file__).resolve().parent
# -j is capped at the cores the process may use: these runs need two workers
pytestmark = pytest.mark.skipif(available_cores() < 2, reason="needs two cores for -j 2")


@pytest.fixture
def every_block_a_checkpoint(monkeypatch):
    monkeypatch.setenv("MIXLAB_CHECKPOINT_SECONDS", "0")   # so every block is a hand-off


def write_spec(tmp_path: Path, experiment: str, **keys) -> Path:
    lines = ["name: jobs-test", f"experiment: {experiment}",
             f"plugins: ['{HERE / 'streams_plugin.py'}']"]
    lines += [f"{k}: {v}" for k, v in keys.items()]
    path = tmp_path / f"{experiment}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(spec: Path, out: Path, jobs: int | None) -> str:
    return execute(load_spec(spec), out, quiet=True, render=False, jobs=jobs)[1]


def digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def contents(run_dir: Path) -> dict:
    """Every dataset (draws, stats, summaries, metrics, the final sampler states) and result of
    the run, without the timings, read through run.h5 alone."""
    out = {}
    with h5py.File(run_dir / "run.h5", "r") as f:
        assert f.attrs["status"] == "complete"

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and not name.endswith("/time") and (
                    "/_checkpoint/" not in name or "/_checkpoint/state/" in name):
                out[name] = (obj.dtype.str, obj.shape, digest(obj[()]))
        f.visititems(visit)
        out["results"] = {k: digest(np.asarray(v)) for k, v in f["results"].attrs.items()}
        out["draws"] = {k: int(g.attrs["draws"]) for k, g in f["streams"].items()}
    return out


def segments_are_exactly_the_linked_ones(run_dir: Path) -> None:
    files = {str(p.relative_to(run_dir)) for p in (run_dir / "segments").rglob("*") if p.is_file()}
    used = set()
    with h5py.File(run_dir / "run.h5", "r") as f:
        for name in f["streams"]:
            used |= {m.file_name for m in f[f"streams/{name}/samples"].virtual_sources()}
    assert files == used          # no orphan segment, no hand-off file left behind


def test_sigterm_of_a_jobs_2_run_stops_its_workers_and_resumes(draw_spec, tmp_path,
                                                               every_block_a_checkpoint):
    """SIGTERM to the run's process interrupts every worker; the run ends `interrupted` with the
    checkpoints they reached, and resumes to the bytes of -j 1."""
    spec, serial = draw_spec
    out = tmp_path / "run"
    pid = os.fork()
    if pid == 0:                                      # the `mixlab run -j 2` process
        code = 0
        try:
            run(spec, out, 2)
        except KeyboardInterrupt:
            code = 3
        finally:
            os._exit(code)

    def some_draws():
        try:
            with h5py.File(out / "run.h5", "r") as f:
                return any(g["_checkpoint"].attrs["count"] > 0 for g in f["streams"].values()
                           if "_checkpoint" in g)
        except (OSError, KeyError):
            return False
    wait_for(some_draws)
    os.kill(pid, signal.SIGTERM)
    assert os.waitpid(pid, 0)[1] >> 8 == 3           # ended by the interruption
    assert live_writer(out) is None                  # no worker left behind
    with h5py.File(out / "run.h5", "r") as f:
        assert f.attrs["status"] == "interrupted"
    assert not list((out / "segments").rglob("handoff-*"))
    assert run(spec, out, 2) == "resumed"
    resumed = contents(out)
    assert [k for k in serial if resumed[k] != serial[k]] == []


def witness(run_dir: Path) -> dict:
    """Per stream: (process ids that sampled it, first and last draw's clock, seconds)."""
    out = {}
    with h5py.File(run_dir / "run.h5", "r") as f:
        for name, g in f["streams"].items():
            clock = g["stats/clock"][()]
            out[name] = (set(g["stats/pid"][()].astype(int)), clock[0], clock[-1],
                         float(g.attrs["seconds"]))
    return out


@pytest.fixture(scope="module")
def draw_spec(tmp_path_factory):
    """A draw-budgeted spec of three streams and the contents of its -j 1 run."""
    d = tmp_path_factory.mktemp("draws")
    spec = write_spec(d, "jobs_test.independent", streams=3, draws=2000, block=100)
    run(spec, d / "serial", 1)
    return spec, contents(d / "serial")


def test_jobs_2_gives_the_bytes_of_jobs_1(draw_spec, tmp_path, every_block_a_checkpoint):
    spec, serial = draw_spec
    assert run(spec, tmp_path / "par", 2) == "ran"
    assert "independent streams in 2 worker processes" in (tmp_path / "par/log.txt").read_text()
    par = contents(tmp_path / "par")
    assert par.keys() == serial.keys()
    for key in serial:
        assert par[key] == serial[key], key
    assert set(serial["draws"].values()) == {2000}
    assert any(k.startswith("metrics/") for k in serial)       # the evaluators' curves too
    segments_are_exactly_the_linked_ones(tmp_path / "par")
    assert run(spec, tmp_path / "par", 2) == "complete"


def test_sigkill_of_a_jobs_2_run_resumes_to_the_same_bytes(draw_spec, tmp_path,
                                                           every_block_a_checkpoint):
    """The process running the spec is SIGKILLed at random instants; its workers die with it
    (the writer lock, which they inherit, comes free), and a -j 2 run finishes it."""
    spec, serial = draw_spec
    out = tmp_path / "run"
    rng = np.random.default_rng(7)
    t0 = time.perf_counter()         # the kills land within this machine's time for the run
    run(spec, tmp_path / "timed", 2)
    whole = time.perf_counter() - t0
    killed = 0
    for _ in range(3):
        pid = os.fork()
        if pid == 0:                                  # the `mixlab run -j 2` process
            try:
                run(spec, out, 2)
            finally:
                os._exit(0)
        wait_for(lambda: (out / "run.h5").exists())
        time.sleep(float(rng.uniform(0.0, 0.3)) * whole)   # 3 kills: before the end
        os.kill(pid, signal.SIGKILL)
        killed += os.waitpid(pid, 0)[1] == signal.SIGKILL
        wait_for(lambda: live_writer(out) is None, seconds=30)   # every worker is gone
    assert killed >= 2
    with h5py.File(out / "run.h5", "r") as f:
        assert f.attrs["status"] == "running"                    # killed mid-run each time
    assert run(spec, out, 2) == "resumed"
    resumed = contents(out)
    for key in serial:
        assert resumed[key] == serial[key], key
    segments_are_exactly_the_linked_ones(out)


def test_a_kill_between_taking_a_final_hand_off_and_deleting_it_leaves_no_file(
        draw_spec, tmp_path, every_block_a_checkpoint):
    """The window a random kill rarely hits: the parent has published a stream's last
    checkpoint (the stream is complete in run.h5) but not yet deleted the worker's hand-off
    file. The resumed run finds the stream complete, runs nothing for it, and still leaves
    no hand-off file behind."""
    from mixlab.run import workers as parallel

    spec, serial = draw_spec
    out = tmp_path / "run"
    pid = os.fork()
    if pid == 0:                                      # the `mixlab run -j 2` process
        try:
            real_ingest = parallel.StreamPool._ingest

            def ingest_then_die_when_complete(self, name, handoff):
                removed = []
                real_remove = parallel.confined.remove
                parallel.confined.remove = lambda root, rel: removed.append((root, rel))
                try:
                    real_ingest(self, name, handoff)
                finally:
                    parallel.confined.remove = real_remove
                if self.store.stream_done(name):
                    os.kill(os.getpid(), signal.SIGKILL)     # published, file not yet deleted
                for root, rel in removed:
                    real_remove(root, rel)

            parallel.StreamPool._ingest = ingest_then_die_when_complete
            run(spec, out, 2)
        finally:
            os._exit(0)
    assert os.waitpid(pid, 0)[1] == signal.SIGKILL
    wait_for(lambda: live_writer(out) is None, seconds=30)       # every worker is gone
    left = [p.name for p in (out / "segments").rglob("handoff-*")]
    assert left                              # the window was hit (and maybe another stream's)
    assert run(spec, out, 2) == "resumed"
    resumed = contents(out)
    for key in serial:
        assert resumed[key] == serial[key], key
    segments_are_exactly_the_linked_ones(out)


def test_time_budget_is_each_streams_own_on_its_own_core(tmp_path):
    # a budget shared by the streams (or run one stream after the other) fails the checks below
    # whatever its length: each stream must reach its own, and the two must overlap in time
    spec = write_spec(tmp_path, "jobs_test.independent", streams=2, seconds=0.4, block=20,
                      witness="true")
    run(spec, tmp_path / "run", 2)
    (pids0, start0, end0, sec0), (pids1, start1, end1, sec1) = witness(tmp_path / "run").values()
    assert len(pids0) == 1 and len(pids1) == 1 and pids0 != pids1   # one worker per stream
    assert os.getpid() not in pids0 | pids1
    assert sec0 >= 0.4 and sec1 >= 0.4                                # each its full budget
    assert max(start0, start1) < min(end0, end1)                      # at the same time


def test_dependent_streams_run_serially_under_jobs(tmp_path):
    spec = write_spec(tmp_path, "jobs_test.dependent", streams=3, draws=200, block=50,
                      witness="true")
    run(spec, tmp_path / "run", 2)
    w = witness(tmp_path / "run")
    assert set.union(*(v[0] for v in w.values())) == {os.getpid()}   # in the run's process
    spans = sorted((v[1], v[2]) for v in w.values())
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))       # one after the other


def test_a_failing_worker_fails_the_run_with_its_message(tmp_path):
    spec = write_spec(tmp_path, "jobs_test.independent", streams=3, draws=5000, block=50,
                      fail=1)
    out = tmp_path / "run"
    r = mixlab("run", spec, "--out", out, "-j", "2", env={"MIXLAB_JOBS": "3"})   # -j wins
    assert r.returncode == 1
    assert "the sampler diverged (planted by the test)" in r.stderr
    assert "Traceback" not in r.stderr
    with h5py.File(out / "run.h5", "r") as f:
        assert f.attrs["status"] == "failed"
    assert live_writer(out) is None
    assert not list((out / "segments").rglob("handoff-*"))


def test_jobs_setting_is_not_part_of_the_run(tmp_path, monkeypatch):
    """`jobs:` in the spec, MIXLAB_JOBS and -j choose workers; the run's identity ignores them."""
    spec = write_spec(tmp_path, "jobs_test.independent", streams=2, draws=100, jobs=2)
    out = tmp_path / "run"
    run(spec, out, None)
    assert "\njobs:" not in (out / "spec.yaml").read_text()
    assert "independent streams in 2 worker processes" in (out / "log.txt").read_text()
    plain = write_spec(tmp_path, "jobs_test.independent", streams=2, draws=100)
    assert run(plain, out, 1) == "complete"               # the same run
    monkeypatch.setenv("MIXLAB_JOBS", "2")
    run(plain, tmp_path / "env", None)
    assert "in 2 worker processes" in (tmp_path / "env/log.txt").read_text()
    monkeypatch.setenv("MIXLAB_JOBS", "many")   # a usage error, whatever process reads it
    r = here("run", plain, "--out", tmp_path / "bad")
    assert r.returncode == 2 and "MIXLAB_JOBS" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
