"""Parameters too large for float64 are refused, and below the bound the exact oracle is exact.

A spin glass is swept in magnitude from 1 to 1e300 (a fixed random model times the magnitude).
Where mixlab accepts it, its transfer-matrix log Z and marginals must equal a brute-force
enumeration done in 60-digit decimal arithmetic (no float64 rounding). Where it refuses, the
refusal names the bound and the array; the run's start-up refuses a model file past the bound
with exit code 2 naming the key.
"""

from __future__ import annotations

import decimal
import itertools

import numpy as np
import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.errors import SpecError
from mixlab.spec.magnitude import POTENTIAL_BOUND
from mixlab.spinglass.exact import log_partition, marginals
from mixlab.spinglass.model import SpinGlass

MAGNITUDES = [1.0, 1e2, 1e4, 1e5, 3e5, 1e6, 1e7, 1e8, 1e16, 1e100, 1e300]
D = decimal.Context(prec=60, Emin=-10**9, Emax=10**9)


def _base(rows=3, cols=4, seed=52):
    rng = np.random.default_rng(seed)
    sign = lambda *s: rng.choice([-1.0, 1.0], size=s) * rng.uniform(0.5, 1.0, size=s)  # noqa: E731
    return sign(rows, cols), sign(rows, cols - 1), sign(rows - 1, cols)


def _decimal_reference(field, right, down):
    """(log Z, P(x=+1)) by enumerating every state in 60-digit decimals."""
    R, C = field.shape
    dec = lambda a: [[decimal.Decimal(float(v)) for v in row] for row in a]  # noqa: E731
    f, r, d = dec(field), dec(right), dec(down)
    scores, states = [], []
    for bits in itertools.product((-1, 1), repeat=R * C):
        x = [bits[i * C:(i + 1) * C] for i in range(R)]
        s = sum(f[i][j] * x[i][j] for i in range(R) for j in range(C))
        s += sum(r[i][j] * x[i][j] * x[i][j + 1] for i in range(R) for j in range(C - 1))
        s += sum(d[i][j] * x[i][j] * x[i + 1][j] for i in range(R - 1) for j in range(C))
        scores.append(s)
        states.append(x)
    m = max(scores)
    w = [D.exp(s - m) for s in scores]
    Z = D.add(sum(w), 0)
    logz = m + D.ln(Z)
    marg = np.array([[float(sum(wk for wk, x in zip(w, states) if x[i][j] > 0) / Z)
                      for j in range(C)] for i in range(R)])
    return logz, marg


@pytest.mark.parametrize("magnitude", MAGNITUDES)
def test_a_spin_glass_is_exact_or_refused_at_every_magnitude(magnitude):
    field, right, down = (a * magnitude for a in _base())
    total = sum(np.abs(a).sum() for a in (field, right, down))
    if not total <= POTENTIAL_BOUND:
        with pytest.raises(SpecError, match=r"past 1e\+07") as info:
            SpinGlass(field, right, down)
        assert "'field'" in str(info.value) or "'right'" in str(info.value) \
            or "'down'" in str(info.value)
        return
    model = SpinGlass(field, right, down)
    want_logz, want_marg = _decimal_reference(field, right, down)
    got = log_partition(model)
    tolerance = decimal.Decimal("1e-6") + decimal.Decimal("1e-12") * abs(want_logz)
    assert abs(decimal.Decimal(float(got)) - want_logz) <= tolerance, (got, want_logz)
    np.testing.assert_allclose(marginals(model), want_marg, atol=1e-6, rtol=0)


def test_the_sweep_reaches_both_sides_of_the_bound():
    totals = [m * sum(np.abs(a).sum() for a in _base()) for m in MAGNITUDES]
    assert sum(t <= POTENTIAL_BOUND for t in totals) >= 5
    assert sum(t > POTENTIAL_BOUND for t in totals) >= 4


@pytest.mark.parametrize("magnitude", [1e16, 1e300])
def test_a_model_file_past_the_bound_is_refused_at_start_naming_the_key(tmp_path, magnitude):
    field, right, down = _base()
    right = right.copy()
    right[0, 0] = magnitude
    np.savez(tmp_path / "m.npz", field=field, right=right, down=down)
    r = CliRunner().invoke(cli, ["run", "perturb_map/marginal_vs_time",
                                 f"model.file={tmp_path / 'm.npz'}", "--dry-run"])
    assert r.exit_code == 2, r.output
    assert "spec key 'model.file'" in r.output and "past 1e+07" in r.output
    assert "in 'right'" in r.output


