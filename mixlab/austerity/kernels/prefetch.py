"""Software prefetch for the compiled kernels: ``prefetch(a, i)`` asks the CPU to start loading
the cache line holding element i of the C-contiguous array a (flat index), without waiting for
it.  Loops that know their next addresses (the rows of a minibatch, the swap partners of the
index draw) issue it a few iterations ahead, so several cache misses are in flight at once
instead of one after the other.  A hint only: results never depend on it."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["prefetch"]


def _prefetch_codegen(locality: int):
    """Code for ``llvm.prefetch`` of element i of an array (read, ``locality`` 0-3, data)."""
    def codegen(context, builder, signature, args):
        aryty, idxty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        i = context.cast(builder, args[1], idxty, types.intp)
        ptr = builder.gep(ary.data, [i])
        i8p = builder.bitcast(ptr, ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        # (address, 0 = read, locality 0-3, 1 = data cache)
        builder.call(fn, [i8p, i32(0), i32(locality), i32(1)])
        return context.get_dummy_value()
    return codegen


@intrinsic
def prefetch(typingctx, arr, idx):
    """Prefetch element idx of the C-contiguous array arr into every cache level."""
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None
    return types.void(arr, idx), _prefetch_codegen(3)

