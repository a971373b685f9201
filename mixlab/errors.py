"""Exceptions that the CLI turns into a one-paragraph message and an exit code.

Exit codes: 2 for usage and spec errors (the user must change the command or the spec),
1 for runtime failures (missing data, a corrupt run file, a numerical failure).
"""


class MixlabError(Exception):
    """Base class: a failure with a message meant for the user, exit code 1."""

    exit_code = 1


class SpecError(MixlabError):
    """An invalid experiment spec or override; ``key`` is the dotted key path at fault."""

    exit_code = 2

    def __init__(self, message: str, key: str | None = None):
        self.key = key
        super().__init__(f"spec key '{key}': {message}" if key else message)


class UsageError(MixlabError):
    """A bad command-line argument (exit code 2)."""

    exit_code = 2


class DataError(MixlabError):
    """A data set is missing, corrupt or cannot be fetched (exit code 1)."""


class RunFileError(MixlabError):
    """A run file is missing, truncated or not a mixlab run (exit code 1)."""


class FigureNotReady(MixlabError):
    """A figure whose data the run does not hold yet (e.g. an ISL curve before ``mixlab evaluate
    isl``): ``mixlab plot`` of all figures skips it with this message; asked for by name, exit 1."""


def interruption(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM behind ``exc``, or None.  A signal whose Python handler runs while
    compiled code calls back into Python (numba boxing an array it returns) surfaces as a
    SystemError ("... returned a result with an exception set") caused by the interrupt: that is
    still an interruption, not a failure of the run."""
    for _ in range(8):                    # follow SystemErrors only, and not forever
        if isinstance(exc, KeyboardInterrupt):
            return exc
        if not isinstance(exc, SystemError):
            return None
        exc = exc.__cause__ or exc.__context__
    return None
