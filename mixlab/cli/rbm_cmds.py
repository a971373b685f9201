"""``mixlab sample MODEL ...`` and ``mixlab evaluate isl RUN ...``: RBM samplers from the command
line (rates-FPCD paper).

``sample`` builds a ``rates_fpcd.sample`` spec from its options and runs it through the
foundation (run directory with spec.yaml, run.h5, log.txt; resumable; ``--force`` to redo).
``evaluate isl`` computes the ISL curve of a run's stored samples and writes it into that run as
the metric ``isl/<stream>`` (or prints it with ``--json``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import click
import numpy as np

from ..errors import MixlabError, UsageError
from .options import force_option, quiet_option

BUILTIN = ("gibbs", "rates-fpcd", "rates-herding", "sample-penalization")
DATA = ("usps", "mnist", "mnist-5k", "fashion-mnist")


@click.command("sample", context_settings={"show_default": True})
@click.argument("model", type=click.Path())
@click.option("--method", default="rates-fpcd",
              help="a registered rbm sampler: gibbs, rates-fpcd, rates-herding, "
                   "sample-penalization, or a plugin's (see 'mixlab plugins')")
@click.option("--n-samples", type=click.IntRange(min=1), default=10000,
              help="samples to draw in all (over every chain; rounded up to a multiple of "
                   "--chains)")
@click.option("--eps-f", type=click.FloatRange(min=0), default=None,
              help="fast-weight step size ε_F [default: 0.01; herding 0.1]")
@click.option("--alpha", type=click.FloatRange(0, 1), default=None,
              help="fast-weight decay α [default: 1; sample-penalization 0.95]")
@click.option("-k", "--k", "k", type=click.IntRange(min=1), default=None,
              help="Gibbs steps per sample (herding: max hill-climb rounds) [default: 1; "
                   "herding 100]")
@click.option("--chains", type=click.IntRange(min=1), default=1, help="parallel chains")
@click.option("--shared-fast-weights", is_flag=True,
              help="one θ_F for all chains (mean statistics) instead of one per chain")
@click.option("--init", type=click.Choice(["data", "noise"]), default="data",
              help="initial state: random training examples or uniform noise")
@click.option("--emit", type=click.Choice(["binary", "means", "both"]), default="binary",
              help="what to store: binary samples x, E[x|h] (float32) or both")
@click.option("--data", "data_name", type=click.Choice(DATA), default=None,
              help="training data (for the rates R and --init data) [default: usps]")
@click.option("--data-file", type=click.Path(dir_okay=False), default=None,
              help="your own training images instead of --data (.npy, .npz or IDX, values in "
                   "[0, 1]; see docs/rates_fpcd.md)")
@click.option("--binarize", type=click.FloatRange(0, 1), default=0.5,
              help="binarisation threshold of the data")
@click.option("--seed", type=click.IntRange(min=0), default=0, help="random seed")
@click.option("-o", "--out", type=click.Path(file_okay=False), required=True,
              help="run directory")
@force_option
@quiet_option
def sample(model, method, n_samples, eps_f, alpha, k, chains, shared_fast_weights, init, emit,
           data_name, data_file, binarize, seed, out, force, quiet):
    """Draw samples from the trained RBM in MODEL (the model file of 'mixlab train', or its run
    directory) into a run directory.  Example: mixlab sample model.h5 --method rates-fpcd --n-samples 100000 -o run/"""
    from ..errors import SpecError
    from ..plugins import registry
    from ..rbm.model_file import is_training_run
    from ..run.context import execute
    from ..spec.resolver import resolve

    if not (Path(model).is_file() or is_training_run(model)):
        raise UsageError(f"model file not found: {model} (give a model file or the run "
                         f"directory of 'mixlab train')")
    try:
        kind = registry.get_sampler("rbm", method, "--method")
    except SpecError as exc:
        raise click.BadParameter(str(exc).split(": ", 1)[-1], param_hint="--method") from None
    herd = method == "rates-herding"
    # the options given on the command line, then the built-in samplers' defaults; a sampler
    # gets the settings it declares (its registered params), a plugin's own defaults otherwise
    given = {"eps_f": eps_f, "alpha": alpha, "k": k,
             "shared": True if shared_fast_weights else None}
    unknown = [key for key, v in given.items() if v is not None and key not in kind.params]
    if unknown:
        flags = "/".join("--" + {"shared": "shared-fast-weights"}.get(key, key.replace("_", "-"))
                         for key in unknown)
        raise click.BadParameter(f"{method} takes no {flags} (its settings: "
                                 f"{', '.join(kind.params) or 'none'})", param_hint="--method")
    defaults = {"eps_f": 0.1 if herd else 0.01,
                "alpha": 0.95 if method == "sample-penalization" else 1.0,
                "k": 100 if herd else 1, "shared": False}
    entry = {key: (v if v is not None else defaults[key]) for key, v in given.items()
             if key in kind.params and (v is not None or method in BUILTIN)}
    if method == "sample-penalization" and entry["alpha"] >= 1:
        raise click.BadParameter("sample-penalization needs --alpha < 1 (with alpha = 1 it "
                                 f"drifts to the uniform distribution); got {entry['alpha']}",
                                 param_hint="--alpha")
    if herd and emit != "binary":
        raise click.BadParameter(f"rates-herding produces binary samples only; got --emit {emit}",
                                 param_hint="--emit")
    record = {"binary": ["samples"], "means": ["means"], "both": ["samples", "means"]}[emit]
    draws = int(math.ceil(n_samples / chains))
    raw = {
        "name": Path(out).name or "sample", "experiment": "rates_fpcd.sample", "seed": seed,
        "description": f"{method} samples from {model}",
        "data": _data_section(data_name, data_file, binarize),
        "model_file": str(Path(model).resolve()),
        "samplers": {method: {"method": method, **entry}},
        "chains": chains, "init": init, "budget": {"draws": draws}, "record": record,
        "isl": {"enabled": False},
    }
    spec = resolve(raw, default_name="sample")
    run_dir, happened = execute(spec, out, force=force, quiet=quiet)
    if happened == "complete":
        click.echo(f"already complete: {run_dir} (use --force to re-run)")
    else:
        click.echo(f"{draws * chains} samples ({chains} chain(s) x {draws}) in {run_dir}")


def _data_section(data_name: str | None, data_file: str | None, binarize: float) -> dict:
    """The spec's ``data`` section for --data / --data-file (one of them; usps by default)."""
    if data_name and data_file:
        raise click.BadParameter("give --data or --data-file, not both", param_hint="--data-file")
    if data_file:
        return {"file": str(Path(data_file).resolve()), "binarize": binarize}
    return {"name": data_name or "usps", "binarize": binarize}


