"""The object an experiment's ``run(ctx)`` receives, and the function that runs a spec.

``execute(spec, run_dir)`` takes the run's writer lock, creates (or resumes) the run directory,
records provenance, calls the experiment kind's ``run(ctx)``, renders its figures and marks the run
complete. Interrupting it (Ctrl-C, SIGTERM, SIGKILL, a full disk) leaves the last checkpoint;
running it again resumes from there.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..errors import MixlabError, RunFileError, interruption  # noqa: F401  (re-exported)
from ..plugins import discovery as plugins
from ..plugins import registry
from ..plugins.contract import checked
from ..plugins.sampler_builds import build_log, built_record
from ..runfile import confined
from ..runfile.atomic import WriteFailure
from ..runfile.lock import RunLock, live_writer
from ..runfile.segments import SEGMENT_DIR
from ..runfile.store import RUN_FILE, RunReader, RunStore
from ..spec.resolver import check_startup, dump, spec_hash
from .streams import StreamResult, run_stream
from .update import stage_inputs, stream_inputs

PACKAGES = ("numpy", "scipy", "h5py", "matplotlib", "click", "pyyaml", "tqdm", "PyMaxflow",
            "numba", "arviz")


def name_key(name: Any) -> int:
    """A stable 32-bit integer for a name (SeedSequence spawn keys must be integers)."""
    if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
        return int(name) & 0xFFFFFFFF
    return int.from_bytes(hashlib.sha256(str(name).encode()).digest()[:4], "little")


class Context:
    """Handed to ``run(ctx)``; see docs/PLUGIN_API.md for the contract."""

    def __init__(self, spec: dict, run_dir: Path, store: RunStore, quiet: bool = False,
                 log_file=None, jobs: int = 1, scheduler: str | None = None):
        self.params = spec
        self.spec = spec
        self.scale = spec["scale"]
        self.run_dir = run_dir
        self.store = store
        self.quiet = quiet
        self._log_file = log_file
        self._root = np.random.SeedSequence(spec["seed"], spawn_key=tuple(spec["seed_key"]))
        self.jobs = jobs
        self.scheduler = scheduler   # a Dask scheduler's address (mixlab run --scheduler)
        self._pool = None   # a StreamPool inside ``parallel()`` when jobs > 1 or on Dask
        kind = registry.find_experiment(spec.get("experiment"))
        self._experiment_module = getattr(getattr(kind, "run", None), "__module__", None)

    def __getstate__(self) -> dict:
        """What a stage or a stream sent to a Dask worker takes of the context: the spec and
        the seeds (``rng``, ``seed_sequence``, ``params``), never the run's store or log."""
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("store", "_log_file", "_pool")}
        return {**state, "store": _WritersOnly(), "_log_file": None, "_pool": None,
                "quiet": True}

    def _distributed(self) -> bool:
        return self.jobs > 1 or bool(self.scheduler)

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
        after = self._streams_so_far()
        with build_log() as built:
            values = fn()
        self._write_stage(name, values, built, after)
        return self.store.read_stage(name)

    def once_each(self, stages: list[tuple[str, Callable[[], dict]]]) -> list[dict]:
        """:meth:`once` for each ``(name, fn)`` of ``stages``, which must not depend on each
        other (each draws its randomness from :meth:`rng` keyed by its own names): with
        ``jobs`` > 1 the stages not done yet are computed in worker processes, ``jobs`` at a
        time (mixlab.run.stages), and written in the given order, so the run file holds
        the same values as with one job. Returns each stage's dict, in order."""
        todo = [(n, fn) for n, fn in stages if not self.store.stage_done(n)]
        if self._distributed() and len(todo) > 1:
            from ..launch.launchers import choose
            from .stages import compute

            after = self._streams_so_far()
            compute(todo, self.jobs, lambda n, values, built: self._write_stage(n, values,
                                                                                built, after),
                    launcher=choose(self.jobs, self.scheduler, "fork"))
        return [self.once(n, fn) for n, fn in stages]

    def _streams_so_far(self) -> list[str]:
        return self.store.stream_names()

    def _write_stage(self, name: str, values: Any, built: list, after: list[str]) -> None:
        if not isinstance(values, dict):
            raise TypeError(f"stage {name}: fn must return a dict, got {type(values).__name__}")
        self.store.write_stage(name, values)
        # what the stage depends on, for 'mixlab run --update' (mixlab.run.update)
        self.store.set_inputs("stages", name,
                              stage_inputs(self.spec, self._experiment_module, built, after))
        self.store.publish()  # an expensive stage survives a kill

    def stream(self, name: str, sampler: Any, *, draws: int | None = None,
               seconds: float | None = None, thin: int = 1, evaluators=(),
               record: bool | tuple = True, record_stats: bool = True,
               rng: np.random.Generator | None = None,
               block: int | None = None, desc: str | None = None,
               summarize: Callable | None = None,
               block_seconds: float | None = None,
               after_block: Callable | None = None) -> StreamResult:
        """Run a sampler under a budget into ``/streams/<name>`` (resumable); see runner."""
        rng = rng if rng is not None else self.rng("stream", name)
        self._record_inputs(name, sampler)
        sampler = checked(sampler, name)  # the first init/step checked against the contract
        if self._pool is not None:
            kwargs = dict(draws=draws, seconds=seconds, thin=thin, record=record,
                          record_stats=record_stats, block=block,
                          checkpoint_seconds=checkpoint_seconds(), summarize=summarize,
                          block_seconds=block_seconds, after_block=after_block)
            return self._pool.submit(name, sampler, rng, evaluators, kwargs, desc or name,
                                     self.log)
        with self.progress(total=draws, desc=desc or name, unit="draw") as bar:
            result = run_stream(self.store, name, sampler, rng, draws=draws, seconds=seconds,
                                thin=thin, evaluators=evaluators, record=record,
                                record_stats=record_stats, block=block,
                                progress=bar, checkpoint_seconds=checkpoint_seconds(),
                                summarize=summarize, block_seconds=block_seconds,
                                after_block=after_block)
        self.log(f"stream {name}: {result.draws} draws/chain in {result.seconds:.2f} s")
        return result

    @contextmanager
    def parallel(self):
        """Declare the streams started inside the block independent of each other: with
        ``jobs`` > 1 they sample at once in worker processes (mixlab.run.workers), and
        ``ctx.stream`` returns a handle whose ``draws``/``seconds``/``state``/``stats_mean`` wait
        for the stream. The evaluators given to a stream hold its final state once it is done;
        every stream is done when the block exits. Streams that read another stream's result
        (its final state, its evaluators) belong outside the block, or after reading the
        handle of the stream they need. With one job this does nothing."""
        if self._pool is not None or not self._distributed():
            yield
            return
        from ..launch.launchers import choose
        from .workers import StreamPool

        with choose(self.jobs, self.scheduler, "fork") as launcher:
            self._pool = StreamPool(self.store, self.jobs, self._stream_bar, launcher)
            try:
                yield
                self._pool.wait_all()
            except BaseException:
                self._pool.stop()
                raise
            finally:
                self._pool = None

    def _stream_bar(self, total: int | None, desc: str, position: int):
        from tqdm import tqdm

        disable = self.quiet or not sys.stderr.isatty()
        return tqdm(total=total, desc=desc, unit="draw", disable=disable, leave=False,
                    file=sys.stderr, dynamic_ncols=True, position=position)

    def _record_inputs(self, name: str, sampler: Any) -> None:
        """Record what stream ``name`` depends on (mixlab.run.update), unless it is complete."""
        if self.store.stream_done(name):
            return
        self.store.set_inputs("streams", name, stream_inputs(self.spec, self._experiment_module,
                                                              built_record(sampler)))

    # -- output -------------------------------------------------------------------------------------
    def log(self, msg: str, always: bool = False) -> None:
        """Append ``msg`` to log.txt and print it on stderr (unless quiet and not ``always``)."""
        stamp = _dt.datetime.now().strftime("%H:%M:%S")
        if self._log_file is not None:
            self._log_file.write(f"{stamp} {msg}\n")
            self._log_file.flush()
        if always or not self.quiet:
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


