import numpy as np
import pytest

from mixlab.errors import DataError, SpecError
from mixlab.spinglass.model import SpinGlass, load_npz, random_spin_glass, save_npz


def test_score_matches_explicit_sum():
    rng = np.random.default_rng(0)
    m = random_spin_glass(3, 4, coupling=2.0, mixed=True, rng=rng)
    x = rng.choice([-1, 1], size=(5, 3, 4))
    want = np.empty(5)
    for b in range(5):
        s = sum(m.field[r, c] * x[b, r, c] for r in range(3) for c in range(4))
        s += sum(m.right[r, c] * x[b, r, c] * x[b, r, c + 1] for r in range(3) for c in range(3))
        s += sum(m.down[r, c] * x[b, r, c] * x[b, r + 1, c] for r in range(2) for c in range(4))
        want[b] = s
    assert np.allclose(m.score(x), want)
    assert np.allclose(m.score(x > 0), want)          # bool spins: True = +1
    assert m.rows == 3 and m.cols == 4 and m.n == 12


def test_random_ranges_and_attractive():
    rng = np.random.default_rng(1)
    m = random_spin_glass(6, 7, field=0.5, coupling=2.0, rng=rng)
    assert m.attractive and np.all(np.abs(m.field) <= 0.5)
    assert m.right.min() >= 0 and m.right.max() <= 2 and m.down.shape == (5, 7)
    mm = random_spin_glass(6, 7, coupling=2.0, mixed=True, rng=rng)
    assert not mm.attractive and mm.right.min() < 0


def test_transpose_preserves_score():
    rng = np.random.default_rng(2)
    m = random_spin_glass(3, 5, coupling=1.0, mixed=True, rng=rng)
    x = rng.choice([-1, 1], size=(4, 3, 5))
    assert np.allclose(m.score(x), m.transpose().score(np.swapaxes(x, -1, -2)))


def test_npz_roundtrip_and_errors(tmp_path):
    m = random_spin_glass(3, 4, rng=np.random.default_rng(3))
    p = tmp_path / "m.npz"
    save_npz(p, m)
    m2 = load_npz(p)
    assert np.array_equal(m2.field, m.field) and np.array_equal(m2.down, m.down)
    with pytest.raises(DataError, match="not found"):
        load_npz(tmp_path / "nope.npz")
    bad = tmp_path / "bad.npz"
    np.savez(bad, field=m.field, right=m.right, down=m.down[:, :2])
    with pytest.raises(DataError, match=r"bad\.npz.*'down'.*\(2, 4\)"):
        load_npz(bad)
    miss = tmp_path / "miss.npz"
    np.savez(miss, field=m.field)
    with pytest.raises(DataError, match="right, down"):
        load_npz(miss)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(DataError, match="junk.npz"):
        load_npz(junk)
    with pytest.raises(SpecError, match="'right'"):
        SpinGlass(np.zeros((2, 2)), np.zeros((2, 2)), np.zeros((1, 2)))
