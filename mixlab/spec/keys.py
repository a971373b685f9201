"""The keys every spec may carry whatever its experiment (the reserved keys), and the scales.

They sit below the plugin loader, which refuses an experiment schema that redefines one, and
below :mod:`mixlab.spec.resolver`, which validates every spec against them plus the experiment's schema.
"""

from __future__ import annotations

from .nodes import Param

SCALES = ("quick", "paper")

# Keys every spec may carry, whatever its experiment.
RESERVED = {
    "name": Param("", str, help="run name (default: the spec file's stem)"),
    "experiment": Param(type=str, help="experiment kind (see 'mixlab run --list')"),
    "description": Param("", str, help="free text"),
    "seed": Param(0, int, lo=0, help="root of the run's SeedSequence"),
    "seed_key": Param([], list, item=int, help="spawn key below the seed (set by sweeps)"),
    "scale": Param("quick", str, choices=SCALES, help="which 'scales' preset was applied"),
    "plugins": Param([], list, item=str,
                     help="plugins to import before the spec is validated: module names or .py "
                          "files (relative to the spec file's directory); see docs/plugins.md"),
    "diagnostics": Param(False, bool,
                         help="store ESS bulk/tail, R-hat, MCSE and ESS/s of every stream's "
                              "summaries in the results (ess_bulk/<stream>/<stat>, ...) when "
                              "the run completes; 'mixlab diagnose RUN' prints them anyway"),
    "jobs": Param(None, int, lo=1, nullable=True,
                  help="worker processes for the run's independent streams ('mixlab run -j'; "
                       "default MIXLAB_JOBS, else 1); not part of the run's identity: the same "
                       "run at any jobs gives the same draws"),
    "dropped": Param(None, dict, nullable=True,
                     help="set by mixlab: keys of the spec file that do not apply to the data "
                          "or model the user chose, and why (present only when there are some)"),
    "sweep": Param(None, dict, nullable=True,
                   help="{grid: {dotted.key: [values]}, summary: [result keys]} for 'mixlab sweep'"),
}
