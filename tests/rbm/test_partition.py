"""mixlab.rbm.partition: exact log Z, AIS, log-likelihood."""

import numpy as np
import pytest
from scipy.special import logsumexp

from mixlab.rbm.model import RBM
from mixlab.rbm.partition import (
    ais_betas,
    all_configs,
    exact_visible_log_probs,
    log_likelihood,
    log_partition_ais,
    log_partition_exact,
)


def random_rbm(V, H, scale=1.0, seed=0, dtype=np.float64, bias_scale=1.0):
    rng = np.random.default_rng(seed)
    return RBM((scale * rng.standard_normal((V, H))).astype(dtype),
               (bias_scale * rng.standard_normal(V)).astype(dtype),
               (bias_scale * rng.standard_normal(H)).astype(dtype))


def brute_log_z(m):
    x = all_configs(m.n_visible)
    h = all_configs(m.n_hidden)
    E = (-(x @ m.b)[:, None] - (h @ m.c)[None, :] - x @ m.W @ h.T)
    return float(logsumexp(-E))


def test_all_configs_order():
    c = all_configs(3)
    assert c.shape == (8, 3)
    np.testing.assert_array_equal(c[5], [1, 0, 1])       # 5 = 0b101, unit 0 least significant
    np.testing.assert_array_equal(all_configs(3, 2, 4), c[2:4])


@pytest.mark.parametrize("V,H,seed", [(5, 4, 0), (4, 7, 1), (6, 6, 2), (1, 3, 3)])
def test_exact_log_z_matches_brute_force(V, H, seed):
    m = random_rbm(V, H, scale=1.5, seed=seed)
    ref = brute_log_z(m)
    assert log_partition_exact(m) == pytest.approx(ref, abs=1e-10)
    assert log_partition_exact(m.swapped()) == pytest.approx(ref, abs=1e-10)


@pytest.mark.parametrize("scale", [0.3, 4.0])   # 4: activations past the product form's bound
def test_exact_log_z_in_blocks_matches_the_direct_sum_over_hidden_states(scale):
    """2^16 hidden states in blocks of 2^14 (the low units' table plus each block's high units),
    against logsumexp_h [c.h + sum_i softplus(b_i + (W h)_i)] over every h at once."""
    m = random_rbm(256, 16, scale=scale, seed=7)
    h = all_configs(16)
    ref = float(logsumexp(h @ m.c + np.logaddexp(0.0, h @ m.W.T + m.b).sum(axis=1)))
    assert log_partition_exact(m) == pytest.approx(ref, rel=1e-13, abs=1e-9)


