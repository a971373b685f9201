import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    """Tests never read or write the user's data cache; the mirror (if any) stays visible.

    Session-scoped, so module-scoped fixtures (set up before any function-scoped one) see the
    same isolated cache as the tests that use them. The pytest-xdist workers of one run share it
    (their base temporary directories are siblings), so each data set is parsed once per run:
    the cache writes each file to a temporary name and renames it into place."""
    mp = pytest.MonkeyPatch()
    if "MIXLAB_DATA_DIR" not in os.environ:
        base = tmp_path_factory.getbasetemp()
        shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
        mp.setenv("MIXLAB_DATA_DIR", str(shared / "data-cache"))
    mirror = os.environ.get("MIXLAB_DATA_MIRROR")
    if mirror and not os.path.isabs(mirror):
        mp.setenv("MIXLAB_DATA_MIRROR", str((Path.cwd() / mirror).resolve()))
    yield
    mp.undo()


#: test directories whose tests call one family's compiled kernels: their tests share a worker,
#: so on a fresh clone (numba's cache empty) each kernel is compiled once, not once per worker
_KERNEL_FAMILIES = ("austerity", "rbm", "spinglass")


def pytest_itemcollected(item):
    """Groups for pytest-xdist's ``--dist loadgroup``: a kernel family's tests run on one worker
    (above); the other tests of a module that share a module-scoped fixture run on one worker,
    so the fixture, often a whole run or league, is built once rather than once per worker.
    An explicit ``xdist_group`` mark wins."""
    if item.get_closest_marker("xdist_group") is not None:
        return
    parts = Path(item.path).relative_to(REPO / "tests").parts
    if len(parts) > 1 and parts[0] in _KERNEL_FAMILIES:
        item.add_marker(pytest.mark.xdist_group(f"kernels-{parts[0]}"))
        return
    info = getattr(item, "_fixtureinfo", None)
    scopes = {defs[-1].scope for defs in (info.name2fixturedefs.values() if info else ()) if defs}
    if "module" in scopes:
        item.add_marker(pytest.mark.xdist_group(item.module.__name__))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """Stop a suite whose groups pytest-xdist would silently drop: under ``--dist loadgroup``
    a worker tags each grouped test's node id with ``@group`` (a kernel family's tests always
    have one); where the tags do not take (pytest 9.2 with pytest-xdist 3.8,
    pytest-xdist#1386) every group's fixtures and kernels are built on both workers and the
    suite takes minutes longer."""
    if node.config.getoption("dist", None) != "loadgroup":
        return
    family = tuple(f"tests/{name}/" for name in _KERNEL_FAMILIES)
    lost = [i for i in ids if i.startswith(family) and "@" not in i]
    if lost:
        pytest.exit(f"pytest-xdist did not group {len(lost)} test(s), e.g. {lost[0]}: install "
                    "the pytest that pyproject.toml's dev extra names ('make install')",
                    returncode=4)
