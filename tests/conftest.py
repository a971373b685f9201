import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Tests never write to the user's data cache; the mirror (if any) stays visible."""
    if "MIXLAB_DATA_DIR" not in os.environ:
        monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path_factory.getbasetemp() / "data-cache"))
    mirror = os.environ.get("MIXLAB_DATA_MIRROR")
    if mirror and not os.path.isabs(mirror):
        monkeypatch.setenv("MIXLAB_DATA_MIRROR", str((Path.cwd() / mirror).resolve()))