class _WritersOnly:
    """``ctx.store`` on a Dask worker: the run file is written by the run's own process alone."""

    def __getattr__(self, attr: str):
        raise MixlabError(f"ctx.store.{attr} on a Dask worker: a stage or stream sent to the "
                          f"cluster returns its values, and the run's own process writes them; "
                          f"use ctx.store outside the stage's function")


def checkpoint_seconds() -> float:
    """Wall seconds between stream checkpoints (``MIXLAB_CHECKPOINT_SECONDS``, default 10)."""
    try:
        return float(os.environ.get("MIXLAB_CHECKPOINT_SECONDS", "10"))
    except ValueError:
        return 10.0


def provenance() -> dict:
    """mixlab version, git commit and dirty flag, package versions, creation time."""
    code = _code_provenance()
    return {**code, "packages": dict(code["packages"]),
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "python": sys.version.split()[0]}


@functools.lru_cache(maxsize=1)
def _code_provenance() -> dict:
    """The installed code's identity, once per process (two git commands and a metadata
    look-up per package: a league's cells would otherwise repeat them in every run)."""
    here = Path(__file__).resolve().parents[2]
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
    return {"mixlab_version": __version__, "git_commit": commit, "git_dirty": str(dirty),
            "packages": versions}


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
    if not confined.exists(run_dir, RUN_FILE):
        return None
    with RunReader(run_dir) as r:
        return r.status


