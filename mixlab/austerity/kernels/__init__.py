"""Compiled (numba) inner loops of the austerity samplers: logistic regression and its
sequential MH test, and exact / approximate Gibbs on the dense triplet MRF.

Why compiled: the sequential test looks at the data in minibatches of m = 500 points and decides
after every one, so a numpy implementation pays a dozen Python round trips per MH step, each far
dearer than the 500 dot products it organises (benchmarks/bench_austerity_mh.py measured the
numpy version at 0.1x the exact sampler's speed).  Here one call runs the whole test for every
chain: drawing the minibatches, the products, the log-likelihoods, the running moments and the
t test; on the MRF one call runs a whole Gibbs sweep.

Products, two arithmetics.  The full-data pass (:func:`loglik_sums`, :func:`loglik_rows`) and
the block test (:func:`seqtest_logistic_blocks`) read the data as *column tiles*
(:func:`column_tiles`: 32 rows stored column by column), so the rows are the SIMD lanes and a
product is the chain of FMAs over the columns in order: the same float32 bits in every kernel
and on any CPU with FMA whatever its vector width, and no horizontal sums (the exact pass
measured 1.3x (1 chain) to 1.6x (8 chains) faster than with row-wise dot products, and the
block test's values equal the exact pass's bit for bit).
The per-point test and :func:`loglik_gather` read rows at random: their products are row-wise
dot products summed in a vectorised order (they may differ from the tiles' in the last bit,
which can move an MH decision only when the mean difference is within ~1e-7 relative of the
threshold).  Every log σ goes through the same float32 routine (:mod:`.sigmoid`).

Modules, each importing only those listed before it:

- :mod:`.jit`             compile options and constants
- :mod:`.sigmoid`         float32 log σ and σ(-z), and the predictive risk's sums of σ
- :mod:`.products`        data layouts (padded rows, column tiles) and their products
- :mod:`.loglik`          full-data log-likelihoods, gathers, gradients, the prior term
- :mod:`.orders`          random minibatch orders (partial Fisher-Yates, SplitMix64), and
                          the bookkeeping of seqtest.UniformOrder
- :mod:`.look`            one look of the sequential test
- :mod:`.seqtest_points`  the per-point test
- :mod:`.seqtest_blocks`  the block test and its cache of block sums
- :mod:`.mrf_gibbs`       exact and approximate Gibbs on the triplet MRF
"""

from __future__ import annotations

from .jit import TILE
from .loglik import (
    gaussian_log_prior_diff,
    grad_loglik_gather,
    loglik_gather,
    loglik_rows,
    loglik_sums,
)
from .mrf_gibbs import mrf_sweep_approx, mrf_sweep_approx_blocks, mrf_sweep_lookup
from .orders import minibatch_orders, minibatch_rows
from .products import column_tiles, padded_rows, tile_width
from .seqtest_blocks import seqtest_logistic_blocks, seqtest_logistic_blocks_shared
from .seqtest_points import seqtest_logistic
from .sigmoid import log_sigmoid

__all__ = [
    "TILE", "column_tiles", "gaussian_log_prior_diff", "grad_loglik_gather", "log_sigmoid",
    "loglik_gather", "loglik_rows", "loglik_sums", "minibatch_orders", "minibatch_rows",
    "mrf_sweep_approx", "mrf_sweep_approx_blocks", "mrf_sweep_lookup", "padded_rows",
    "seqtest_logistic", "seqtest_logistic_blocks", "seqtest_logistic_blocks_shared", "tile_width",
]
