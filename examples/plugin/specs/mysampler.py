"""A sampler in one file, loaded by the spec next to it (``plugins: [./mysampler.py]``).

Random-scan Gibbs for the dense triplet MRF: each step makes D single-site updates at sites
drawn uniformly (the same site for every chain), each from the exact conditional
``P(x_i = 1 | x_-i) = sigmoid(h_i + xᵀ Q[i] x)`` (the model's log-odds form).
"""

import numpy as np

from mixlab.api import MRF, sampler


class RandomScanGibbs:
    def __init__(self, mrf, chains):
        self.h, self.Q, self.D, self.chains = mrf.h, mrf.Q, mrf.D, chains

    def init(self, rng):
        return {"x": (rng.random((self.chains, self.D)) < 0.5).astype(np.uint8)}

    def step(self, state, rng):
        x = state["x"].astype(np.float64)                        # (chains, D)
        for i in rng.integers(0, self.D, self.D):                # D updates at random sites
            logit = self.h[i] + np.einsum("cj,jk,ck->c", x, self.Q[i], x)
            x[:, i] = rng.random(self.chains) * (1 + np.exp(-logit)) < 1
        x = x.astype(np.uint8)
        return {"x": x}, {"samples": x.astype(bool)}, {"data_used": np.ones(self.chains)}


@sampler(MRF, "random-scan", help="random-scan single-site Gibbs (a one-file plugin)")
def make(target, params, chains):
    return RandomScanGibbs(target, chains)
