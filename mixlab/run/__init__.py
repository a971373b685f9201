"""The run layer: a run of an experiment (context), its streams (streams) in this process or in
worker processes (workers), its stages at once (stages), and what a changed spec or changed code
makes stale (update)."""
