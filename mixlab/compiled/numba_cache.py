"""numba's on-disk cache for mixlab's compiled kernels, stamped by all of their sources.

numba marks a cached function stale only when the file that defines it changes.  A compiled
function that calls a compiled function of another file carries the callee's machine code in
its own cache entry, so after the callee's file changes (a pull, an upgrade) the caller would
keep running the old callee.  Here every compiled function defined under a registered source
tree gets one stamp: a SHA-256 of every module of the tree that imports numba at top level,
and of every module of the tree those import, transitively (compile options and constants such
as ``mixlab/austerity/kernels/jit.py`` are frozen into the machine code too).  Any change to
one of them recompiles all of the tree's kernels; files elsewhere (user code) keep numba's
own locators untouched.

Computing the stamp parses those modules (some 0.15 s of CPU), which every process that imports
a kernel would pay; so the stamp is kept beside the tree's bytecode
(``__pycache__/numba-tree-stamp.json``) with the size, times and inode of every ``.py`` file of
the tree, the test Python itself applies to its bytecode, and computed again when any of them
differs (or the file cannot be read or written).

The cache directory is the one numba would choose (``NUMBA_CACHE_DIR``, the package's
``__pycache__``, or the user-wide cache).  If numba's caching internals are not the expected
ones, :data:`CACHE` is False and mixlab's kernels compile in memory only (no stale code, no
error).  ``NUMBA_CACHE_LOCATOR_CLASSES`` replaces numba's locator list, and this one with it.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
from pathlib import Path

from ..runfile.atomic import WriteFailure, atomic_write

__all__ = ["CACHE", "install", "tree_stamp"]


def _imports_numba(tree: ast.Module) -> bool:
    """True when the module imports numba at top level (it defines compiled functions)."""
    for node in tree.body:
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "numba" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and \
                (node.module or "").split(".")[0] == "numba":
            return True
    return False


def _module_file(root: Path, parts: list[str]) -> Path | None:
    """The file of the module ``root/parts`` (a module or a package), or None."""
    if not parts:
        return None
    base = root.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _local_imports(root: Path, path: Path, tree: ast.Module) -> set[Path]:
    """Files under ``root`` that ``path`` imports (relative, or absolute by the tree's name)."""
    package = list(path.relative_to(root).parent.parts)
    found: set[Path] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module.split(".") if node.module else []
            if node.level:
                if node.level - 1 > len(package):
                    continue
                parts = package[:len(package) - node.level + 1] + module
            elif module and module[0] == root.name:
                parts = module[1:]
            else:
                continue
            targets = [parts] + [parts + [a.name] for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name.split(".")[1:] for a in node.names
                       if a.name.split(".")[0] == root.name]
        else:
            continue
        found.update(f for f in (_module_file(root, t) for t in targets) if f is not None)
    return found


#: the stamp and the stats it was computed for, in ``<root>/__pycache__``
MEMO_NAME = "numba-tree-stamp.json"


@functools.cache
def tree_stamp(root: str) -> str:
    """SHA-256 (hex) of the numba-importing modules under ``root`` and their local imports; read
    from the memo when no ``.py`` file of the tree changed since it was written."""
    base = Path(root)
    stats = _file_stats(base)           # before reading any source: a later edit is seen
    memo = base / "__pycache__" / MEMO_NAME
    try:
        saved = json.loads(memo.read_text())
        if saved["files"] == stats and isinstance(saved["stamp"], str):
            return saved["stamp"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    stamp = _compute_stamp(base)
    _write_memo(memo, {"stamp": stamp, "files": stats})
    return stamp


def _file_stats(base: Path) -> dict[str, list[int]]:
    """Size, mtime, ctime (ns) and inode of every ``.py`` file under ``base``, by relative path."""
    out = {}
    for path in sorted(base.rglob("*.py")):
        st = path.stat()
        out[str(path.relative_to(base))] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                                            st.st_ino]
    return out


def _write_memo(memo: Path, content: dict) -> None:
    """Write the memo atomically; a tree that cannot be written to simply keeps no memo."""
    try:
        memo.parent.mkdir(exist_ok=True)
        atomic_write(memo, json.dumps(content).encode())
    except (OSError, WriteFailure):
        pass


def _compute_stamp(base: Path) -> str:
    """SHA-256 (hex) of the numba-importing modules under ``base`` and their local imports."""
    parsed: dict[Path, ast.Module | None] = {}

    def tree_of(path: Path) -> ast.Module | None:
        if path not in parsed:
            try:
                parsed[path] = ast.parse(path.read_bytes())
            except (OSError, SyntaxError, ValueError):
                parsed[path] = None
        return parsed[path]

    todo = [p for p in sorted(base.rglob("*.py"))
            if b"numba" in p.read_bytes() and _imports_numba(tree_of(p) or ast.Module(body=[]))]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        tree = tree_of(path)
        if tree is not None:
            todo.extend(_local_imports(base, path, tree) - seen)
    digest = hashlib.sha256()
    for path in sorted(seen):
        digest.update(str(path.relative_to(base)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def install(root: Path) -> bool:
    """Stamp numba's cache of every function defined under ``root`` with :func:`tree_stamp`.

    Returns False (and changes nothing) when numba's caching internals are not the expected ones.
    """
    try:
        from numba.core import caching
        base_class, impl = caching._CacheLocator, caching.CacheImpl
        impl._locator_classes  # noqa: B018  (the list this registers into)
    except (ImportError, AttributeError):
        return False
    root = Path(root).resolve()
    if any(getattr(c, "_tree_root", None) == root for c in impl._locator_classes):
        return True

    class TreeStampLocator(base_class):
        """numba's own locator for the file, with the tree's stamp as the source stamp."""

        _tree_root = root

        def __init__(self, inner):
            self._inner = inner

        def get_cache_path(self):
            return self._inner.get_cache_path()

        def get_disambiguator(self):
            return self._inner.get_disambiguator()

        def get_source_stamp(self):
            return tree_stamp(str(root))

        @classmethod
        def from_function(cls, py_func, py_file):
            try:
                Path(py_file).resolve().relative_to(root)
            except (ValueError, OSError):
                return None
            for other in impl._locator_classes:
                if getattr(other, "_tree_root", None) is None:
                    inner = other.from_function(py_func, py_file)
                    if inner is not None:
                        return cls(inner)
            return None

    impl._locator_classes.insert(0, TreeStampLocator)
    return True


CACHE: bool = install(Path(__file__).resolve().parents[1])   # the mixlab package
"""numba ``cache=`` option of mixlab's kernels: True once their locator is registered."""
