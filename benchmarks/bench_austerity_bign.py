"""Austerity at large N: the synthetic logistic target (mixlab.austerity.synthetic, d = 50, seed 1,
N = 10^5 in quick mode, 10^6 in full), one chain, one BLAS thread, random-walk MH with
σ = 0.7 / √N from θ* (the parameters that generated the data, a point of the posterior's bulk).
The posterior sd is about 2.2 / √N here, so σ is 0.34 sd, the step of an optimal random walk in
50 dimensions: exact MH accepts about a quarter of the proposals.

Rows, for the per-point test (the paper's) and the block test (blocks of 32 rows), ε = 0.05:

1. samples/s / exact MH's: the compiled step calls alone on random numbers drawn beforehand
   (as bench_austerity_mh's compiled-calls row), exact and test runs alternating in rounds (each
   chain continued from round to round), the ratio the median of the rounds' ratios; the bound 1 / (fraction of the data read) beside it.
   Targets at N = 10^6: per-point >= 3, blocks >= 7 (information at N = 10^5).
2. the floor behind row 1: the cost of a row read by the test / the cost of a row of the exact
   pass, = bound / ratio.  A row read at random costs more than a row of a linear pass: the
   per-point test's rows are four random cache lines each, the block test's blocks 6.6 KB read
   at random (twice the time of the same bytes read in order) and, where the block's sum at
   the current state is not cached, two products instead of one.
3. the hardware's part of that floor: the same kernels' products alone, on as many rows as a
   step reads drawn at random (per-point: :func:`_dots2` on random rows, with its prefetches;
   blocks: :func:`_tile_dots` on random blocks, one product, the cheapest block read), per
   row / a row of the exact pass (:func:`loglik_sums`), best of several calls.  No index draw,
   no log σ, no test: bound / this is a ceiling on row 1 that no bookkeeping can beat.

The rates are wall-clock; the detail also gives the ratio of thread CPU times, which the other
jobs of a loaded machine move less.
"""

from __future__ import annotations

import time

import numpy as np

D, SEED, EPS, M, BLOCK, SCALE = 50, 1, 0.05, 500, 32, 0.7


def _setup(N: int):
    from mixlab.austerity.logistic import LogisticPosterior
    from mixlab.austerity.samplers import CompiledSequentialTest
    from mixlab.austerity.synthetic import generate, synthetic_spec

    syn = generate(synthetic_spec({"n": N, "d": D, "seed": SEED, "test": 10}))
    post = LogisticPosterior(syn.X, syn.y, precision=1.0, bias=False)
    tests = {"per-point": CompiledSequentialTest(post, EPS, M, block=1),
             f"blocks of {BLOCK}": CompiledSequentialTest(post, EPS, M, block=BLOCK)}
    return post, syn.theta_star, tests


def _rates(post, theta_star, tests, rounds: int, n_test: int, n_exact: int):
    """Per round: (wall rate, CPU rate, fraction read) of exact MH and of each test, every
    sampler's chain continued across rounds (the fraction read averages all their steps)."""
    from mixlab.austerity.rwmh_steps import rwmh_step_exact

    N = post.N
    sigma = SCALE / np.sqrt(N)
    rng = np.random.default_rng(3)
    total = n_test * (rounds + 1)
    z = rng.standard_normal((total, 1, post.d))
    log_u = np.log(rng.random((total, 1)))
    seeds = [int(s) for s in rng.integers(0, 2 ** 63, total)]
    start = np.ascontiguousarray(theta_star, np.float64).reshape(1, -1)
    state = {"exact": (start, post.loglik(start)), **{k: start for k in tests}}

    def exact(i0, n):
        th, ll = state["exact"]
        t0, c0 = time.perf_counter(), time.thread_time()
        for i in range(i0, i0 + n):
            th, _, _, ll = rwmh_step_exact(post.Xt, post.tile_width, N, th, z[i], sigma,
                                           log_u[i], post.precision, ll)
        rates = n / (time.perf_counter() - t0), n / (time.thread_time() - c0), 1.0
        state["exact"] = th, ll
        return rates

    def test(k, i0, n):
        th, used, step = state[k], 0.0, tests[k].mh_step
        t0, c0 = time.perf_counter(), time.thread_time()
        for i in range(i0, i0 + n):
            th, _, u, _ = step(th, z[i], sigma, log_u[i], seeds[i])
            used += u[0]
        rates = n / (time.perf_counter() - t0), n / (time.thread_time() - c0), used / n
        state[k] = th
        return rates

    exact(0, 2)                                         # load the compiled step calls
    for k in tests:
        test(k, 0, 2)
    out = {"exact": [], **{k: [] for k in tests}}
    for r in range(1, rounds + 1):                      # each round: its own steps, the chains
        out["exact"].append(exact(r * n_test, n_exact))     # continued from the last round
        for k in tests:
            out[k].append(test(k, r * n_test, n_test))
    return out


