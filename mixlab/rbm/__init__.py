"""Rates-FPCD (Breuleux, Bengio & Vincent 2011): binary RBMs, their trainers and log Z.

- :mod:`mixlab.rbm.model`: the :class:`RBM` (energies, conditionals, Gibbs, HDF5 I/O)
- :mod:`mixlab.rbm.partition`: exact log Z, AIS, log-likelihood
- :mod:`mixlab.rbm.train`: CD-k, SML/PCD, FPCD trainers
"""

from .model import RBM, sigmoid, softplus, sufficient_stats

__all__ = ["RBM", "sigmoid", "softplus", "sufficient_stats"]
