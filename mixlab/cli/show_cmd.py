"""``mixlab show RUN [--json]``: status, provenance, streams, metrics, results (or a sweep)."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import click

from ..errors import RunFileError
from ..run.update import stale_streams
from ..runfile import confined
from ..runfile.check import recorded_status
from ..runfile.confined import ConfinementError
from ..runfile.provenance import json_clean as _clean
from ..runfile.provenance import provenance
from ..runfile.store import RUN_FILE, RunReader

SWEEP_TABLE_BYTES = 64 << 20


SHOWN_CHARS = 2000  # a longer string is shown cut, saying by how much
SHOWN_ITEMS = 1000  # a longer list likewise


def cut(v):
    """``v`` with every string past SHOWN_CHARS characters and every list past SHOWN_ITEMS
    items cut, saying how much was left out (a run file may hold anything)."""
    if isinstance(v, str) and len(v) > SHOWN_CHARS:
        return f"{v[:SHOWN_CHARS]}... [cut: {len(v) - SHOWN_CHARS:,} more characters]"
    if isinstance(v, list):
        more = len(v) - SHOWN_ITEMS
        v = [cut(x) for x in v[:SHOWN_ITEMS]]
        return v + [f"[cut: {more:,} more items]"] if more > 0 else v
    if isinstance(v, dict):
        return {cut(k): cut(x) for k, x in v.items()}
    return v


def run_summary(run: RunReader) -> dict:
    metrics = {m: {s: {"x": _clean(c["x"]), "y": _clean(c["y"]),
                       **({"yerr": _clean(c["yerr"])} if c["yerr"] is not None else {})}
                   for s, c in series.items()} for m, series in run.metrics().items()}
    return cut({"status": run.status, "live_status": run.live_status(),
                "provenance": provenance(run), **_staleness(run), "dropped": _dropped(run),
                "results": {k: _clean(v) for k, v in run.results().items()},
                "metrics": metrics})


def _dropped(run: RunReader) -> dict:
    """``{key: why}``: keys of the spec file that did not apply to the user's data or model."""
    dropped = run.spec.get("dropped") if isinstance(run.spec, dict) else None
    return {str(k): str(v) for k, v in dropped.items()} if isinstance(dropped, dict) else {}


#: why a plugin's code is not checked by ``show``, and how to check it
UNCHECKED_NOTE = ("show opens no file a run names; 'mixlab run SPEC' with the spec that names "
                  "the plugin says whether it changed, and '--update' reruns what it changed")


def _staleness(run: RunReader) -> dict:
    """``{"stale": {stream: reasons}, "code_unchecked": [plugin refs]}``: the streams whose spec
    entry or code changed (mixlab.run.update), judging plugin code only by the plugins this process
    loaded, and the plugins whose code was therefore not checked."""
    try:
        stale, unchecked = stale_streams(run.records(), run.spec)
    except Exception:           # a damaged record or spec: nothing can be said about staleness
        return {"stale": {}, "code_unchecked": []}
    return {"stale": stale, "code_unchecked": unchecked}


def say(line: str) -> None:
    """One line of ``show``'s text, cut past SHOWN_CHARS characters."""
    click.echo(cut(line))


def league_rows(text: str, path: Path) -> list[dict]:
    """The rows of a league.csv, or a RunFileError naming ``path`` when the text is not the
    table mixlab writes (its target, sampler and status columns, every row complete)."""
    from ..league.report import WORK_COLUMNS

    reader = csv.DictReader(io.StringIO(text))
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise RunFileError(f"{path} is not a league table mixlab writes: {exc}") from None
    need = [c for c in WORK_COLUMNS[:3] if c not in (reader.fieldnames or [])]
    if need or not rows:
        why = (f"it has no {', '.join(repr(c) for c in need)} column" if need
               else "it has no rows")
        raise RunFileError(f"{path} is not a league table mixlab writes: {why}; run the same "
                           f"'mixlab league' command again to rewrite it")
    for i, row in enumerate(rows, 2):
        if None in row or None in row.values():
            raise RunFileError(f"{path} is not a league table mixlab writes: line {i} has "
                               f"{'more' if None in row else 'fewer'} fields than its header")
    return rows


@click.command("show")
@click.argument("run_dir", metavar="RUN", type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True,
              help='print {"status", "live_status", "provenance", "stale", "code_unchecked", '
                   '"dropped", "results", "metrics": {metric: {series: {x, y}}}}')
