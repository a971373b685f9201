import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    """Tests never read or write the user's data cache; the mirror (if any) stays visible.

    Session-scoped, so module-scoped fixtures (set up before any function-scoped one) see the
    same isolated cache as the tests that use them."""
    mp = pytest.MonkeyPatch()
    if "MIXLAB_DATA_DIR" not in os.environ:
        mp.setenv("MIXLAB_DATA_DIR", str(tmp_path_factory.getbasetemp() / "data-cache"))
    mirror = os.environ.get("MIXLAB_DATA_MIRROR")
    if mirror and not os.path.isabs(mirror):
        mp.setenv("MIXLAB_DATA_MIRROR", str((Path.cwd() / mirror).resolve()))
    yield
    mp.undo()
