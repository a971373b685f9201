"""Per-draw scalar summaries of spin glass draws, for mixing diagnostics (``mixlab diagnose``).

``summarizer(model)(block)`` maps ``{"samples": (chain, n, R, C) bool}`` to ``{stat: (chain, n)
float64}``: ``magnetisation`` (mean spin in ±1), ``energy`` (−θ(x), Eq. 1), and the spins of four
fixed sites ``spin_r<i>c<j>`` (±1): the centre (R//2, C//2), (R//4, C//4), (R//4, 3C//4) and
(3R//4, C//2), duplicates dropped on small grids.
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

    def summarize(block: dict) -> dict:
        x = np.where(np.asarray(block["samples"]), 1.0, -1.0)      # (chain, n, R, C)
        out = {"magnetisation": x.mean(axis=(-2, -1)), "energy": -model.score(x)}
        for r, c in picks:
            out[f"spin_r{r}c{c}"] = x[..., r, c]
        return out

    return summarize
