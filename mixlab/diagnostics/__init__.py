"""Mixing diagnostics of a run's streams (ESS, R-hat, MCSE, ESS/s by ArviZ), export to ArviZ
InferenceData, and side-by-side comparison of runs.

Modules: ``mixing`` (the diagnostics table), ``export`` (netCDF / Zarr), ``compare`` (runs side
by side), ``figure`` (trace and autocorrelation of the summaries)."""

from .mixing import MAX_COORDINATES, Row, diagnose, stream_statistics

__all__ = ["MAX_COORDINATES", "Row", "diagnose", "stream_statistics"]
