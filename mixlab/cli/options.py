"""Option decorators shared by sub-commands."""

import click

quiet_option = click.option("--quiet", "-q", is_flag=True, help="no progress bar or log on stderr")
force_option = click.option("--force", is_flag=True, help="overwrite/re-run existing results")
scale_option = click.option("--scale", type=click.Choice(["quick", "paper"]), default="quick",
                            help="size preset from the spec's 'scales' section")
seed_option = click.option("--seed", type=click.IntRange(min=0), default=None,
                           help="override the spec's seed")
