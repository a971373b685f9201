"""Installing source files: cache directory, local mirror, system directories, download.

Every install goes to a temporary file in the destination directory (a dot-name ending in
``.part``, which no load ever looks at), is fsynced, verified (md5, or the content check of files
without a recorded md5) and only then moved into place with ``os.replace`` (and the directory
fsynced); a failed install (a bad checksum, a network error, a full disk) removes its temporary
file and leaves any previous copy as it was, so a later load never finds half a file.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from ..env_settings import env_path
from ..errors import DataError, UsageError
from ..runfile.atomic import sync_directory
from .catalogue import DATASETS, DatasetSpec, FileSpec

CHUNK = 1 << 20

# The opener used for downloads; tests replace it (monkeypatch) or use file:// URLs.
urlopen = urllib.request.urlopen


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def make_temp(directory: Path, name: str) -> tuple[int, Path]:
    """A temp file in ``directory`` (same file system as the destination, for os.replace),
    with the permissions a normal new file would get (mkstemp makes it 0600)."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".part")
    os.chmod(tmp, _umask_mode())
    return fd, Path(tmp)


def data_dir() -> Path:
    """The cache directory: ``$MIXLAB_DATA_DIR`` or ``~/.cache/mixlab`` (relative paths are
    resolved against the current directory)."""
    return env_path("MIXLAB_DATA_DIR", must_exist=False) or Path("~/.cache/mixlab").expanduser(
    ).resolve()


def mirror_dir() -> Path | None:
    """``$MIXLAB_DATA_MIRROR`` resolved against the current directory, or None when unset."""
    return env_path("MIXLAB_DATA_MIRROR", must_exist=True)


def cache_path(f: FileSpec) -> Path:
    return data_dir() / f.folder / f.name


def md5sum(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def gunzip_md5(path: Path) -> str | None:
    """md5 of the decompressed content of a gzip file (None when it is not valid gzip)."""
    h = hashlib.md5()
    try:
        with gzip.open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(CHUNK), b""):
                h.update(chunk)
    except (OSError, EOFError):
        return None
    return h.hexdigest()


def verify(f: FileSpec, path: Path) -> None:
    """Raise DataError unless ``path`` holds ``f`` (md5, gunzipped md5 or content check)."""
    got = md5sum(path) if f.md5 is not None else None
    if got != f.md5 and (f.raw_md5 is None or gunzip_md5(path) != f.raw_md5):
        raise DataError(f"checksum mismatch for {f.relpath}: md5 {got}, expected {f.md5}"
                        + (f" (or gunzipped content md5 {f.raw_md5})" if f.raw_md5 else ""))
    if f.check is not None:
        f.check(path)


def local_sources(spec: DatasetSpec, f: FileSpec) -> list[Path]:
    """Existing local copies of ``f``: the mirror first, then the data set's system dirs."""
    out = []
    m = mirror_dir()
    if m is not None and (m / f.folder / f.name).is_file():
        out.append(m / f.folder / f.name)
    for d in spec.system_dirs:
        if (Path(d) / f.name).is_file():
            out.append(Path(d) / f.name)
    return out


class _WriteFailure(Exception):
    """Writing the cache failed (full disk, quota, I/O error): not the source's fault."""


def _install(f: FileSpec, fill) -> Path:
    """Write ``f`` to the cache through ``fill(write)`` into a temp file, fsync, verify,
    os.replace. ``fill`` calls ``write(chunk)`` for each chunk it reads from its source."""
    dest = cache_path(f)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = make_temp(dest.parent, f.name)
    except OSError as exc:
        raise DataError(f"cannot write the data cache {dest.parent}: {exc.strerror or exc}; "
                        f"set MIXLAB_DATA_DIR to a writable directory") from None
    kept = f" (the previous copy {dest} was kept)" if dest.exists() else ""
    try:
        with os.fdopen(fd, "wb") as fh:
            def write(chunk: bytes) -> None:
                try:
                    fh.write(chunk)
                except OSError as exc:
                    raise _WriteFailure(exc) from exc
            fill(write)
            try:
                fh.flush()
                os.fsync(fh.fileno())
            except OSError as exc:
                raise _WriteFailure(exc) from exc
        try:
            verify(f, tmp)
        except DataError as exc:
            raise DataError(f"{exc}; the file was not installed{kept}") from exc
        os.replace(tmp, dest)
        sync_directory(dest.parent)
    except _WriteFailure as exc:
        cause = exc.args[0]
        raise DataError(f"could not write {f.relpath} into {dest.parent}: "
                        f"{getattr(cause, 'strerror', None) or cause}; nothing was installed"
                        f"{kept}. Free space (or set MIXLAB_DATA_DIR to a disk with room) and "
                        f"run the same command again") from None
    except OSError as exc:  # closing or renaming the temporary file failed
        raise DataError(f"could not install {f.relpath} into {dest.parent}: "
                        f"{exc.strerror or exc}; nothing was installed{kept}. Free space (or "
                        f"set MIXLAB_DATA_DIR to a disk with room) and run the same command "
                        f"again") from None
    finally:
        try:
            if tmp.exists():
                tmp.unlink()
        except OSError:
            pass
    return dest


