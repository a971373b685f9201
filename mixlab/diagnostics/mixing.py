"""The mixing diagnostics of every stream of a run, computed by ArviZ.

For each stream, the statistics are its per-draw scalar summaries (``/streams/<name>/summary``,
written by each family's ``summaries.py``); a stream without summaries contributes the first
:data:`MAX_COORDINATES` coordinates of each real-valued draw key, in order (``samples[0]``, …).
For each statistic, an array ``(chain, draw)``:

- ``ess_bulk``, ``ess_tail``: rank-normalised bulk and tail effective sample size over all
  chains (Vehtari et al. 2021, as ``arviz.ess``);
- ``rhat``: rank-normalised split R-hat (``arviz.rhat``); None with a single chain;
- ``mcse``: Monte Carlo standard error of the mean (``arviz.mcse``);
- ``ess_per_s``: ``ess_bulk`` / the stream's sampling seconds (all chains advance together, so
  this is the effective draws the whole batch delivers per second of sampling).

A league stream's summaries are a thinned record (every ``stride``-th draw: the row's
``stride``); its numbers are those of the record, whose ESS is at most its own draws (the
streaming ESS of every draw is in the record's attributes and the cell's results).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import UsageError
from ..runfile.store import RunReader
from .arviz_quiet import arviz

#: coordinates of a draw key used when a stream has no summaries
MAX_COORDINATES = 8
#: the columns of the table, in order
COLUMNS = ("stream", "statistic", "ess_bulk", "ess_tail", "rhat", "mcse", "ess_per_s")


@dataclass
class Row:
    stream: str
    statistic: str
    ess_bulk: float | None
    ess_tail: float | None
    rhat: float | None
    mcse: float | None
    ess_per_s: float | None
    chains: int
    draws: int
    stride: int = 1

    def record(self) -> dict:
        """The row as JSON-ready data: the table's keys, in its order (NaN → None)."""
        d = asdict(self)
        return {k: _finite(d[k]) for k in COLUMNS}


def _finite(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def stream_statistics(run: RunReader, name: str) -> dict[str, np.ndarray]:
    """``{statistic: (chain, draw) float64}`` for stream ``name`` (see the module docstring)."""
    stats = run.stream_summaries(name)
    if stats:
        return {k: np.asarray(v, np.float64) for k, v in stats.items()}
    out: dict[str, np.ndarray] = {}
    for key in run.stream_keys(name):
        if key in ("time",):
            continue
        x = run.stream(name, key)
        if x.ndim < 2 or x.dtype.kind not in "biuf":
            continue
        flat = x.reshape(x.shape[0], x.shape[1], -1)
        for i in range(min(flat.shape[2], MAX_COORDINATES)):
            out[f"{key}[{i}]" if flat.shape[2] > 1 else key] = flat[:, :, i].astype(np.float64)
    return out


def diagnose_arrays(stream: str, stats: dict[str, np.ndarray], seconds: float) -> list[Row]:
    """One :class:`Row` per statistic of ``stats`` (``{name: (chain, draw)}``)."""
    if not stats:
        return []
    az = arviz()
    chains, draws = next(iter(stats.values())).shape
    ds = az.convert_to_dataset({k: v for k, v in stats.items()})
    with np.errstate(all="ignore"):
        bulk = az.ess(ds, method="bulk")
        tail = az.ess(ds, method="tail")
        mcse = az.mcse(ds, method="mean")
        rhat = az.rhat(ds) if chains >= 2 else None
    rows = []
    for k in stats:
        b = float(bulk[k])
        rows.append(Row(stream, k, b, float(tail[k]), None if rhat is None else float(rhat[k]),
                        float(mcse[k]), b / seconds if seconds > 0 else None, chains, draws))
    return rows


def diagnose(run: RunReader, stream: str | None = None) -> list[Row]:
    """The diagnostics of every stream of ``run`` (or only ``stream``), in stream order."""
    names = run.stream_names()
    if stream is not None:
        if stream not in names:
            raise UsageError(f"run {run.run_dir} has no stream '{stream}'; its streams: "
                             f"{', '.join(names) or 'none'}")
        names = [stream]
    rows: list[Row] = []
    for name in names:
        stats = stream_statistics(run, name)
        if not stats or next(iter(stats.values())).shape[1] < 4:
            continue            # nothing to diagnose (ArviZ needs at least 4 draws)
        t = run.stream_time(name)
        got = diagnose_arrays(name, stats, float(t[-1]) if len(t) else 0.0)
        thinned = run.summary_thinning(name)
        for r in got if thinned else ():
            r.stride = thinned["stride"]
        rows += got
    return rows


def result_items(rows: list[Row]) -> dict[str, float]:
    """The run results a spec's ``diagnostics: true`` stores: ``ess_bulk/<stream>/<stat>``,
    ``ess_tail/…``, ``rhat/…`` (with two chains or more), ``mcse/…``, ``ess_per_s/…``."""
    out = {}
    for r in rows:
        for k in ("ess_bulk", "ess_tail", "rhat", "mcse", "ess_per_s"):
            v = getattr(r, k)
            if v is not None:
                out[f"{k}/{r.stream}/{r.statistic}"] = float(v)
    return out
