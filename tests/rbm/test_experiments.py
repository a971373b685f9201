"""Rates-FPCD experiments end to end through the foundation (tiny specs, seconds)."""

import hashlib
import json
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from threadpoolctl import threadpool_limits

from mixlab import data as mdata
from mixlab.errors import SpecError
from mixlab.run.context import execute
from mixlab.run.update import plan
from mixlab.run.workers import available_cores
from mixlab.runfile.records import read_records
from mixlab.runfile.store import RunReader
from mixlab.spec.resolver import load_spec, resolve

SPECS = Path(__file__).resolve().parents[2] / "experiments" / "rates_fpcd"


def _need_usps():
    try:
        inf = mdata.info("usps")
    except Exception as exc:  # pragma: no cover
        pytest.skip(f"usps unavailable: {exc}")
    if not (inf["installed"] or inf["installable_offline"]):
        pytest.skip("USPS is not installed and no MIXLAB_DATA_MIRROR is set")


TINY = {
    "experiment": "rates_fpcd.isl", "name": "tiny", "seed": 3,
    "data": {"name": "usps", "binarize": 0.5},
    "train": {"trainer": "fpcd", "hidden": 12, "epochs": 1, "fast_lr": 0.05,
              "fast_decay": 0.95, "monitor_size": 100},
    "samplers": {"gibbs": {"method": "gibbs"},
                 "sp": {"method": "sample-penalization", "eps_f": 0.01, "alpha": 0.9},
                 "herd": {"method": "rates-herding", "eps_f": 0.1, "k": 20},
                 "rf": {"method": "rates-fpcd", "eps_f": 0.01}},
    "chains": 2, "budget": {"draws": 150},
    "isl": {"points": 6, "test_max": 150, "valid_max": 150, "reference": "gibbs",
            "speedup_at": [10]},
    "sequence": {"length": 5},
}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    _need_usps()
    spec = resolve(TINY)
    d = tmp_path_factory.mktemp("rf") / "run"
    # -j 1, its process allowed two BLAS threads (test_jobs_2_writes_the_bytes_of_jobs_1)
    with threadpool_limits(2, user_api="blas"):
        execute(spec, d, quiet=True, jobs=1)
    return spec, d


def test_tiny_isl_run(tiny_run):
    spec, d = tiny_run
    with RunReader(d) as r:
        assert r.status == "complete"
        res = r.results()
        m = r.metrics()
        for lab in ("gibbs", "sp", "herd", "rf"):
            c = m["isl"][lab]
            assert c["x"][-1] == 300 and 10 in c["x"]  # 2 chains x 150 draws; speedup point
            assert np.all(np.isfinite(c["y"])) and np.all(c["yerr"] > 0)
            assert res[f"isl_final/{lab}"] == pytest.approx(c["y"][-1])
            assert r.stream(lab, "samples").shape == (2, 150, 256)
        assert res["data_used"] == "usps" and res["hidden"] == 12
        assert res["isl_train_set"] < 0
        assert "speedup/rf" in res and "speedup@10/rf" in res
        assert r.array("sequence/rf").shape == (5, 256)
        assert (d / "figures" / "rates_fpcd.isl_curves.png").stat().st_size > 0
    # re-running a complete run is a no-op
    assert execute(spec, d, quiet=True)[1] == "complete"


def test_isl_figure_puts_its_speedup_notes_in_a_caption_not_over_the_curves(tiny_run):
    """The speed-up lines are the figure's notes (mixlab.figure_notes): none is drawn on the
    axes; mixlab plot writes them below the axes, a report in the caption."""
    from mixlab.plotting import draw

    _, d = tiny_run
    with RunReader(d) as r:
        png, notes = draw(r, "rates_fpcd.isl_curves", notes_below=False)
        below, same = draw(r, "rates_fpcd.isl_curves")
    assert any(n.startswith("herd vs gibbs: ") for n in notes) and notes == same
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(below) > len(png)   # taller, with the notes
    from matplotlib.figure import Figure

    from mixlab.rbm.figures import fig_isl

    fig = Figure()
    with RunReader(d) as r:
        fig_isl(r, fig)
    assert len(fig.axes[0].texts) == 0 and len(fig.texts) == 0


