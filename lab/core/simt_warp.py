"""The warp collectives that Numba's CUDA simulator lacks, as :mod:`lab.core.simt` adds them to its
fake ``cuda`` module: ``shfl_sync``, ``shfl_up_sync``, ``shfl_down_sync``, ``shfl_xor_sync``,
``syncwarp``, ``all_sync``, ``any_sync``, ``ballot_sync``, ``activemask`` (each lane meets the others
of its warp through the block's scheduler, :class:`lab.core.blocks.Block`). Source: CUDA C++
Programming Guide, "Warp Shuffle Functions", "Warp Vote Functions", "Synchronization Functions".
"""
from __future__ import annotations

import threading

import numpy as np
from kernels.spec import poison_value


def _undefined(value):
    """What a shuffle returns from a lane that did not take part (undefined in CUDA): a poison."""
    if isinstance(value, (float, np.floating)):
        return type(value)(np.nan)
    if isinstance(value, np.integer):  # lab.core.simt.poisoned's first integer poison
        return np.full((), poison_value(value.dtype, 0), value.dtype)[()]
    if isinstance(value, (bool, np.bool_)):
        return value
    return 0x5A5A5A5A


def _lane_op(src_of):
    """A ``cuda.shfl_*_sync(mask, value, arg)``: the value of lane ``src_of(lane, arg)`` (None: the
    caller's own value, as CUDA defines for a source outside the warp)."""
    def shfl(mask, value, arg):
        me = threading.current_thread()
        got = me.warp_collective(mask, value)
        src = src_of(me.thread_id % 32, int(arg))
        if src is None:
            return value
        return got[src] if src in got else _undefined(value)
    return shfl


WARP_OPS = ("shfl", "syncwarp", "all_sync", "any_sync", "ballot_sync", "activemask",
            "mma_tf32", "mma_bf16", "ldmatrix")  # kernels.gemm.mma, mma_bf16: emulated warp collectives


def install_warp_ops(mod, n_threads):
    """The warp collectives Numba's simulator lacks (CUDA C++ Programming Guide, "Warp Shuffle
    Functions", "Warp Vote Functions", "Synchronization Functions"), on a FakeCUDAModule: the 32-lane
    width (numba-cuda's shuffles take no width), every lane of the mask must call them."""
    mod.shfl_sync = _lane_op(lambda lane, src: src % 32)
    mod.shfl_up_sync = _lane_op(lambda lane, d: lane - d if lane - d >= 0 else None)
    mod.shfl_down_sync = _lane_op(lambda lane, d: lane + d if lane + d < 32 else None)
    mod.shfl_xor_sync = _lane_op(lambda lane, m: lane ^ m if (lane ^ m) < 32 else None)

    def syncwarp(mask=0xFFFFFFFF):
        threading.current_thread().warp_collective(mask, None)

    def vote(combine):
        def op(mask, predicate):
            got = threading.current_thread().warp_collective(mask, bool(predicate))
            return combine(got)
        return op

    def activemask():
        me = threading.current_thread()
        warp = me.thread_id // 32
        gone = me.barrier.exited
        return sum(1 << k for k in range(32) if warp * 32 + k < n_threads and warp * 32 + k not in gone)

    mod.syncwarp = syncwarp
    mod.all_sync = vote(lambda got: all(got.values()))
    mod.any_sync = vote(lambda got: any(got.values()))
    mod.ballot_sync = vote(lambda got: sum(1 << k for k, v in got.items() if v))
    mod.activemask = activemask
