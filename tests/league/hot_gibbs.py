"""A one-file plugin for the league tests: checkerboard Gibbs for the spin glass family at an
inverse temperature ``beta`` (``beta != 1`` samples the wrong distribution, p(x)^beta), and a
sampler that always fails."""

import numpy as np

from mixlab.api import SPINGLASS, Param, sampler


class TemperedGibbs:
    def __init__(self, target, chains, beta):
        self.f = beta * target.field
        self.r, self.d = beta * target.right, beta * target.down
        self.chains = chains
        R, C = self.f.shape
        self.n = R * C
        ii, jj = np.indices((R, C))
        self.colors = [(ii + jj) % 2 == k for k in (0, 1)]

    def init(self, rng):
        return {"x": np.where(rng.random((self.chains,) + self.f.shape) < 0.5, 1.0, -1.0)}

    def step(self, state, rng):
        x = state["x"].copy()
        for mask in self.colors:
            h = np.broadcast_to(self.f, x.shape).copy()
            h[:, :, :-1] += self.r * x[:, :, 1:]
            h[:, :, 1:] += self.r * x[:, :, :-1]
            h[:, :-1, :] += self.d * x[:, 1:, :]
            h[:, 1:, :] += self.d * x[:, :-1, :]
            new = np.where(rng.random(x.shape) < 1 / (1 + np.exp(-2 * h)), 1.0, -1.0)
            x = np.where(mask, new, x)
        return {"x": x}, {"samples": x > 0}, {"site_updates": np.full(self.chains,
                                                                      float(self.n))}


@sampler(SPINGLASS, "tempered-gibbs", params={"beta": Param(1.0, float, lo=0)},
         help="checkerboard Gibbs at inverse temperature beta")
def make_tempered(target, params, chains):
    return TemperedGibbs(target, chains, params["beta"])


class Broken:
    chains = 1

    def __init__(self, chains):
        self.chains = chains

    def init(self, rng):
        return {"x": np.zeros(self.chains)}

    def step(self, state, rng):
        raise RuntimeError("this sampler always fails")


@sampler(SPINGLASS, "always-fails", help="raises at its first step")
def make_broken(target, params, chains):
    return Broken(chains)
