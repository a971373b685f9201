"""Per-draw scalar summaries of RBM draws, for mixing diagnostics (ESS, R-hat).

:func:`summarizer` builds the ``summarize`` function of ``ctx.stream`` for a model: it maps a
block of draws ``{"samples": (chain, n, V) bool, ...}`` to ``{stat: (chain, n)}``:

- ``free_energy``: F(x) = -bᵀx - Σ_j softplus(c_j + (xW)_j) of the binary draw x (nats; the
  negative log of the unnormalised marginal P(x) ∝ exp(-F(x))); for a float32 model with more
  than :data:`TABLE_MAX_V` visible units the products are float32 (:func:`free_energy`);
- ``active_pixels``: the number of visible units equal to 1 (uint16);
- ``pixel_r<i>c<j>`` (or ``pixel_<k>`` for non-square inputs): three fixed visible units, 0/1
  per draw (bool), so their means over draws are the chain's pixel means.  For a side × side
  image (side = √V) the units are the centre pixel (side//2, side//2), the pixel a quarter
  across on the centre row (side//2, side//4) and a quarter down on the centre column (side//4,
  side//2); for V not a square, the flat indices V//4, V//2 and 3V//4 (:func:`summary_pixels`).

``free_energy`` is float64 (the run file stores the others in a byte or two: mixlab.run.streams).

Everything is vectorised over chains and draws (one GEMM per block). With at most
:data:`TABLE_MAX_V` visible units every state's summaries are computed once, when the
summarizer is built, and each draw's are looked up by its state code.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..errors import MixlabError
from ..numerics import state_codes

#: at most this many visible units: the summaries of all 2^V states are tabulated (512 KiB each)
TABLE_MAX_V = 16


def summary_pixels(n_visible: int) -> dict[str, int]:
    """The three fixed visible units summarised: {stat name: flat index}."""
    side = math.isqrt(n_visible)
    if side * side == n_visible and side >= 4:
        cells = [(side // 2, side // 2), (side // 2, side // 4), (side // 4, side // 2)]
        return {f"pixel_r{r}c{c}": r * side + c for r, c in cells}
    idx = sorted({n_visible // 4, n_visible // 2, (3 * n_visible) // 4})
    return {f"pixel_{i}": i for i in idx}


def free_energy(x: np.ndarray, W: np.ndarray, b: np.ndarray, c: np.ndarray,
                products=np.float64) -> np.ndarray:
    """F(x) = -bᵀx - Σ_j softplus(c_j + (xW)_j) for x (..., V) in {0,1}; W (V,H), b (V,),
    c (H,): ``(...)`` float64.

    ``products=np.float32`` forms the pre-activations ``c + xW`` and their exponentials in
    float32 (the precision float32 models sample in: half the cost of the GEMM, a quarter of
    the exponentials') and sums in float64: F to about 1e-6 of its size (tested), where
    float64 gives it to rounding."""
    from .partition_kernel import PRODUCT_MAX_ACT, log_product_sums, softplus_row_sums

    x = np.asarray(x)
    if np.dtype(products) == np.float64:
        flat = np.asarray(x.reshape(-1, x.shape[-1]), np.float64)      # (rows, V): one GEMM
        a = flat @ np.asarray(W, np.float64) + np.asarray(c, np.float64)
        return (-(flat @ np.asarray(b, np.float64)) - softplus_row_sums(a)).reshape(x.shape[:-1])
    flat = np.asarray(x.reshape(-1, x.shape[-1]), np.float32)
    linear = flat @ np.asarray(b, np.float64)                          # bᵀx in float64
    # the pre-activations transposed, (H, rows), straight from the GEMM: the layout of the
    # product kernel, where transposing (rows, H) afterwards cost more than the GEMM itself
    a_t = np.asarray(W, np.float32).T @ flat.T
    a_t += np.asarray(c, np.float32)[:, None]                          # (H, rows) float32
    if a_t.size == 0 or a_t.max() > PRODUCT_MAX_ACT:
        return (-linear - softplus_row_sums(np.ascontiguousarray(a_t.T, np.float64))
                ).reshape(x.shape[:-1])
    np.exp(a_t, out=a_t)
    soft = np.empty(flat.shape[0])
    log_product_sums(a_t.astype(np.float64), np.ones(a_t.shape[0]), soft)
    return (-linear - soft).reshape(x.shape[:-1])


def summarize_draws(block: dict, W: np.ndarray, b: np.ndarray, c: np.ndarray,
                    products=np.float64) -> dict:
    """{stat: (chain, n)} for a block of binary draws ``block["samples"]`` (chain, n, V) (see
    the module docstring; ``products`` as in :func:`free_energy`)."""
    if "samples" not in block:
        raise MixlabError("RBM summaries need the binary draws 'samples' (chain, draw, V); the "
                          f"sampler emitted only {', '.join(block) or 'nothing'}")
    x = np.asarray(block["samples"])
    C, n = x.shape[:2]
    x = x.reshape(C, n, -1)
    out = {"free_energy": free_energy(x, W, b, c, products),
           "active_pixels": np.count_nonzero(x, axis=-1).astype(np.uint16)}
    for name, i in summary_pixels(x.shape[-1]).items():
        out[name] = x[:, :, i] != 0
    return out


def summarizer(rbm) -> Callable[[dict], dict]:
    """``summarize`` for ``ctx.stream``: :func:`summarize_draws` with the model's θ (not θ⁻:
    every sampler's draws are summarised under the same trained model); for V <=
    :data:`TABLE_MAX_V` the same values looked up from a table of all 2^V states (float64),
    above it the free energy's products in the model's own precision when that is float32."""
    products = np.float32 if np.asarray(rbm.W).dtype == np.float32 else np.float64
    W, b, c = (np.asarray(a, np.float64) for a in (rbm.W, rbm.b, rbm.c))
    V = W.shape[0]
    if V > TABLE_MAX_V:
        # the product weights in their own precision, converted once (not at every block)
        Wp, cp = (np.asarray(a, products) for a in (rbm.W, rbm.c))

        def summarize(block: dict) -> dict:
            return summarize_draws(block, Wp, b, cp, products)
        return summarize

    tables: dict = {}             # built at the first block (a summarizer may never be used)

    def summarize(block: dict) -> dict:
        x = block.get("samples")
        if x is None or np.asarray(x).dtype not in (np.bool_, np.uint8):   # not bits: compute
            return summarize_draws(block, W, b, c)
        if not tables:
            states = (np.arange(1 << V)[:, None] >> np.arange(V)) & 1     # (2^V, V), code order
            every = summarize_draws({"samples": states.astype(bool)[None]}, W, b, c)
            tables.update({k: np.ascontiguousarray(t[0]) for k, t in every.items()})
        x = np.asarray(x)
        code = state_codes(x.reshape(x.shape[:2] + (-1,)))                 # (chain, n)
        return {k: t[code] for k, t in tables.items()}

    return summarize