def install_local(f: FileSpec, src: Path) -> Path:
    """Copy a local file (mirror or system dir) into the cache, verified."""
    def fill(write):
        with open(src, "rb") as s:
            for chunk in iter(lambda: s.read(CHUNK), b""):
                write(chunk)
    try:
        return _install(f, fill)
    except DataError as exc:
        msg = str(exc)
        if "could not write" in msg or "could not install" in msg:
            raise
        raise DataError(f"{msg} [source: {src}]") from None


def download(f: FileSpec) -> Path:
    """Download ``f.url`` into the cache, verified."""
    if f.url is None:
        raise DataError(f"{f.relpath} cannot be downloaded directly; put it in a mirror "
                        f"directory as <mirror>/{f.relpath} and set MIXLAB_DATA_MIRROR")

    def fill(write):
        try:
            with urlopen(f.url, timeout=60) as resp:
                for chunk in iter(lambda: resp.read(CHUNK), b""):
                    write(chunk)  # a write failure is a _WriteFailure, not caught here
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise DataError(f"could not download {f.url}: {exc}. Without internet access, "
                            f"set MIXLAB_DATA_MIRROR to a directory holding {f.relpath}") \
                from None
    try:
        return _install(f, fill)
    except DataError as exc:
        msg = str(exc)
        if "could not download" not in msg and "could not write" not in msg \
                and "could not install" not in msg:
            msg += f" [source: {f.url}]"
        raise DataError(msg) from None


def installed_alternative(spec: DatasetSpec) -> int | None:
    """Index of the first alternative whose files are all in the cache, else None."""
    for i, alt in enumerate(spec.alternatives):
        if all(cache_path(f).is_file() for f in alt):
            return i
    return None


def local_alternative(spec: DatasetSpec) -> int | None:
    """Index of the first alternative whose files are each in the cache or a local source."""
    for i, alt in enumerate(spec.alternatives):
        if all(cache_path(f).is_file() or local_sources(spec, f) for f in alt):
            return i
    return None


def fetch_spec(spec: DatasetSpec, *, force: bool = False, network: bool = True,
               log=None) -> int:
    """Install one alternative of ``spec``; returns its index.

    Order: files already in the cache (unless ``force``), the mirror, the system dirs, then
    (if ``network``) the canonical URLs. Raises DataError when nothing works."""
    log = log or (lambda msg: None)
    if not force:
        alt = installed_alternative(spec)
        if alt is not None:
            return alt
    alt = local_alternative(spec)
    if alt is None:
        if not network:
            raise missing_error(spec)
        # the first alternative whose files all have a local copy or a URL
        for i, files in enumerate(spec.alternatives):
            if all(f.url or cache_path(f).is_file() or local_sources(spec, f) for f in files):
                alt = i
                break
        else:
            raise missing_error(spec)
    # local copies first, so a failing download leaves everything else installed
    todo = sorted(spec.alternatives[alt], key=lambda f: not local_sources(spec, f))
    for f in todo:
        if cache_path(f).is_file() and not force:
            continue
        sources = local_sources(spec, f)
        if sources:
            log(f"installing {f.relpath} from {sources[0]}")
            install_local(f, sources[0])
        elif network:
            log(f"downloading {f.url}")
            download(f)
        else:
            raise missing_error(spec)
    return alt


def missing_error(spec: DatasetSpec) -> DataError:
    alt = spec.alternatives[0]
    missing = [f.relpath for f in alt if not cache_path(f).is_file()]
    m = mirror_dir()
    where = (f"MIXLAB_DATA_MIRROR={m} does not hold them" if m is not None
             else "MIXLAB_DATA_MIRROR is not set")
    others = ""
    if len(spec.alternatives) > 1:
        others = " (or " + " or ".join(", ".join(f.relpath for f in a)
                                       for a in spec.alternatives[1:]) + ")"
    return DataError(
        f"data set '{spec.name}' is not installed in {data_dir()} (missing: "
        f"{', '.join(missing)}{others}); {where}. Run `mixlab data fetch {spec.name}` to "
        f"download it, or set MIXLAB_DATA_MIRROR to a local mirror directory laid out as "
        f"<mirror>/{alt[0].folder}/<file>.")


def get_spec(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, list(DATASETS), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise UsageError(f"unknown data set '{name}'{hint}; known: {', '.join(DATASETS)}") \
            from None
