"""``mixlab sweep SPEC key=a,b,c ... [--workers N] [--scheduler ADDRESS]``."""

from __future__ import annotations

import click

from ..errors import MixlabError
from ..spec.builtin import resolve_spec
from ..sweep.grid import plan
from ..sweep.launch import run_sweep
from ..sweep.table import describe_outcome
from .options import quiet_option, scale_option, seed_option


@click.command("sweep")
@click.argument("spec_file", metavar="SPEC", type=click.Path(dir_okay=False))
@click.argument("axes", nargs=-1, metavar="[KEY=A,B,C]...")
@scale_option
@seed_option
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="a fixed override applied to every point (repeatable)")
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="sweep directory [default: runs/<spec name>-sweep]")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=1,
              help="local worker processes")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Dask scheduler address (needs the 'dask' extra), e.g. tcp://host:8786")
@click.option("--dry-run", is_flag=True,
              help="list the points, their run directories and what a run would do to each")
@quiet_option
def sweep(spec_file, axes, scale, seed, overrides, out, workers, scheduler, dry_run, quiet):
    """Run SPEC at every point of the grid given by KEY=A,B,C axes (or the spec's 'sweep.grid').
    SPEC is a YAML file or a built-in spec name (see 'mixlab run --help').

    Each point is a run of its own, seeded by its index in the grid; a summary table is written
    to the sweep directory as sweep.csv (see 'mixlab show SWEEP_DIR'), one row per point with
    its status (complete, failed, pending) and, for a failed point, the reason.

    A point that fails does not stop the others; the command then lists the failures and exits
    1. Running the same command again re-runs only the failed or unfinished points (complete
    ones are left as they are). With --scheduler, the workers need no file system shared with
    this machine: each point runs in a temporary directory on its worker and its run directory
    comes back here; a point whose worker dies is re-run on another worker."""
    from ..spec.resolver import check_startup
    from ..sweep.grid import grid_points, point_dir
    from ..sweep.point import existing_run

    sweep_dir, specs, summary, grid = plan(resolve_spec(spec_file), axes, scale=scale, seed=seed,
                                           out=out, extra_overrides=overrides)
    points = grid_points(grid)
    if dry_run:
        what = {"complete": "complete (skipped)", "other": "holds another spec's run (refused)",
                "todo": "would run"}
        for i, (p, s) in enumerate(zip(points, specs)):
            d = point_dir(sweep_dir, i, p)
            state, _ = existing_run(s, d)
            if state == "todo" and (d / "run.h5").exists():
                state_text = "would resume or re-run"
            else:
                state_text = what[state]
            if state == "todo":
                try:
                    check_startup(s)      # what the point's run checks before any work
                except MixlabError as exc:
                    state_text = f"would fail at start: {exc}"
            click.echo(f"{d}  {p}  {state_text}")
        return
    outcome = run_sweep(sweep_dir, specs, grid, summary, workers=workers, scheduler=scheduler,
                        quiet=quiet)
    click.echo(describe_outcome(outcome))
    if outcome.failed:
        for i in outcome.failed:
            click.echo(f"  failed: {outcome.dirs[i]}: {outcome.error[i] or outcome.status[i]}",
                       err=True)
        raise MixlabError(f"{len(outcome.failed)} of {len(points)} sweep point(s) failed (listed "
                          f"above and in {outcome.csv_path}); fix the cause and run the same "
                          f"command again: it re-runs only those points")