def _best(calls) -> float:
    """The shortest time of the calls (f, args), seconds (the first call untimed: it loads f)."""
    (f, args), *timed = calls
    f(*args)
    best = float("inf")
    for f, args in timed:
        t0 = time.perf_counter()
        f(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def _bare_reads(post, theta_star, tests, fractions: dict) -> dict:
    """Per test: (ns per row of its bare products on random rows, ns per row of the exact
    pass), on as many rows as the test read per step (``fractions``)."""
    from mixlab.austerity.kernels.loglik import loglik_sums
    from mixlab.austerity.kernels.products import _dots2, _pad32, _tile_dots

    N, W, Dp = post.N, post.Xk.shape[1], post.tile_width
    rng = np.random.default_rng(5)
    exact = _best([(loglik_sums, (post.Xt, Dp, N, _pad32(theta_star.reshape(1, -1), Dp)))] * 6)
    out = {}
    for k, test in tests.items():
        n = max(int(fractions[k] * N), 1)
        if test.block == 1:                                # fresh random rows for every call
            th = _pad32(theta_star.reshape(1, -1), W)[0]
            z1, z2 = np.empty(n, np.float32), np.empty(n, np.float32)
            sec = _best([(_dots2, (post.Xk, rng.choice(N, n, replace=False), 0, n, th, th,
                                   z1, z2)) for _ in range(8)]) / n
        else:
            th = _pad32(theta_star.reshape(1, -1), Dp)[0]
            T = -(-test.block // 32)                       # tiles per block (TILE = 32 rows)
            nb = max(n // test.block, 1)
            outs = np.arange(nb * T, dtype=np.int64) * 32
            z = np.empty(nb * T * 32, np.float32)

            def tiles(nb=nb, T=T, K=test.K):
                blocks = rng.choice(K, nb, replace=False)
                return (blocks[:, None] * T + np.arange(T)).reshape(-1)
            sec = _best([(_tile_dots, (test.Xt, Dp, tiles(), outs, nb * T, th, z))
                         for _ in range(8)]) / (nb * test.block)
        out[k] = (1e9 * sec, 1e9 * exact / N)
    return out


def run(quick: bool) -> list[dict]:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:                                 # optional: run with the default threads
        import contextlib

        def threadpool_limits(n):
            return contextlib.nullcontext()

    N = 100_000 if quick else 1_000_000
    rounds, n_test, n_exact = (7, 150, 40) if quick else (9, 60, 15)
    targets = {"per-point": 3.0, f"blocks of {BLOCK}": 7.0}
    rows = []
    with threadpool_limits(1):
        post, theta_star, tests = _setup(N)
        res = _rates(post, theta_star, tests, rounds, n_test, n_exact)
        bare = _bare_reads(post, theta_star, tests,
                           {k: float(np.mean(np.array(res[k])[:, 2])) for k in tests})
    ex = np.array(res["exact"])
    for k in tests:
        r = np.array(res[k])
        wall = r[:, 0] / ex[:, 0]
        cpu = r[:, 1] / ex[:, 1]
        f = float(r[:, 2].mean())
        ratio, bound = float(np.median(wall)), 1.0 / f
        goal = targets[k]
        at_target = N == 1_000_000
        rows.append({
            "name": f"austerity N={N:.0e} samples/s {k} / exact MH",
            "ratio": ratio, "target": f">= {goal:g}" if at_target else "info",
            "ok": ratio >= goal if at_target else True,
            "detail": f"synthetic d={D}, eps={EPS}, sigma=0.7/sqrt(N), 1 chain: "
                      f"{np.median(r[:, 0]):.1f} vs {np.median(ex[:, 0]):.1f} steps/s, median "
                      f"of {rounds} rounds' ratios (range {wall.min():.2f}-{wall.max():.2f}); "
                      f"bound 1/(data read {100 * f:.1f}%) = {bound:.2f}x; CPU-time ratio "
                      f"{np.median(cpu):.2f}" + ("" if at_target else
                                                  f"; target {goal:g}x at N=1e6")})
        rows.append({
            "name": f"austerity N={N:.0e} cost per row read, {k} / exact pass",
            "ratio": bound / ratio, "target": "floor", "ok": True,
            "detail": f"= bound / ratio: a row the test reads costs {bound / ratio:.2f}x a row "
                      f"of the exact pass (CPU time: {bound / np.median(cpu):.2f}x); the "
                      f"samples/s ratio is at most 1/(this x data read)"})
        ns_read, ns_exact = bare[k]
        rows.append({
            "name": f"austerity N={N:.0e} bare products on random rows, {k} / exact pass",
            "ratio": ns_read / ns_exact, "target": "floor", "ok": True,
            "detail": f"the products alone on {100 * f:.1f}% of the rows drawn at random: "
                      f"{ns_read:.1f} vs {ns_exact:.1f} ns per row; ceiling on the samples/s "
                      f"ratio with no index draw, log sigma or test: bound / this = "
                      f"{bound * ns_exact / ns_read:.2f}x"
                      + (f" (target {goal:g}x)" if at_target else "")})
    return rows


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
