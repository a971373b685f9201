"""Costly truths computed once and kept as data, keyed by the target's definition.

A truth (exact marginals, an enumerated joint, an HMC reference) is a flat ``{name: array}``
stored as ``<data dir>/league-truth/<family>-<key>.npz`` (the data dir is ``$MIXLAB_DATA_DIR``
or ``~/.cache/mixlab``, mixlab.data.cache), where ``key`` is the first 16 hex digits of the
SHA-256 of the definition (canonical JSON, plus :data:`TRUTH_VERSION` of the computation). The
file also holds the definition itself, checked on reading; a file that does not match or cannot
be read is computed again. Files are written atomically (mixlab.runfile.atomic): a killed league never
leaves half a truth, and a lock file makes cells running at once compute it once. A truth file
is data only: reading it never runs code (``allow_pickle``
is off).
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import numpy as np

#: bumped when a truth's computation changes, so old cached files are not reused
TRUTH_VERSION = 1


def definition_key(family: str, definition: dict) -> str:
    text = json.dumps({"family": family, "definition": definition, "v": TRUTH_VERSION},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def truth_path(family: str, definition: dict) -> Path:
    from ..data.cache import data_dir

    return data_dir() / "league-truth" / f"{family}-{definition_key(family, definition)}.npz"


@contextmanager
def truth_lock(family: str, definition: dict):
    """Hold an exclusive lock on this definition's truth (a ``.lock`` file next to it), so that
    cells running at once in several processes compute a truth once: the others wait, then
    read it from the cache. Without a writable cache directory nothing is locked."""
    path = truth_path(family, definition).with_suffix(".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def cached_truth(family: str, definition: dict, compute: Callable[[], dict]) -> dict:
    """``compute()`` (a flat ``{name: array}``) for this definition, from the cache if there."""
    with truth_lock(family, definition):
        return _cached_truth(family, definition, compute)


def _cached_truth(family: str, definition: dict, compute: Callable[[], dict]) -> dict:
    path = truth_path(family, definition)
    canon = json.dumps(definition, sort_keys=True, default=str)
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as z:
                if str(z["__definition__"]) == canon:
                    return {k: z[k] for k in z.files if k != "__definition__"}
        except Exception:  # unreadable or foreign: computed again below
            pass
    values = {k: np.asarray(v) for k, v in compute().items()}
    buf = io.BytesIO()
    np.savez(buf, __definition__=np.asarray(canon), **values)
    try:
        from ..runfile.atomic import atomic_write

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, buf.getvalue())
    except Exception:  # a read-only or full cache: the truth is still right, just not kept
        pass
    return values
