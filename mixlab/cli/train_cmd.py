"""``mixlab train``: train a binary RBM (CD-k, PCD/SML, FPCD) on a data set, save it to HDF5.

Checkpoints after every epoch to ``<output>.ckpt.h5`` and resumes from it automatically (same
settings required); the checkpoint is removed once the model is written. Prints the test
log-likelihood (exact log Z when the smaller layer has <= 25 units, else AIS) unless ``--no-eval``.
"""

from __future__ import annotations

import difflib
import json
import math
from pathlib import Path

import click
import numpy as np

from ..errors import SpecError, UsageError

EXACT_MAX_UNITS = 25


def _opt_float(value: str | None) -> float | None:
    return None if value is None else float(value)


@click.command("train", context_settings={"show_default": True})
@click.option("--data", "data_name", default="usps",
              help="data set name (any of 'mixlab data list')")
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
@click.option("--ais-runs", type=click.IntRange(min=2), default=100, help="AIS runs")
@click.option("--ais-betas", type=click.IntRange(min=2), default=10000,
              help="AIS inverse temperatures")
@click.option("--no-eval", is_flag=True, help="skip the test log-likelihood")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="model file (HDF5)")
@click.option("--force", is_flag=True,
              help="overwrite an existing output (and discard its checkpoint)")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar or messages on stderr")
def train(data_name: str, binarize: str, max_train: int | None, trainer: str, hidden: int,
          epochs: int, batch_size: int, lr: float, lr_schedule: str, lr_final: float | None,
          lr_tau: float | None, momentum: float, weight_decay: float, k: int,
          chains: int | None, chain_init: str | None, fast_lr: float | None,
          fast_decay: float | None, init_std: float, monitor_size: int, seed: int,
          ais_runs: int, ais_betas: int, no_eval: bool, output: Path, force: bool,
          quiet: bool) -> None:
    """Train an RBM: mixlab train --data usps --trainer fpcd --hidden 500 --epochs 50 -o m.h5"""
    from ..data import NAMES, load
    from ..rbm.model import RBM
    from ..rbm.partition import log_likelihood, log_partition_ais, log_partition_exact
    from ..rbm.train import Trainer, load_checkpoint, resolve_config, save_checkpoint

    def say(msg: str) -> None:
        if not quiet:
            click.echo(msg, err=True)

    # ---- arguments
    if data_name not in NAMES:
        close = difflib.get_close_matches(data_name, NAMES, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise UsageError(f"--data: unknown data set '{data_name}'{hint}; "
                         f"choose from {', '.join(NAMES)}")
    if binarize.strip().lower() in ("none", "no", "off"):
        thr = None
    else:
        try:
            thr = float(binarize)
        except ValueError:
            raise UsageError(f"--binarize: expected a number in [0, 1] or 'none', "
                             f"got '{binarize}'") from None
        if not 0 <= thr <= 1:
            raise UsageError(f"--binarize: must be in [0, 1], got {thr}")
    config = {"method": trainer, "epochs": epochs, "batch_size": batch_size, "lr": lr,
              "lr_schedule": lr_schedule, "lr_final": lr_final, "lr_tau": lr_tau,
              "momentum": momentum, "weight_decay": weight_decay, "k": k, "chains": chains,
              "chain_init": chain_init, "fast_lr": fast_lr, "fast_decay": fast_decay,
              "init_std": init_std, "monitor_size": monitor_size}
    try:
        resolved = resolve_config(config)
    except SpecError as e:
        opt = "--trainer" if e.key == "trainer" else f"--{(e.key or '').replace('_', '-')}"
        msg = str(e).split(": ", 1)[1] if str(e).startswith("spec key") else str(e)
        raise UsageError(f"{opt}: {msg}") from None
    output = Path(output)
    ckpt = output.with_name(output.name + ".ckpt.h5")
    if output.exists() and not force:
        raise UsageError(f"output {output} exists; use --force to overwrite it")
    if output.parent and not output.parent.exists():
        raise UsageError(f"-o/--output: directory {output.parent} does not exist")
    if force and ckpt.exists():
        ckpt.unlink()

    # ---- data
    try:
        ds = load(data_name, binarize=thr, max_train=max_train)
    except SpecError as e:
        opt = f"--{(e.key or 'data').replace('_', '-')}"
        msg = str(e).split(": ", 1)[1] if str(e).startswith("spec key") else str(e)
        raise UsageError(f"{opt}: {msg}") from None
    Xtr, Xva, Xte = ds.train.X, ds.valid.X, ds.test.X
    if Xtr.min() < 0 or Xtr.max() > 1:
        raise UsageError(f"--data {data_name}: features are not in [0, 1]; a binary RBM needs "
                         "intensities (choose an image data set)")

    # ---- trainer (resume if a checkpoint exists)
    rng = np.random.default_rng(seed)
    rbm0 = RBM.init(Xtr.shape[1], hidden, rng, data=Xtr, scale=init_std)
    tr = Trainer(rbm0, Xtr, Xva if len(Xva) else None, rng=rng, **config)
    if ckpt.exists():
        tr.load_state(load_checkpoint(ckpt))
        say(f"resuming from {ckpt} after epoch {tr.epoch}")
    say(f"training {trainer} RBM {Xtr.shape[1]}x{hidden} on {data_name} "
        f"({len(Xtr)} train, {len(Xva)} valid) for {epochs} epochs")

    def checkpoint(t: Trainer, rec: dict) -> None:
        save_checkpoint(ckpt, t.state_dict())

    if not tr.done:
        rbm, history = tr.fit(callback=checkpoint, progress=not quiet)
    else:
        rbm, history = tr.rbm, tr.history_arrays()
    if history["epoch"].size and not math.isnan(history["pseudo_ll"][-1]):
        say(f"epoch {int(history['epoch'][-1])}: pseudo-LL {history['pseudo_ll'][-1]:.3f}, "
            f"recon {history['recon_error'][-1]:.3f}, F gap {history['fe_gap'][-1]:.3f}")

    attrs = {"data": data_name, "binarize": "none" if thr is None else thr,
             "max_train": max_train if max_train is not None else "none",
             "seed": seed, "trainer": trainer, "trainer_config": json.dumps(resolved),
             "epochs_done": tr.epoch}
    from .. import __version__
    attrs["mixlab_version"] = __version__
    rbm.save(output, monitor=history, **attrs)

    # ---- evaluation
    if not no_eval:
        if min(rbm.n_visible, rbm.n_hidden) <= EXACT_MAX_UNITS:
            log_z, log_z_se, how = log_partition_exact(rbm), 0.0, "exact"
        else:
            say(f"AIS: {ais_runs} runs x {ais_betas} temperatures")
            log_z, log_z_se = log_partition_ais(
                rbm, n_runs=ais_runs, n_betas=ais_betas, data=Xtr,
                rng=np.random.default_rng([seed, 1]))
            how = "AIS"
        ll, ll_se = log_likelihood(rbm, Xte, log_z)
        attrs.update(log_z=log_z, log_z_se=log_z_se, log_z_method=how, test_ll=ll,
                     test_ll_se=ll_se, ais_runs=ais_runs, ais_betas=ais_betas)
        rbm.save(output, monitor=history, **attrs)
        se = math.hypot(ll_se, log_z_se)
        z_err = f" ± {log_z_se:.4f}" if how == "AIS" else ""
        click.echo(f"test log-likelihood: {ll:.4f} ± {se:.4f} nats "
                   f"(log Z = {log_z:.4f}{z_err}, {how})")
    if ckpt.exists():
        ckpt.unlink()
    say(f"model written to {output}")
