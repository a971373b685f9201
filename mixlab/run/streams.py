"""Run a sampler (a stream of draws) under a budget, feeding evaluators and the run file.

The stream is cut into blocks of a fixed number of draws (fixed by the spec, never by timing),
so evaluators always see the same blocks and a run resumed from any checkpoint produces the same
bytes as one that was never interrupted. Checkpoints fall on block boundaries, at most every
``checkpoint_seconds`` of wall time, and at the end: the blocks since the last one are written as
a segment file, the sampler's state, the RNG state and the evaluators' declared state (data
only: mixlab.runfile.checkpoint) are stored, and ``run.h5`` is replaced atomically (mixlab.runfile.store), so a
process killed at any instant, SIGKILL included, leaves the previous checkpoint intact. A
checkpoint is a critical section for SIGINT/SIGTERM: they are held and delivered right after it.

A stream runs with ``STREAM_BLAS_THREADS`` BLAS threads in the run's own process as in a worker
of ``mixlab run -j N`` (mixlab.run.workers): a BLAS library's sums depend on its thread count, so a
fixed count makes the draws, evaluator curves and results the same bytes however many workers ran
the streams, and a run started at ``-j 2`` resumes at ``-j 1`` to those same bytes.
"""

from __future__ import annotations

import functools
import json
import math
import signal
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from ..launch.worker import signal_handlers
from ..plugins.contract import check_finite, checked, code_failure
from ..runfile.checkpoint import evaluator_state
from ..runfile.streamfile import Checkpoint, StreamStore

# BLAS threads of every stream, whatever -j: fixed so that float32 products (the ISL evaluator's
# GEMMs) sum in the same order in every mode; one was also the faster on a loaded 2-core machine
STREAM_BLAS_THREADS = 1


@dataclass
class StreamResult:
    """What a finished stream reports: draws per chain, sampling seconds, final sampler state,
    and each statistic's mean over draws (and chains)."""

    draws: int
    seconds: float
    state: dict
    stats_mean: dict


def _rng_state_json(rng: np.random.Generator) -> str:
    return json.dumps(rng.bit_generator.state, default=int)


def _set_rng_state(rng: np.random.Generator, text: str) -> None:
    rng.bit_generator.state = json.loads(text)


