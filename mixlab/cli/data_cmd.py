"""``mixlab data``: list, fetch and describe the data sets (see :mod:`mixlab.data`)."""

from __future__ import annotations

import json

import click

from ..data import NAMES
from ..data import fetch as fetch_dataset
from ..data import info as dataset_info
from ..errors import DataError

_NAME = click.Choice(NAMES)


@click.group("data")
def data() -> None:
    """Install and inspect data sets (cache: $MIXLAB_DATA_DIR, default ~/.cache/mixlab;
    set MIXLAB_DATA_MIRROR=<dir> to install from a local mirror instead of downloading)."""


def _sizes(d: dict) -> str:
    s = d["splits"]
    return f"{s['train']}/{s['valid']}/{s['test']}"


@data.command("list")
def list_cmd() -> None:
    """Table of the data sets: installed?, split sizes (train/valid/test), description."""
    rows = []
    for name in NAMES:
        d = dataset_info(name)
        state = "yes" if d["installed"] else ("local" if d["installable_offline"] else "no")
        rows.append((name, state, _sizes(d), d["description"]))
    head = ("name", "installed", "train/valid/test", "description")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(3)]
    for r in [head] + rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r[:3], widths)) + "  " + r[3])
    click.echo("\ninstalled: yes = in the cache; local = not yet, but a mirror or system "
               "directory holds it (loads install it automatically); no = run "
               "`mixlab data fetch NAME`.")


@data.command("fetch")
@click.argument("name", type=click.Choice(NAMES + ("all",)))
@click.option("--force", is_flag=True,
              help="Re-install even if present (a failed re-install keeps the previous copy).")
def fetch_cmd(name: str, force: bool) -> None:
    """Install data set NAME (or all): from MIXLAB_DATA_MIRROR or a system directory when they
    hold it, otherwise download from the canonical URL; every file's md5 is verified."""
    names = NAMES if name == "all" else (name,)
    failed = []
    for n in names:
        try:
            d = fetch_dataset(n, force=force, log=lambda msg: click.echo(f"  {msg}", err=True))
        except DataError as exc:
            if name != "all":
                raise
            failed.append((n, str(exc)))
            click.echo(f"{n}: FAILED", err=True)
            continue
        click.echo(f"{n}: installed in {d['cache_dir']}")
    if failed:
        raise DataError("could not install " + ", ".join(n for n, _ in failed) + ":\n"
                        + "\n".join(f"- {n}: {msg}" for n, msg in failed))


@data.command("info")
@click.argument("name", type=_NAME)
@click.option("--json", "as_json", is_flag=True, help="Print the information as JSON.")
def info_cmd(name: str, as_json: bool) -> None:
    """Split sizes, dimensions, source files, md5s and cache paths of data set NAME."""
    d = dataset_info(name)
    if as_json:
        click.echo(json.dumps(d, indent=2))
        return
    s = d["splits"]
    shape = "x".join(map(str, d["shape"])) if d["shape"] else None
    click.echo(f"{d['name']}: {d['description']}")
    click.echo(f"installed:  {'yes' if d['installed'] else 'no'}"
               + ("" if d["installed"] else
                  " (a local mirror/system directory holds it)" if d["installable_offline"]
                  else f" (run `mixlab data fetch {name}`)"))
    click.echo(f"splits:     train {s['train']} / valid {s['valid']} / test {s['test']}")
    click.echo(f"dims:       {d['dim']}" + (f" (images {shape})" if shape else "")
               + f", {d['n_classes']} classes")
    click.echo(f"split rule: {d['split_rule']}")
    click.echo(f"cache:      {d['cache_dir']}")
    if d["parsed_cache"]:
        click.echo(f"parsed:     {d['parsed_cache']}"
                   + ("" if d["parsed_cached"] else " (written at the first load)"))
    click.echo(f"mirror:     {d['mirror'] or '(MIXLAB_DATA_MIRROR not set)'}")
    click.echo("files:" + (" (alternatives: any one numbered group suffices)"
                           if len({f['alternative'] for f in d['files']}) > 1 else ""))
    for f in d["files"]:
        md5 = f["md5"] or "not recorded (content checked)"
        click.echo(f"  [{f['alternative']}] {f['file']}  md5 {md5}  "
                   f"{'installed' if f['installed'] else 'missing'}")
        click.echo(f"      url:  {f['url'] or '(no direct download; mirror only)'}")
        click.echo(f"      path: {f['path']}")
