"""The one launcher (mixlab.launch): serial, process and Dask launchers give the same answers,
each worker is set up by one function (one thread, parent death, signals, no writer lock), a
task's dead process ends only that task (once retried), and an ordering policy object orders the
starts and hears the launcher's events."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mixlab.launch import launchers
from mixlab.launch.launchers import ProcessLauncher, SerialLauncher, Task, choose
from mixlab.launch.order import Order, launch


def _square(x: int) -> int:
    return x * x


def _threads() -> dict:
    from threadpoolctl import threadpool_info

    blas = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    return {"blas": blas, "pid": os.getpid(),
            **{v: os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "MIXLAB_KERNEL_THREADS",
                                              "NUMBA_NUM_THREADS")}}


def _die_once(flag: str) -> str:
    if not os.path.exists(flag):
        Path(flag).write_text("died")
        os.kill(os.getpid(), signal.SIGKILL)
    return "second attempt"


def _fail() -> None:
    raise ValueError("no such coupling")


@pytest.mark.parametrize("make", [SerialLauncher, lambda: ProcessLauncher(2, "fork"),
                                  lambda: ProcessLauncher(2, "spawn"),
                                  lambda: ProcessLauncher(2, "fork", reuse=True),
                                  lambda: ProcessLauncher(2, "spawn", reuse=True)])
def test_every_launcher_gives_the_same_values_in_the_policys_order(make):
    class Reverse(Order):
        def __init__(self):
            self.asked, self.seen, self.idle_calls, self.before = [], [], 0, 0

        def order(self, left, took, running):
            self.asked.append(list(left))
            return sorted(left, reverse=True)

        def before_start(self):
            self.before += 1

        def ended(self, i, end):
            self.seen.append(i)

        def idle(self):
            self.idle_calls += 1

    policy = Reverse()
    tasks = [Task(f"t{i}", _square, (i,)) for i in range(5)]
    with make() as launcher:
        got = {i: (end.kind, end.value) for i, end in launch(launcher, tasks, policy)}
    assert got == {i: ("done", i * i) for i in range(5)}
    assert policy.before == 1 and sorted(policy.seen) == [0, 1, 2, 3, 4]
    assert policy.asked[0] == [0, 1, 2, 3, 4] and policy.asked[-1] == [0]
    assert policy.idle_calls >= 1                 # the last ends leave a slot idle
    if isinstance(launcher, SerialLauncher):
        assert policy.seen == [4, 3, 2, 1, 0]


def test_an_error_is_the_tasks_end_and_the_others_go_on():
    with ProcessLauncher(2, "fork") as launcher:
        ends = dict(launch(launcher, [Task("bad", _fail), Task("ok", _square, (3,))]))
    assert ends[0].kind == "error" and isinstance(ends[0].value, ValueError)
    assert ends[1].value == 9


def test_a_dead_process_ends_its_task_alone_and_retry_runs_it_again(tmp_path):
    flag = str(tmp_path / "flag")
    with ProcessLauncher(2, "fork") as launcher:
        ends = dict(launch(launcher, [Task("die", _die_once, (flag,)),
                                      Task("ok", _square, (2,))]))
    assert ends[0].kind == "died" and "SIGKILL" in ends[0].value and ends[1].value == 4
    with ProcessLauncher(2, "fork") as launcher:
        ends = dict(launch(launcher, [Task("die", _die_once, (str(tmp_path / "f2"),))],
                           retry_died=True))
    assert ends[0].kind == "done" and ends[0].value == "second attempt"


def _checkpoint_when_stopped(path: str) -> None:
    try:
        while True:
            time.sleep(0.01)
    except KeyboardInterrupt:
        Path(path).write_text("checkpoint")
        raise


def _never_stop() -> None:
    while True:
        try:
            time.sleep(0.01)
        except KeyboardInterrupt:
            pass


def test_leaving_a_batch_early_lets_its_tasks_checkpoint_and_kills_one_that_will_not_stop(
        tmp_path, monkeypatch):
    monkeypatch.setattr(launchers, "STOP_SECONDS", 3.0)
    flag = tmp_path / "checkpoint"
    tasks = [Task("quick", _square, (2,)), Task("stops", _checkpoint_when_stopped, (str(flag),)),
             Task("stubborn", _never_stop)]
    with ProcessLauncher(3, "fork") as launcher:
        batch = launch(launcher, tasks)
        assert next(batch)[0] == 0
        workers = [w.proc for w in launcher._workers]
        t0 = time.monotonic()
        batch.close()                         # as a KeyboardInterrupt in the caller would
        waited = time.monotonic() - t0
        assert launcher.running() == 0
    assert flag.read_text() == "checkpoint"   # the SIGTERM passed on reached it
    assert not any(p.is_alive() for p in workers)
    assert launchers.NUDGE_SECONDS <= waited < 10   # the stubborn one killed at 3 s, not 30


def _pid(_: int) -> int:
    return os.getpid()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_reused_workers_run_task_after_task_and_a_dead_one_is_replaced(method, tmp_path):
    tasks = [Task(f"t{i}", _pid, (i,)) for i in range(6)]
    with ProcessLauncher(2, method, reuse=True) as launcher:
        pids = {end.value for _, end in launch(launcher, tasks)}
        assert len(pids) <= 2 and os.getpid() not in pids
        ends = dict(launch(launcher, [Task("die", _die_once, (str(tmp_path / "flag"),)),
                                      Task("ok", _square, (5,))], retry_died=True))
        assert ends[0].value == "second attempt" and ends[1].value == 25
        assert len(launcher._workers) <= 2
        after = {end.value for _, end in launch(launcher, tasks)}
    assert len(after) <= 2 and after != pids      # the killed worker's place has a new process
    with ProcessLauncher(2, method) as launcher:  # without reuse: a process per task
        assert len({end.value for _, end in launch(launcher, tasks)}) == 6


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_worker_has_one_thread_of_each_pool_and_the_parents_environment_stays(method,
                                                                              monkeypatch):
    for v in ("OPENBLAS_NUM_THREADS", "MIXLAB_KERNEL_THREADS", "NUMBA_NUM_THREADS"):
        monkeypatch.delenv(v, raising=False)
    with ProcessLauncher(1, method) as launcher:
        (_, end), = launch(launcher, [Task("threads", _threads)])
    seen = end.value
    assert seen["pid"] != os.getpid()
    assert seen["OPENBLAS_NUM_THREADS"] == seen["MIXLAB_KERNEL_THREADS"] == "1"
    assert seen["NUMBA_NUM_THREADS"] == "1" and set(seen["blas"]) <= {1}
    assert os.environ.get("OPENBLAS_NUM_THREADS") is None       # restored in the parent
    with SerialLauncher() as launcher:                           # one BLAS thread here too
        (_, end), = launch(launcher, [Task("threads", _threads)])
    assert set(end.value["blas"]) <= {1}


def test_the_kernels_see_one_thread_in_a_worker():
    code = ("import os; from mixlab.launch.worker import one_thread; one_thread(); "
            "from mixlab.rbm.kernels import threads; "
            "print(os.environ['MIXLAB_KERNEL_THREADS'], threads())")
    env = {k: v for k, v in os.environ.items() if k != "MIXLAB_KERNEL_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["1", "1"], out.stderr


_PARENT = """
import sys, time
from mixlab.launch.launchers import ProcessLauncher, Task
def sleep():
    time.sleep(60)
launcher = ProcessLauncher(1, "fork", reuse=REUSE)
launcher.submit(Task("sleeper", sleep))
pid = launcher._workers[0].proc.pid
print(pid, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("reuse", [False, True])
def test_a_worker_dies_with_its_parent(reuse):
    parent = subprocess.Popen([sys.executable, "-c", f"REUSE = {reuse}\n" + _PARENT],
                              stdout=subprocess.PIPE, text=True)
    try:
        worker = int(parent.stdout.readline())
        parent.kill()
        parent.wait()
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                os.kill(worker, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            os.kill(worker, signal.SIGKILL)
            pytest.fail("the worker outlived its parent")
    finally:
        if parent.poll() is None:
            parent.kill()


def test_choose_is_the_one_choice():
    assert isinstance(choose(1), SerialLauncher)
    launcher = choose(3, None, "fork")
    assert isinstance(launcher, ProcessLauncher) and launcher.slots == 3
