"""``mixlab train``: train a binary RBM (CD-k, PCD/SML, FPCD) as a run, and write its model file.

The options build an ``rbm.train`` spec (mixlab.rbm.train_run) that runs like any other
(``mixlab run``): spec, provenance, writer lock, a checkpoint after every epoch, resume. The run
directory is ``OUTPUT.run/`` (``--run-dir`` to put it elsewhere); once the training (and its
test log-likelihood) is complete, the model file OUTPUT is written from the run, whole and
atomically. Killed at any instant, the same command resumes and gives the same bits; run again
once complete, it does nothing and says where the model is.
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from ..errors import MixlabError, SpecError, UsageError

#: spec keys -> the options that set them (for messages)
OPTION_OF = {"data.name": "--data", "data.file": "--data-file", "data": "--data",
             "train.trainer": "--trainer", "eval.log_z": "--log-z"}


def _option(key: str | None) -> str:
    if key in OPTION_OF:
        return OPTION_OF[key]
    return "--" + (key or "data").split(".")[-1].replace("_", "-")


def _usage(exc: SpecError) -> UsageError:
    msg = str(exc).split(": ", 1)[1] if str(exc).startswith("spec key") else str(exc)
    return UsageError(f"{_option(exc.key)}: {msg}")


def _binarize(text: str) -> float | None:
    if text.strip().lower() in ("none", "no", "off"):
        return None
    try:
        thr = float(text)
    except ValueError:
        raise UsageError(f"--binarize: expected a number in [0, 1] or 'none', "
                         f"got '{text}'") from None
    if not 0 <= thr <= 1:
        raise UsageError(f"--binarize: must be in [0, 1], got {thr}")
    return thr


@click.command("train", context_settings={"show_default": True})
@click.option("--data", "data_name", default=None,
              help="data set: usps, mnist, mnist-5k or fashion-mnist [default: usps]")
@click.option("--data-file", type=click.Path(dir_okay=False), default=None,
              help="your own training images instead of --data (.npy, .npz or IDX, values in "
                   "[0, 1]; see docs/rates_fpcd.md)")
@click.option("--binarize", default="0.5",
              help="threshold on [0,1] intensities ('none' keeps grey levels as probabilities)")
@click.option("--max-train", type=click.IntRange(min=1), default=None,
              help="use only the first N training examples")
@click.option("--trainer", type=click.Choice(["cd", "pcd", "fpcd"]), default="pcd",
              help="cd (CD-k), pcd (SML) or fpcd (fast-weights PCD)")
@click.option("--hidden", type=click.IntRange(min=1), default=500, help="hidden units")
@click.option("--epochs", type=click.IntRange(min=1), default=10, help="passes over the data")
@click.option("--batch-size", type=click.IntRange(min=1), default=100, help="minibatch size")
@click.option("--lr", type=click.FloatRange(min=0), default=0.05, help="learning rate ε")
@click.option("--lr-schedule", type=click.Choice(["constant", "linear", "inverse"]),
              default="constant", help="constant, linear decay to lr-final·lr, or 1/t")
@click.option("--lr-final", type=click.FloatRange(0, 1), default=None,
              help="linear schedule: final lr as a fraction of --lr [default: 0]")
@click.option("--lr-tau", type=click.FloatRange(min=0, min_open=True), default=None,
              help="inverse schedule: lr = ε/(1 + epoch/tau) [default: 1]")
@click.option("--momentum", type=click.FloatRange(0, 1, max_open=True), default=0.0,
              help="momentum μ")
@click.option("--weight-decay", type=click.FloatRange(min=0), default=0.0,
              help="L2 weight decay λ on W")
@click.option("-k", "--k", "k", type=click.IntRange(min=1), default=1,
              help="Gibbs sweeps per update")
@click.option("--chains", type=click.IntRange(min=1), default=None,
              help="pcd/fpcd: persistent chains [default: batch size]")
@click.option("--chain-init", type=click.Choice(["data", "uniform"]), default=None,
              help="pcd/fpcd: initial chain states [default: data]")
@click.option("--fast-lr", type=click.FloatRange(min=0), default=None,
              help="fpcd: fast learning rate ε_F [default: --lr]")
@click.option("--fast-decay", type=click.FloatRange(0, 1), default=None,
              help="fpcd: fast-weight decay α [default: 0.95]")
@click.option("--init-std", type=click.FloatRange(min=0), default=0.01,
              help="std of the initial weights")
@click.option("--monitor-size", type=click.IntRange(min=1), default=1000,
              help="examples in the per-epoch monitoring subsets")
@click.option("--seed", type=click.IntRange(min=0), default=0, help="random seed")
@click.option("--log-z", type=click.Choice(["auto", "exact", "ais"]), default="auto",
              help="log Z of the test log-likelihood: exact when the smaller layer has <= 25 "
                   "units (auto), exact, or AIS")
@click.option("--ais-runs", type=click.IntRange(min=2), default=100, help="AIS runs")
@click.option("--ais-betas", type=click.IntRange(min=2), default=10000,
              help="AIS inverse temperatures")
@click.option("--no-eval", is_flag=True, help="skip the test log-likelihood")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="model file (HDF5), written once the training is complete")
@click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="the training's run directory [default: OUTPUT.run]")
@click.option("--force", is_flag=True,
              help="discard the run directory's training (complete or not) and train afresh; "
                   "OUTPUT is replaced when the new training completes")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar or messages on stderr")
def train(data_name: str | None, data_file: str | None, binarize: str, max_train: int | None,
          trainer: str, hidden: int, epochs: int, batch_size: int, lr: float, lr_schedule: str,
          lr_final: float | None, lr_tau: float | None, momentum: float, weight_decay: float,
          k: int, chains: int | None, chain_init: str | None, fast_lr: float | None,
          fast_decay: float | None, init_std: float, monitor_size: int, seed: int, log_z: str,
          ais_runs: int, ais_betas: int, no_eval: bool, output: Path, run_dir: Path | None,
          force: bool, quiet: bool) -> None:
    """Train an RBM: mixlab train --data usps --trainer fpcd --hidden 500 --epochs 50 -o m.h5

    The training is a run in OUTPUT.run/ ('mixlab show OUTPUT.run'); OUTPUT is the model file
    that 'mixlab sample' and a spec's model_file read. Interrupted (Ctrl-C, kill -9, a full
    disk), the same command resumes from the last epoch and trains the same bits."""
    from ..run.context import execute
    from ..spec.resolver import check_startup, resolve

    if data_name and data_file:
        raise UsageError("--data-file: give --data or --data-file, not both")
    train_keys = {"trainer": trainer, "hidden": hidden, "epochs": epochs,
                  "batch_size": batch_size, "lr": lr, "lr_schedule": lr_schedule,
                  "lr_final": lr_final, "lr_tau": lr_tau, "momentum": momentum,
                  "weight_decay": weight_decay, "k": k, "chains": chains,
                  "chain_init": chain_init, "fast_lr": fast_lr, "fast_decay": fast_decay,
                  "init_std": init_std, "monitor_size": monitor_size}
    data = {"binarize": _binarize(binarize), "max_train": max_train}
    if data_file:
        data["file"] = str(Path(data_file).resolve())
    else:
        data["name"] = data_name or "usps"
    raw = {"name": re.sub(r"[^A-Za-z0-9._-]", "_", output.stem) or "train",
           "experiment": "rbm.train", "seed": seed,
           "description": f"mixlab train -o {output.name}",
           "data": data, "train": train_keys,
           "eval": {"enabled": not no_eval, "log_z": log_z, "ais_runs": ais_runs,
                    "ais_betas": ais_betas}}
    try:
        spec = resolve(raw, default_name="train")
        check_startup(spec)
    except SpecError as exc:
        raise _usage(exc) from None
    if output.is_dir():
        raise UsageError(f"-o/--output: {output} is a directory; give the model file's name "
                         f"(its run goes to {output.name}.run/ beside it)")
    if not output.parent.is_dir():
        raise UsageError(f"-o/--output: directory {output.parent} does not exist")
    from ..rbm.model_file import default_run_dir

    run_dir = run_dir if run_dir is not None else default_run_dir(output)
    if not force and _refuse_other_training(spec, run_dir, output) == "model only":
        click.echo(f"already complete: {output} (its run directory {run_dir} is gone; "
                   f"--force trains afresh)")
        return
    from ..runfile.lock import RunLocked

    try:
        run_dir, happened = execute(spec, run_dir, force=force, quiet=quiet, render=False)
    except RunLocked as exc:
        raise RunLocked(f"{str(exc).split(';')[0]}; wait for it to finish (the same command "
                        f"then says where the model is), or train into another -o") from None
    _finish(run_dir, output, happened, quiet)


def _refuse_other_training(spec: dict, run_dir: Path, output: Path) -> str:
    """Refuse, saying what differs, when ``run_dir`` holds a training of other settings or
    ``output`` is a file that neither this training nor an earlier one in ``run_dir`` wrote
    (nothing is touched). Returns "model only" when the run directory is gone but ``output``
    holds this very training, else "go"."""
    from ..rbm.model_file import model_attrs, written_from
    from ..run.lifecycle import run_state
    from ..runfile.store import RunReader
    from ..spec.resolver import dump

    text = dump(spec)
    attrs = model_attrs(output) if output.exists() else None
    if output.exists() and attrs is None:
        raise MixlabError(f"{output} exists and is not a mixlab model file; choose another "
                          f"-o, or move it away")
    if run_state(run_dir) is not None:
        with RunReader(run_dir) as r:
            old = r.attrs.get("spec")
            old_spec = r.spec if old != text else None
        if old != text:
            raise MixlabError(f"{run_dir} holds a training with other settings "
                              f"({_differences(old_spec, spec)}); train into another -o (or "
                              f"--run-dir), or pass --force to discard that training and "
                              f"train afresh")
        if attrs is not None and attrs.get("training_spec") != text and \
                not written_from(attrs, output, run_dir):
            raise MixlabError(f"{output} holds a model that was not trained in {run_dir}; "
                              f"choose another -o, or move it away")
        return "go"
    if attrs is not None:
        if attrs.get("training_spec") == text:
            return "model only"
        raise MixlabError(f"{output} holds a model of other settings (or one written by an "
                          f"older mixlab); choose another -o, or pass --force to train and "
                          f"replace it once the training completes")
    return "go"


def _differences(old: dict, new: dict) -> str:
    """``key=old (now new)`` for the spec keys that differ (data, train and eval sections)."""
    def flat(d: dict, prefix: str = "") -> dict:
        out = {}
        for key, v in (d or {}).items():
            if isinstance(v, dict):
                out.update(flat(v, f"{prefix}{key}."))
            else:
                out[f"{prefix}{key}"] = v
        return out

    a, b = flat(old), flat(new)
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return ", ".join(f"{k}={a.get(k)!r} (now {b.get(k)!r})" for k in keys[:6]) or "its spec"


def _finish(run_dir: Path, output: Path, happened: str, quiet: bool) -> None:
    """Write the model file unless it already holds this training; print the test
    log-likelihood and where the model and its run are."""
    from ..rbm.model_file import model_attrs, write_model_file, written_from
    from ..runfile.store import RunReader

    with RunReader(run_dir) as r:
        results, text = r.results(), r.attrs.get("spec")
    attrs = model_attrs(output) if output.exists() else None
    current = (attrs is not None and attrs.get("training_spec") == text
               and written_from(attrs, output, run_dir))
    if happened == "complete" and current:
        click.echo(f"already complete: {output} (its run: {run_dir}; --force trains afresh)")
    else:
        write_model_file(run_dir, output)
    if "test_ll" in results:
        import math

        se = math.hypot(results["test_ll_se"], results["log_z_se"])
        how = results["log_z_method"]
        z_err = f" ± {results['log_z_se']:.4f}" if how == "AIS" else ""
        click.echo(f"test log-likelihood: {results['test_ll']:.4f} ± {se:.4f} nats "
                   f"(log Z = {results['log_z']:.4f}{z_err}, {how})")
    if not (happened == "complete" and current) and not quiet:
        click.echo(f"model written to {output} (its run: {run_dir})", err=True)
