"""Austerity in MCMC land (Korattikara, Chen & Welling, ICML 2014).

- :mod:`.seqtest`   the sequential approximate MH test (the one reusable piece)
- :mod:`.logistic`  Bayesian logistic regression (Gaussian prior)
- :mod:`.samplers`  random-walk MH (exact / approximate), SGLD, SGLD corrected by MH
- :mod:`.hmc`       Hamiltonian Monte Carlo for ground truths
- :mod:`.mrf`       the dense triplet MRF, exact and approximate Gibbs
- :mod:`.target_logistic`, :mod:`.target_mrf`  the two targets: data/model and reference truth
- :mod:`.evaluators`  PredictiveRisk, VarianceL1, Calibration, JointL1
- :mod:`.experiments` the experiment kinds of Figures 1-8; :mod:`.figures` their figures
- :mod:`.summaries`  scalar summaries per draw for mixing diagnostics
"""

from .seqtest import BatchTestResult, TestResult, sequential_test, sequential_test_batch

__all__ = ["BatchTestResult", "TestResult", "sequential_test", "sequential_test_batch"]
