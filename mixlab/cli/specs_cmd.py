"""``mixlab specs list|show|copy``: the papers' specs shipped with the package."""

from __future__ import annotations

import json

import click

from ..spec.builtin import builtin_specs, copy_builtin, find_builtin, unknown_spec_error


@click.group("specs")
def specs() -> None:
    """The papers' specs shipped with mixlab: run one by name (mixlab run rates_fpcd/fig2),
    or copy it out to edit (mixlab specs copy rates_fpcd/fig2 my_fig2.yaml)."""


@specs.command("list")
@click.option("--json", "as_json", is_flag=True, help='print [{"name", "path", "summary"}]')
def list_cmd(as_json: bool) -> None:
    """Name and title of every built-in spec."""
    found = builtin_specs()
    if as_json:
        click.echo(json.dumps([{"name": s.name, "path": str(s.path), "summary": s.summary}
                               for s in found], indent=1))
        return
    width = max((len(s.name) for s in found), default=0)
    for s in found:
        click.echo(f"{s.name:{width}s}  {s.summary}")


@specs.command("show")
@click.argument("name")
def show_cmd(name: str) -> None:
    """Print built-in spec NAME (e.g. rates_fpcd/fig2)."""
    found = find_builtin(name)
    if found is None:
        raise unknown_spec_error(name)
    click.echo(found.path.read_text(), nl=False)


@specs.command("copy")
@click.argument("name")
@click.argument("dest", required=False, type=click.Path())
@click.option("--force", is_flag=True, help="overwrite DEST if it exists")
def copy_cmd(name: str, dest: str | None, force: bool) -> None:
    """Copy built-in spec NAME to DEST (a file or a directory; default: ./<name>.yaml) to edit
    it, then run it with 'mixlab run DEST'."""
    target = copy_builtin(name, dest, force=force)
    click.echo(f"copied {name} to {target}; run it with: mixlab run {target}")
