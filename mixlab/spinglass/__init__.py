"""Grid spin glasses and perturb-and-MAP (Hazan, Maji & Jaakkola, NIPS 2013).

Modules: ``model`` (SpinGlass, random models, npz I/O), ``exact`` (frontier transfer matrix:
log Z, marginals, max-product MAP; brute force), ``map`` (graph cuts, MAP dispatch), ``bounds``
(Gumbel upper / expected / probable lower bounds on log Z), ``perturb`` (perturb-and-MAP samplers
and the unbiased rejection sampler), ``mcmc`` (Gibbs, Metropolis, Swendsen-Wang), ``tempering``
(replica exchange), ``experiments`` (Figure 1 left/middle).
"""

from .model import SpinGlass, load_npz, random_spin_glass, save_npz

__all__ = ["SpinGlass", "random_spin_glass", "load_npz", "save_npz"]
