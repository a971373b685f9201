"""The object an experiment's ``run(ctx)`` receives, and the function that runs a spec.

``execute(spec, run_dir)`` creates (or resumes) the run directory, records provenance, calls the
experiment kind's ``run(ctx)``, renders its figures and marks the run complete. Interrupting it
(Ctrl-C, SIGTERM) leaves status ``interrupted``; running it again resumes from the checkpoints.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__, plugins, registry
from .contract import checked
from .errors import MixlabError, RunFileError
from .runner import StreamResult, run_stream
from .spec import dump, spec_hash
from .store import RunStore

PACKAGES = ("numpy", "scipy", "h5py", "matplotlib", "click", "pyyaml", "tqdm", "PyMaxflow")


def name_key(name: Any) -> int:
    """A stable 32-bit integer for a name (SeedSequence spawn keys must be integers)."""
    if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
        return int(name) & 0xFFFFFFFF
    return int.from_bytes(hashlib.sha256(str(name).encode()).digest()[:4], "little")


class Context:
    """Handed to ``run(ctx)``; see docs/PLUGIN_API.md for the contract."""

    def __init__(self, spec: dict, run_dir: Path, store: RunStore, quiet: bool = False,
                 log_file=None):
        self.params = spec
        self.spec = spec
        self.scale = spec["scale"]
        self.run_dir = run_dir
        self.store = store
        self.quiet = quiet
        self._log_file = log_file
        self._root = np.random.SeedSequence(spec["seed"], spawn_key=tuple(spec["seed_key"]))

    # -- randomness ---------------------------------------------------------------------------------
    def seed_sequence(self, *names: Any) -> np.random.SeedSequence:
        """Child of the run's SeedSequence keyed by ``names`` (independent of call order)."""
        return np.random.SeedSequence(self._root.entropy,
                                      spawn_key=self._root.spawn_key
                                      + tuple(name_key(n) for n in names))

    def rng(self, *names: Any) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(self.seed_sequence(*names)))

    # -- stages and streams -------------------------------------------------------------------------
    def once(self, name: str, fn: Callable[[], dict]) -> dict:
        """Run ``fn()`` once per run and cache its flat dict of arrays under ``/stages/<name>``."""
        if self.store.stage_done(name):
            return self.store.read_stage(name)
        values = fn()
        if not isinstance(values, dict):
            raise TypeError(f"stage {name}: fn must return a dict, got {type(values).__name__}")
        self.store.write_stage(name, values)
        return self.store.read_stage(name)

    def stream(self, name: str, sampler: Any, *, draws: int | None = None,
               seconds: float | None = None, thin: int = 1, evaluators=(),
               record: bool | tuple = True, rng: np.random.Generator | None = None,
               block: int | None = None, desc: str | None = None,
               summarize: Callable | None = None) -> StreamResult:
        """Run a sampler under a budget into ``/streams/<name>`` (resumable); see runner."""
        rng = rng if rng is not None else self.rng("stream", name)
        sampler = checked(sampler, name)  # the first init/step checked against the contract
        with self.progress(total=draws, desc=desc or name, unit="draw") as bar:
            result = run_stream(self.store, name, sampler, rng, draws=draws, seconds=seconds,
                                thin=thin, evaluators=evaluators, record=record, block=block,
                                progress=bar, checkpoint_seconds=checkpoint_seconds(),
                                summarize=summarize)
        self.log(f"stream {name}: {result.draws} draws/chain in {result.seconds:.2f} s")
        return result

    # -- output -------------------------------------------------------------------------------------
    def log(self, msg: str) -> None:
        stamp = _dt.datetime.now().strftime("%H:%M:%S")
        if self._log_file is not None:
            self._log_file.write(f"{stamp} {msg}\n")
            self._log_file.flush()
        if not self.quiet:
            print(msg, file=sys.stderr)

    def bar(self, total: int | None = None, desc: str = "", unit: str = "it"):
        """A tqdm bar on stderr (disabled when quiet or stderr is not a terminal); the caller
        closes it. Use :meth:`progress` for a bar that closes itself."""
        from tqdm import tqdm

        disable = self.quiet or not sys.stderr.isatty()
        return tqdm(total=total, desc=desc, unit=unit, disable=disable, leave=False,
                    file=sys.stderr, dynamic_ncols=True)

    @contextmanager
    def progress(self, total: int | None = None, desc: str = "", unit: str = "it"):
        bar = self.bar(total=total, desc=desc, unit=unit)
        try:
            yield bar
        finally:
            bar.close()


