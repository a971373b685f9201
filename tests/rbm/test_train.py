"""mixlab.rbm.train and ``mixlab train``: identities, real learning checks, exact resume."""

import os
import sys

import h5py
import numpy as np
import pytest

from mixlab.errors import MixlabError, SpecError
from mixlab.rbm.model import RBM
from mixlab.rbm.partition import (
    all_configs,
    exact_visible_log_probs,
    log_likelihood,
    log_partition_exact,
)
from mixlab.rbm.train import (
    TRAIN_SCHEMA,
    Trainer,
    load_checkpoint,
    monitor_stats,
    resolve_config,
    save_checkpoint,
    to_stage,
    train,
    train_from_spec,
)
from mixlab.spec.schema import validate


def sample_exact(m, n, rng):
    p = np.exp(exact_visible_log_probs(m))
    idx = rng.choice(len(p), size=n, p=p / p.sum())
    return all_configs(m.n_visible)[idx].astype(np.float32)


def exact_ll(m, X):
    return log_likelihood(m, X, log_partition_exact(m))[0]


@pytest.fixture(scope="module")
def structured():
    """2000 exact samples from a 6x4 RBM whose hidden units switch on 4 visible patterns."""
    P = np.array([[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1],
                  [1, 0, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1]], float).T        # (6, 4)
    true = RBM(6 * (2 * P - 1), np.full(6, -1.0), -6 * P.sum(0) + 3)
    X = sample_exact(true, 2000, np.random.default_rng(0))
    return true, X


@pytest.fixture(scope="module")
def binary_data():
    rng = np.random.default_rng(5)
    protos = (rng.random((3, 16)) < 0.5)
    X = protos[rng.integers(0, 3, 300)] ^ (rng.random((300, 16)) < 0.1)
    return X.astype(np.float32)


# ---------------------------------------------------------------- identities


def _run(method, X, epochs=3, seed=7, **kw):
    rng = np.random.default_rng(seed)
    r0 = RBM.init(X.shape[1], 8, rng, data=X)
    tr = Trainer(r0, X, X[:50], rng=rng, method=method, epochs=epochs, batch_size=20, **kw)
    tr.fit()
    return tr


def test_fpcd_with_zero_fast_lr_is_exactly_sml(binary_data):
    kw = {"lr": 0.1, "momentum": 0.5, "weight_decay": 1e-3, "k": 2, "chains": 13,
          "lr_schedule": "linear", "lr_final": 0.1}
    sml = _run("pcd", binary_data, **kw)
    fp0 = _run("fpcd", binary_data, fast_lr=0.0, fast_decay=0.95, **kw)
    for name in ("W", "b", "c", "chain_x", "chain_h"):
        assert np.array_equal(getattr(sml, name), getattr(fp0, name)), name
    np.testing.assert_array_equal(fp0.fW, 0.0)
    # a non-zero fast learning rate does change the trajectory
    fp = _run("fpcd", binary_data, fast_lr=0.1, **kw)
    assert not np.array_equal(sml.W, fp.W)
    assert np.abs(fp.fW).max() > 0


def test_monitoring_does_not_change_training(binary_data):
    rng1, rng2 = np.random.default_rng(3), np.random.default_rng(3)
    r0 = RBM.init(16, 8, np.random.default_rng(0), data=binary_data)
    m1, h1 = train(r0.copy(), binary_data, binary_data[:40], method="fpcd", epochs=2,
                   batch_size=25, rng=rng1, monitor=True)
    m2, h2 = train(r0.copy(), binary_data, binary_data[:40], method="fpcd", epochs=2,
                   batch_size=25, rng=rng2, monitor=False)
    np.testing.assert_array_equal(m1.W, m2.W)
    assert np.isfinite(h1["pseudo_ll"]).all() and np.isnan(h2["pseudo_ll"]).all()


def test_persistent_chains_carry_over_and_cd_uses_data(binary_data):
    """The negative phase of pcd starts from the chains: training twice as long in one trainer
    equals two halves sharing chains (checked through resume), and cd has no chains."""
    tr = _run("cd", binary_data, epochs=1)
    assert not hasattr(tr, "chain_h")
    tr = _run("pcd", binary_data, epochs=1, chains=7)
    assert tr.chain_x.shape == (7, 16) and tr.chain_h.shape == (7, 8)


# ---------------------------------------------------------------- learning checks


def test_cd1_increases_exact_log_likelihood(structured):
    _, X = structured
    r0 = RBM.init(6, 4, np.random.default_rng(1), data=X, scale=0.1)
    before = exact_ll(r0, X)
    m, hist = train(r0.copy(), X, None, method="cd", k=1, epochs=20, lr=0.2, momentum=0.5,
                    batch_size=20, rng=np.random.default_rng(1))
    after = exact_ll(m, X)
    assert after > before + 0.3, (before, after)       # measured: -3.91 -> about -3.36
    assert hist["pseudo_ll"][-1] > hist["pseudo_ll"][0]