@pytest.mark.parametrize("V", [1, 2, 3, 7, 8, 9, 17, 256])
@pytest.mark.parametrize("scale", [3.0, 60.0])       # 60: entries past the product form's bound
def test_softplus_row_sums_by_products_are_the_sums_of_softplus(V, scale):
    from mixlab.rbm.partition_kernel import PRODUCT_MAX_ACT, softplus_row_sums

    a = scale * np.random.default_rng(V).standard_normal((40, V))
    ref = np.logaddexp(0.0, a).sum(axis=1)
    assert (a.max() > PRODUCT_MAX_ACT) == (scale == 60.0)     # each path is taken
    np.testing.assert_allclose(softplus_row_sums(a.copy()), ref, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("V", [1, 15, 16, 17, 33, 256])
def test_log_product_sums_are_the_sums_of_softplus_up_to_the_bound(V):
    """The compiled block kernel: Σ_j log(1 + e^low_rj e^high_j) for R = 300 rows (past one
    tile of rows), V factors (groups of 16, the last one short), pre-activations up to the
    bound 40 where a group's product is largest."""
    from mixlab.rbm.partition_kernel import PRODUCT_MAX_ACT, log_product_sums

    rng = np.random.default_rng(V)
    low = rng.uniform(-30.0, 20.0, (300, V))
    low[0] = 20.0                                            # a row at the bound: 20 + 20
    high = rng.uniform(-10.0, 20.0, V)
    high[:] = np.where(np.arange(V) % 2 == 0, 20.0, high)
    assert (low + high).max() == PRODUCT_MAX_ACT
    out = np.full(300, np.nan)
    log_product_sums(np.ascontiguousarray(np.exp(low).T), np.exp(high), out)
    np.testing.assert_allclose(out, np.logaddexp(0.0, low + high).sum(axis=1), rtol=1e-13,
                               atol=1e-13)          # log(1 + x) rounds x below 1e-16 away


def test_exact_log_z_float32_model_uses_float64():
    m = random_rbm(5, 4, scale=2.0, seed=5, dtype=np.float32)
    assert log_partition_exact(m) == pytest.approx(brute_log_z(m.astype(np.float64)), abs=1e-10)


def test_exact_log_z_blocks_independent_of_block_size():
    # 14 hidden x 300 visible: several blocks of configurations; compare with a direct sum
    m = random_rbm(300, 14, scale=0.1, seed=6)
    h = all_configs(14)
    s = h @ m.c + np.logaddexp(0, h @ m.W.T + m.b).sum(1)
    assert log_partition_exact(m) == pytest.approx(float(logsumexp(s)), abs=1e-9)


def test_exact_log_z_refuses_large_layers():
    m = random_rbm(30, 30, seed=0)
    with pytest.raises(ValueError, match="ais"):
        log_partition_exact(m)


def test_exact_visible_log_probs_normalised():
    m = random_rbm(6, 4, seed=7)
    lp = exact_visible_log_probs(m)
    assert lp.shape == (64,)
    assert float(logsumexp(lp)) == pytest.approx(0.0, abs=1e-12)


def test_ais_betas():
    for sched in ("sm08", "linear"):
        b = ais_betas(1000, sched)
        assert len(b) == 1000 and b[0] == 0.0 and b[-1] == 1.0
        assert np.all(np.diff(b) > 0)
    b = ais_betas(14500)
    assert np.sum(b < 0.5) == pytest.approx(500, abs=2)


def test_ais_within_error_bars_of_exact():
    """V=50, H=16 random RBM of moderate scale: AIS (100 runs) within 3 s.e. of exact.

    16 hidden units: exact log Z sums 2^16 hidden states, not 2^20; AIS's s.e. (the tolerance)
    is the same as with 20 (about 0.026 and 0.016 here, 0.028 and 0.018 with 20)."""
    m = random_rbm(50, 16, scale=0.3, seed=11, dtype=np.float32, bias_scale=0.5)
    exact = log_partition_exact(m)
    rng = np.random.default_rng(3)
    data = (rng.random((500, 50)) < 0.3).astype(np.float32)
    est, se = log_partition_ais(m, n_runs=100, n_betas=3000, data=data,
                                rng=np.random.default_rng(0))
    assert 0 < se < 0.1
    assert abs(est - exact) < 3 * se + 1e-3, (est, exact, se)
    # the uniform base model works too
    est2, se2 = log_partition_ais(m, n_runs=100, n_betas=3000, rng=np.random.default_rng(1))
    assert abs(est2 - exact) < 3 * se2 + 1e-3, (est2, exact, se2)


def test_ais_with_few_temperatures_is_biased_low_and_large_error():
    """Sanity of the estimator's behaviour: 2 temperatures = plain importance sampling from the
    base model, whose log-mean estimate is (in expectation) below log Z, with a larger error."""
    m = random_rbm(50, 20, scale=0.5, seed=12, dtype=np.float32)
    exact = log_partition_exact(m)
    est, se, lw = log_partition_ais(m, n_runs=200, n_betas=2, rng=np.random.default_rng(0),
                                    return_log_weights=True)
    assert lw.shape == (200,)
    assert est < exact
    _, se_long = log_partition_ais(m, n_runs=200, n_betas=2000, rng=np.random.default_rng(0))
    assert se > se_long


def test_ais_exact_for_independent_model():
    """W = 0 and base = the model's own visible biases: every weight equals Z/Z_A, so AIS is
    exact with zero spread."""
    rng = np.random.default_rng(0)
    m = RBM(np.zeros((10, 5)), rng.standard_normal(10), rng.standard_normal(5))
    est, se = log_partition_ais(m, n_runs=10, n_betas=50, base_b=m.b, rng=rng)
    assert est == pytest.approx(log_partition_exact(m), abs=1e-9)
    assert se == pytest.approx(0.0, abs=1e-12)


def test_log_likelihood():
    m = random_rbm(6, 4, seed=8)
    lz = log_partition_exact(m)
    lp = exact_visible_log_probs(m, lz)
    idx = np.array([0, 5, 5, 63, 17])
    X = all_configs(6)[idx]
    mean, se = log_likelihood(m, X, lz)
    assert mean == pytest.approx(lp[idx].mean(), abs=1e-12)
    assert se == pytest.approx(lp[idx].std(ddof=1) / np.sqrt(5), abs=1e-12)
    # batching does not change the answer
    assert log_likelihood(m, X, lz, batch=2)[0] == pytest.approx(mean, abs=1e-12)
