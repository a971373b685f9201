"""ArviZ, imported without its start-up FutureWarning (and only when needed: it takes ~2 s)."""

from __future__ import annotations

import logging
import warnings


def arviz():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import arviz as az
    # "Shape validation failed" for one chain is said once by mixlab instead (R-hat: None)
    logging.getLogger("arviz").setLevel(logging.ERROR)
    return az
