"""Spin-glass MCMC throughput (``run(quick) -> list[dict]``, see docs/PLUGIN_API.md).

- ``gibbs_updates_per_s``: checkerboard Gibbs spin updates per second on a 10x10 grid (mixed
  couplings, field 1) with many chains, as a ratio to the 3e7 updates/s target.
- ``gibbs_vs_bare``: Gibbs sweep time / time of a bare vectorised reference doing the arithmetic
  a sweep cannot avoid (one uniform per site, four neighbour products, one exp and one compare per
  site, on the compact (R, C, chains) array, no checkerboard masking) -- the cost of the sampler's
  bookkeeping (padding, colour masks, acceptance counting, emitting bool samples).
- ``sw_vs_gibbs``: Swendsen-Wang sweep time / Gibbs sweep time at equal size and chains
  (target <= 5).
"""

from __future__ import annotations

import time

import numpy as np

from mixlab.spinglass.mcmc import Gibbs, SwendsenWang
from mixlab.spinglass.model import random_spin_glass


def _time(fn, reps: int) -> float:
    fn()  # warm-up
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def _bare_reference(model, chains, rng):
    """One full-grid heat-bath pass of the unavoidable arithmetic, (R, C, chains) float32."""
    R, C = model.shape
    x = np.where(rng.random((R, C, chains)) < 0.5, 1.0, -1.0).astype(np.float32)
    jr = model.right.astype(np.float32)[:, :, None]
    jd = model.down.astype(np.float32)[:, :, None]
    f = model.field.astype(np.float32)[:, :, None]

    def sweep():
        u = rng.random(x.shape, dtype=np.float32)
        h = np.broadcast_to(f, x.shape).copy()
        h[:, :-1] += jr * x[:, 1:]
        h[:, 1:] += jr * x[:, :-1]
        h[:-1] += jd * x[1:]
        h[1:] += jd * x[:-1]
        h *= -2.0
        np.exp(h, out=h)
        h += 1.0
        h *= u
        np.copyto(x, np.where(h < 1.0, np.float32(1), np.float32(-1)))
    return sweep


def run(quick: bool) -> list[dict]:
    rng = np.random.default_rng(0)
    model = random_spin_glass(10, 10, 1.0, 1.0, True, rng)
    n = model.n
    chains = 1000 if quick else 4000
    reps = 20 if quick else 100
    g = Gibbs(model, chains=chains)
    gs = {"s": g.init(rng)}

    def gibbs_sweep():
        gs["s"], _, _ = g.step(gs["s"], rng)

    t_gibbs = _time(gibbs_sweep, reps)
    t_bare = _time(_bare_reference(model, chains, rng), reps)
    sw_chains = chains
    sw = SwendsenWang(model, chains=sw_chains)
    ss = {"s": sw.init(rng)}

    def sw_sweep():
        ss["s"], _, _ = sw.step(ss["s"], rng)

    t_sw = _time(sw_sweep, max(2, reps // 4))
    ups = n * chains / t_gibbs
    return [
        {"name": "spinglass/gibbs_updates_per_s", "ratio": ups / 3e7, "target": ">= 1",
         "ok": ups >= 3e7,
         "detail": f"{ups:.3g} spin updates/s (10x10, {chains} chains, {t_gibbs * 1e3:.2f} ms "
                   f"per sweep) / 3e7"},
        {"name": "spinglass/gibbs_vs_bare", "ratio": t_gibbs / t_bare, "target": "<= 2",
         "ok": t_gibbs / t_bare <= 2.0,
         "detail": f"Gibbs sweep {t_gibbs * 1e3:.2f} ms / bare heat-bath pass "
                   f"{t_bare * 1e3:.2f} ms"},
        {"name": "spinglass/sw_vs_gibbs", "ratio": t_sw / t_gibbs, "target": "<= 5",
         "ok": t_sw / t_gibbs <= 5.0,
         "detail": f"Swendsen-Wang sweep {t_sw * 1e3:.2f} ms / Gibbs sweep "
                   f"{t_gibbs * 1e3:.2f} ms ({chains} chains)"},
    ]


if __name__ == "__main__":
    for row in run(quick=True):
        print(f"{row['name']:34s} {row['ratio']:8.3f} {row['target']:>6s} "
              f"{'ok' if row['ok'] else 'MISS':4s} {row['detail']}")
