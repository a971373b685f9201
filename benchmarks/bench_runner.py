"""The runner's own cost: bookkeeping vs calling the sampler's step directly, and recording
draws vs one bare h5py write of the same bytes."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

from mixlab.generic import GaussianRWM
from mixlab.runner import run_stream
from mixlab.store import RunStore


def run(quick: bool) -> list[dict]:
    chains, dim, n = 100, 784, (500 if quick else 5000)
    sampler = GaussianRWM(dim, chains, 0.1, np.ones(dim))
    draws = np.empty((chains, n, dim), np.float32)
    rows = []
    bare, unrecorded = np.inf, np.inf
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(3):  # interleaved repeats, best of three: robust to a busy machine
            rng = np.random.default_rng(0)
            state = sampler.init(rng)
            t0 = time.perf_counter()
            for i in range(n):
                state, d, _ = sampler.step(state, rng)
                draws[:, i] = d["samples"]
            bare = min(bare, time.perf_counter() - t0)
            store = RunStore(Path(tmp) / f"a{rep}.h5", "a")
            t0 = time.perf_counter()
            run_stream(store, "s", sampler, np.random.default_rng(0), draws=n, record=False)
            unrecorded = min(unrecorded, time.perf_counter() - t0)
            store.close()
        store = RunStore(Path(tmp) / "r.h5", "a")
        t0 = time.perf_counter()
        run_stream(store, "r", sampler, np.random.default_rng(0), draws=n, record=True)
        recorded = time.perf_counter() - t0
        store.close()
        t0 = time.perf_counter()
        with h5py.File(Path(tmp) / "b.h5", "w") as f:
            f.create_dataset("x", data=draws)
        write = time.perf_counter() - t0
    r1 = unrecorded / bare
    rows.append({"name": "runner bookkeeping: stream (not recorded) / bare step loop",
                 "ratio": r1, "target": "<= 1.2", "ok": r1 <= 1.2,
                 "detail": f"{n} steps of 100x784 RWM: bare {bare:.2f} s, stream {unrecorded:.2f} s"})
    r2 = (recorded - unrecorded) / write
    mb = draws.nbytes / 1e6
    rows.append({"name": "recording draws: extra stream time / one bare h5py write",
                 "ratio": r2, "target": "<= 2", "ok": r2 <= 2,
                 "detail": f"{mb:.0f} MB: +{recorded - unrecorded:.2f} s vs bare write {write:.2f} s"})
    return rows
