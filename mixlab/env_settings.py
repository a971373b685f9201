"""mixlab's environment variables, each parsed strictly: a bad value is an error, never ignored.

Every command checks them all when it starts (:func:`check_all`, called by the CLI), so a bad
value ends any command with one line naming the variable and a valid example, exit code 2.
The readers below raise the same :class:`~mixlab.errors.UsageError` when a library user calls
them directly.

======================== ============================================== ======================
variable                 value                                          example
======================== ============================================== ======================
MIXLAB_MAX_READ_BYTES    whole number of bytes >= 1 (ASCII digits)      2147483648
MIXLAB_JOBS              whole number of worker processes >= 1          4
MIXLAB_CHECKPOINT_SECONDS seconds between checkpoints, finite, >= 0     10
MIXLAB_KERNEL_THREADS    whole number of threads >= 1                   2
MIXLAB_DATA_DIR          a directory (created when missing)             ~/.cache/mixlab
MIXLAB_DATA_MIRROR       an existing directory                          /srv/mixlab-data
MIXLAB_PLUGINS           ':'-separated module names or .py files        mypkg.samplers:x.py
======================== ============================================== ======================

An empty value is the same as unset.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from .errors import UsageError

__all__ = ["check_all", "env_float", "env_int", "env_path", "env_plugins"]

_INTS = {"MIXLAB_MAX_READ_BYTES": "2147483648 (2 GiB)", "MIXLAB_JOBS": "4",
         "MIXLAB_KERNEL_THREADS": "2"}


def _raw(name: str) -> str | None:
    text = os.environ.get(name, "").strip()
    return text or None


def _bad(name: str, text: str, what: str, example: str) -> UsageError:
    return UsageError(f"{name} must be {what}, got {text[:40]!r}; set e.g. {name}={example}, "
                      f"or unset it")


def env_int(name: str, default: int | None = None) -> int | None:
    """``$name`` as a whole number >= 1 (ASCII digits only), ``default`` when unset."""
    text = _raw(name)
    if text is None:
        return default
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise _bad(name, text, "a whole number of at least 1", _INTS.get(name, "1"))
    return int(text)


def env_float(name: str, default: float, example: str) -> float:
    """``$name`` as a finite number >= 0, ``default`` when unset."""
    text = _raw(name)
    if text is None:
        return default
    try:
        value = float(text) if text.isascii() else math.nan
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise _bad(name, text, "a finite number of at least 0", example)
    return value


def env_path(name: str, *, must_exist: bool) -> Path | None:
    """``$name`` as a directory path (``~`` expanded, resolved against the working directory);
    None when unset. Refused when something other than a directory is there, or (with
    ``must_exist``) when nothing is."""
    text = _raw(name)
    if text is None:
        return None
    path = Path(text).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise _bad(name, text, "a directory, not a file", "/path/to/a/directory")
    if must_exist and not path.is_dir():
        raise _bad(name, text, "an existing directory", "/path/to/a/directory")
    return path


def env_plugins(name: str = "MIXLAB_PLUGINS") -> list[str]:
    """The ':'-separated items of ``$name``: each a dotted module name or a file path."""
    items = [s.strip() for s in (_raw(name) or "").split(":") if s.strip()]
    for item in items:
        is_file = item.endswith(".py") or "/" in item or os.sep in item
        if not is_file and not all(part.isidentifier() for part in item.split(".")):
            raise _bad(name, item, "':'-separated module names (a.b) or .py files",
                       "mypkg.samplers:./my_sampler.py")
    return items


def check_all() -> None:
    """Parse every mixlab variable that is set; the first bad one raises its UsageError."""
    for name in _INTS:
        env_int(name)
    env_float("MIXLAB_CHECKPOINT_SECONDS", 10.0, "10")
    env_path("MIXLAB_DATA_DIR", must_exist=False)
    env_path("MIXLAB_DATA_MIRROR", must_exist=True)
    env_plugins()
