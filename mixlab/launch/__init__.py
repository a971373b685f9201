"""The launcher: where tasks (streams, stages, sweep points, league cells) run, and how workers start."""
