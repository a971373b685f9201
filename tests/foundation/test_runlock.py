"""The writer lock file: a complete run leaves none, an interrupted one keeps it (naming its last
writer) until the next writer takes it, and a writer never holds a lock file that a finished
writer has just removed."""

from __future__ import annotations

import os

from mixlab.run.context import execute
from mixlab.runfile import lock as runlock
from mixlab.runfile.lock import LOCK_NAME, RunLock, last_writer, live_writer
from mixlab.runfile.store import RunReader
from mixlab.spec.resolver import load_spec

TOY = "experiment: toy.gaussian\ndim: 2\nchains: 2\nbudget: {draws: 100}\nblock: 50\n"


def _spec(tmp_path):
    p = tmp_path / "toy.yaml"
    p.write_text(TOY)
    return load_spec(p)


def test_a_complete_run_leaves_no_lock_file(tmp_path):
    run_dir, happened = execute(_spec(tmp_path), tmp_path / "run", quiet=True, render=False)
    assert happened == "ran" and not (run_dir / LOCK_NAME).exists()
    with RunReader(run_dir) as run:
        assert run.status == "complete"
    _, happened = execute(_spec(tmp_path), run_dir, quiet=True, render=False)
    assert happened == "complete" and not (run_dir / LOCK_NAME).exists()


def test_an_interrupted_run_keeps_its_lock_until_the_next_writer_completes_it(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    RunLock.acquire(run_dir).release()              # a writer that died: its file stays
    assert (run_dir / LOCK_NAME).exists() and live_writer(run_dir) is None
    assert f"pid {os.getpid()}" in last_writer(run_dir)
    _, happened = execute(_spec(tmp_path), run_dir, quiet=True, render=False)
    assert happened == "ran" and not (run_dir / LOCK_NAME).exists()


def test_a_lock_file_removed_after_opening_is_opened_afresh(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    first = RunLock.acquire(run_dir)
    stale = os.open(run_dir / LOCK_NAME, os.O_RDWR)  # opened just before the writer completes
    first.release(remove=True)
    assert not (run_dir / LOCK_NAME).exists()
    real_open, handed = os.open, []

    def open_stale_first(path, flags, mode=0o777, **kw):
        if not handed:
            handed.append(path)
            return stale
        return real_open(path, flags, mode, **kw)

    monkeypatch.setattr(runlock.os, "open", open_stale_first)
    lock = RunLock.acquire(run_dir)
    monkeypatch.undo()
    assert handed and (run_dir / LOCK_NAME).exists()   # not the unlinked file
    assert live_writer(run_dir) is not None          # others see the lock on the path
    lock.release()
    assert live_writer(run_dir) is None
