"""Independent stages of one run in parallel worker processes (``mixlab run -j N``).

:meth:`mixlab.run.context.Context.once_each` hands the stages that are not done yet to
:func:`compute`: each runs ``fn()`` as a task of the launcher (mixlab.launch), in a worker forked
for it (so it inherits the closure, the model and the data; nothing is pickled on the way in),
at most ``jobs`` at a time. A worker only computes: it returns the stage's flat dict of arrays
(and the samplers it built, for ``--update``), and the parent, the run's only writer, writes the
stages in their given order as soon as each one and those before it are in. A stage's values do
not depend on where it ran (its randomness comes from ``ctx.rng`` keyed by names), so the run
file holds what one process would write. A stage that fails stops the others and its exception
is raised here.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import MixlabError
from ..launch.launchers import Launcher, ProcessLauncher, Task
from ..launch.order import launch
from ..plugins.sampler_builds import build_log


def _stage(fn: Callable[[], dict]) -> tuple[dict, list]:
    """A stage's values and the samplers it built."""
    with build_log() as built:
        values = fn()
    return values, list(built)


def compute(stages: list[tuple[str, Callable[[], dict]]], jobs: int,
            write: Callable[[str, dict, list], None],
            launcher: Launcher | None = None) -> None:
    """Run every ``(name, fn)`` of ``stages`` on ``launcher`` (default: ``jobs`` forked worker
    processes) and call ``write(name, values, built)`` for each in the order of ``stages``."""
    launcher = launcher if launcher is not None else ProcessLauncher(jobs, "fork")
    tasks = [Task(f"stage {name}", _stage, (fn,)) for name, fn in stages]
    done: dict[int, tuple] = {}
    written = 0
    with launcher:
        for i, end in launch(launcher, tasks):
            name = stages[i][0]
            if end.kind == "interrupted":
                raise KeyboardInterrupt
            if end.kind == "error":
                raise end.value
            if end.kind == "died":
                raise MixlabError(f"stage {name}: its worker process {end.value}")
            done[i] = (name, *end.value)
            while written in done:      # in order: the run file is the one-process file
                write(*done.pop(written))
                written += 1