def _discard_run(run_dir: Path) -> None:
    """Remove a run's data (run file, segments, figures); the caller holds its lock. Only files
    mixlab writes are deleted (mixlab.runfile.confined); anything else in the directory stays."""
    for name in (RUN_FILE, "spec.yaml"):
        confined.remove(run_dir, name)
    for name in (SEGMENT_DIR, "figures"):
        confined.remove_generated_in(run_dir, name)


def execute(spec: dict, run_dir: str | Path, *, force: bool = False, quiet: bool = False,
            render: bool = True, replace: bool = False,
            jobs: int | None = None, update: bool = False,
            scheduler: str | None = None) -> tuple[Path, str]:
    """Run (or resume) a resolved spec in ``run_dir``; returns (run_dir, what happened) where
    what happened is 'complete' (nothing to do), 'resumed', 'updated' or 'ran'.

    ``update``: bring an existing run of this or an earlier version of the spec up to date,
    rerunning, adding or removing exactly the streams whose inputs changed (mixlab.run.update).

    The run's writer lock is taken first: a second writer is refused (mixlab.runfile.lock), and
    ``force``/``replace`` never touch a run that another process is writing.
    ``replace``: if ``run_dir`` holds a run of a different spec, move it to
    ``<run_dir>.previous`` (replacing an older one there) and start afresh.
    ``jobs``: worker processes for the run's independent streams (``-j``; None: the spec's
    ``jobs``, else ``MIXLAB_JOBS``, else 1), at most one per available core.
    ``scheduler``: a Dask scheduler's address: the independent streams and stages run on its
    workers (mixlab.run.remote), which need not share this machine's files."""
    from .workers import available_cores, resolve_jobs

    run_dir = Path(run_dir)
    asked = resolve_jobs(jobs, spec)
    jobs = min(asked, available_cores())
    plugins.load_spec_plugins(spec.get("plugins"))  # a no-op unless this process did not resolve
    kind = registry.get_experiment(spec["experiment"])
    text = dump(spec)
    confined.check_run_dir(run_dir)
    lock = RunLock.acquire(run_dir)
    try:
        happened = "ran"
        h5 = run_dir / RUN_FILE
        if confined.exists(run_dir, RUN_FILE) and not force:
            try:
                with RunReader(run_dir) as r:
                    status, old_spec = r.status, r.attrs.get("spec")
                    old_plugins = r.attrs.get("plugins")
            except RunFileError as exc:
                raise RunFileError(f"{exc}. Nobody is writing it: start the run afresh with "
                                   f"--force (this discards the damaged file), or run into "
                                   f"another --out directory") from exc
            if update:
                happened = "updated"
            elif old_spec != text and replace:
                previous = run_dir.with_name(run_dir.name + ".previous")
                if live_writer(previous) is not None:
                    raise MixlabError(f"cannot move {run_dir} aside: {previous} is being "
                                      f"written by {live_writer(previous)}")
                if not confined.remove_run_dir(previous.parent, previous.name):
                    raise MixlabError(f"cannot move {run_dir} aside: {previous} holds files "
                                      f"mixlab did not write; move it away first")
                run_dir.rename(previous)
                lock.release()
                lock = RunLock.acquire(run_dir)
            elif old_spec != text:
                raise MixlabError(f"{run_dir} holds a run of a different spec; "
                                  f"{update_hint(run_dir, spec)}, choose another --out "
                                  f"directory, or pass --replace to move it aside to "
                                  f"{run_dir.name}.previous")
            elif status == "complete":
                lock.release(remove=True)
                return run_dir, "complete"
            else:
                happened = "resumed"
                try:
                    plugins.check_resume(old_plugins, run_dir)
                except MixlabError as exc:
                    raise MixlabError(f"{exc}; or {update_hint(run_dir, spec)}") from None
        elif force:
            _discard_run(run_dir)
        confined.write_atomic(run_dir, "spec.yaml", text.encode())
        store = RunStore(h5, "a", lock=lock)
        try:
            if happened == "updated":
                summary = _apply_update(store, run_dir, spec, text, status)
                if summary is None:
                    store.close()
                    return run_dir, "complete"
            if happened == "ran":
                attrs = provenance()
                attrs.update(spec=text, seed_entropy=str(spec["seed"]),
                             seed_key=str(list(spec["seed_key"])), experiment=spec["experiment"],
                             plugins=json.dumps(plugins.provenance()))
                store.set_root_attrs(attrs)
            store.set_status("running")
            with _LogFile(run_dir) as log, _sigterm_as_interrupt():
                ctx = Context(spec, run_dir, store, quiet=quiet, log_file=log, jobs=jobs,
                              scheduler=scheduler)
                ctx.log(f"{_VERBS[happened]} {spec['name']} "
                        f"({spec['experiment']}, scale {spec['scale']}) in {run_dir}")
                if scheduler:
                    ctx.log(f"independent streams and stages on the Dask cluster at {scheduler}")
                elif asked > 1:
                    ctx.log(f"independent streams in {jobs} worker processes"
                            + (f" (-j {asked}, {jobs} cores available)" if jobs < asked else ""))
                if happened == "updated":
                    ctx.log(f"update: {summary}", always=True)
                check_startup(spec)   # what --dry-run checks, before any work
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("default")
                    kind.run(ctx)
                _report_warnings(caught, spec, ctx)
                if spec.get("diagnostics"):
                    _store_diagnostics(store, run_dir, ctx)
                store.set_status("complete")      # published: closing need not publish again
                ctx.log("complete")
        except WriteFailure as exc:
            store.close(publish=False)  # the disk refused: the last snapshot stays as it was
            raise WriteFailure(f"{exc}. {store.saved_text()}; free space and run the same "
                               f"command again to resume", exc.path, exc.errno) from None
        except KeyboardInterrupt:
            _close_quietly(store, "interrupted")
            raise
        except BaseException as exc:
            stop = interruption(exc)
            if stop is not None:          # a signal that arrived inside compiled code
                _close_quietly(store, "interrupted")
                raise stop from None
            _close_quietly(store, "failed", _one_line(exc))
            raise
        store.close(publish=False)
        lock.release(remove=True)  # complete: nobody needs to know who wrote it last
    finally:
        lock.release()
    if render and registry.figures_for(spec["experiment"]):   # none: no need to reopen the run
        from ..plotting import render_all

        render_all(run_dir)
    return run_dir, happened


