"""The ``mixlab`` command: one module per sub-command, loaded lazily.

Errors: a :class:`mixlab.errors.MixlabError` becomes a one-paragraph message on stderr with exit
code 2 (usage/spec) or 1 (runtime); ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import importlib
import sys

import click

from ..errors import MixlabError

# sub-command name -> "module:attribute"
COMMANDS = {
    "run": "mixlab.cli.run_cmd:run",
    "show": "mixlab.cli.show_cmd:show",
    "plot": "mixlab.cli.plot_cmd:plot",
    "sweep": "mixlab.cli.sweep_cmd:sweep",
    "data": "mixlab.cli.data_cmd:data",
    "train": "mixlab.cli.train_cmd:train",
    "sample": "mixlab.cli.rbm_cmds:sample",
    "evaluate": "mixlab.cli.rbm_cmds:evaluate",
    "plugins": "mixlab.cli.plugins_cmd:plugins",
}


class MixlabFailure(click.ClickException):
    """A MixlabError shown the click way, keeping its exit code."""

    def __init__(self, exc: MixlabError):
        super().__init__(str(exc))
        self.exit_code = exc.exit_code


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                return None  # a sub-command whose module is not installed
            raise

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except MixlabError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            raise MixlabFailure(exc) from exc
        except KeyboardInterrupt:
            click.echo("interrupted; run the same command again to resume", err=True)
            ctx.exit(130)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:  # an unexpected failure: still one paragraph, exit code 1
            if ctx.obj and ctx.obj.get("debug"):
                raise
            raise MixlabFailure(MixlabError(
                f"{type(exc).__name__}: {exc} (this is a runtime failure; run "
                f"'mixlab --debug ...' to see the traceback)")) from exc


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"],
                                              "show_default": True})
@click.version_option(package_name="mixlab")
@click.option("--debug", is_flag=True, help="show tracebacks instead of one-line errors")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """mixlab: run, store and plot experiments on fast-mixing samplers.

    \b
    mixlab run SPEC.yaml [key.sub=value ...]   run (or resume) an experiment
    mixlab show RUN [--json]                   status, provenance, metrics, results
    mixlab plot RUN [-o FILE.png]              render figures from the run file
    mixlab sweep SPEC key=a,b,c ...            one run per grid point + summary
    mixlab data list|fetch|info                real data sets
    mixlab plugins [--json]                    registered samplers, experiments, figures
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def main() -> None:
    cli(prog_name="mixlab")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
