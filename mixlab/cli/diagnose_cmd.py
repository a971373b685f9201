"""``mixlab diagnose RUN [--stream NAME] [--json]``: ESS, R-hat, MCSE and ESS/s per statistic."""

from __future__ import annotations

import json

import click

from ..runfile.store import RunReader


def _num(v, fmt: str, width: int) -> str:
    return f"{'-':>{width}}" if v is None or v != v else format(v, f"{width}{fmt}")


@click.command("diagnose")
@click.argument("run_dir", metavar="RUN", type=click.Path(exists=True, file_okay=False))
@click.option("--stream", default=None, help="only this stream [default: every stream]")
@click.option("--json", "as_json", is_flag=True,
              help="a list of rows {stream, statistic, ess_bulk, ess_tail, rhat, mcse, "
                   "ess_per_s}, in the table's order")
def diagnose(run_dir, stream, as_json):
    """Mixing diagnostics of a run's streams, computed by ArviZ on each draw's scalar summaries
    (or a stream's first coordinates): bulk and tail ESS, split R-hat (two chains or more),
    Monte Carlo standard error of the mean, and ESS per second of sampling."""
    from ..diagnostics import diagnose as run_diagnostics

    with RunReader(run_dir) as run:
        rows = run_diagnostics(run, stream)
        status = run.status
    if as_json:
        click.echo(json.dumps([r.record() for r in rows], indent=1))
        return
    if status != "complete":
        click.echo(f"run status: {status} (diagnostics of the draws saved so far)")
    if not rows:
        click.echo("no stream with at least 4 draws and real-valued statistics")
        return
    w = max(len("stream"), *(len(r.stream) for r in rows))
    ws = max(len("statistic"), *(len(r.statistic) for r in rows))
    click.echo(f"{'stream':<{w}}  {'statistic':<{ws}}  {'ESS bulk':>9}  {'ESS tail':>9}  "
               f"{'R-hat':>6}  {'MCSE':>9}  {'ESS/s':>9}")
    single = False
    for r in rows:
        single |= r.rhat is None
        click.echo(f"{r.stream:<{w}}  {r.statistic:<{ws}}  {_num(r.ess_bulk, '.1f', 9)}  "
                   f"{_num(r.ess_tail, '.1f', 9)}  {_num(r.rhat, '.3f', 6)}  "
                   f"{_num(r.mcse, '.3g', 9)}  {_num(r.ess_per_s, '.4g', 9)}")
    chains = sorted({(r.stream, r.chains, r.draws) for r in rows})
    click.echo("chains x draws: " + ", ".join(f"{s} {c}x{d}" for s, c, d in chains))
    if single:
        click.echo("R-hat needs at least 2 chains: '-' for the streams with one chain")
    thinned = sorted({(r.stream, r.stride) for r in rows if r.stride > 1})
    if thinned:
        click.echo("thinned records (every k-th draw; ESS of the record, at most its draws; "
                   "the streaming ESS of every draw is the record's attribute ess_stream): "
                   + ", ".join(f"{s} every {k}" for s, k in thinned))
