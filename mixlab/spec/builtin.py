"""The papers' specs shipped with the package: ``mixlab run rates_fpcd/fig2`` works after a plain
``pip install``, without a clone of the repository.

The specs live in the repository's ``experiments/<paper>/<name>.yaml`` (where the Makefile, the
README and the papers' helpers keep them); ``mixlab/specs`` is a symbolic link to that directory,
so a checkout (editable install) reads them in place and a built wheel carries copies as package
data (``mixlab/specs/<paper>/<name>.yaml``). A built-in spec's name is ``<paper>/<name>``.

Resolution rule (:func:`resolve_spec`): a path that exists always wins; otherwise a built-in
name (with or without ``.yaml``, with or without a leading ``experiments/``) is looked up here.
"""

from __future__ import annotations

import difflib
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import SpecError, UsageError

SPECS_DIR = Path(__file__).resolve().parents[1] / "specs"


@dataclass(frozen=True)
class BuiltinSpec:
    """One shipped spec: ``name`` = '<paper>/<stem>', its file and its first comment line."""

    name: str
    path: Path
    summary: str


def _summary(path: Path) -> str:
    """The spec's first comment line (its title), without the leading '#'."""
    try:
        for line in path.read_text().splitlines():
            line = line.strip()
            if line.startswith("#"):
                return line.lstrip("#").strip()
            if line:
                break
    except (OSError, UnicodeDecodeError):
        pass
    return ""


def builtin_specs() -> list[BuiltinSpec]:
    """Every shipped spec, sorted by name (empty when the package holds none)."""
    if not SPECS_DIR.is_dir():
        return []
    return [BuiltinSpec(f"{p.parent.name}/{p.stem}", p, _summary(p))
            for p in sorted(SPECS_DIR.glob("*/*.yaml"))]


def _normalise(name: str) -> str:
    name = name.strip().replace("\\", "/")
    for prefix in ("experiments/", "./experiments/"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name[:-5] if name.endswith(".yaml") else name


def find_builtin(name: str) -> BuiltinSpec | None:
    """The shipped spec called ``name`` ('rates_fpcd/fig2', 'rates_fpcd/fig2.yaml' or
    'experiments/rates_fpcd/fig2.yaml'), else None."""
    wanted = _normalise(name)
    return next((s for s in builtin_specs() if s.name == wanted), None)


def unknown_spec_error(name: str) -> SpecError:
    names = [s.name for s in builtin_specs()]
    close = difflib.get_close_matches(_normalise(name), names, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    return SpecError(f"spec file {name} does not exist, and no built-in spec has that name."
                     f"{hint} 'mixlab specs list' lists the built-in specs (names like "
                     f"rates_fpcd/fig2); give a path to a YAML file to run your own")


def resolve_spec(arg: str) -> str:
    """The file to load for the SPEC argument ``arg``: ``arg`` itself when that path exists,
    else the shipped spec of that name. Raises SpecError for a name that is neither."""
    if Path(arg).exists():
        return arg
    found = find_builtin(arg)
    if found is not None:
        return str(found.path)
    raise unknown_spec_error(arg)


def copy_builtin(name: str, dest: str | None = None, *, force: bool = False) -> Path:
    """Copy shipped spec ``name`` to ``dest`` (a file, or a directory to copy into; default:
    '<stem>.yaml' in the current directory) so it can be edited; returns the new file."""
    found = find_builtin(name)
    if found is None:
        raise unknown_spec_error(name)
    target = Path(dest) if dest else Path(found.path.name)
    if target.is_dir():
        target = target / found.path.name
    if target.exists() and not force:
        raise UsageError(f"{target} already exists; choose another destination or pass --force "
                         f"to overwrite it")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(found.path, target)
    return target