def test_pcd_reaches_the_true_models_likelihood(structured):
    """PCD on exact samples of a known 6x4 RBM: the trained model's exact log-likelihood comes
    within 0.1 nat of the generating model's (independent model: 0.66 nat below). A sign error
    in any gradient term makes the likelihood fall instead."""
    true, X = structured
    ll_true = exact_ll(true, X)                     # -3.248
    r0 = RBM.init(6, 4, np.random.default_rng(1), data=X, scale=0.1)
    ll_init = exact_ll(r0, X)                       # -3.910
    m, _ = train(r0.copy(), X, None, method="pcd", epochs=100, lr=0.2, momentum=0.5,
                 lr_schedule="linear", batch_size=20, rng=np.random.default_rng(1))
    ll = exact_ll(m, X)                             # measured -3.289
    assert ll > ll_true - 0.1, (ll, ll_true, ll_init)
    # cannot beat the empirical distribution
    cnt = np.bincount((X @ (1 << np.arange(6))).astype(int), minlength=64) / len(X)
    nz = cnt > 0
    assert ll <= float((cnt[nz] * np.log(cnt[nz])).sum()) + 1e-9


# ---------------------------------------------------------------- monitor


def test_monitor_pseudo_likelihood_and_gap_exact():
    rng = np.random.default_rng(0)
    m = RBM(rng.normal(0, 1, (6, 4)), rng.normal(0, 1, 6), rng.normal(0, 1, 4))
    X = all_configs(6)[rng.integers(0, 64, 40)]
    bits = rng.integers(0, 6, 40)
    Xv = all_configs(6)[rng.integers(0, 64, 40)]
    st = monitor_stats(m, X, bits, Xv)
    lp = exact_visible_log_probs(m)
    code = (X @ (1 << np.arange(6))).astype(int)
    flipped = code ^ (1 << bits)
    cond = lp[code] - np.logaddexp(lp[code], lp[flipped])        # log P(x_i | x_-i)
    assert st["pseudo_ll"] == pytest.approx(6 * cond.mean(), abs=1e-10)
    assert st["fe_gap"] == pytest.approx(m.free_energy(Xv).mean() - m.free_energy(X).mean(),
                                         abs=1e-10)
    rec = m.visible_probs(m.hidden_probs(X))
    assert st["recon_error"] == pytest.approx(((X - rec) ** 2).sum(1).mean(), abs=1e-10)


def test_lr_schedules(binary_data):
    rng = np.random.default_rng(0)
    r0 = RBM.init(16, 4, rng)
    tr = Trainer(r0, binary_data, rng=rng, method="cd", epochs=4, batch_size=100,
                 lr=0.1, lr_schedule="linear", lr_final=0.2)
    assert tr.total_updates == 12
    assert tr.lr_at(0) == pytest.approx(0.1) and tr.lr_at(12) == pytest.approx(0.02)
    assert tr.lr_at(6) == pytest.approx(0.06)
    tr = Trainer(r0, binary_data, rng=rng, method="cd", epochs=4, batch_size=100,
                 lr=0.1, lr_schedule="inverse", lr_tau=2.0)
    assert tr.lr_at(6) == pytest.approx(0.05)       # 2 epochs = tau -> half
    _, hist = tr.fit()
    np.testing.assert_allclose(hist["lr"], [0.1 / (1 + (3 * e - 1) / 6) for e in (1, 2, 3, 4)])


def test_bad_configurations(binary_data):
    with pytest.raises(SpecError, match="fast_lr"):
        resolve_config({"method": "pcd", "fast_lr": 0.1})
    with pytest.raises(SpecError, match="chains"):
        resolve_config({"method": "cd", "chains": 10})
    with pytest.raises(SpecError, match="lr_final"):
        resolve_config({"lr_final": 0.1})
    with pytest.raises(SpecError, match="lr_tau"):
        resolve_config({"lr_schedule": "linear", "lr_tau": 3.0})
    with pytest.raises(SpecError, match="trainer"):
        resolve_config({"method": "gibbs"})
    cfg = resolve_config({"method": "fpcd", "lr": 0.03})
    assert cfg["fast_lr"] == 0.03 and cfg["fast_decay"] == 0.95 and cfg["chains"] == 100
    r0 = RBM.init(16, 4, np.random.default_rng(0))
    with pytest.raises(MixlabError, match="columns"):
        Trainer(r0, binary_data[:, :10])
    with pytest.raises(MixlabError, match=r"\[0, 1\]"):
        Trainer(r0, binary_data * 2)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_divergence_is_reported(binary_data):
    r0 = RBM.init(16, 4, np.random.default_rng(0), data=binary_data)
    with pytest.raises(MixlabError, match="diverged"):
        train(r0, binary_data, method="pcd", lr=1e39, epochs=1,
              rng=np.random.default_rng(0))


# ---------------------------------------------------------------- checkpoint / resume


