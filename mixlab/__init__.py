"""mixlab: an experiment runner for research on how fast samplers mix."""

__version__ = "0.1.0"
