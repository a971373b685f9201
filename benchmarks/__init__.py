"""Benchmarks: each ``bench_*.py`` module defines ``run(quick: bool) -> list[dict]``."""
