"""How large a model's parameters may be before float64 arithmetic answers wrongly.

Every exact computation of mixlab (a spin glass's transfer matrix, an MRF's or an RBM's
enumeration) and every sampler's acceptance ratio works with the model's log-potential θ(x) in
float64: log Z is a log-sum-exp of θ over states, a marginal is exp(log-sum-exp over part of the
states - log Z), an acceptance ratio is exp(θ(x') - θ(x)). A float64 number M carries an absolute
rounding error of up to M·2^-53 ≈ M·1.1e-16, so once |θ| reaches 1e16 a log-probability's whole
O(1) part is lost (a coupling of 1e16 then gives "exact" marginals of 1.0 and log Z = 1e16), and
at 1e300 sums overflow to inf.

The bound: Θ = Σ|parameters| (every field, coupling, weight or bias counted once; no state's
|θ(x)| exceeds it) must be at most :data:`POTENTIAL_BOUND` = 1e7. Then every term is at most 1e7,
each log-space operation adds at most 1e7·1.1e-16 ≈ 1.1e-9 of absolute error to a
log-probability, and the ~10^3 operations of the largest exact computation keep marginals and
probabilities accurate to about 1e-6, far below the errors the samplers are measured at. A model
past it is refused at start-up, naming the file or key, with exit code 2. Every shipped model is
far inside it (Σ|θ| of a few thousand at most).
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecError

__all__ = ["POTENTIAL_BOUND", "check_potential"]

POTENTIAL_BOUND = 1e7


def check_potential(arrays: dict[str, np.ndarray], what: str, key: str | None = None) -> None:
    """A SpecError (naming ``key``, ``what`` and the array with the largest entry) when the
    parameters in ``arrays`` ({name: array}) sum in absolute value past :data:`POTENTIAL_BOUND`
    or are not finite."""
    with np.errstate(over="ignore", invalid="ignore"):
        sums = {k: float(np.sum(np.abs(np.asarray(a, dtype=np.float64))))
                for k, a in arrays.items()}
    total = sum(sums.values())
    if total <= POTENTIAL_BOUND:            # also False for NaN
        return
    peaks = {k: float(np.max(np.abs(a), initial=0.0)) for k, a in arrays.items()}
    name = max(peaks, key=lambda k: (np.nan_to_num(peaks[k], nan=np.inf), k))
    raise SpecError(f"{what}: the parameters' absolute values sum to {total:.3g} (largest entry "
                    f"{peaks[name]:.3g}, in '{name}'), past {POTENTIAL_BOUND:.0e}, the most "
                    f"for which float64 log-probabilities stay accurate (docs/trust.md, "
                    f"'Model magnitudes'); scale the model down", key)
