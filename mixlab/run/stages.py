"""Independent stages of one run in parallel worker processes (``mixlab run -j N``).

:meth:`mixlab.run.context.Context.once_each` hands the stages that are not done yet to
:func:`compute`: each runs ``fn()`` in a worker forked for it (so it inherits the closure, the
model and the data; nothing is pickled on the way in), with one BLAS thread, at most ``jobs`` at
a time. A worker only computes: it sends the stage's flat dict of arrays (and the samplers it
built, for ``--update``) back through a pipe, and the parent, the run's only writer, writes the
stages in their given order as soon as each one and those before it are in. A stage's values do
not depend on where it ran (its randomness comes from ``ctx.rng`` keyed by names), so the run
file holds what one process would write. A worker dies with its parent (``PR_SET_PDEATHSIG``);
a stage that fails stops the others and its exception is raised here.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
from collections.abc import Callable

from ..errors import MixlabError
from ..plugins.sampler_builds import build_log
from .worker_setup import die_with_parent
from .workers import _one_thread, _portable


def _worker(conn, parent: int, name: str, fn: Callable[[], dict]) -> None:
    die_with_parent(parent)
    _one_thread()
    try:
        with build_log() as built:
            values = fn()
        conn.send(("done", (values, list(built))))
    except KeyboardInterrupt:
        conn.send(("interrupted", None))
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent
        conn.send(("error", _portable(exc, f"stage {name}")))
    finally:
        conn.close()


def compute(stages: list[tuple[str, Callable[[], dict]]], jobs: int,
            write: Callable[[str, dict, list], None]) -> None:
    """Run every ``(name, fn)`` of ``stages`` in forked workers, ``jobs`` at a time, and call
    ``write(name, values, built)`` for each in the order of ``stages``."""
    ctx = multiprocessing.get_context("fork")
    waiting = list(enumerate(stages))
    running: dict = {}                  # connection -> (index, name, process)
    done: dict[int, tuple] = {}
    written = 0
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                i, (name, fn) = waiting.pop(0)
                here, there = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_worker, args=(there, os.getpid(), name, fn),
                                   daemon=True)
                proc.start()
                there.close()
                running[here] = (i, name, proc)
            for conn in multiprocessing.connection.wait(list(running)):
                i, name, proc = running.pop(conn)
                try:
                    kind, payload = conn.recv()
                except EOFError:
                    proc.join()
                    raise MixlabError(f"stage {name}: its worker process ended without a result "
                                      f"(exit code {proc.exitcode})") from None
                conn.close()
                proc.join()
                if kind == "interrupted":
                    raise KeyboardInterrupt
                if kind == "error":
                    raise payload
                done[i] = (name, *payload)
            while written in done:      # in order: the run file is the one-process file
                write(*done.pop(written))
                written += 1
    finally:
        for _, _, proc in running.values():
            proc.kill()
            proc.join()
