"""Per-draw scalar summaries of spin glass draws, for mixing diagnostics (``mixlab diagnose``).

``summarizer(model)(block)`` maps ``{"samples": (chain, n, R, C) bool}`` to ``{stat: (chain,
n)}``: ``magnetisation`` (mean spin in ±1) and ``energy`` (−θ(x), Eq. 1) float64, and the spins
of four fixed sites ``spin_r<i>c<j>`` (±1, int8): the centre (R//2, C//2), (R//4, C//4), (R//4,
3C//4) and (3R//4, C//2), duplicates dropped on small grids.
"""

from __future__ import annotations

import numpy as np

from .model import SpinGlass


def sites(shape: tuple[int, int]) -> list[tuple[int, int]]:
    R, C = shape
    out = [(R // 2, C // 2), (R // 4, C // 4), (R // 4, (3 * C) // 4), ((3 * R) // 4, C // 2)]
    return list(dict.fromkeys(out))


def summarizer(model: SpinGlass):
    picks = sites(model.shape)
    R, C = model.shape
    # θ(x) = Σ θ_i x_i + Σ θ_ij x_i x_j (Eq. 1) with x = 2b − 1 and x_i x_j = 1 − 2 (b_i xor b_j):
    # one matrix product over the bits, no ±1 copy of the block
    field, right, down = (np.asarray(a, np.float64).ravel() for a in
                          (model.field, model.right, model.down))
    constant = right.sum() + down.sum() - field.sum()

    def summarize(block: dict) -> dict:
        b = np.asarray(block["samples"], dtype=bool)                 # (chain, n, R, C)
        lead = b.shape[:-2]
        bits = b.reshape(-1, R * C)
        ups = np.count_nonzero(bits, axis=1)
        theta = (constant + 2.0 * (bits @ field)
                 - 2.0 * ((b[..., :, :-1] ^ b[..., :, 1:]).reshape(len(bits), -1) @ right)
                 - 2.0 * ((b[..., :-1, :] ^ b[..., 1:, :]).reshape(len(bits), -1) @ down))
        out = {"magnetisation": (2.0 * ups / (R * C) - 1.0).reshape(lead),
               "energy": -theta.reshape(lead)}
        for r, c in picks:
            out[f"spin_r{r}c{c}"] = np.where(b[..., r, c], np.int8(1), np.int8(-1))
        return out

    return summarize
