"""One BLAS thread for the austerity experiments, whose comparisons are in wall time."""

import functools

from threadpoolctl import threadpool_limits


def one_blas_thread(fn):
    """Run an experiment with BLAS limited to one thread: its products are small (12,000 x 51
    GEMVs, 500-row minibatches, the MRF's (chains, 100) @ (100, 100) conditionals), and a
    2-thread OpenBLAS GEMV measured up to 40x slower than a 1-thread one on a shared 2-core
    machine; both the exact and the approximate samplers run under the same limit, so wall-time
    comparisons stay fair, also when another timed run shares the machine."""

    @functools.wraps(fn)
    def wrapper(ctx):
        with threadpool_limits(1):
            return fn(ctx)
    return wrapper
