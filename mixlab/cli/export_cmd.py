"""``mixlab export RUN [--stream NAME] --format netcdf -o FILE``: ArviZ InferenceData."""

from __future__ import annotations

import click

from ..errors import UsageError
from ..store import RunReader

ZARR_NOTE = ("Zarr export is not offered: ArviZ 0.23 writes Zarr only with zarr < 3, which the "
             "xarray mixlab installs can no longer open. Export netCDF and convert it if you "
             "need Zarr: xarray.open_datatree(FILE).to_zarr(DIR)")


@click.command("export")
@click.argument("run_dir", metavar="RUN", type=click.Path(exists=True, file_okay=False))
@click.option("--stream", default=None,
              help="the stream to export [default: the run's only stream]")
@click.option("--format", "fmt", type=click.Choice(["netcdf", "zarr"]), default="netcdf",
              show_default=True, help="file format (zarr: see the message it gives)")
@click.option("--output", "-o", type=click.Path(dir_okay=False), required=True,
              help="output file, e.g. run.nc")
def export(run_dir, stream, fmt, output):
    """Write a stream's draws, per-draw summaries and sampler statistics as ArviZ
    InferenceData (groups posterior and sample_stats, dims chain and draw; the run's spec and
    provenance as attributes), loadable with arviz.from_netcdf."""
    if fmt == "zarr":
        raise UsageError(ZARR_NOTE)
    from ..diagnostics.export import export_netcdf

    with RunReader(run_dir) as run:
        name, out = export_netcdf(run, stream, output)
    click.echo(f"{out}: stream {name} (arviz.from_netcdf('{out}'))")
