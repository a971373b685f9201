"""`mixlab data` through click's CliRunner, and the mirror verification script."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import urllib.error
from pathlib import Path

from click.testing import CliRunner

from mixlab.cli.data_cmd import data
from mixlab.data import NAMES
from mixlab.data import cache as store
from mixlab.errors import DataError

REPO = Path(__file__).resolve().parents[2]


def test_list_shows_every_data_set():
    r = CliRunner().invoke(data, ["list"])
    assert r.exit_code == 0, r.output
    for name in NAMES:
        assert name in r.output
    assert "6291/1000/2007" in r.output and "4000/1000/10000" in r.output


def test_info_text_and_json():
    r = CliRunner().invoke(data, ["info", "usps"])
    assert r.exit_code == 0, r.output
    assert "train 6291 / valid 1000 / test 2007" in r.output
    assert "355df6b942eb766252e0340bc019b0b9" in r.output
    assert "installed:  no" in r.output and "mixlab data fetch usps" in r.output
    r = CliRunner().invoke(data, ["info", "mnist", "--json"])
    d = json.loads(r.output)
    assert d["splits"] == {"train": 50000, "valid": 10000, "test": 10000} and d["dim"] == 784
    assert {f["md5"] for f in d["files"]} >= {"f68b3c2dcbeaaa9fbdd348bbdeb94873"}
    assert d["cache_dir"] == str(Path(os.environ["MIXLAB_DATA_DIR"]).resolve())


def test_unknown_name_is_a_usage_error():
    r = CliRunner().invoke(data, ["info", "mnits"])
    assert r.exit_code == 2 and "mnist" in r.output


def test_fetch_from_mirror_then_installed(real):
    real("usps/usps.h5")
    r = CliRunner().invoke(data, ["fetch", "usps"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(data, ["info", "usps", "--json"])
    assert json.loads(r.output)["installed"] is True


def test_fetch_without_network_raises_data_error(monkeypatch):
    def fail(url, timeout=None):
        raise urllib.error.URLError("offline")
    monkeypatch.setattr(store, "urlopen", fail)
    r = CliRunner().invoke(data, ["fetch", "kdd99"])
    assert isinstance(r.exception, DataError)       # the main CLI maps it to exit code 1
    assert "could not download" in str(r.exception) and "MIXLAB_DATA_MIRROR" in str(r.exception)


def test_fetch_all_reports_failures_after_trying_everything(monkeypatch, tmp_path):
    mirror = tmp_path / "m"
    (mirror / "kdd99").mkdir(parents=True)
    (mirror / "kdd99" / "kddcup.data_10_percent.gz").write_bytes(b"not the file")

    def fail(url, timeout=None):
        raise urllib.error.URLError("offline")
    monkeypatch.setattr(store, "urlopen", fail)
    monkeypatch.setenv("MIXLAB_DATA_MIRROR", str(mirror))
    r = CliRunner().invoke(data, ["fetch", "all"])
    assert isinstance(r.exception, DataError)
    msg = str(r.exception)
    assert "kdd99: checksum mismatch" in msg and "mnist" in msg


def test_verify_mirror_script(tmp_path, capsys):
    """The script as a command once (a BAD file: exit 1); its MISSING and --strict statuses
    from its ``main`` in this process (they depend on no process of their own)."""
    good = tmp_path / "mirror"
    (good / "kdd99").mkdir(parents=True)
    (good / "kdd99" / "kddcup.data_10_percent.gz").write_bytes(b"corrupt")
    script = REPO / "data_scripts" / "verify_mirror.py"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.run([sys.executable, str(script), str(good)], capture_output=True, text=True,
                       env=env, check=False)
    assert p.returncode == 1 and "BAD      kdd99/kddcup.data_10_percent.gz" in p.stdout
    (good / "kdd99" / "kddcup.data_10_percent.gz").unlink()
    main = runpy.run_path(str(script))["main"]   # not as __main__: defines, does not run
    capsys.readouterr()
    assert main([str(good)]) == 0 and "MISSING" in capsys.readouterr().out
    assert main([str(good), "--strict"]) == 1
