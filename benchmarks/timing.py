"""The timing helper the benchmark modules share."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_time(fn: Callable[[], object], repeats: int, warm_up: bool = False) -> float:
    """The shortest wall time of ``repeats`` calls of ``fn()``, in seconds; ``warm_up``: one
    untimed call first (allocations, BLAS threads, a compiled function's loading)."""
    if warm_up:
        fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
