"""The perturb-and-MAP log Z experiment (Fig 1 left) under ``-j 2``: its couplings are
independent stages computed in worker processes, and the run file holds the values one process
writes (every stage dataset and result but the timings)."""

from pathlib import Path

import h5py

from mixlab.run.context import execute
from mixlab.spec.resolver import load_spec

SPECS = Path(__file__).resolve().parents[2] / "experiments" / "perturb_map"


def _stages(run: Path) -> dict:
    out = {}
    with h5py.File(run / "run.h5", "r") as f:
        def visit(key, obj):
            if isinstance(obj, h5py.Dataset) and "seconds" not in key:   # timings differ
                out[key] = obj[()].tobytes()
        f["stages"].visititems(visit)
        results = {k: v for k, v in f["results"].attrs.items() if "seconds" not in k}
    return out, results


def test_fig1_left_stages_with_two_jobs_are_those_of_one(tmp_path):
    # weak couplings: NTRW's optimiser (most of the run) takes 1/3 of the time it takes at
    # c = 1-2; any coupling proves the stages equal, three of them (more than the jobs, out
    # of order) make one worker compute two
    spec = load_spec(SPECS / "fig1_left.yaml", overrides=[
        "grid.rows=3", "grid.cols=3", "couplings=[0.25,0.5,0.1]", "models=2",
        "perturbations=3", "copies=200", "probable_draws=1"])
    for jobs in (1, 2):
        assert execute(spec, tmp_path / f"j{jobs}", quiet=True, render=False,
                       jobs=jobs)[1] == "ran"
    one, two = _stages(tmp_path / "j1"), _stages(tmp_path / "j2")
    assert sorted(one[0]) == sorted(two[0]) and len([k for k in one[0] if "logz" in k]) == 3
    assert one == two
