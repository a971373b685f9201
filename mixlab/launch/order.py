"""Ordering policies, and :func:`launch`: tasks started on a launcher in a policy's order.

A policy (:class:`Order`) says which task starts next, given the wall seconds of the tasks
finished and of those running; it also hears when the first task is about to start
(``before_start``), when each ends (``ended``), and when a slot of the launcher is left with no
task to start (``idle``), so that the caller can use that core. :class:`Order` itself starts
tasks in index order; a league's :class:`mixlab.league.schedule.StartOrder` starts its cells so
that the workers finish together.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from .launchers import Ended, Launcher, Message, Task


class Order:
    """Index order, and no-op hooks; subclass to reorder or to listen."""

    def order(self, left: list[int], took: dict[int, float],
              running: dict[int, float]) -> list[int]:
        """The tasks ``left`` to start (indices), reordered, given the wall seconds of the tasks
        finished (``took``) and of those running so far (``running``); the first starts."""
        return list(left)

    def before_start(self) -> None:
        """Called once, before the first task starts (not at all with nothing to start)."""

    def ended(self, i: int, end: Ended) -> None:
        """Called as task ``i`` ends (after the caller has handled its end)."""

    def idle(self) -> None:
        """Called when a task's end leaves a slot of the launcher with no task to start (on a
        launcher without slots, as each task ends)."""


class Starts:
    """The tasks left to start, handed out one at a time in the order a policy gives, with the
    wall seconds of each task finished so far and of each running."""

    def __init__(self, todo: list[int], policy: Order):
        self.left, self.policy = list(todo), policy
        self.took: dict[int, float] = {}
        self.started: dict[int, float] = {}

    def __bool__(self) -> bool:
        return bool(self.left)

    def ordered(self) -> list[int]:
        now = time.perf_counter()
        running = {i: now - t for i, t in self.started.items()}
        out = list(self.policy.order(list(self.left), dict(self.took), running))
        if sorted(out) != sorted(self.left):
            raise ValueError("order(left, took, running) must return the tasks left, "
                             "reordered")
        return out

    def next(self) -> int:
        i = self.ordered()[0]
        self.left.remove(i)
        self.started[i] = time.perf_counter()
        return i

    def all_at_once(self) -> list[int]:
        out = self.ordered()
        now = time.perf_counter()
        self.started.update(dict.fromkeys(out, now))
        self.left = []
        return out

    def finished(self, i: int) -> None:
        self.took[i] = time.perf_counter() - self.started.pop(i)

    def again(self, i: int) -> None:
        """Task ``i`` is to start again (its process died)."""
        self.started.pop(i, None)
        self.left.append(i)


def launch(launcher: Launcher, tasks: list[Task], policy: Order | None = None, *,
           retry_died: bool = False) -> Iterator[tuple[int, Ended]]:
    """Run ``tasks`` on ``launcher`` in ``policy``'s order, at most ``launcher.slots`` at a
    time (all at once without a limit: the policy is asked once); yields ``(index, end)`` as
    each ends. ``retry_died``: a task whose process died starts once more (a crash or a kill
    loses that attempt; a task that resumes from its checkpoint goes on). Messages are not for
    batches: a task's reports are dropped. Leaving the loop early, or an interruption, stops the
    tasks running and lets them checkpoint first (:meth:`Launcher.stop`)."""
    policy = policy if policy is not None else Order()
    starts = Starts(list(range(len(tasks))), policy)
    index = {t.key: i for i, t in enumerate(tasks)}
    if len(index) != len(tasks):
        raise ValueError("tasks must have distinct keys")
    retried: set[int] = set()
    if tasks:
        policy.before_start()

    def fill() -> None:
        if launcher.slots is None:
            for i in starts.all_at_once():
                launcher.submit(tasks[i])
            return
        while starts and launcher.running() < launcher.slots:
            launcher.submit(tasks[starts.next()])

    try:
        fill()
        while launcher.running():
            ended = [e for e in launcher.wait() if not isinstance(e, Message)]
            for e in ended:
                starts.finished(index[e.key])
            again = set()
            for e in ended:
                i = index[e.key]
                if e.kind == "died" and retry_died and i not in retried:
                    retried.add(i)
                    again.add(i)
                    starts.again(i)
            fill()                    # before the bookkeeping, so no worker waits for it
            for e in ended:
                i = index[e.key]
                if i in again:
                    continue
                yield i, e
                policy.ended(i, e)
            if ended and not starts and (launcher.slots is None
                                         or launcher.running() < launcher.slots):
                policy.idle()
    finally:
        if launcher.running():          # interrupted, or the caller left the loop early
            launcher.stop()
