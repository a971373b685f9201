"""A stream's per-draw summaries are stored in a byte or two when they are indicators, counts
or spins (integer types of at most 16 bits; booleans as uint8), in float64 otherwise, and read
back as float64 whatever their stored type."""

from __future__ import annotations

import h5py
import numpy as np

from mixlab.run.streams import run_stream
from mixlab.runfile.store import RunReader, RunStore


class _Counter:
    """Draws the step number on each of 2 chains."""

    chains = 2

    def init(self, rng):
        return {"t": np.zeros(1)}

    def step(self, state, rng):
        state = {"t": state["t"] + 1}
        return state, {"x": np.full(2, state["t"][0])}, {}


def _summaries(block):
    x = block["x"]                                               # (chain, n) float64
    return {"odd": x % 2 == 1, "spin": np.where(x % 2 == 1, np.int8(1), np.int8(-1)),
            "count": (x % 300).astype(np.uint16), "wide": x.astype(np.int64),
            "half": (x / 2).astype(np.float32), "value": x}


def _run(run_dir, summarize, **kwargs) -> None:
    """Stream 's': 700 draws in blocks of 300, summarised by ``summarize``."""
    run_dir.mkdir()
    store = RunStore(run_dir)
    try:
        store.f.attrs["spec"] = "{}"
        run_stream(store, "s", _Counter(), np.random.default_rng(0), draws=700, block=300,
                   record=False, summarize=summarize, **kwargs)
    finally:
        store.close()


def test_summaries_keep_narrow_integer_types_and_read_back_as_float64(tmp_path):
    _run(tmp_path / "run", _summaries)
    with h5py.File(tmp_path / "run" / "run.h5", "r") as f:
        stored = {k: v.dtype for k, v in f["streams/s/summary"].items()}
    assert stored == {"odd": np.uint8, "spin": np.int8, "count": np.uint16,
                      "wide": np.float64, "half": np.float64, "value": np.float64}
    t = np.arange(1, 701, dtype=np.float64)
    want = {"odd": t % 2, "spin": np.where(t % 2 == 1, 1.0, -1.0), "count": t % 300,
            "wide": t, "half": t / 2, "value": t}
    with RunReader(tmp_path / "run") as run:
        got = run.stream_summaries("s")
    assert set(got) == set(want)
    for k, v in got.items():
        assert v.dtype == np.float64 and v.shape == (2, 700), k
        np.testing.assert_array_equal(v, np.broadcast_to(want[k], (2, 700)), err_msg=k)


class _FloatFirst:
    """A summary given as float64 in the first block and as an indicator afterwards, as a
    stream begun when every summary was stored as float64 and resumed since."""

    def __init__(self):
        self.calls = 0

    def __call__(self, block):
        self.calls += 1
        odd = block["x"] % 2 == 1
        return {"odd": odd * 1.0 if self.calls == 1 else odd}


def test_a_summary_stored_as_float64_stays_float64(tmp_path):
    _run(tmp_path / "run", _FloatFirst(), checkpoint_seconds=0.0)
    with RunReader(tmp_path / "run") as run:
        assert run.f["streams/s/summary/odd"].dtype == np.float64
        np.testing.assert_array_equal(run.stream_summaries("s")["odd"][0],
                                      np.arange(1, 701) % 2)
