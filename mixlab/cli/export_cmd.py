"""``mixlab export RUN [--stream NAME] --format netcdf|zarr -o OUT``: ArviZ InferenceData."""

from __future__ import annotations

import click

from ..runfile.store import RunReader

READ_BACK = {
    "netcdf": "arviz.from_netcdf('{out}')",
    "zarr": "arviz.InferenceData.from_datatree(xarray.open_datatree('{out}', engine='zarr'))",
}


@click.command("export")
@click.argument("run_dir", metavar="RUN", type=click.Path(exists=True, file_okay=False))
@click.option("--stream", default=None,
              help="the stream to export [default: the run's only stream]")
@click.option("--format", "fmt", type=click.Choice(["netcdf", "zarr"]), default="netcdf",
              show_default=True, help="netcdf: one file; zarr: a directory (Zarr format 2)")
@click.option("--output", "-o", type=click.Path(), required=True,
              help="output file (netcdf, e.g. run.nc) or new directory (zarr, e.g. run.zarr)")
def export(run_dir, stream, fmt, output):
    """Write a stream's draws, per-draw summaries and sampler statistics as ArviZ
    InferenceData (groups posterior and sample_stats, dims chain and draw; the run's spec and
    provenance as attributes), loadable with arviz.from_netcdf or, for Zarr,
    arviz.InferenceData.from_datatree(xarray.open_datatree(DIR, engine='zarr'))."""
    from ..diagnostics import export as exporters

    write = exporters.export_zarr if fmt == "zarr" else exporters.export_netcdf
    with RunReader(run_dir) as run:
        name, out = write(run, stream, output)
    click.echo(f"{out}: stream {name} ({READ_BACK[fmt].format(out=out)})")