def test_same_seed_same_curves(tiny_run, tmp_path):
    spec, d = tiny_run
    d2 = tmp_path / "again"
    execute(spec, d2, quiet=True, render=False)
    with RunReader(d) as a, RunReader(d2) as b:
        for lab, c in a.metrics()["isl"].items():
            np.testing.assert_array_equal(c["y"], b.metrics()["isl"][lab]["y"])
        np.testing.assert_array_equal(a.stream("rf", "samples"), b.stream("rf", "samples"))


def _untimed_contents(run_dir: Path) -> dict:
    """A digest of every dataset and result of the run except its wall-clock timings."""
    out = {}
    with h5py.File(run_dir / "run.h5", "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and not name.endswith(("/time", "_seconds")):
                out[name] = (obj.dtype.str, obj.shape,
                             hashlib.sha256(np.ascontiguousarray(obj[()]).tobytes()).hexdigest())
        f.visititems(visit)
        for k, v in f["results"].attrs.items():
            if not k.startswith(("seconds/", "ms_per_sample/")):
                out[f"results/{k}"] = np.asarray(v).tobytes()
    return out


@pytest.mark.skipif(available_cores() < 2, reason="needs two cores for -j 2")
def test_jobs_2_writes_the_bytes_of_jobs_1(tiny_run, tmp_path):
    """Streams sample and evaluate with one BLAS thread whatever -j: the ISL evaluator's float32
    GEMMs sum in the same order in a worker as in a -j 1 run whose process has two BLAS threads,
    so every dataset and result (ISL curves and tables included) is the same bytes."""
    spec, d = tiny_run
    assert execute(spec, tmp_path / "par", quiet=True, render=False, jobs=2)[1] == "ran"
    assert "independent streams in 2 worker processes" in (tmp_path / "par/log.txt").read_text()
    serial, par = _untimed_contents(d), _untimed_contents(tmp_path / "par")
    assert "metrics/isl/rf/y" in serial and "arrays/isl_table/sp/test" in serial
    assert par.keys() == serial.keys()
    assert [k for k in serial if par[k] != serial[k]] == []


def test_sp_alpha_one_is_a_spec_error(tmp_path):
    _need_usps()
    bad = json.loads(json.dumps(TINY))
    bad["samplers"] = {"sp": {"method": "sample-penalization", "eps_f": 0.01, "alpha": 1.0}}
    with pytest.raises(SpecError, match="samplers.sp.alpha"):
        execute(resolve(bad), tmp_path / "x", quiet=True)


def test_bias_run_exact(tmp_path):
    _need_usps()
    spec = resolve({
        "experiment": "rates_fpcd.bias", "name": "bias", "seed": 1,
        "data": {"name": "usps", "binarize": 0.5},
        "train": {"trainer": "pcd", "hidden": 8, "epochs": 1, "monitor_size": 100},
        "samplers": {"rf": {"method": "rates-fpcd", "eps_f": 0.01}},
        "budget": {"draws": 50}, "ll": {"points": 3},
    })
    # no figures: tests/foundation/test_figure_axes.py draws rates_fpcd.bias from such a run
    execute(spec, tmp_path / "b", quiet=True, render=False)
    with RunReader(tmp_path / "b") as r:
        res = r.results()
        c = r.metrics()["ll_eff"]["rf"]
        assert res["ll_method"] == "exact"
        assert list(c["x"]) == [1, 7, 50]
        assert np.all(np.isfinite(c["y"])) and np.all(c["y"] < 0)
    # its streams nest ('rf/seg00'): each is recorded, so an unchanged spec has nothing stale
    with h5py.File(tmp_path / "b" / "run.h5", "r") as f:
        todo = plan(read_records(f), spec)
    assert sorted(todo.keep) == ["rf/seg00", "rf/seg01", "rf/seg02"]
    assert not (todo.rerun or todo.remove or todo.stages or todo.add), todo
    # the points' log-likelihoods are independent stages: -j 2 computes them in worker
    # processes and writes the same values
    execute(spec, tmp_path / "b2", quiet=True, render=False, jobs=2)
    with RunReader(tmp_path / "b2") as r:
        c2 = r.metrics()["ll_eff"]["rf"]
        assert list(c2["x"]) == list(c["x"]) and np.array_equal(c2["y"], c["y"])
        assert r.results()["ll_final/rf"] == res["ll_final/rf"]


def test_figure_specs_resolve():
    """Every shipped spec validates at both scales."""
    files = sorted(SPECS.glob("*.yaml"))
    assert len(files) >= 5
    for f in files:
        for scale in ("quick", "paper"):
            load_spec(f, scale=scale)


def test_cli_sample_and_evaluate(tmp_path, monkeypatch):
    _need_usps()
    from mixlab.cli import cli
    from mixlab.rbm.model import RBM

    rng = np.random.default_rng(0)
    model = tmp_path / "m.h5"
    RBM(rng.standard_normal((256, 10)).astype(np.float32) * 0.1, np.zeros(256, np.float32),
        np.zeros(10, np.float32)).save(model)
    runner = CliRunner()
    out = tmp_path / "s"
    r = runner.invoke(cli, ["sample", str(model), "--method", "rates-fpcd", "--n-samples", "60",
                            "--chains", "2", "--emit", "both", "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["evaluate", "isl", str(out), "--points", "4", "--test-max", "50"])
    assert r.exit_code == 0, r.output
    with RunReader(out) as rr:
        c = rr.metrics()["isl"]["rates-fpcd"]
        assert c["x"][-1] == 60
        assert rr.stream("rates-fpcd", "samples").shape == (2, 30, 256)
        summ = rr.stream_summaries("rates-fpcd")  # mixing diagnostics' per-draw scalars
        assert summ["free_energy"].shape == (2, 30) and np.all(np.isfinite(summ["free_energy"]))
        np.testing.assert_array_equal(summ["active_pixels"],
                                      rr.stream("rates-fpcd", "samples").sum(-1))
    r = runner.invoke(cli, ["evaluate", "isl", str(out), "--json", "--key", "samples",
                            "--points", "3", "--test-max", "50"])
    assert r.exit_code == 0
    assert json.loads(r.output)["rates-fpcd"]["key"] == "samples"
    r = runner.invoke(cli, ["sample", str(model), "--method", "sample-penalization",
                            "--alpha", "1", "-o", str(tmp_path / "t")])
    assert r.exit_code == 2 and "alpha" in r.output
    r = runner.invoke(cli, ["sample", str(model), "--method", "rates-herding", "--emit", "means",
                            "-o", str(tmp_path / "t")])
    assert r.exit_code == 2 and "binary" in r.output


def test_interrupted_isl_run_resumes_to_the_same_curves(tmp_path, monkeypatch):
    """Interrupted in the middle of a rates-FPCD stream (after its ISL evaluator has recorded
    points and checkpointed its histograms), the resumed run ends with the same ISL curves,
    tables, draws and summaries as an uninterrupted one."""
    _need_usps()
    from mixlab.rbm import samplers as S

    monkeypatch.setenv("MIXLAB_CHECKPOINT_SECONDS", "0")
    raw = {**TINY, "samplers": {"gibbs": {"method": "gibbs"},
                                "rf": {"method": "rates-fpcd", "eps_f": 0.01}},
           "budget": {"draws": 120}, "block": 25, "sequence": {"length": 0}}
    spec = resolve(raw)
    execute(spec, tmp_path / "whole", quiet=True, render=False)
    calls = {"n": 0}
    real_step = S.RatesFPCD.step

    def flaky(self, state, rng):
        calls["n"] += 1
        if calls["n"] == 87:  # mid-block, after three checkpointed blocks of rf
            raise KeyboardInterrupt
        return real_step(self, state, rng)

    monkeypatch.setattr(S.RatesFPCD, "step", flaky)
    with pytest.raises(KeyboardInterrupt):
        execute(spec, tmp_path / "cut", quiet=True, render=False)
    with RunReader(tmp_path / "cut") as r:
        assert r.status == "interrupted"
        assert r.stream("rf", "samples").shape[1] == 75
    monkeypatch.setattr(S.RatesFPCD, "step", real_step)
    execute(spec, tmp_path / "cut", quiet=True, render=False)
    with RunReader(tmp_path / "whole") as a, RunReader(tmp_path / "cut") as b:
        assert b.status == "complete"
        for lab in ("gibbs", "rf"):
            ca, cb = a.metrics()["isl"][lab], b.metrics()["isl"][lab]
            np.testing.assert_array_equal(ca["x"], cb["x"])
            np.testing.assert_array_equal(ca["y"], cb["y"])
            np.testing.assert_array_equal(ca["yerr"], cb["yerr"])
            np.testing.assert_array_equal(a.array(f"isl_table/{lab}/test"),
                                          b.array(f"isl_table/{lab}/test"))
            np.testing.assert_array_equal(a.stream(lab, "samples"), b.stream(lab, "samples"))
            sa, sb = a.stream_summaries(lab), b.stream_summaries(lab)
            assert set(sa) == set(sb) and len(sa) == 5
            for k in sa:
                np.testing.assert_array_equal(sa[k], sb[k])
        ra, rb = a.results(), b.results()
        for k in ra:
            if not k.startswith(("seconds/", "ms_per_sample/")):
                assert ra[k] == rb[k], k


def test_cli_train_sample_plot_evaluate_plot(tmp_path):
    """The card's path ends in a picture: train -> sample -> plot (a grid of consecutive
    samples) -> evaluate isl -> plot (the ISL curve that evaluate stored)."""
    _need_usps()
    from matplotlib.figure import Figure

    from mixlab.cli import cli
    from mixlab.plugins import registry

    runner = CliRunner()
    model, run = tmp_path / "m.h5", tmp_path / "run"
    r = runner.invoke(cli, ["train", "--data", "usps", "--hidden", "8", "--epochs", "1",
                            "--max-train", "300", "--no-eval", "-o", str(model)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["sample", str(model), "--method", "rates-fpcd", "--n-samples", "40",
                            "--emit", "both", "-o", str(run), "-q"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["plot", str(run)])
    assert r.exit_code == 0, r.output
    grid = run / "figures" / "rates_fpcd.sample_grid.png"
    isl_png = run / "figures" / "rates_fpcd.sample_isl.png"
    assert grid.stat().st_size > 0
    assert not isl_png.exists()  # no ISL yet: skipped, with how to compute it
    assert f"skipped rates_fpcd.sample_isl: no ISL stored yet: mixlab evaluate isl {run}" in r.output
    r = runner.invoke(cli, ["plot", str(run), "--figure", "rates_fpcd.sample_isl"])
    assert r.exit_code == 1 and "no ISL stored yet" in r.output and not isl_png.exists()
    with RunReader(run) as rr:
        fig = Figure()
        registry.all_figures()["rates_fpcd.sample_grid"].draw(rr, fig)
        mosaic = fig.axes[0].get_images()[0].get_array()
        # 40 draws of 16x16 in 10 columns: 4 rows of (16 + 1)-pixel cells; cell 0 = 1 - draw 0
        assert mosaic.shape == (4 * 17, 10 * 17)
        first = rr.stream("rates-fpcd", "means")[0, 0].reshape(16, 16)
        np.testing.assert_allclose(mosaic[:16, :16], 1 - first, atol=1e-6)
    r = runner.invoke(cli, ["evaluate", "isl", str(run), "--points", "4", "--test-max", "50"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["plot", str(run), "--figure", "rates_fpcd.sample_isl"])
    assert r.exit_code == 0, r.output
    assert isl_png.stat().st_size > 0
    with RunReader(run) as rr:
        c = rr.metrics()["isl"]["rates-fpcd"]
        fig = Figure()
        registry.all_figures()["rates_fpcd.sample_isl"].draw(rr, fig)
        line = fig.axes[0].get_lines()[0]
        np.testing.assert_array_equal(line.get_xdata(), c["x"])
        np.testing.assert_array_equal(line.get_ydata(), c["y"])
        assert fig.axes[0].get_xscale() == "log"
