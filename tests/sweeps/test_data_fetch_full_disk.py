"""`mixlab data fetch` under a write failure (RLIMIT_FSIZE in a subprocess: writes past the
limit fail with EFBIG, as on a full disk, since CPython ignores SIGXFSZ): one short message,
exit 1, and no half-written file where a later load would look; without the limit the same
command installs the data set. Only the limited commands need a process of their own; the
checks after them (``data info``, the unlimited fetch or download) run in this process."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.data import cache as store
from mixlab.data.catalogue import FileSpec

REPO = Path(__file__).resolve().parents[2]
MIRROR = os.environ.get("MIXLAB_DATA_MIRROR")
USPS_MD5 = "355df6b942eb766252e0340bc019b0b9"

# under the limit, no bytecode: CPython would cache a .pyc cut short at the limit (its partial
# write goes unchecked), and every later import of that module would fail
PRELUDE = ("import resource, sys\n"
           "lim = int(sys.argv.pop(1))\n"
           "if lim > 0:\n"
           "    sys.dont_write_bytecode = True\n"
           "    resource.setrlimit(resource.RLIMIT_FSIZE, (lim, lim))\n")


def _python(code: str, *args: str, cache: Path, mirror: str | None, fsize: int = 0):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               MIXLAB_DATA_DIR=str(cache))
    env.pop("MIXLAB_DATA_MIRROR", None)
    if mirror:
        env["MIXLAB_DATA_MIRROR"] = mirror
    return subprocess.run([sys.executable, "-c", PRELUDE + code, str(fsize), *args], env=env,
                          capture_output=True, text=True, timeout=120)


def _mixlab(*args, **kw):
    return _python("from mixlab.cli import main\nsys.argv = ['mixlab'] + sys.argv[1:]\nmain()\n",
                   *args, **kw)


def _mixlab_here(*args, cache: Path, mirror: str | None, monkeypatch):
    """``mixlab ARGS`` in this process (no file size limit: no process of its own needed)."""
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(cache))
    monkeypatch.delenv("MIXLAB_DATA_MIRROR", raising=False)
    if mirror:
        monkeypatch.setenv("MIXLAB_DATA_MIRROR", mirror)
    r = CliRunner().invoke(cli, list(args), prog_name="mixlab")
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception  # a bare traceback in a real process: fail with it
    return subprocess.CompletedProcess(args, r.exit_code, r.stdout, r.stderr)


def _files(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())


@pytest.mark.parametrize("limit", [1, 200_000, 2_000_000])
def test_fetch_from_mirror_under_a_full_disk(tmp_path, limit, monkeypatch):
    if not MIRROR or not (Path(MIRROR) / "usps" / "usps.h5").is_file():
        pytest.skip("MIXLAB_DATA_MIRROR does not hold usps/usps.h5")
    cache = tmp_path / "cache"
    p = _mixlab("data", "fetch", "usps", cache=cache, mirror=MIRROR, fsize=limit)
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.splitlines()) <= 3, p.stderr
    assert "could not write usps/usps.h5" in p.stderr and "File too large" in p.stderr
    assert "run the same command again" in p.stderr
    assert _files(cache) == []  # not even a temporary file
    info = _mixlab_here("data", "info", "usps", "--json", cache=cache, mirror=None,
                        monkeypatch=monkeypatch)
    assert json.loads(info.stdout)["installed"] is False
    ok = _mixlab_here("data", "fetch", "usps", cache=cache, mirror=MIRROR, monkeypatch=monkeypatch)
    assert ok.returncode == 0, ok.stderr
    assert _files(cache) == ["usps/usps.h5"]
    assert hashlib.md5((cache / "usps" / "usps.h5").read_bytes()).hexdigest() == USPS_MD5


def test_download_under_a_full_disk(tmp_path, monkeypatch):
    """The download path (a file:// URL standing for the canonical one): the write failure is
    reported as such, not as a network error, and leaves nothing behind."""
    payload = os.urandom(300_000)
    src = tmp_path / "src.bin"
    src.write_bytes(payload)
    md5 = hashlib.md5(payload).hexdigest()
    cache = tmp_path / "cache"
    code = ("from mixlab.data import cache as store\n"
            "from mixlab.data.catalogue import FileSpec\n"
            "from mixlab.errors import DataError\n"
            "f = FileSpec('dl', 'src.bin', sys.argv[1], sys.argv[2])\n"
            "try:\n"
            "    store.download(f)\n"
            "except DataError as exc:\n"
            "    print(exc)\n"
            "    sys.exit(1)\n")
    p = _python(code, src.as_uri(), md5, cache=cache, mirror=None, fsize=100_000)
    assert p.returncode == 1, p.stderr
    assert "could not write dl/src.bin" in p.stdout and "File too large" in p.stdout
    assert "could not download" not in p.stdout
    assert _files(cache) == []
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(cache))
    assert store.download(FileSpec("dl", "src.bin", src.as_uri(), md5)) == cache / "dl/src.bin"
    assert (cache / "dl" / "src.bin").read_bytes() == payload
