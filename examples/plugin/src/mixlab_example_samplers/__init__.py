"""Worked example of a mixlab plugin: one sampler per target family, registered on import.

- ``rbm/pt-gibbs``: parallel-tempering block Gibbs (replicas at inverse temperatures
  1 = β_0 > β_1 > ... > β_{K-1}, swaps between neighbours), :mod:`.rbm_tempering`;
- ``spinglass/houdayer``: checkerboard Gibbs plus Houdayer's two-replica cluster move, exact
  for mixed-sign couplings and fields, :mod:`.spinglass_houdayer`;
- ``logistic/mala``: Metropolis-adjusted Langevin, optionally preconditioned by the Laplace
  covariance, :mod:`.logistic_mala`;
- ``mrf/blocked-gibbs``: blocked Gibbs drawing ``block`` variables jointly from their exact
  conditional, :mod:`.mrf_blocked`.

Installing the package (``pip install -e examples/plugin``) declares the entry point
``mixlab.plugins: example-samplers = mixlab_example_samplers``; ``mixlab plugins`` then lists
the four samplers and every benchmark experiment of their family accepts them.
"""

from . import logistic_mala, mrf_blocked, rbm_tempering, spinglass_houdayer  # noqa: F401

__version__ = "0.1.0"
