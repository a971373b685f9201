"""``mixlab league FAMILY --power R`` runs its leagues' cells where a league's cells run:
on ``-j`` worker processes or on a Dask cluster (``--scheduler``)."""

from __future__ import annotations

import csv

import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.league.power import power_raw, run_power
from mixlab.spec.builtin import resolve_spec
from mixlab.spec.resolver import load_yaml, resolve
from tests.league.conftest import draw_determined_table, no_league_figure

TINY = ["targets=[mixed-c1.5]", "only_samplers=[beta0.6]", "seeds=2", "chains=4",
        "seconds=0.03", "work=4e4", "block=10"]


def test_power_hands_its_workers_and_scheduler_to_the_leagues(monkeypatch, tmp_path):
    from mixlab.league import power

    seen = []
    monkeypatch.setattr(power, "run_power", lambda specs, out, workers, quiet, scheduler:
                        seen.append((len(specs), workers, scheduler)) or ("", 0))
    r = CliRunner().invoke(cli, ["league", "spinglass", "--power", "2", "-j", "2",
                                 "--scheduler", "tcp://127.0.0.1:1", "--targets", "mixed-c1.5",
                                 "-o", str(tmp_path / "p")])
    assert r.exit_code == 0, r.output
    assert seen == [(2, 2, "tcp://127.0.0.1:1")]


def _specs(repeats: int) -> list[dict]:
    raw = power_raw(load_yaml(resolve_spec("league/spinglass")), "spinglass")
    return [resolve(raw, overrides=TINY, scale="quick", seed=29 + r) for r in range(repeats)]


def test_power_leagues_run_on_a_dask_cluster(tmp_path, monkeypatch):
    """Each repeat's cells run on the cluster (its league says so) and its columns that
    depend on the draws alone are those of the same repeat run in this process."""
    distributed = pytest.importorskip("dask.distributed")
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path / "data"))
    specs = _specs(2)
    with no_league_figure():
        run_power(specs, tmp_path / "here")
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster:
            md, incomplete = run_power(specs, tmp_path / "dask",
                                       scheduler=cluster.scheduler_address)
            address = cluster.scheduler_address
    biased = [row["verdict"] == "biased" for r in ("r0", "r1")
              for row in csv.DictReader(open(tmp_path / "dask" / r / "league.csv"))]
    assert incomplete == 0 and f"| mixed-c1.5 | {sum(biased) / 2:.2f} |" in md
    for r in ("r0", "r1"):
        info = (tmp_path / "dask" / r / "league.json").read_text()
        assert address in info
        assert (draw_determined_table(tmp_path / "dask" / r)
                == draw_determined_table(tmp_path / "here" / r))
    assert (tmp_path / "dask" / "power.md").read_text() == md