def show(run_dir, as_json):
    """Show a run directory (or a sweep's or a league's summary table, or a model file that
    'mixlab train' wrote)."""
    p = Path(run_dir)
    if os.path.lexists(p / "league.txt") and os.path.lexists(p / "league.csv"):
        if as_json:
            text = confined.read_text(p, "league.csv", limit=SWEEP_TABLE_BYTES)
            click.echo(json.dumps({"league": cut(league_rows(text, p / "league.csv"))},
                                  indent=1))
        else:
            for line in confined.read_text(p, "league.txt",
                                           limit=SWEEP_TABLE_BYTES).splitlines()[:SHOWN_ITEMS]:
                say(line)
        return
    if os.path.lexists(p / "sweep.csv") and not os.path.lexists(p / RUN_FILE):
        text = confined.read_text(p, "sweep.csv", limit=SWEEP_TABLE_BYTES)
        rows = list(csv.DictReader(io.StringIO(text)))
        if as_json:
            click.echo(json.dumps({"sweep": cut(rows)}, indent=1))
        else:
            say(f"sweep {p}: {len(rows)} point(s)")
            if rows:
                cols = list(rows[0])
                say("  ".join(str(c) for c in cols))
                for r in rows[:SHOWN_ITEMS]:
                    say("  ".join(str(r[c]) for c in cols))
        return
    if p.is_file():
        from .model_show import show_model_file

        if show_model_file(p, as_json, say, cut):
            return
    try:
        run = RunReader(p)
    except ConfinementError:
        status = recorded_status(p)
        if status is not None:  # what can be shown safely: the status the file records
            click.echo(json.dumps({"status": status}) if as_json else f"status    {status}")
        raise
    with run:
        if as_json:
            click.echo(json.dumps(run_summary(run)))
            return
        a = run.attrs
        say(f"run       {run.run_dir}")
        say(f"status    {run.live_status()}")
        say(f"spec      {run.spec.get('name')} ({a.get('experiment')}, scale "
                   f"{run.spec.get('scale')}, seed {run.spec.get('seed')})")
        for key, why in _dropped(run).items():
            say(f"dropped   {key} (from the spec file): {why}")
        say(f"mixlab    {a.get('mixlab_version')}  git {str(a.get('git_commit'))[:12]}"
                   f" dirty={a.get('git_dirty')}  created {a.get('created')}")
        for plug in provenance(run).get("plugins") or []:
            if isinstance(plug, dict):
                ident = (f"{plug.get('distribution')} {plug.get('version')}"
                         if plug.get("distribution") else
                         f"{plug.get('file')} sha256 {str(plug.get('sha256'))[:12]}")
                say(f"plugin    {plug.get('module')} ({plug.get('source')}): {ident}")
        names = run.stream_names()
        if names:
            say("streams")
            for name in names:
                keys = run.stream_keys(name)
                shapes = [f"{k}{list(run.stream_shape(name, k))}" for k in keys]
                t = run.stream_time(name) if run.stream_shape(name, "time") else []
                secs = f"{t[-1]:.2f} s" if len(t) else "-"
                say(f"  {name:24s} {' '.join(shapes) or '(not recorded)'}  {secs}")
        staleness = _staleness(run)
        for name, why in staleness["stale"].items():
            say(f"stale: {name} ({'; '.join(why)}); 'mixlab run SPEC --update' reruns it")
        if staleness["code_unchecked"]:
            say(f"plugin code not checked: {', '.join(staleness['code_unchecked'])} "
                f"({UNCHECKED_NOTE})")
        m = run.metrics()
        if m:
            say("metrics (last point)")
            for metric, series in m.items():
                for s, c in series.items():
                    if len(c["x"]):
                        say(f"  {metric}/{s:24s} x={c['x'][-1]:.6g}  y={c['y'][-1]:.6g}")
        r = run.results()
        if r:
            say("results")
            for k, v in r.items():
                say(f"  {k:40s} {v}")
        stages = run.stage_names()
        if stages:
            say(f"stages    {len(stages)} cached")
        if run.status not in ("complete", "running"):
            click.echo(f"note: this run is {run.status}; run its spec again to resume it",
                       err=True)
    if not os.path.lexists(p / RUN_FILE):
        raise RunFileError(f"{p} is not a run directory")