@pytest.mark.parametrize("method", ["cd", "pcd", "fpcd"])
def test_resume_equals_uninterrupted(tmp_path, binary_data, method):
    kw = {"method": method, "epochs": 4, "batch_size": 32, "lr": 0.1, "momentum": 0.5,
          "weight_decay": 1e-4, "lr_schedule": "linear", "lr_final": 0.1, "k": 2}
    if method == "fpcd":
        kw.update(fast_lr=0.05, fast_decay=0.9)

    def make(seed):
        rng = np.random.default_rng(seed)
        return Trainer(RBM.init(16, 8, rng, data=binary_data), binary_data, binary_data[:60],
                       rng=rng, **kw)

    full = make(11)
    full.fit()
    part = make(11)
    part.run_epoch()
    part.run_epoch()
    ck = tmp_path / "c.h5"
    save_checkpoint(ck, part.state_dict())
    resumed = make(999)               # a different generator: state must come from the file
    resumed.load_state(load_checkpoint(ck))
    assert resumed.epoch == 2
    resumed.fit()
    a, b = full.state_dict(), resumed.state_dict()
    for k in a:
        if k == "history/seconds":
            continue
        if isinstance(a[k], str):
            assert a[k] == b[k], k
        else:
            assert np.array_equal(a[k], b[k], equal_nan=True), k


def test_checkpoint_config_mismatch_and_corrupt(tmp_path, binary_data):
    rng = np.random.default_rng(0)
    tr = Trainer(RBM.init(16, 8, rng), binary_data, rng=rng, method="pcd", lr=0.1)
    save_checkpoint(tmp_path / "c.h5", tr.state_dict())
    rng = np.random.default_rng(0)
    other = Trainer(RBM.init(16, 8, rng), binary_data, rng=rng, method="pcd", lr=0.2)
    with pytest.raises(MixlabError, match="lr=0.1"):
        other.load_state(load_checkpoint(tmp_path / "c.h5"))
    (tmp_path / "bad.h5").write_bytes(b"garbage")
    with pytest.raises(MixlabError, match="cannot read"):
        load_checkpoint(tmp_path / "bad.h5")


# ---------------------------------------------------------------- spec fragment


def test_train_schema_and_from_spec(binary_data):
    p = validate({"trainer": "fpcd", "hidden": 5, "epochs": 2, "batch_size": 50,
                  "fast_lr": 0.01}, TRAIN_SCHEMA)
    m, hist = train_from_spec(p, binary_data, binary_data[:30], np.random.default_rng(0))
    assert m.n_hidden == 5 and hist["epoch"].tolist() == [1.0, 2.0]
    m2, _ = train(None, binary_data, binary_data[:30], method="fpcd", hidden=5, epochs=2,
                  batch_size=50, fast_lr=0.01, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(m.W, m2.W)
    st = to_stage(m, hist)
    assert set(st) >= {"W", "b", "c", "monitor_pseudo_ll"}
    with pytest.raises(SpecError):
        validate({"trainer": "pcd", "hidden": 5, "fast_lr": -1.0}, TRAIN_SCHEMA)
    with pytest.raises(SpecError, match="fast_lr"):
        train_from_spec(validate({"trainer": "pcd", "fast_lr": 0.1}, TRAIN_SCHEMA),
                        binary_data, None, np.random.default_rng(0))


# ---------------------------------------------------------------- CLI


# The command line (mixlab train as a run: resume after kills, show, sample, refusals) is tested
# in test_train_run.py.


MIRROR = os.environ.get("MIXLAB_DATA_MIRROR", "/work/shared/data")


@pytest.mark.skipif(not os.path.exists(os.path.join(MIRROR, "usps", "usps.h5")),
                    reason="USPS mirror not available (set MIXLAB_DATA_MIRROR)")
def test_cli_subprocess_on_usps(tmp_path):
    """The README path: a real subprocess on real USPS data (small: 500 rows, 12 hidden)."""
    import subprocess
    env = dict(os.environ, MIXLAB_DATA_MIRROR=MIRROR, MIXLAB_DATA_DIR=str(tmp_path / "cache"))
    out = tmp_path / "usps.h5"
    p = subprocess.run([sys.executable, "-m", "mixlab", "train", "--data", "usps",
                        "--max-train", "500", "--trainer", "fpcd", "--hidden", "12",
                        "--epochs", "2", "-o", str(out), "--quiet"],
                       capture_output=True, text=True, env=env, timeout=300,
                       check=False)
    assert p.returncode == 0, p.stderr
    assert "test log-likelihood" in p.stdout
    with h5py.File(out) as f:
        assert f["W"].shape == (256, 12) and f.attrs["log_z_method"] == "exact"
        assert -256 * np.log(2) < f.attrs["test_ll"] < 0
    p = subprocess.run([sys.executable, "-m", "mixlab", "train", "--data", "usps",
                        "--max-train", "500", "--trainer", "fpcd", "--hidden", "12",
                        "--epochs", "2", "-o", str(out), "--quiet"],
                       capture_output=True, text=True, env=env, timeout=300, check=False)
    assert p.returncode == 0 and f"already complete: {out}" in p.stdout     # nothing retrained
    p = subprocess.run([sys.executable, "-m", "mixlab", "train", "--data", "usps",
                        "-o", str(out)], capture_output=True, text=True, env=env, timeout=300,
                       check=False)
    assert p.returncode == 1 and "other settings" in p.stderr and "train.hidden" in p.stderr
