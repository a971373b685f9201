"""Compile options and shared constants of the austerity kernels."""

from __future__ import annotations

import numpy as np

from ...compiled.numba_cache import CACHE

__all__ = ["TILE"]

# error_model="numpy": float division without a Python zero check (which blocks vectorisation)
_JIT = {"cache": CACHE, "nogil": True, "boundscheck": False, "error_model": "numpy"}
# products: reassociation lets LLVM vectorise the length-d dot product
_JIT_DOT = dict(_JIT, fastmath={"reassoc", "contract"})
# log σ: FMA contraction only (reassociation would fold the round-to-integer trick away)
_JIT_EXP = dict(_JIT, fastmath={"contract"})
# small helpers called per block: inlined by numba (no reference counting of their arrays)
_JIT_INLINE = dict(_JIT, inline="always")
# column tiles: FMA contraction only (the rows are the vector lanes; nothing to reassociate)
_JIT_TILE = _JIT_EXP

_CHUNK = 256                       # rows per block: products, then log σ vectorised over the block
TILE = 32                          # rows per column tile (a literal trip count: the loop vectorises)
_U = np.uint64                     # unsigned indices: no negative-index wraparound in the loops

_F = np.float32
# a loop counter passed to a compiled callee starts at _ZERO, not at 0: from a literal 0, numba
# would also compile the callee for the type Literal[int](0) while it infers the loop's types
_ZERO = np.int64(0)