@pytest.mark.parametrize("magnitude", MAGNITUDES)
def test_a_triplet_mrf_is_exact_or_refused_at_every_magnitude(magnitude):
    """D = 5 (10 tables of 8 log-potentials): the enumerated joint against 60-digit decimals."""
    from mixlab.austerity.mrf import DenseMRF, enumerate_joint, triplets

    D = 5
    tri = triplets(D)
    rng = np.random.default_rng(52)
    logpsi = rng.standard_normal((tri.shape[0], 2, 2, 2)) * magnitude
    if not np.abs(logpsi).max(axis=(1, 2, 3)).sum() <= POTENTIAL_BOUND:
        with pytest.raises(SpecError, match=r"in 'logpsi'\), past 1e\+07"):
            DenseMRF.from_tables(logpsi, D)
        return
    states, probs = enumerate_joint(DenseMRF.from_tables(logpsi, D))
    scores = [sum(decimal.Decimal(float(logpsi[t][x[i]][x[j]][x[k]]))
                  for t, (i, j, k) in enumerate(tri)) for x in states.astype(int)]
    m = max(scores)
    w = [D_exp(s - m) for s in scores]
    want = np.array([float(wk / sum(w)) for wk in w])
    np.testing.assert_allclose(probs, want, atol=1e-6, rtol=0)


def D_exp(x: decimal.Decimal) -> decimal.Decimal:  # noqa: N802
    return D.exp(x)


@pytest.mark.parametrize("magnitude", MAGNITUDES)
def test_an_rbm_file_is_exact_or_refused_at_every_magnitude(magnitude, tmp_path):
    """3 visible x 2 hidden units: log Z against 60-digit decimals over all 32 (v, h)."""
    from mixlab.rbm.model import RBM
    from mixlab.rbm.partition import log_partition_exact

    rng = np.random.default_rng(52)
    W, b, c = (rng.standard_normal(s) * magnitude for s in ((3, 2), (3,), (2,)))
    RBM(W, b, c).save(tmp_path / "m.h5")
    if not sum(np.abs(a).sum() for a in (W, b, c)) <= POTENTIAL_BOUND:
        with pytest.raises(SpecError, match=r"spec key 'model_file'.*past 1e\+07"):
            RBM.load(tmp_path / "m.h5")
        return
    rbm = RBM.load(tmp_path / "m.h5")
    dec = lambda a: [decimal.Decimal(float(x)) for x in np.ravel(a)]  # noqa: E731
    Wd, bd, cd = dec(W), dec(b), dec(c)
    scores = []
    for v in itertools.product((0, 1), repeat=3):
        for h in itertools.product((0, 1), repeat=2):
            s = sum(bd[i] * v[i] for i in range(3)) + sum(cd[j] * h[j] for j in range(2))
            s += sum(Wd[2 * i + j] * v[i] * h[j] for i in range(3) for j in range(2))
            scores.append(s)
    m = max(scores)
    want = m + D.ln(sum(D.exp(s - m) for s in scores))
    got = decimal.Decimal(float(log_partition_exact(rbm)))
    assert abs(got - want) <= decimal.Decimal("1e-6") + decimal.Decimal("1e-12") * abs(want)


@pytest.mark.parametrize("magnitude", MAGNITUDES)
def test_standardised_posterior_features_do_not_depend_on_their_scale(magnitude, tmp_path):
    """A feature column times any magnitude up to 1e300 standardises to the same values (its
    squares would overflow past 1e154 if they were taken unscaled)."""
    from mixlab.data.user_tables import read_table, split_and_standardize

    rng = np.random.default_rng(52)
    x, z = rng.standard_normal(60), rng.standard_normal(60)
    y = (x + z > 0).astype(int)
    base, big = tmp_path / "base.csv", tmp_path / "big.csv"
    for path, m in ((base, 1.0), (big, magnitude)):
        path.write_text("a,b,y\n" + "".join(f"{float(a * m)!r},{float(b)!r},{c}\n"
                                                    for a, b, c in zip(x, z, y)))
    want = split_and_standardize(read_table(base, "y", None), None, 0.2, True, 0)
    got = split_and_standardize(read_table(big, "y", None), None, 0.2, True, 0)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    if magnitude > 1e7:                       # unstandardised, past the bound: refused
        with pytest.raises(SpecError, match="data.standardize"):
            split_and_standardize(read_table(big, "y", None), None, 0.2, False, 0)
