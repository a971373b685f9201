"""mixlab's modules import each other in one direction only: no import cycle, lazy imports counted.

Every module under mixlab/ is parsed (not imported) and every ``import``/``from ... import`` in
it, at module level or inside a function, becomes an edge of the import graph:

- relative imports are resolved against the module's package;
- ``from pkg import name`` where ``pkg.name`` is a submodule is an edge to that submodule;
  where ``name`` is defined in ``pkg/__init__.py`` it is an edge to the package itself;
- importing ``a.b.c`` also runs ``a/__init__.py`` and ``a/b/__init__.py``, so those packages are
  edges too, except the packages that enclose the importing module: Python has already started
  them before the module runs, and reaching a sibling submodule does not need their contents.
  A submodule that takes a *name* from its own package's ``__init__`` does need it (the rule
  above), so an ``__init__`` importing its submodules plus a submodule importing from that
  ``__init__`` is reported as the cycle it is.

Imports by string (``importlib.import_module``) are plugin discovery, not a static dependency,
and are not edges.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mixlab"


def modules(root: Path = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package __init__)."""
    out = {}
    for f in sorted(root.rglob("*.py")):
        parts = list(f.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (f, is_pkg)
    return out


def _enclosing(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def _with_packages(target: str, importer: str, mods: dict) -> set[str]:
    """``target`` plus the packages importing it runs that do not enclose ``importer``."""
    parts = target.split(".")
    chain = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return {m for m in chain - _enclosing(importer) if m in mods}


def import_graph(mods: dict) -> dict[str, set[str]]:
    """Module -> the mixlab modules it imports (see the module docstring for the rules)."""
    graph: dict[str, set[str]] = {}
    for name, (path, is_pkg) in mods.items():
        package = name if is_pkg else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "mixlab":
                        edges |= _with_packages(alias.name, name, mods)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source.split(".")[0] != "mixlab":
                    continue
                edges |= _with_packages(source, name, mods)
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    if sub in mods:
                        edges |= _with_packages(sub, name, mods)
                    elif source in mods:
                        edges.add(source)  # a name defined in the package's __init__
        edges.discard(name)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle ``[a, b, ..., a]`` of ``graph``, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


@functools.cache
def mixlab_graph() -> dict[str, set[str]]:
    """mixlab's own import graph, parsed once for the tests that read it (none changes it)."""
    return import_graph(modules())


def test_no_import_cycle_among_mixlab_modules():
    graph = mixlab_graph()
    assert len(graph) > 50
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_foundation_layers_point_one_way():
    """The registry records only; discovery, lookups and validation sit above it in order."""
    graph = mixlab_graph()
    assert graph["mixlab.plugins.registrations"] == set()
    assert graph["mixlab.spec.nodes"] <= {"mixlab.errors"}
    assert "mixlab.plugins.registry" in graph["mixlab.spec.schema"]
    assert "mixlab.plugins.discovery" in graph["mixlab.plugins.registry"]
    for low in ("mixlab.plugins.registrations", "mixlab.spec.nodes", "mixlab.plugins.checks",
                "mixlab.plugins.discovery"):
        assert not graph[low] & {"mixlab.plugins.registry", "mixlab.spec.schema",
                                 "mixlab.spec.resolver"}, low


def _graph_of(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    for rel, text in files.items():
        p = tmp_path / "mixlab" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return import_graph(modules(tmp_path / "mixlab"))


def test_the_checker_sees_lazy_relative_and_package_cycles(tmp_path):
    g = _graph_of(tmp_path, {
        "__init__.py": "",
        "a.py": "def f():\n    from . import b\n",           # lazy, relative, submodule
        "b.py": "from mixlab.c import thing\n",
        "c.py": "import mixlab.a\nthing = 1\n",
        "pkg/__init__.py": "from .inner import x\n",        # __init__ imports its submodule
        "pkg/inner.py": "from . import helper\nx = 1\n",    # a sibling: not the __init__
        "pkg/helper.py": "",
        "pkg/user.py": "from mixlab.pkg import x\n",        # a name from the __init__
        "top.py": "from mixlab.pkg import user\n",
    })
    assert g["mixlab.a"] == {"mixlab.b"}
    assert g["mixlab.b"] == {"mixlab.c"}
    assert g["mixlab.pkg.inner"] == {"mixlab.pkg.helper"}
    assert g["mixlab.pkg.user"] == {"mixlab.pkg"}
    assert g["mixlab.top"] == {"mixlab.pkg", "mixlab.pkg.user"}
    cycle = find_cycle(g)
    assert cycle is not None and cycle[0] == cycle[-1]
    assert set(cycle) == {"mixlab.a", "mixlab.b", "mixlab.c"}
    del g["mixlab.c"]
    assert find_cycle({k: v - {"mixlab.c"} for k, v in g.items()}) is None
    # a submodule taking a name from its package's __init__, which imports that submodule
    g2 = _graph_of(tmp_path / "two", {"__init__.py": "", "pkg/__init__.py": "from . import m\n",
                                      "pkg/m.py": "from mixlab.pkg import CONSTANT\n"})
    assert find_cycle(g2) in (["mixlab.pkg", "mixlab.pkg.m", "mixlab.pkg"],
                              ["mixlab.pkg.m", "mixlab.pkg", "mixlab.pkg.m"])


def test_the_top_level_holds_few_modules_and_no_module_is_long():
    """mixlab/ keeps its layers in packages (at most 8 modules at the top level: the entry points,
    the plugin surface and the few every layer shares); no module runs over 600 lines."""
    top = sorted(f.name for f in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top
    long = {str(f.relative_to(PACKAGE.parent)): n for f in PACKAGE.rglob("*.py")
            if (n := len(f.read_text().splitlines())) > 600}
    assert not long, long
