"""``mixlab league FAMILY [KEY=VALUE ...]``: every sampler of a family on its standard targets,
at equal wall time and at equal work, ranked against exact truth (docs/league.md)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..errors import MixlabError, UsageError
from ..plugins import registry
from ..run.context import default_run_dir
from ..spec.builtin import resolve_spec
from ..spec.resolver import load_yaml, resolve
from .options import quiet_option, scale_option, seed_option


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise UsageError("--samplers/--targets need a comma-separated list of names")
    return names


def run_league_spec(spec: dict, out: str | None, workers: int, scheduler: str | None,
                    quiet: bool) -> None:
    """Run a resolved league spec into ``out`` (default runs/<name>/<spec hash>), print the
    table and where the outputs are; raise MixlabError (exit 1) after writing them when a
    cell did not complete."""
    from ..league.league import run_league

    league_dir = Path(out) if out else default_run_dir(spec)
    text, entries = run_league(spec, league_dir, workers=workers, scheduler=scheduler,
                               quiet=quiet)
    click.echo(text, nl=False)
    failed = [e for e in entries if e.status != "complete"]
    click.echo(f"league: {league_dir} (league.csv, league.md, league.png, league.html; "
               f"'mixlab show {league_dir}')")
    if failed:   # the outputs are written; the exit status says they are not whole (a sweep's)
        raise _incomplete(f"{len(failed)} of {len(entries)} league cell(s)",
                          f"the table and in {league_dir / 'league.csv'}")


def known_family(family: str, plugin_refs: list[str]) -> None:
    """``family`` must be registered once the installed plugins and ``plugin_refs`` (the
    --plugin files and modules) are loaded; a UsageError (exit 2) lists the families."""
    from ..plugins import discovery

    registry.load_plugins()
    discovery.load_spec_plugins(plugin_refs, "--plugin")
    if family not in registry.FAMILIES:
        raise UsageError(f"unknown family '{family}'; families: "
                         f"{', '.join(registry.FAMILIES)} (a plugin's family is known once the "
                         f"plugin is installed or given with --plugin)")


def default_league(family: str) -> dict:
    """The league spec of a plugin's family: its league targets, every sampler registered
    for it, the league's default budgets (``mixlab specs show league/spinglass`` lists the
    keys; override them on the command line)."""
    return {"name": f"league-{family}", "experiment": "league", "seed": 29, "family": family,
            "description": f"every {family} sampler on the {family} family's league targets, "
                           f"equal time and equal work"}


@click.command("league")
@click.argument("family", metavar="FAMILY")
@click.argument("overrides", nargs=-1, metavar="[KEY.SUB=VALUE]...")
@click.option("--samplers", default=None, metavar="A,B",
              help="run only these samplers (labels) [default: every registered sampler]")
@click.option("--targets", default=None, metavar="X,Y",
              help="run only these targets [default: the family's standard targets]")
@click.option("--plugin", "plugin_files", multiple=True, type=click.Path(dir_okay=False),
              metavar="FILE.py", help="a plugin (.py file or module) whose samplers join the "
                                      "league (repeatable)")
@scale_option
@seed_option
@click.option("--spec", "spec_file", default=None, type=click.Path(dir_okay=False),
              help="a league spec to start from [default: the built-in league/FAMILY]")
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="league directory [default: runs/<spec name>/<hash of resolved spec>]")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=1,
              help="cells run in this many processes (one BLAS thread each)")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="run the cells on a Dask cluster (needs the 'dask' extra)")
@click.option("--calibrate", is_flag=True,
              help="run the family's calibration set (correct and deliberately wrong "
                   "samplers) instead of its samplers, and write calibration.md")
@click.option("--power", "repeats", type=click.IntRange(min=1), default=None, metavar="R",
              help="measure the league's power: R leagues (seeds seed..seed+R-1) of the "
                   "calibration set's tempered sampler over a grid of beta; writes power.md")
@quiet_option
def league(family, overrides, samplers, targets, plugin_files, scale, seed, spec_file, out,
           workers, scheduler, calibrate, repeats, quiet):
    """Run the sampler league of FAMILY (rbm, spinglass, logistic, mrf, or a family an
    installed plugin or a --plugin file registers with league targets).

    Every sampler registered for the family (mixlab's, installed plugins', --plugin files') runs
    on each standard target over several seeds, at equal wall time and at equal work (the
    family's cost unit, from the samplers' own statistics). Each cell (a sampler on a target)
    is an ordinary run directory; an interrupted league resumes only its unfinished cells.
    Writes league.csv, league.md, league.png and league.html (mixlab report) and prints the
    table."""
    over = list(overrides)
    if calibrate:
        over.insert(0, "calibration=true")
    if samplers is not None:
        over.append(f"only_samplers=[{','.join(_names(samplers))}]")
    if targets is not None:
        over.append(f"targets=[{','.join(_names(targets))}]")
    extra = [os.path.abspath(p) if p.endswith(".py") else p for p in plugin_files]
    known_family(family, extra)
    if spec_file is None and family not in registry.BUILTIN_FAMILIES:
        path, raw = f"league-{family}", default_league(family)
    else:
        path = resolve_spec(spec_file or f"league/{family}")
        raw = load_yaml(path)
    if extra:
        plugs = raw.get("plugins") or []
        raw["plugins"] = (plugs if isinstance(plugs, list) else [plugs]) + extra
    spec = resolve(raw, overrides=over, scale=scale, seed=seed, default_name=Path(path).stem)
    if spec["experiment"] != "league" or spec["family"] != family:
        raise UsageError(f"{path} is not a {family} league spec (experiment: league, family: "
                         f"{family})")
    if repeats is not None:
        _run_power(raw, over, scale, spec, family, repeats, out, workers, scheduler, quiet)
        return
    run_league_spec(spec, out, workers, scheduler, quiet)


def _run_power(raw: dict, over: list, scale, spec: dict, family: str, repeats: int,
               out: str | None, workers: int, scheduler: str | None, quiet: bool) -> None:
    """``--power R``: R power leagues (mixlab.league.power), one seed each, their cells on
    ``workers`` processes or the Dask cluster at ``scheduler``."""
    from ..league.power import power_raw, run_power

    base = power_raw(raw, family)
    specs = [resolve(base, overrides=over, scale=scale, seed=int(spec["seed"]) + r,
                     default_name=spec["name"]) for r in range(repeats)]
    where = Path(out) if out else default_run_dir(specs[0]).parent / f"power-{repeats}"
    md, incomplete = run_power(specs, where, workers, quiet, scheduler)
    click.echo(md, nl=False)
    click.echo(f"power: {where} (power.md, power.csv; one league per repeat in r<k>/)")
    if incomplete:   # power.md marks them; the exit status says the table is not whole
        raise _incomplete(f"{incomplete} power league cell(s)", f"{where}/r<k>/league.csv")


def _incomplete(cells: str, reasons: str) -> MixlabError:
    """The error (exit 1) once a league's or power league's outputs are written with
    ``cells`` not complete, their reasons in ``reasons``."""
    return MixlabError(f"{cells} did not complete (their reasons are in {reasons}); fix the "
                       f"cause and run the same command again: it runs only those cells")
