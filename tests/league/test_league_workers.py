"""A league on forked workers (-j 2) or on a Dask cluster (--scheduler) gives the same
draw-determined numbers as in one process."""

import os

import pytest

from mixlab.league.league import _start_method, run_league
from mixlab.spec.builtin import resolve_spec
from mixlab.spec.resolver import load_spec
from tests.league.conftest import draw_determined_table, no_league_figure


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """The league run in this process (the reference table: no figure): its spec and its
    directory. The time streams are short: only the draw-determined columns are compared."""
    tmp = tmp_path_factory.mktemp("league-workers")
    mp = pytest.MonkeyPatch()
    mp.setenv("MIXLAB_DATA_DIR", str(tmp / "data"))
    spec = load_spec(resolve_spec("league/spinglass"), scale="quick", overrides=[
        "targets=[attractive-c0.5,mixed-c1.5]", "only_samplers=[gibbs,metropolis]",
        "seeds=2", "chains=4", "seconds=0.03", "work=4e4", "block=10"])
    with no_league_figure():
        _, entries = run_league(spec, tmp / "one", workers=1)
    assert [e.status for e in entries] == ["complete"] * 4
    yield spec, tmp / "one"
    mp.undo()


def test_forked_workers_give_the_one_process_table(one_process, tmp_path):
    spec, one = one_process
    _, two = run_league(spec, tmp_path / "two", workers=2)
    assert _start_method() == "fork"                    # Linux: the workers are forked
    assert [e.status for e in two] == ["complete"] * 4
    assert draw_determined_table(one) == draw_determined_table(tmp_path / "two")
    assert all(e.get("work/ess_per_munit/median") > 0 for e in two)


def test_a_dask_cluster_gives_the_one_process_table(one_process, tmp_path):
    """One worker process: the cells run away from this process, through the portable (tar)
    path; two workers sharing a sweep, and one of them killed, are
    tests/sweeps/test_sweep_dask.py's."""
    distributed = pytest.importorskip("dask.distributed")
    spec, one = one_process
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        text, cells = run_league(spec, tmp_path / "dask", scheduler=cluster.scheduler_address)
        address = cluster.scheduler_address
    assert [e.status for e in cells] == ["complete"] * 4
    assert draw_determined_table(one) == draw_determined_table(tmp_path / "dask")
    assert f"on the Dask cluster at {address}" in text.splitlines()[1]


def test_two_workers_compute_each_truth_once_in_the_cells(tmp_path, monkeypatch):
    """With -j 2 each target's truth is computed once, in a worker (the cells of a target
    wait for it and read it from the cache), and a target that cannot be built fails its own
    cells alone, with the reason."""
    from mixlab.league import targets, truth

    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path / "data"))
    log = tmp_path / "computed.log"
    real = truth._cached_truth

    def logged(family, definition, compute):
        def counted():
            with open(log, "a") as fh:                   # one line per computation
                fh.write(f"{os.getpid()} {definition['s']}\n")
            return compute()
        return real(family, definition, counted)
    monkeypatch.setattr(truth, "_cached_truth", logged)
    real_build = targets.build

    def build(family, definition, init="random"):
        if definition["s"] == 0.1:
            raise RuntimeError("this target cannot be built")
        return real_build(family, definition, init)
    monkeypatch.setattr(targets, "build", build)
    spec = load_spec(resolve_spec("league/mrf"), scale="quick", overrides=[
        "only_samplers=[exact,exact_lookup]", "seeds=1", "chains=2", "seconds=0.02", "work=2e3",
        "block=5"])
    with no_league_figure():
        _, entries = run_league(spec, tmp_path / "league", workers=2)
    status = {(e.target, e.sampler): (e.status, e.error) for e in entries}
    assert len(status) == 6
    for (target, _), (state, error) in status.items():
        if target == "d12-s0.1":
            assert state == "failed" and "this target cannot be built" in error
        else:
            assert state == "complete"
    lines = log.read_text().split()
    computed = lines[1::2]
    assert sorted(computed) == ["0.02", "0.3"]           # each good truth once
    assert str(os.getpid()) not in lines[0::2]           # in the workers, not here
