"""The ``mixlab`` command: one module per sub-command, loaded lazily.

Errors: a :class:`mixlab.errors.MixlabError` becomes a one-paragraph message on stderr with exit
code 2 (usage/spec) or 1 (runtime); ``--debug`` shows the traceback instead.

A closed stdout (``mixlab show RUN | head -1``) ends any command quietly with exit code 141
(128 + SIGPIPE, what a shell reports for ``cat big | head -1``): no message, no traceback.
"""

from __future__ import annotations

import importlib
import os
import select
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
    "specs": "mixlab.cli.specs_cmd:specs",
    "train": "mixlab.cli.train_cmd:train",
    "sample": "mixlab.cli.rbm_cmds:sample",
    "evaluate": "mixlab.cli.rbm_cmds:evaluate",
    "plugins": "mixlab.cli.plugins_cmd:plugins",
    "diagnose": "mixlab.cli.diagnose_cmd:diagnose",
    "export": "mixlab.cli.export_cmd:export",
    "compare": "mixlab.cli.compare_cmd:compare",
    "league": "mixlab.cli.league_cmd:league",
    "report": "mixlab.cli.report_cmd:report",
}


class MixlabFailure(click.ClickException):
    """A MixlabError shown the click way, keeping its exit code."""

    def __init__(self, exc: MixlabError):
        super().__init__(str(exc))
        self.exit_code = exc.exit_code


def stdout_is_closed() -> bool:
    """True when nobody reads stdout any more (the read end of its pipe or socket is closed)."""
    try:
        poller = select.poll()
        poller.register(sys.__stdout__.fileno(), select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def end_quietly_on_closed_stdout() -> None:
    """Exit 141 without a word; stdout is pointed at /dev/null first so that the interpreter's
    final flush of buffered output does not print 'Exception ignored ... BrokenPipeError'."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
    sys.exit(141)


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
            from ..env_settings import check_all
            from ..launch.worker import sigterm_as_interrupt

            check_all()             # a bad MIXLAB_* value: one line, exit 2, before any work
            with sigterm_as_interrupt():     # a polite kill stops a command as Ctrl-C does
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
            if isinstance(exc, BrokenPipeError) and stdout_is_closed():
                end_quietly_on_closed_stdout()
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
    mixlab run rates_fpcd/fig2 [...]           run a built-in spec (see: mixlab specs list)
    mixlab show RUN [--json]                   status, provenance, metrics, results
    mixlab plot RUN [-o FILE.png]              render figures from the run file
    mixlab diagnose RUN [--json]               ESS bulk/tail, R-hat, MCSE, ESS/s (ArviZ)
    mixlab export RUN -o F [--format zarr]     ArviZ InferenceData (netCDF or Zarr)
    mixlab compare RUN_OR_SWEEP ...            results, spec differences, curves side by side
    mixlab sweep SPEC key=a,b,c ...            one run per grid point + summary
    mixlab league FAMILY [-j N]                every sampler x standard targets, ranked
    mixlab train --data usps -o model.h5       train an RBM (a resumable run in model.h5.run/)
    mixlab report PATH... [-o FILE.html]       one self-contained page: run, sweep, league
    mixlab data list|fetch|info                real data sets
    mixlab specs list|show|copy                the papers' specs shipped with mixlab
    mixlab plugins [--json]                    registered samplers, experiments, figures
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def main() -> None:
    try:
        cli.main(prog_name="mixlab")  # standalone: always ends in SystemExit
    except SystemExit as exc:
        code = exc.code
    if type(sys.stdout).__name__ == "_PacifyFlushWrapper":
        # click met the closed pipe in its own output (e.g. --help) and swallowed it, exit 1
        end_quietly_on_closed_stdout()
    # Output to a pipe is block-buffered: flush it here, where a closed pipe can still be
    # handled, rather than in the interpreter's shutdown.
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        end_quietly_on_closed_stdout()
    except (OSError, ValueError):
        pass
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
