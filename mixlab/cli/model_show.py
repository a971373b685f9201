"""``mixlab show MODEL.h5``: a model file that ``mixlab train`` wrote (mixlab.rbm.model_file).

Shows the model's shape, how it was trained, its test log-likelihood, the provenance and the
training spec it stores, and the run directory it names (said to exist when it does; nothing a
file names is opened)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import click

SPEC_LINES = 1000  # a longer stored spec is shown cut, saying by how much


def show_model_file(path: Path, as_json: bool, say: Callable[[str], None],
                    cut: Callable) -> bool:
    """Show ``path`` if it is a mixlab model file; False (nothing printed) if it is not one.
    ``say`` prints one line and ``cut`` shortens long values, as for a run (mixlab.cli.show_cmd)."""
    from ..rbm.model_file import describe, model_attrs

    attrs = model_attrs(path)
    if attrs is None:
        return False
    info = describe(path, attrs)
    if as_json:
        click.echo(json.dumps(cut(info)))
        return True
    say(f"model     {info['model']} (RBM {info['n_visible']} visible x {info['n_hidden']} "
        f"hidden)")
    t = info["training"]
    if t:
        say(f"training  {t.get('trainer')} on {t.get('data')}, {t.get('epochs_done')} epoch(s), "
            f"seed {t.get('seed')}, binarize {t.get('binarize')}")
    r = info["results"]
    if "test_ll" in r:
        say(f"test LL   {r['test_ll']:.4f} ± {r.get('test_ll_se', float('nan')):.4f} nats "
            f"(log Z {r.get('log_z', float('nan')):.4f}, {r.get('log_z_method')})")
    p = info["provenance"]
    if p:
        say(f"mixlab    {p.get('mixlab_version')}  git {str(p.get('git_commit'))[:12]}"
            f" dirty={p.get('git_dirty')}  created {p.get('created')}")
    if info["run_dir"]:
        where = (f"; 'mixlab show {info['run_dir_found']}' for the run" if info["run_dir_found"]
                 else " (not found beside the model file)")
        say(f"run       {info['run_dir']}{where}")
    if info["spec"]:
        say("training spec")
        lines = str(info["spec"]).splitlines()
        for line in lines[:SPEC_LINES]:
            say(f"  {line}")
        if len(lines) > SPEC_LINES:
            say(f"  [cut: {len(lines) - SPEC_LINES:,} more lines]")
    else:
        say("training spec  none stored (a model file written by an older mixlab)")
    return True
