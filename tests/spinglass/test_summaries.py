"""Spin glass per-draw summaries against their definitions (Eq. 1 of Hazan, Maji & Jaakkola)."""

from __future__ import annotations

import numpy as np
import pytest

from mixlab.spinglass.model import random_spin_glass
from mixlab.spinglass.summaries import sites, summarizer


@pytest.mark.parametrize("shape", [(10, 10), (3, 7), (1, 5), (6, 1), (1, 1)])
def test_summaries_are_the_energy_magnetisation_and_picked_spins(shape):
    model = random_spin_glass(*shape, field=1.0, coupling=2.0, mixed=True,
                              rng=np.random.default_rng(3))
    bits = np.random.default_rng(4).random((4, 7) + shape) < 0.5        # (chain, draw, R, C)
    x = np.where(bits, 1.0, -1.0)
    out = summarizer(model)({"samples": bits})
    np.testing.assert_allclose(out["energy"], -model.score(x), rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["magnetisation"], x.mean(axis=(-2, -1)), rtol=0, atol=1e-15)
    for r, c in sites(shape):
        np.testing.assert_array_equal(out[f"spin_r{r}c{c}"], x[..., r, c])
    assert all(v.shape == (4, 7) for v in out.values())
    # the ±1 spins in a byte each (the run file keeps them so), the rest float64
    assert all(v.dtype == (np.int8 if k.startswith("spin_") else np.float64)
               for k, v in out.items())
