"""numba's on-disk cache of compiled code follows every source it depends on (mixlab.numba_cache).

A two-module package: ``outer`` in a.py calls ``inner`` in b.py, both ``cache=True``.  After b.py
changes with a.py byte-identical and its mtime kept, a new process must run the new ``inner``
through ``outer`` (numba alone stamps a.py's cache entry by a.py only, and runs the old code),
and the next process must load that new ``outer`` from the cache rather than compile it again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mixlab
from mixlab.austerity.kernels import look
from mixlab.numba_cache import CACHE

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

RUN = """import json, sys
from pathlib import Path
from mixlab.numba_cache import install
install(Path(sys.argv[1]) / "pkg")
sys.path.insert(0, sys.argv[1])
from pkg.a import outer
value = outer(10)
print(json.dumps({"value": value, "hits": sum(outer.stats.cache_hits.values())}))
"""


def _run(tmp: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(Path(mixlab.__file__).parent.parent))
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("NUMBA_DISABLE_JIT", None)
    out = subprocess.run([sys.executable, "-c", RUN, str(tmp)], env=env, check=True,
                         capture_output=True, text=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_callee_edit_in_another_file_recompiles_and_cache_still_hits(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(A_PY)
    (pkg / "b.py").write_text(B_PY.format(factor=2))
    assert _run(tmp_path) == {"value": 21, "hits": 0}       # compiled, written to the cache

    stat_a = (pkg / "a.py").stat()
    (pkg / "b.py").write_text(B_PY.format(factor=3))       # same size, a.py untouched
    os.utime(pkg / "a.py", ns=(stat_a.st_atime_ns, stat_a.st_mtime_ns))
    assert _run(tmp_path) == {"value": 31, "hits": 0}       # the new inner, compiled afresh
    assert _run(tmp_path) == {"value": 31, "hits": 1}       # then loaded from the cache


def test_mixlab_kernels_use_the_tree_stamped_locator():
    assert CACHE
    locator = look._look._cache._impl.locator
    assert type(locator).__name__ == "TreeStampLocator"
    assert locator._tree_root == Path(mixlab.__file__).parent.resolve()
