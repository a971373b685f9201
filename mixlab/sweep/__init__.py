"""Grid sweeps: the grid and its points (grid), one point (point), the bookkeeping table
(table), and running the points here, on a process pool or on Dask (launch)."""