_VERBS = {"ran": "starting", "resumed": "resuming", "updated": "updating"}


def update_hint(run_dir: Path, spec: dict) -> str:
    """'--update would ...' for a run that the same command refuses (mixlab.run.update)."""
    from .update import plan

    try:
        with RunReader(run_dir) as r:
            what = plan(r.file_for_update(), spec).summary()
    except (MixlabError, OSError):
        return "pass --update to rerun only the streams whose inputs changed"
    return f"pass --update to {what}"


def _apply_update(store: RunStore, run_dir: Path, spec: dict, text: str,
                  status: str) -> str | None:
    """Discard what the spec and the code loaded now make stale (mixlab.run.update) and record the
    new spec; None when the run is complete and nothing is stale."""
    from .update import discard, plan, remove_segments

    todo = plan(store.file_for_update(), spec)
    if todo.empty and status == "complete" and store.attrs.get("spec") == text:
        return None
    deleted = discard(store.file_for_update(), todo)
    store.set_root_attrs({"spec": text, "plugins": json.dumps(plugins.provenance())})
    store.publish()                     # the file no longer links the deleted streams' segments
    remove_segments(run_dir, deleted)
    return todo.summary()


def _store_diagnostics(store: RunStore, run_dir: Path, ctx: Context) -> None:
    """The spec's ``diagnostics: true``: ESS, R-hat, MCSE and ESS/s of every stream, read back
    from the published file (its streams are complete), stored as results."""
    from ..diagnostics import diagnose
    from ..diagnostics.mixing import result_items

    store.publish()
    with RunReader(run_dir) as run:
        rows = diagnose(run)
    for k, v in result_items(rows).items():
        store.set_result(k, v)
    ctx.log(f"diagnostics of {len(rows)} statistic(s) stored (ess_bulk/, ess_tail/, rhat/, "
            f"mcse/, ess_per_s/)")


