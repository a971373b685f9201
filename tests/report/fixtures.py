"""Small runs, a tiny league and a run whose strings are script and onerror payloads."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
from click.testing import CliRunner

from mixlab.cli import cli

#: strings that would run in a browser if a page put them in as markup
PAYLOADS = {
    "script": "<script>window.__pwned = 1; alert('script')</script>",
    "onerror": "<img src=x onerror=\"window.__pwned = 2; alert('onerror')\">",
}
LEAGUE_ARGS = ["--targets", "attractive-c0.5,mixed-c1.5", "--samplers", "gibbs,metropolis",
               "seeds=2", "seconds=0.1", "work=1e4", "work_max_seconds=1", "-q"]


def mixlab(*args) -> str:
    r = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


def toy_run(out: Path, **keys) -> Path:
    mixlab("run", "toy/gaussian", "--out", out, "budget.draws=200", "-q",
           *(f"{k}={v}" for k, v in keys.items()))
    return out


def tiny_league(out: Path) -> Path:
    mixlab("league", "spinglass", *LEAGUE_ARGS, "-o", out)
    return out


def hostile_run(out: Path) -> Path:
    """A real toy run whose stream name, plugin record, spec value and a result key and value
    hold the payloads (as a stranger's run file could)."""
    import yaml

    toy_run(out)
    with h5py.File(out / "run.h5", "r+") as f:
        f.move("streams/rwm", f"streams/{PAYLOADS['onerror'].replace('/', '|')}")
        spec = yaml.safe_load(f.attrs["spec"])
        spec["description"] = PAYLOADS["script"]
        spec["payload"] = {PAYLOADS["onerror"]: PAYLOADS["script"]}
        f.attrs["spec"] = yaml.safe_dump(spec)
        f.attrs["plugins"] = json.dumps([{
            "module": PAYLOADS["script"], "source": PAYLOADS["onerror"],
            "file": "/elsewhere/" + PAYLOADS["onerror"], "sha256": PAYLOADS["script"],
            "distribution": None, "version": None}])
        f["results"].attrs[PAYLOADS["script"]] = PAYLOADS["onerror"]
        f["results"].attrs["long_value"] = "x" * 5000
    return out
