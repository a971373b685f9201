"""The run file's format belongs to its store (mixlab/runfile/): no module elsewhere reaches
the raw h5py handle of a run (``store.f``, ``run.f``) or names the checkpoint layout
(``_checkpoint``); they call RunStore/RunReader methods. Parsed, not imported, like the import
layers test."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mixlab"
LAYOUT = re.compile(r"(?<![A-Za-z0-9_])_checkpoint\b")
#: names a run's store or reader goes by
HOLDERS = {"store", "run", "r", "reader", "src"}


def _holder(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def violations(root: Path = PACKAGE) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        if root / "runfile" in path.parents:
            continue
        tree = ast.parse(path.read_text(), str(path))
        rel = path.relative_to(root.parent)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "f" \
                    and _holder(node.value) in HOLDERS:
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)} (the run's h5py handle)")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and LAYOUT.search(node.value):
                out.append(f"{rel}:{node.lineno}: {node.value!r} (the checkpoint layout)")
    return out


def test_no_module_outside_runfile_touches_a_runs_h5py_handle_or_its_checkpoint_layout():
    assert violations() == []


def test_the_check_finds_what_it_forbids(tmp_path):
    pkg = tmp_path / "mixlab"
    (pkg / "runfile").mkdir(parents=True)
    (pkg / "runfile" / "store.py").write_text("x = store.f['a']\ny = '_checkpoint'\n")
    (pkg / "user.py").write_text("a = ctx.store.f.get('streams')\nb = run.f['x']\n"
                                 "c = g['_checkpoint']\nd = other.f\ne = save_checkpoint\n")
    found = violations(pkg)
    assert sorted(int(v.split(":")[1]) for v in found) == [1, 2, 3], found


#: modules outside runfile/ that open HDF5 files of their own (not run files): reasons
OWN_HDF5 = {"mixlab/rbm/model.py": "the RBM model file",
            "mixlab/rbm/model_file.py": "the RBM model file",
            "mixlab/rbm/train.py": "the trainer's model file",
            "mixlab/data/parsers.py": "data sets stored as HDF5 (USPS)"}


def test_only_runfile_and_the_model_and_data_readers_import_h5py():
    """Walking or deleting a run's groups (the --update plan, its discard) goes through
    mixlab.runfile.records: no execution, sweep, league or CLI module imports h5py."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if PACKAGE / "runfile" in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == "h5py" or n.startswith("h5py.") for n in names):
                found.add(str(path.relative_to(PACKAGE.parent)))
    assert found == set(OWN_HDF5), found
