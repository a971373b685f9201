"""``mixlab run SPEC [key.sub=value ...]``: run or resume one experiment."""

from __future__ import annotations

from pathlib import Path

import click

from ..plugins import registry
from ..run.context import default_run_dir, execute
from ..run.update import adopt_latest, stale_note
from ..spec.builtin import resolve_spec
from ..spec.resolver import RESERVED, check_startup, dump, load_spec, spec_hash
from ..spec.schema import describe
from .options import force_option, quiet_option, scale_option, seed_option


@click.command("run")
@click.argument("spec_file", metavar="SPEC", type=click.Path(dir_okay=False), required=False)
@click.argument("overrides", nargs=-1, metavar="[KEY.SUB=VALUE]...")
@scale_option
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="run directory [default: runs/<spec name>/<hash of resolved spec>]")
@seed_option
@click.option("--dry-run", is_flag=True, help="print the resolved spec and the work, run nothing")
@force_option
@click.option("--replace", is_flag=True,
              help="if --out holds a run of a different spec, move it to OUT.previous first")
@click.option("--update", is_flag=True,
              help="bring the run up to date: rerun, add or remove exactly the streams whose "
                   "spec entry or code changed, keep the others as they are (without --out: "
                   "the latest run of the spec's name)")
@quiet_option
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, metavar="N",
              help="run the independent streams of the run in N worker processes, one core "
                   "each (draws are the same as with -j 1) [default: the spec's jobs, else "
                   "MIXLAB_JOBS, else 1]")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="run the independent streams and stages on the Dask cluster at ADDRESS "
                   "(e.g. tcp://host:8786; its workers need not share this machine's files); "
                   "needs mixlab[dask]")
@click.option("--no-figures", is_flag=True,
              help="do not draw the run's figures into OUT/figures/ when it completes "
                   "('mixlab plot OUT' draws them later)")
@click.option("--list", "list_kinds", is_flag=True, help="list experiment kinds and exit")
@click.option("--help-spec", is_flag=True, help="list every key of the spec's experiment kind")
def run(spec_file, overrides, scale, out, seed, dry_run, force, replace, update, quiet, jobs,
        scheduler, no_figures, list_kinds, help_spec):
    """Run the experiment described by SPEC (a YAML file), with dotted overrides.

    SPEC may also name a spec shipped with mixlab, e.g. rates_fpcd/fig2 ('mixlab specs list';
    'mixlab specs copy NAME' to edit one); a path that exists always wins over a name.

    Re-running a complete spec does nothing and says where its results are; an interrupted
    run resumes from its last checkpoint; --update reruns only the streams whose sampler entry
    or code changed (a plugin edited, a sampler added, removed or changed); --force starts
    afresh.

    -j N runs the streams an experiment declares independent (one per sampler or per eps in
    most figures) N at a time, each in its own process with one BLAS thread: a time budget is
    given to each stream on a core of its own, and a draw budget gives the same bytes as -j 1
    (docs/running.md)."""
    if list_kinds:
        for name, kind in sorted(registry.experiments().items()):
            click.echo(f"{name:40s} {kind.help.splitlines()[0] if kind.help else ''}")
        return
    if spec_file is None:
        raise click.UsageError("missing SPEC (a YAML experiment spec, or a built-in spec name: "
                               "see 'mixlab specs list')")
    spec = load_spec(resolve_spec(spec_file), overrides=overrides, scale=scale, seed=seed)
    if help_spec:
        kind = registry.get_experiment(spec["experiment"])
        for key, default, help_ in describe({**RESERVED, **kind.schema}):
            click.echo(f"{key:40s} {default:20s} {help_}")
        return
    if spec["experiment"] == "league" and not dry_run:   # many runs: the league's cells
        from ..run.workers import resolve_jobs
        from .league_cmd import run_league_spec

        run_league_spec(spec, out, resolve_jobs(jobs, spec), scheduler, quiet)
        return
    run_dir = Path(out) if out else default_run_dir(spec)
    if update and force:
        raise click.UsageError("--update keeps what is up to date and --force discards "
                               "everything: give one of them")
    if update and not out:
        run_dir = adopt_latest(run_dir)
    if dry_run:
        check_startup(spec)   # the run's own start-up validation (see execute), nothing less
        kind = registry.get_experiment(spec["experiment"])
        click.echo(dump(spec), nl=False)
        click.echo(f"# would run experiment '{kind.name}' ({kind.help.splitlines()[0] if kind.help else ''})")
        click.echo(f"# scale {spec['scale']}, seed {spec['seed']}, spec hash {spec_hash(spec)}")
        for key, why in (spec.get("dropped") or {}).items():
            click.echo(f"# dropped {key} (from the spec file): {why}")
        click.echo(f"# into {run_dir}/ (spec.yaml, run.h5, log.txt, figures/)")
        figs = registry.figures_for(kind.name)
        if figs:
            click.echo(f"# figures: {', '.join(sorted(figs))}")
        return
    check_startup(spec)   # refused here, the run directory is not touched
    run_dir, happened = execute(spec, run_dir, force=force, quiet=quiet, replace=replace,
                                jobs=jobs, update=update, render=not no_figures,
                                scheduler=scheduler)
    if happened == "complete":
        stale = "" if update else stale_note(run_dir, spec)
        click.echo(f"already complete: {run_dir} ({stale or 'use --force to re-run'})")
    elif happened == "updated":
        click.echo(f"updated and complete: {run_dir}")
    else:
        click.echo(f"{'resumed and completed' if happened == 'resumed' else 'complete'}: "
                   f"{run_dir}")