@click.group("evaluate")
def evaluate():
    """Evaluate a run's stored samples."""


@evaluate.command("isl", context_settings={"show_default": True})
@click.argument("run_dir", metavar="RUN", type=click.Path(exists=True, file_okay=False))
@click.option("--data", "data_name", type=click.Choice(DATA), default=None,
              help="data set [default: the run spec's data]")
@click.option("--data-file", type=click.Path(dir_okay=False), default=None,
              help="your own images (.npy, .npz or IDX) [default: the run spec's data set; "
                   "a file the run names is opened only when given here]")
@click.option("--binarize", type=click.FloatRange(0, 1), default=None,
              help="threshold [default: the run spec's data.binarize, else 0.5]")
@click.option("--stream", "streams", multiple=True,
              help="stream(s) to evaluate [default: every stream]")
@click.option("--key", type=click.Choice(["samples", "means"]), default=None,
              help="centres: stored binary samples or E[x|h] [default: means if stored]")
@click.option("--points", type=click.IntRange(min=2), default=30,
              help="log-spaced sample counts on the curve")
@click.option("--test-max", type=click.IntRange(min=2), default=None,
              help="use only the first n test examples")
@click.option("--json", "as_json", is_flag=True, help="print the curves as JSON, write nothing")
def evaluate_isl(run_dir, data_name, data_file, binarize, streams, key, points, test_max, as_json):
    """ISL of the test set vs number of samples for the stored streams of RUN (bandwidth chosen
    on the validation set at each point); written as metric isl/<stream> into RUN."""
    from ..rbm.isl import ISLEvaluator
    from ..rbm.target import data_schema, load_data
    from ..runfile.store import RunReader, RunStore
    from ..spec.schema import validate

    with RunReader(run_dir) as r:
        spec = r.spec or {}
        names = list(streams) or r.stream_names()
        if not names:
            raise MixlabError(f"run {run_dir} has no stored streams")
        available = set(r.stream_names())
        for n in names:
            if n not in available:
                raise click.BadParameter(f"no stream '{n}' in {run_dir}; streams: "
                                         f"{', '.join(sorted(available))}",
                                         param_hint="--stream")
        dspec = dict(spec.get("data") or {})
        if data_name or data_file:
            thr = binarize if binarize is not None else dspec.get("binarize", 0.5)
            dspec = _data_section(data_name, data_file, thr)
        elif dspec.get("file"):
            # a run file is data: a file it names is opened only when the user names it too
            raise click.UsageError(f"the run's spec names the data file {dspec['file']!s:.200}; "
                                   f"a file named in a run is not opened for you: give it as "
                                   f"--data-file if you trust it, or give --data")
        elif not dspec.get("name"):
            raise click.UsageError("the run's spec names no data set: give --data or "
                                   "--data-file")
        elif binarize is not None:
            dspec["binarize"] = binarize
        dspec.setdefault("binarize", 0.5)
        dspec = {k: v for k, v in dspec.items() if k in data_schema()}
        ds = load_data({"data": validate(dspec, data_schema(), "data")})
        name = ds.name
        Xt = ds.test.X if test_max is None else ds.test.X[:test_max]
        Xv = ds.valid.X
        out = {}
        for n in names:
            keys = r.stream_keys(n)
            use = key or ("means" if "means" in keys else "samples")
            if use not in keys:
                raise click.BadParameter(f"stream '{n}' has no '{use}' draws (has: "
                                         f"{', '.join(keys)})", param_hint="--key")
            draws = r.stream(n, use)  # (chain, draw, ...)
            if int(np.prod(draws.shape[2:])) != Xt.shape[1]:
                raise MixlabError(f"stream '{n}' has {draws.shape[2:]} per draw but {name} has "
                                  f"{Xt.shape[1]} dimensions")
            total = draws.shape[0] * draws.shape[1]
            ev = ISLEvaluator(Xt, Xv, series=n, key=use, max_samples=total, n_points=points)
            ev.update({use: draws}, draws.shape[1], 0.0)
            x, y, yerr = ev.curve()
            t = ev.table()
            out[n] = {"key": use, "samples": x.tolist(), "isl": y.tolist(),
                      "se": yerr.tolist(),
                      "bandwidth": t["bandwidths"][t["chosen"]].tolist(), "data": name}
    if as_json:
        click.echo(json.dumps(out, indent=1))
        return
    with RunStore(Path(run_dir) / "run.h5", "a") as st:
        for n, c in out.items():
            st.write_metric("isl", n, c["samples"], c["isl"], c["se"], x_label="samples",
                            y_label="ISL (nats)", data=name, centres=c["key"])
            st.set_result(f"isl_final/{n}", float(c["isl"][-1]))
            st.set_result(f"isl_final_se/{n}", float(c["se"][-1]))
        st.set_result("isl_test_points", int(Xt.shape[0]))
    for n, c in out.items():
        click.echo(f"{n}: ISL {c['isl'][-1]:.2f} ± {c['se'][-1]:.2f} with "
                   f"{int(c['samples'][-1])} samples ({c['key']}, {name} test set)")
