"""numba's on-disk cache of compiled code follows every source it depends on (mixlab.compiled.numba_cache).

A two-module package: ``outer`` in a.py calls ``inner`` in b.py, both ``cache=True``.  After b.py
changes with a.py byte-identical and its mtime kept, a new process must run the new ``inner``
through ``outer`` (numba alone stamps a.py's cache entry by a.py only, and runs the old code),
and the next process must load that new ``outer`` from the cache rather than compile it again.

Each of those processes is forked, on request, from one fresh interpreter that has imported numba
and never the package: it imports the package afresh, as a new process would, without starting
Python and numba again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mixlab
from mixlab.austerity.kernels import look
from mixlab.compiled.numba_cache import CACHE, MEMO_NAME, _compute_stamp, tree_stamp

A_PY = """from numba import njit

from .b import inner


@njit(cache=True)
def outer(x):
    return inner(x) + 1
"""

B_PY = """from numba import njit


@njit(cache=True)
def inner(x):
    return x * {factor}
"""

# one child per line read from stdin; each prints its outcome as one JSON line
FORKS = """import json, os, sys
from pathlib import Path
import numba  # noqa: F401
from mixlab.compiled.numba_cache import install
for _ in sys.stdin:
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            install(Path(sys.argv[1]) / "pkg")
            sys.path.insert(0, sys.argv[1])
            from pkg.a import outer
            value = outer(10)
            print(json.dumps({"value": value, "hits": sum(outer.stats.cache_hits.values())}),
                  flush=True)
            code = 0
        finally:
            os._exit(code)
    status = os.waitpid(pid, 0)[1]
    if status:
        print(json.dumps({"failed": status}), flush=True)
"""


def _processes(tmp: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(Path(mixlab.__file__).parent.parent))
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("NUMBA_DISABLE_JIT", None)
    # Python's own bytecode cache knows a source by its size and mtime in whole seconds: b.py
    # rewritten at the same size within the second would be imported from its old bytecode,
    # whatever numba's cache does; so the package is always compiled from its source here
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.Popen([sys.executable, "-c", FORKS, str(tmp)], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def _run(forks: subprocess.Popen) -> dict:
    """Import the package and call ``outer(10)`` in a new process."""
    forks.stdin.write("run\n")
    forks.stdin.flush()
    return json.loads(forks.stdout.readline())


def _package(tmp_path: Path) -> Path:
    """``tmp_path/pkg``: a.py's kernel calling b.py's (factor 2)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(A_PY)
    (pkg / "b.py").write_text(B_PY.format(factor=2))
    return pkg


def test_callee_edit_in_another_file_recompiles_and_cache_still_hits(tmp_path):
    pkg = _package(tmp_path)
    forks = _processes(tmp_path)
    try:
        assert _run(forks) == {"value": 21, "hits": 0}       # compiled, written to the cache

        stat_a = (pkg / "a.py").stat()
        (pkg / "b.py").write_text(B_PY.format(factor=3))    # same size, a.py untouched
        os.utime(pkg / "a.py", ns=(stat_a.st_atime_ns, stat_a.st_mtime_ns))
        assert _run(forks) == {"value": 31, "hits": 0}       # the new inner, compiled afresh
        assert _run(forks) == {"value": 31, "hits": 1}       # then loaded from the cache
    finally:
        forks.stdin.close()
        assert forks.wait(timeout=120) == 0


def test_mixlab_kernels_use_the_tree_stamped_locator():
    assert CACHE
    locator = look._look._cache._impl.locator
    assert type(locator).__name__ == "TreeStampLocator"
    assert locator._tree_root == Path(mixlab.__file__).parent.resolve()


def test_tree_stamp_is_read_from_its_memo_only_while_no_source_changed(tmp_path):
    pkg = _package(tmp_path)
    stamp = tree_stamp.__wrapped__(str(pkg))            # computed, and the memo written
    memo = pkg / "__pycache__" / MEMO_NAME
    saved = json.loads(memo.read_text())
    assert saved["stamp"] == stamp == _compute_stamp(pkg)
    assert sorted(saved["files"]) == ["__init__.py", "a.py", "b.py"]

    saved["stamp"] = "planted"                          # the memo is what a new process reads
    memo.write_text(json.dumps(saved))
    assert tree_stamp.__wrapped__(str(pkg)) == "planted"

    (pkg / "b.py").write_text(B_PY.format(factor=30))   # an edit of a numba module
    edited = tree_stamp.__wrapped__(str(pkg))
    assert edited == _compute_stamp(pkg) != stamp
    assert json.loads(memo.read_text())["stamp"] == edited

    (pkg / "c.py").write_text("X = 1\n")               # a new file is looked at too
    saved = json.loads(memo.read_text())
    saved["stamp"] = "planted"
    memo.write_text(json.dumps(saved))
    assert tree_stamp.__wrapped__(str(pkg)) == edited   # (c.py imports no numba: same stamp)

    memo.write_text("{not json")                        # an unreadable memo is computed anew
    assert tree_stamp.__wrapped__(str(pkg)) == edited
