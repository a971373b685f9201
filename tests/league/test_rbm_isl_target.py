"""The full-resolution USPS RBM target scored by ISL: its cached truth, its yardstick against
the ISL computed two other ways, its sign and reference, and a league cell on it."""

import csv

import numpy as np
import pytest

from mixlab.league import target_rbm_isl, targets, truth
from tests.league.conftest import no_league_figure

#: a tiny definition: 8 hidden units, 1 epoch on 300 digits, 200 test and 100 validation digits
TINY = dict(target_rbm_isl.definition(7, hidden=8, epochs=1), max_train=300, test_max=200,
            valid_max=100, beta_n=5)


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MIXLAB_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


@pytest.fixture
def trainings(monkeypatch):
    """The RBM trainer, counting its calls."""
    import mixlab.rbm.train as train_mod

    calls, real = [], train_mod.train

    def counted(*args, **kw):
        calls.append(kw.get("hidden"))
        return real(*args, **kw)

    monkeypatch.setattr(train_mod, "train", counted)
    return calls


def _build(d):
    try:
        return targets.build("rbm", d)
    except Exception as exc:                       # no USPS in this environment
        if "usps" in str(exc).lower():
            pytest.skip(f"USPS not available: {exc}")
        raise


def test_isl_target_trains_once_per_definition_and_its_reference_is_the_training_digits_isl(
        data_dir, trainings):
    from mixlab.rbm.isl import isl_of_centres

    a = _build(TINY)
    b = _build(TINY)
    assert trainings == [8]                        # the second build read the cache
    assert truth.truth_path("rbm", TINY).is_file()
    assert np.array_equal(a.target.W, b.target.W) and a.target.W.shape == (256, 8)
    assert not a.exact and "not exact" in a.truth_source
    X, Xt, Xv = target_rbm_isl.isl_sets(TINY)
    assert X.shape == (300, 256) and Xt.shape == (200, 256) and Xv.shape == (100, 256)
    ref = isl_of_centres(X.astype(bool), Xt, Xv, bandwidths=target_rbm_isl.betas(TINY))
    assert float(a.truth["reference_isl"]) == pytest.approx(ref["isl"], abs=1e-9)
    _build(dict(TINY, hidden=9))                   # another definition trains again
    assert trainings == [8, 9]
    std = targets.standard_targets("rbm")
    assert std["usps16x16-isl"]["hidden"] < std["usps16x16-isl-h500"]["hidden"]
    assert std["usps16x16-isl"]["model_seed"] == targets.MODEL_SEED


def _naive_isl(S, Xt, Xv, beta):
    """Test ISL at the β of highest validation ISL, from the naive kernel matrix."""
    from mixlab.rbm.isl import isl_naive

    valid = [isl_naive(Xv, S, b).mean() for b in beta]
    return float(isl_naive(Xt, S, beta[int(np.argmax(valid))]).mean())


