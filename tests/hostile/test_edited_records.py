"""A stream's ``inputs`` record edited to hold values of the wrong type (lists or mappings where
mixlab writes text, numbers where it writes mappings) is refused with one line naming the run
file, the attribute and the key by ``run --update`` (which plans from the records), never a
Python exception (``TypeError: unhashable ...``, ``AttributeError``); ``show`` and ``show
--json`` still show the run (they say nothing of staleness they cannot judge)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import pytest
from click.testing import CliRunner

from mixlab.cli import cli

REPO = Path(__file__).resolve().parents[2]
SPEC = str(REPO / "experiments/toy/gaussian.yaml")
EDITS = [("common", [1]), ("common", {"a": 1}), ("samplers", [[1]]), ("code", 3),
         ("code", [1]), ("code.experiment", [1]), ("code.experiment", {"a": [1]}),
         ("code.experiment.module", {"a": 1}), ("after", "x"), ("after", [[1]]),
         ("labels", [1]), ("sampler", {"name": [1]})]


@pytest.mark.parametrize("key, value", EDITS, ids=[f"{k}={json.dumps(v)}" for k, v in EDITS])
def test_an_edited_record_is_one_line_naming_the_file_and_key(toy_run, tmp_path, key, value):
    run = tmp_path / "run"
    shutil.copytree(toy_run, run)
    with h5py.File(run / "run.h5", "r+") as f:
        rec = json.loads(f["streams/rwm"].attrs["inputs"])
        *parents, last = key.split(".")
        cur = rec
        for k in parents:
            cur = cur[k]
        cur[last] = value
        f["streams/rwm"].attrs["inputs"] = json.dumps(rec)
    for args in (["show", run], ["show", "--json", run],
                 ["run", SPEC, "--out", run, "-q", "budget.draws=100", "--update"]):
        r = CliRunner().invoke(cli, [str(a) for a in args])
        assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.exception)
        if args[0] == "show":
            assert r.exit_code == 0 and "Error" not in r.output, (args, r.output)
            continue
        assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1, (args, r.output)
        assert "run.h5: the 'inputs' attribute of '/streams/rwm'" in r.output, r.output
        assert f"its '{key.split('.')[0]}'" in r.output, r.output
