"""The toy experiment: random-walk Metropolis on a Gaussian with exact moments (generic), which
exercises the whole pipeline in seconds; the austerity experiments borrow its helpers."""
