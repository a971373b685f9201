"""What a run file records of where the run came from, read as data (``mixlab show``, reports).

Nothing named here is imported or opened: the plugins and packages are the run's own record
of what it loaded.
"""

from __future__ import annotations

import json
import math

import numpy as np

from .store import RunReader


def json_clean(v):
    """``v`` as JSON-able Python: numpy scalars and arrays to numbers and lists, NaN/inf to
    None."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (np.floating, np.integer)):
        return json_clean(v.item())
    if isinstance(v, np.ndarray):
        return [json_clean(x) for x in v.tolist()]
    if isinstance(v, list):
        return [json_clean(x) for x in v]
    return v


def provenance(run: RunReader) -> dict:
    """Where the run came from: versions, git commit, seed and the plugins it loaded (data
    only: nothing named here is imported)."""
    a = run.attrs
    out = {k: json_clean(a[k]) if not isinstance(a[k], bytes)
           else a[k].decode("utf-8", "replace")
           for k in ("mixlab_version", "git_commit", "git_dirty", "created", "python",
                     "seed_entropy", "experiment") if k in a}
    for k in ("packages", "plugins"):
        try:
            out[k] = json.loads(a[k]) if k in a else ([] if k == "plugins" else {})
        except (TypeError, ValueError):
            out[k] = str(a[k])
    return out