def _large_values(spec: dict, prefix: str = "") -> list[str]:
    """``key=value`` for the spec's real numbers of magnitude 1e6 or more (overflow suspects)."""
    out = []
    for k, v in spec.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out += _large_values(v, key + ".")
        elif isinstance(v, float) and abs(v) >= 1e6:
            out.append(f"{key}={v:g}")
    return out


def _report_warnings(caught: list, spec: dict, ctx: Context) -> None:
    """One line per distinct warning of the run (never the raw source line), naming the spec's
    large values when the warning is a numerical overflow."""
    seen: dict[tuple, int] = {}
    for w in caught:
        key = (w.category.__name__, str(w.message).splitlines()[0] if str(w.message) else "")
        seen[key] = seen.get(key, 0) + 1
    for (category, message), n in seen.items():
        hint = ""
        if "overflow" in message:
            large = _large_values(spec)
            hint = (f"; values this large in the spec may cause it: {', '.join(large[:5])}"
                    if large else "")
        ctx.log(f"warning ({category}): {message}"
                f"{f' (at {n} places)' if n > 1 else ''}{hint}", always=True)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:500]


def _close_quietly(store: RunStore, status: str, error: str | None = None) -> None:
    """Record the final status if the disk lets us; the original exception is what matters."""
    try:
        store.set_status(status, error)
        store.close()
    except WriteFailure:
        store.close(publish=False)


class _LogFile:
    """``log.txt``, appended to; a failed write (full disk) stops the logging, not the run. A
    ``log.txt`` that is a link or not a regular file is refused (mixlab.runfile.confined)."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / "log.txt"
        try:
            fd = confined.open_fd(run_dir, "log.txt", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except OSError:
            self._fh = None
            return
        self._fh = os.fdopen(fd, "a")

    def write(self, text: str) -> None:
        if self._fh is None:
            return
        try:
            self._fh.write(text)
            self._fh.flush()
        except OSError:
            self._abandon()

    def flush(self) -> None:
        pass

    def _abandon(self) -> None:
        fh, self._fh = self._fh, None
        try:
            fh.close()
        except OSError:
            pass

    def __enter__(self) -> _LogFile:
        return self

    def __exit__(self, *exc) -> None:
        if self._fh is not None:
            self._abandon()


def environment_summary() -> str:  # pragma: no cover - debugging aid
    return f"mixlab {__version__} on Python {sys.version.split()[0]} ({os.cpu_count()} cpus)"