def checkpoint_seconds() -> float:
    """Wall seconds between stream checkpoints (``MIXLAB_CHECKPOINT_SECONDS``, default 10)."""
    try:
        return float(os.environ.get("MIXLAB_CHECKPOINT_SECONDS", "10"))
    except ValueError:
        return 10.0


def provenance() -> dict:
    """mixlab version, git commit and dirty flag, package versions, creation time."""
    here = Path(__file__).resolve().parent.parent
    commit, dirty = "unknown", "unknown"
    try:
        commit = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=5).stdout.strip() or "unknown"
        if commit != "unknown":
            st = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--", "mixlab"],
                                capture_output=True, text=True, timeout=5).stdout
            dirty = bool(st.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            versions[pkg] = None
    return {
        "mixlab_version": __version__,
        "git_commit": commit,
        "git_dirty": str(dirty),
        "packages": versions,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
    }


def default_run_dir(spec: dict, root: str | Path = "runs") -> Path:
    return Path(root) / spec["name"] / spec_hash(spec)


class _Terminated(KeyboardInterrupt):
    pass


@contextmanager
def _sigterm_as_interrupt():
    def handler(signum, frame):  # pragma: no cover - exercised by a subprocess test
        raise _Terminated()

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not in the main thread (e.g. a Dask worker)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run_state(run_dir: Path) -> str | None:
    """Status of an existing run directory, None if there is no run file."""
    path = run_dir / "run.h5"
    if not path.exists():
        return None
    from .store import RunReader

    with RunReader(run_dir) as r:
        return r.status


def execute(spec: dict, run_dir: str | Path, *, force: bool = False, quiet: bool = False,
            render: bool = True, replace: bool = False) -> tuple[Path, str]:
    """Run (or resume) a resolved spec in ``run_dir``; returns (run_dir, what happened) where
    what happened is 'complete' (nothing to do), 'resumed' or 'ran'.

    ``replace``: if ``run_dir`` holds a run of a different spec, move it to
    ``<run_dir>.previous`` (replacing an older one there) and start afresh."""
    run_dir = Path(run_dir)
    plugins.load_spec_plugins(spec.get("plugins"))  # a no-op unless this process did not resolve
    kind = registry.get_experiment(spec["experiment"])
    text = dump(spec)
    h5 = run_dir / "run.h5"
    happened = "ran"
    if h5.exists() and not force:
        try:
            status = run_state(run_dir)
            with RunStore(h5, "r") as s:
                old_spec = s.f.attrs.get("spec")
                old_plugins = s.f.attrs.get("plugins")
        except RunFileError as exc:
            raise RunFileError(f"{exc} (run directory {run_dir})") from exc
        if old_spec != text and replace:
            previous = run_dir.with_name(run_dir.name + ".previous")
            if previous.exists():
                shutil.rmtree(previous)
            run_dir.rename(previous)
        elif old_spec != text:
            raise MixlabError(f"{run_dir} holds a run of a different spec; choose another --out "
                              f"directory, pass --replace to move it aside, or --force to "
                              f"overwrite it")
        elif status == "complete":
            return run_dir, "complete"
        else:
            happened = "resumed"
            plugins.check_resume(old_plugins, run_dir)
    elif h5.exists() and force:
        h5.unlink()
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "spec.yaml").write_text(text)
    store = RunStore(h5, "a")
    try:
        if happened == "ran":
            attrs = provenance()
            attrs.update(spec=text, seed_entropy=str(spec["seed"]),
                         seed_key=str(list(spec["seed_key"])), experiment=spec["experiment"],
                         plugins=json.dumps(plugins.provenance()))
            store.set_root_attrs(attrs)
        store.set_status("running")
        with open(run_dir / "log.txt", "a") as log, _sigterm_as_interrupt():
            ctx = Context(spec, run_dir, store, quiet=quiet, log_file=log)
            ctx.log(f"{'resuming' if happened == 'resumed' else 'starting'} {spec['name']} "
                    f"({spec['experiment']}, scale {spec['scale']}) in {run_dir}")
            kind.run(ctx)
            store.set_status("complete")
            ctx.log("complete")
    except KeyboardInterrupt:
        store.set_status("interrupted")
        store.close()
        raise
    except BaseException as exc:
        store.set_status("failed")
        store.set_root_attrs({"error": f"{type(exc).__name__}: {exc}"})
        store.close()
        raise
    store.close()
    if render:
        from .plotting import render_all

        render_all(run_dir)
    return run_dir, happened


def environment_summary() -> str:  # pragma: no cover - debugging aid
    return f"mixlab {__version__} on Python {sys.version.split()[0]} ({os.cpu_count()} cpus)"