def test_yardstick_is_the_reference_minus_the_isl_of_the_draws_in_draw_major_order(data_dir):
    from mixlab.rbm.isl import ISLEvaluator
    from mixlab.runfile.checkpoint import read_state, write_state

    inst = _build(TINY)
    X, Xt, Xv = target_rbm_isl.isl_sets(TINY)
    ref, beta = float(inst.truth["reference_isl"]), target_rbm_isl.betas(TINY)
    rng = np.random.default_rng(3)
    K, B, blocks = 3, 7, 4
    draws = X[rng.integers(0, len(X), (K, B * blocks))].astype(bool)
    draws ^= rng.random(draws.shape) < 0.05                     # near-data digits
    work = rng.integers(1, 5, (K, B * blocks)).astype(float)    # a varying cost per step
    mark = 0.4 * work.sum()
    whole = inst.yardstick(work_marks=[mark], second_marks=[2.5])
    for i in range(blocks):
        sl = slice(i * B, (i + 1) * B)
        whole.update({"samples": draws[:, sl], "league_work": work[:, sl]}, 0, float(i + 1))
    flat = np.swapaxes(draws, 0, 1).reshape(-1, 256)             # draw t of every chain, t+1
    # the same ISL as mixlab's ISL evaluator on the same draws, and as the naive kernel sum
    ev = ISLEvaluator(Xt, Xv, key="samples", bandwidths=beta, points=[flat.shape[0]])
    ev.update({"samples": draws}, B * blocks, 1.0)
    x, y, _ = ev.curve()
    assert whole.value() == pytest.approx(ref - y[-1], abs=1e-9)
    assert whole.value() == pytest.approx(ref - _naive_isl(flat, Xt, Xv, beta), abs=1e-7)
    # the work mark is read exactly at the draw where the cumulative work reaches it
    b = int(np.argmax(np.cumsum(work.sum(axis=0)) >= mark))
    assert whole.work_marks_err[0] == pytest.approx(
        ref - _naive_isl(flat[:K * (b + 1)], Xt, Xv, beta), abs=1e-7)
    assert whole.work_marks_at[0] == np.cumsum(work.sum(axis=0))[b]
    assert whole.sec_marks_err[0] == whole.ys[2]                 # first block end at/after 2.5 s
    assert whole.chains == K and whole.draws == B * blocks
    # a yardstick checkpointed after two blocks (as data, in an HDF5 group) resumes identically
    import h5py

    part = inst.yardstick(work_marks=[mark], second_marks=[2.5])
    for i in range(2):
        sl = slice(i * B, (i + 1) * B)
        part.update({"samples": draws[:, sl], "league_work": work[:, sl]}, 0, float(i + 1))
    with h5py.File(data_dir.parent / "ck.h5", "w") as f:
        write_state(f.create_group("ev"), part.state(), "ev")
    with h5py.File(data_dir.parent / "ck.h5", "r") as f:
        resumed = inst.yardstick(work_marks=[mark], second_marks=[2.5])
        resumed.load_state(read_state(f["ev"]))
    for i in range(2, blocks):
        sl = slice(i * B, (i + 1) * B)
        resumed.update({"samples": draws[:, sl], "league_work": work[:, sl]}, 0, float(i + 1))
    assert resumed.ys == whole.ys and resumed.work_marks_err == whole.work_marks_err


def test_training_digits_score_zero_error_near_data_low_and_uniform_bits_high(data_dir):
    inst = _build(TINY)
    X = target_rbm_isl.isl_sets(TINY)[0].astype(bool)               # (300, 256)
    rng = np.random.default_rng(0)

    def error(samples):
        ev = inst.yardstick()
        ev.update({"samples": samples.reshape(3, 100, 256)}, 100, 1.0)
        return ev.value()

    exact = error(X[rng.permutation(300)])          # the training digits, in any order
    near = error(X ^ (rng.random(X.shape) < 0.03))  # 3 % of their pixels flipped
    uniform = error(rng.random(X.shape) < 0.5)
    assert abs(exact) < 1e-9                         # the reference is their ISL
    assert 0 < near < 30 < uniform                   # uniform bits are far from the digits


def test_league_cells_on_the_isl_target_fill_both_clocks(data_dir, monkeypatch, tmp_path):
    from click.testing import CliRunner

    from mixlab.cli import cli

    _build(TINY)
    monkeypatch.setattr(targets, "_rbm_targets", lambda: {"tiny-isl": dict(TINY)})
    out = tmp_path / "league"
    # the tables and the text are checked, not league.png; a time stream ends at least one
    # block (10 draws per chain) whatever its seconds
    with no_league_figure():
        r = CliRunner().invoke(cli, ["run", "league/rbm", "targets=[tiny-isl]",
                                     "only_samplers=[gibbs,rates-fpcd]", "seeds=1", "chains=4",
                                     "seconds=0.05", "work=2e5", "block=10", "-o", str(out),
                                     "-q"])
    assert r.exit_code == 0, r.output
    with open(out / "league.csv") as fh:
        rows = {row["sampler"]: row for row in csv.DictReader(fh)}
    for s in ("gibbs", "rates-fpcd"):
        row = rows[s]
        assert row["status"] == "complete", row["error"]
        for col in ("time_error_median", "work_error_median", "time_ess_per_s",
                    "work_ess_per_munit", "time_rank", "work_rank"):
            assert row[col] != "", (s, col)
        assert row["bias_flag"] == "-1"               # a reference truth: no bias test
        assert "reference truth: no bias test" in row["note"]
        assert abs(float(row["work_error_median"])) < 200
    assert "training digits" in (out / "league.txt").read_text()
