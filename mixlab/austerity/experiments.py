"""Experiment kinds of Korattikara, Chen & Welling (2014), "Austerity in MCMC land" (one spec per
figure under experiments/austerity/; figures in figures.py).  Importing this module registers
them all:

* experiments_logistic.py: Figs 1-6 (``austerity.tstat``, ``rw_decisions``, ``rw_risk``,
  ``rw_marginals``, ``sgld_variance``) on Bayesian logistic regression;
* experiments_mrf.py: Figs 7-8 (``austerity.mrf_calibration``, ``mrf_joint_error``) on a dense
  binary MRF;
* experiment_bign.py: ``austerity.big_n``, exact MH vs the per-point and block tests at several
  data sizes N on the synthetic logistic target;
* series.py: what they share -- every sampler is looked up in the registry (``logistic`` family
  for Figs 2-6, ``mrf`` for 7-8; built-ins registered at the end of samplers.py), and the
  ``samplers`` key of Figs 3-6 and 8 adds any registered sampler (a plugin's) as one more series
  under the same budget.
"""

from __future__ import annotations

from . import experiment_bign, experiments_logistic, experiments_mrf

__all__ = ["experiment_bign", "experiments_logistic", "experiments_mrf"]
