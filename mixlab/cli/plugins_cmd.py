"""``mixlab plugins [REF...] [--json]``: what is registered, where it came from, its parameters."""

from __future__ import annotations

import json

import click

from ..plugins import discovery as plugin_mod
from ..plugins import registry
from ..spec.schema import describe


def _source(module: str) -> dict:
    """``{"module", "plugin"}``: the module a thing was registered from and its plugin (if any)."""
    p = plugin_mod.owner(module)
    return {"module": module, "plugin": p.ref if p else None}


def _params(schema) -> list[dict]:
    return [{"key": k, "default": d, "help": h} for k, d, h in describe(schema)]


def inventory() -> dict:
    """Everything registered: samplers by family, experiment kinds, figures, loaded plugins."""
    samplers = []
    for family in registry.FAMILIES:
        for name, kind in sorted(registry.samplers_for(family).items()):
            samplers.append({"family": family, "name": name, **_source(kind.module),
                             "help": kind.help, "params": _params(kind.params)})
    experiments = []
    for name, kind in sorted(registry.experiments().items()):
        experiments.append({"name": name, **_source(getattr(kind.run, "__module__", "?")),
                            "help": kind.help, "params": _params(kind.schema)})
    figures = []
    for name, kind in sorted(registry.all_figures().items()):
        figures.append({"name": name, "experiment": kind.experiment,
                        **_source(getattr(kind.draw, "__module__", "?")), "help": kind.help})
    from ..plugins.families import all_families, family_module

    families = {f.name: {"cost": f.cost, "cost_help": f.cost_help, "step": f.step,
                         "draws": {d.key: {"shape": d.shape, "dtypes": list(d.kinds),
                                           "finite": d.finite} for d in f.draws},
                         **({"source": _source(family_module(f.name))}
                            if family_module(f.name) else {}),
                         "league_targets": f.league is not None or f.name in _LEAGUES}
                for f in all_families().values()}
    return {"plugins": plugin_mod.provenance(),
            "broken": [b.record() for b in plugin_mod.broken()], "families": families,
            "samplers": samplers, "experiments": experiments, "figures": figures}


#: mixlab's own families with league targets (mixlab.league.targets)
_LEAGUES = ("rbm", "spinglass", "logistic", "mrf")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text and text.strip() else ""


@click.command("plugins")
@click.argument("refs", nargs=-1, metavar="[MODULE|FILE.py]...")
@click.option("--json", "as_json", is_flag=True, help="print the inventory as JSON")
@click.option("--all", "show_all", is_flag=True,
              help="also list experiment kinds' parameters (long)")
@click.option("--markdown", "family", metavar="FAMILY", default=None,
              help="print FAMILY's page for plugin authors (markdown, as in docs/plugins/): "
                   "target, draws, one step, cost statistic, summaries, exact truths, samplers")
def plugins(refs, as_json, show_all, family):
    """List registered samplers (by target family), experiment kinds and figures, with the
    module (and plugin) each comes from and each sampler's parameters.

    Plugins are found through the 'mixlab.plugins' entry points of installed packages and the
    MIXLAB_PLUGINS variable (module names or .py files separated by ':'); REF... loads more
    (e.g. a .py file you are writing) the same way. An installed plugin that fails to load is
    listed as broken, with its whole message (and its traceback with --debug); a REF that
    fails to load is an error in one paragraph, exit code 1."""
    plugin_mod.load_refs(list(refs))
    registry.load_plugins()
    if family is not None:
        from ..plugins.families import all_families
        from ..plugins.family_pages import family_page

        if family not in all_families():
            raise click.UsageError(f"--markdown: unknown family '{family}'; families: "
                                   f"{', '.join(all_families())}")
        click.echo(family_page(family), nl=False)
        return
    inv = inventory()
    if click.get_current_context().find_root().obj.get("debug"):
        for b in plugin_mod.broken():
            click.echo(b.trace, err=True, nl=False)
    if as_json:
        click.echo(json.dumps(inv, indent=1, default=str))
        return
    if inv["plugins"]:
        click.echo("plugins loaded")
        for p in inv["plugins"]:
            ident = f"{p['distribution']} {p['version']}" if p["distribution"] else \
                f"sha256 {str(p['sha256'])[:12]}"
            click.echo(f"  {p['ref']}  [{p['source']}]  {ident}")
            click.echo(f"    {p['file']}")
            click.echo(f"    registered: {', '.join(p['registered']) or 'nothing'}")
    else:
        click.echo("plugins loaded: none (entry points 'mixlab.plugins', MIXLAB_PLUGINS, a "
                   "spec's 'plugins:')")
    if inv["broken"]:
        click.echo("\nbroken plugins (skipped: what they register is missing)")
        for b in inv["broken"]:
            click.echo(f"  {b['ref']}  [{b['source']}]  BROKEN")
            click.echo(f"    {b['message']}")
    plugin_families = {n: f for n, f in inv["families"].items() if "source" in f}
    if plugin_families:
        click.echo("\nfamilies from plugins (name  source: cost statistic)")
        for n, f in plugin_families.items():
            src = f"plugin {f['source']['plugin']}" if f["source"]["plugin"] else \
                f["source"]["module"]
            targets = ", league targets" if f["league_targets"] else ""
            click.echo(f"  {n:22s} {src}: {f['cost']}{targets}")
    click.echo("\nsamplers (family/name  source: parameters)")
    for s in inv["samplers"]:
        src = f"plugin {s['plugin']}" if s["plugin"] else s["module"]
        click.echo(f"  {s['family']}/{s['name']:22s} {src}")
        if _first_line(s["help"]):
            click.echo(f"      {_first_line(s['help'])}")
        for p in s["params"]:
            click.echo(f"      {p['key']:16s} = {p['default']:12s} {p['help']}")
    click.echo("\nexperiment kinds")
    for e in inv["experiments"]:
        src = f"plugin {e['plugin']}" if e["plugin"] else e["module"]
        click.echo(f"  {e['name']:36s} {src}")
        if show_all:
            for p in e["params"]:
                click.echo(f"      {p['key']:32s} = {p['default']:12s} {p['help']}")
    click.echo("\nfigures")
    for f in inv["figures"]:
        src = f"plugin {f['plugin']}" if f["plugin"] else f["module"]
        click.echo(f"  {f['name']:36s} of {f['experiment']:32s} {src}")