def default_block(chains: int, draw_bytes: int, budget_draws: int | None) -> int:
    """Draws per block: about 16 MB of buffered draws, between 1 and 1000."""
    per_draw = max(1, chains * max(draw_bytes, 1))
    b = int(np.clip((16 << 20) // per_draw, 1, 1000))
    if budget_draws is not None:
        b = min(b, budget_draws)
    return max(b, 1)


def _fixed_blas_threads(fn: Callable) -> Callable:
    """``fn`` run with ``STREAM_BLAS_THREADS`` BLAS threads (sampler steps, summaries, evaluator
    updates and curves alike)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with threadpool_limits(STREAM_BLAS_THREADS, user_api="blas"):
            return fn(*args, **kwargs)
    return wrapper


@_fixed_blas_threads
def run_stream(store: StreamStore, name: str, sampler: Any, rng: np.random.Generator, *,
               draws: int | None = None, seconds: float | None = None, thin: int = 1,
               evaluators: Iterable = (), record: bool | tuple = True,
               record_stats: bool = True, block: int | None = None,
               checkpoint_seconds: float = 10.0, progress=None,
               summarize: Callable | None = None,
               block_seconds: float | None = None,
               after_block: Callable[[dict, dict], dict] | None = None,
               record_summaries: bool = True) -> StreamResult:
    """Run ``sampler`` until ``draws`` draws per chain (after thinning) or ``seconds`` of
    sampling time, whichever comes first; resume from the stream's checkpoint if there is one.

    ``sampler.step(state, rng) -> (state, draws, stats)``; draws ``{key: (chain, ...)}``,
    stats ``{key: (chain,) or ()}``. ``record`` is True (store every draw key), False, or a
    tuple of keys to store; ``record_stats`` False keeps the per-step statistics out of the run
    file too (their means are kept all the same). ``progress`` is an optional tqdm-like bar
    advanced per draw.
    ``summarize(block) -> {stat: (chain, n)}`` maps a block of draws ``{key: (chain, n,
    ...)}`` to scalar summaries per draw, stored as ``summary/<stat>`` (chain, draw) whether or
    not the draws are recorded (mixing diagnostics read them): float64, or the summary's own
    integer type of at most 16 bits (booleans as uint8), the type of its first block.
    ``record_summaries`` False keeps them out of the run file (the evaluators still see them:
    the league's streaming ESS keeps a thinned record of them instead).

    ``block_seconds`` (a time-budgeted stream only) also ends a block once it has sampled that
    long, so a fast sampler's blocks hold many draws (few per-block costs: summaries,
    evaluators, writes) and a slow one's few (evaluator curves still resolved in time). Block
    ends then depend on the clock, so a draw budget does not take it: its blocks, hence its
    curves, are the same on every machine.

    ``after_block(block, stats) -> block`` (``thin`` 1 only) maps each block of draws
    ``{key: (chain, n, ...)}`` to the block the summaries, evaluators and run file see, given
    the block's per-step statistics ``{stat: (n, ...)}`` (NaN where a step did not report
    one); it runs outside the sampling clock: the league adds each step's work to the draws
    there, so that every sampler's seconds count its own steps alone.
    """
    if draws is None and seconds is None:
        raise ValueError(f"stream {name}: give a budget in draws or in seconds")
    if block_seconds is not None and (draws is not None or not block_seconds > 0):
        raise ValueError(f"stream {name}: block_seconds (> 0) is for a budget in seconds alone")
    if thin < 1:
        raise ValueError("thin must be >= 1")
    if after_block is not None and thin != 1:
        raise ValueError(f"stream {name}: after_block is for thin = 1 (it sees every step's "
                         f"stats)")
    evaluators = list(evaluators)
    ck = store.checkpoint(name, len(evaluators))
    if ck is not None and ck.complete:
        # nothing runs, but a file a killed writer left is deleted all the same (a worker's
        # hand-off of this last checkpoint, taken into run.h5 and not yet deleted)
        store.stream_segments(name)
        _load_evaluators(ck, evaluators)
        _write_curves(store, evaluators)
        store.safe_draws[name] = ck.count
        return StreamResult(ck.count, ck.seconds, ck.state, ck.stats_mean)

    segments = store.stream_segments(name)
    if ck is not None:
        count, elapsed, state = ck.count, ck.seconds, ck.state
        _set_rng_state(rng, ck.rng)
        _load_evaluators(ck, evaluators)
        stat_sums = ck.stat_sums
    else:
        count, elapsed, stat_sums = 0, 0.0, {}
        try:
            state = sampler.init(rng)
        except Exception as exc:
            raise _named(sampler, exc, name, 0) from exc
    store.safe_draws[name] = count

    if getattr(progress, "disable", False):       # a disabled tqdm bar: no call per draw
        progress = None
    if progress is not None:
        progress.reset(total=draws if draws is not None else None)
        progress.update(count)

    last_ck = time.perf_counter()
    clock = time.perf_counter
    done = (draws is not None and count >= draws) or (seconds is not None and elapsed >= seconds)
    seconds_left = math.inf if seconds is None else seconds
    while not done:
        n_block = block
        buf: dict[str, np.ndarray] = {}
        stat_buf: dict[str, np.ndarray] = {}
        times = None
        i = 0
        block_end = min(elapsed + block_seconds if block_seconds is not None else math.inf,
                        seconds_left)
        while True:
            t0 = clock()
            try:
                if thin == 1:
                    state, d, st = sampler.step(state, rng)
                else:
                    for t in range(thin):
                        state, d, st = sampler.step(state, rng)
            except Exception as exc:
                step_no = (count + i) * thin + (t + 1 if thin > 1 else 1)
                raise _named(sampler, exc, name, step_no) from exc
            elapsed += clock() - t0
            if not buf:     # the block's first draw: buffers sized from it
                if n_block is None:  # no block length given: the draw size sets it
                    nbytes = sum(np.asarray(v).nbytes for v in d.values())
                    n_block = default_block(1, nbytes, None)
                if draws is not None:
                    n_block = min(n_block, draws - count)
                # draw-major while filling (a row per step is the cheapest write), chain-major
                # once the block is full
                buf = {k: np.empty((n_block,) + np.shape(v), dtype=np.asarray(v).dtype)
                       for k, v in d.items()}
                stat_buf = {k: np.full((n_block,) + np.shape(v), np.nan)
                            for k, v in st.items()}
                times = np.empty(n_block, dtype=np.float64)
            for k, v in d.items():
                buf[k][i] = v
            for k, v in st.items():
                stat_buf[k][i] = v
            times[i] = elapsed
            i += 1
            if progress is not None:
                progress.update(1)
            if i == n_block or elapsed >= block_end:
                break
        if i < n_block:
            stat_buf = {k: v[:i] for k, v in stat_buf.items()}
            times = times[:i]
        buf = {k: np.ascontiguousarray(np.swapaxes(v[:i], 0, 1)) for k, v in buf.items()}
        if after_block is not None:
            buf = after_block(buf, stat_buf)
        check_finite(_unwrapped(sampler), buf, name, count * thin, thin)
        count += i
        for k, v in stat_buf.items():
            stat_sums[k] = stat_sums.get(k, 0.0) + float(np.sum(np.mean(
                v.reshape(len(v), -1), axis=1)))
        done = (draws is not None and count >= draws) or (seconds is not None and
                                                          elapsed >= seconds)
        if summarize is not None:
            buf.update(_summaries(summarize, buf, name, segments.layout))
        if progress is not None and stat_buf:
            progress.set_postfix({k: f"{float(np.mean(v)):.3g}" for k, v in stat_buf.items()
                                  if k in _SHOWN_STATS}, refresh=False)
        with _signals_held():
            segments.append({k: v for k, v in buf.items()
                             if _recorded(k, record, record_summaries)},
                            stat_buf if record_stats else {}, times)
            for ev in evaluators:
                ev.update(buf, count, elapsed)
            if done or time.perf_counter() - last_ck >= checkpoint_seconds:
                stats_mean = {k: s / max(count, 1) for k, s in stat_sums.items()}
                segments.flush()
                store.write_checkpoint(
                    name, Checkpoint(state, _rng_state_json(rng),
                                     [evaluator_state(ev) for ev in evaluators], count, elapsed,
                                     stat_sums, stats_mean, complete=done),
                    segments, [f"evaluator {i} ({type(ev).__name__})"
                               for i, ev in enumerate(evaluators)])
                if done:
                    store.finish_stream(name, count, elapsed, thin)
                store.publish()
                store.safe_draws[name] = count
                last_ck = time.perf_counter()
    store.finish_stream(name, count, elapsed, thin)
    stats_mean = {k: s / max(count, 1) for k, s in stat_sums.items()}
    _write_curves(store, evaluators)
    return StreamResult(count, elapsed, state, stats_mean)


def _unwrapped(sampler: Any) -> Any:
    return sampler.wrapped if isinstance(sampler, checked) else sampler


def _named(sampler: Any, exc: Exception, name: str, step: int) -> Exception:
    """``exc`` from a sampler's init (step 0) or n-th step, as a SamplerFailure naming the
    plugin, the stream and the step when a plugin's code raised it; else ``exc`` itself."""
    failure = code_failure(_unwrapped(sampler), exc, name, step)
    if failure is None:
        raise exc
    return failure


# per-draw statistics shown next to the progress bar's draws/s
_SHOWN_STATS = ("accept", "acceptance", "data_used")


def _recorded(key: str, record: bool | tuple, summaries: bool = True) -> bool:
    if key.startswith("summary/"):
        return summaries
    return record is True or bool(record and key in record)


_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def _signals_held():
    """Hold SIGINT and SIGTERM inside the block (record them, deliver them again on exit, where
    their usual handlers raise KeyboardInterrupt or mixlab's termination).  Outside the main
    thread, where handlers cannot be set, the block runs unprotected."""
    got: list[int] = []

    def hold(signum, frame):
        got.append(signum)

    try:
        with signal_handlers(dict.fromkeys(_HELD_SIGNALS, hold)):
            yield
    finally:
        for s in dict.fromkeys(got):
            signal.raise_signal(s)


def _load_evaluators(ck: Checkpoint, evaluators: list) -> None:
    """Give each evaluator back the state its checkpoint holds (data only, see checkpoint)."""
    for ev, state in zip(evaluators, ck.evaluators, strict=True):
        ev.load_state(state)


def _write_curves(store: StreamStore, evaluators: list) -> None:
    """Each evaluator's curve, but for an evaluator whose ``metric`` is None (it draws
    none)."""
    for ev in evaluators:
        if getattr(ev, "metric", None) is None:
            continue
        x, y, yerr = ev.curve()
        store.write_metric(ev.metric, ev.series, x, y, yerr,
                           x_label=getattr(ev, "x_label", ""), y_label=getattr(ev, "y_label", ""))


def _summaries(summarize: Callable, buf: dict, name: str, layout: dict) -> dict:
    """``summary/<stat>`` arrays (chain, n) of a block, shapes checked: in their own type when
    it is an integer type of at most 16 bits (booleans as uint8: an indicator, a count, a ±1
    spin stored in a byte or two instead of eight), else float64; float64 too for a summary
    the stream's earlier blocks stored so (``layout``: the stream's segment layout)."""
    chains, n = next(iter(buf.values())).shape[:2]
    out = {}
    for stat, v in summarize(buf).items():
        v = np.asarray(v)
        if v.dtype == np.bool_:
            v = v.astype(np.uint8)
        if v.dtype.kind not in "iu" or v.dtype.itemsize > 2 or \
                layout.get(f"summary/{stat}", {}).get("dtype") == np.dtype(np.float64).str:
            v = np.asarray(v, dtype=np.float64)
        if v.shape != (chains, n) or "/" in str(stat):
            raise ValueError(f"stream {name}: summary {stat!r} must be named without '/' and "
                             f"shaped (chain, draw) = {(chains, n)}, got {v.shape}")
        out[f"summary/{stat}"] = v
    return out
