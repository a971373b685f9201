"""Worked example of a mixlab plugin: one sampler per target family, registered on import.

- ``rbm/pt-gibbs``: parallel-tempering block Gibbs (replicas at inverse temperatures
  1 = β_0 > β_1 > ... > β_{K-1}, swaps between neighbours), :mod:`.rbm_tempering`;
- ``spinglass/houdayer``: checkerboard Gibbs plus Houdayer's two-replica cluster move, exact
  for mixed-sign couplings and fields, :mod:`.spinglass_houdayer`;
- ``logistic/mala``: Metropolis-adjusted Langevin, optionally preconditioned by the Laplace
  covariance, :mod:`.logistic_mala`;
- ``mrf/blocked-gibbs``: blocked Gibbs drawing ``block`` variables jointly from their exact
  conditional, :mod:`.mrf_blocked`;
- a family of its own, ``potts`` (the q-state Potts model on a general graph, with three league
  targets whose marginals are exact by enumeration), :mod:`.potts_family`, and its samplers
  ``gibbs``, ``swendsen-wang`` and ``biased-gibbs`` (wrong on purpose), :mod:`.potts_samplers`.

Installing the package (``pip install -e examples/plugin``) declares the entry point
``mixlab.plugins: example-samplers = mixlab_example_samplers``; ``mixlab plugins`` then lists
the samplers and the family, every benchmark experiment of their family accepts them, and
``mixlab league potts`` ranks the Potts samplers.
"""

# potts_family registers the family before potts_samplers registers samplers for it
from . import (  # noqa: F401
    logistic_mala,
    mrf_blocked,
    potts_family,
    potts_samplers,
    rbm_tempering,
    spinglass_houdayer,
)

__version__ = "0.1.0"
