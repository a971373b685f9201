"""Support for mixlab's compiled (numba) kernels: their on-disk cache (numba_cache)."""
