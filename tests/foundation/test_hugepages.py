"""mixlab.austerity.kernels.hugepages.empty: the arrays the austerity kernels read at random (column tiles, padded
rows) are allocated by it; their values must be ordinary arrays' whatever the pages."""

import mmap
import pickle

import numpy as np
import pytest

from mixlab.austerity.kernels import column_tiles, hugepages, padded_rows

HAS_ADVICE = all(hasattr(mmap, a) for a in ("MADV_HUGEPAGE", "MAP_PRIVATE", "MAP_ANONYMOUS"))


@pytest.mark.parametrize("shape,dtype", [((3, 5), np.float32), (7, np.int64),
                                         ((300, 1000), np.float32), ((2, 3, 70000), np.float64)])
def test_empty_is_a_writable_aligned_array_of_the_shape(shape, dtype):
    a = hugepages.empty(shape, dtype)
    assert a.shape == (shape if isinstance(shape, tuple) else (shape,)) and a.dtype == dtype
    assert a.flags.c_contiguous and a.flags.writeable
    assert a.ctypes.data % 64 == 0
    if a.nbytes >= hugepages.MIN_BYTES and HAS_ADVICE:
        assert a.ctypes.data % hugepages.HUGE_PAGE == 0      # the start of a huge page
    values = np.arange(a.size, dtype=dtype).reshape(a.shape)
    a[...] = values
    assert np.array_equal(a, values)
    b = pickle.loads(pickle.dumps(a))                       # a copy in ordinary memory
    assert np.array_equal(b, values) and b.flags.writeable


def test_a_huge_page_array_outlives_the_names_of_its_mapping():
    a = hugepages.empty((1 << 19,), np.float32)[10:20]      # a view: keeps the mapping alive
    a[:] = 3.0
    del_me = [hugepages.empty((1 << 19,), np.float32) for _ in range(4)]
    del del_me
    assert np.all(a == 3.0)


def test_kernel_layouts_hold_the_data_exactly():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((9000, 51)).astype(np.float32)  # 1.8 MB of tiles: huge-page path
    rows = padded_rows(X)
    assert rows.shape == (9000, 64) and rows.ctypes.data % 64 == 0
    assert np.array_equal(rows[:, :51], X) and not rows[:, 51:].any()
    tiles = column_tiles(X).reshape(-1, 52, 32)             # (tile, column, row)
    back = tiles.transpose(0, 2, 1).reshape(-1, 52)
    assert np.array_equal(back[:9000, :51], X) and not back[:9000, 51:].any()
    assert not back[9000:].any()                            # rows after N are zero
