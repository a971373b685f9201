"""Austerity in MCMC land (Korattikara, Chen & Welling, ICML 2014).

- :mod:`.seqtest`   the sequential approximate MH test (the one reusable piece)
- :mod:`.logistic`  Bayesian logistic regression (Gaussian prior)
- :mod:`.samplers`  random-walk MH (exact / approximate), SGLD, SGLD corrected by MH
- :mod:`.hmc`       Hamiltonian Monte Carlo for ground truths
- :mod:`.experiments` Figures 1-6 (mrf.py / experiments_mrf.py: Figures 7-8)
"""

from .seqtest import BatchTestResult, TestResult, sequential_test, sequential_test_batch

__all__ = ["BatchTestResult", "TestResult", "sequential_test", "sequential_test_batch"]
