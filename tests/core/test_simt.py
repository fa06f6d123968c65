"""lab.core.simt: the warp collectives it adds to Numba's simulator (shuffles, votes, syncwarp),
the deadlocks it reports instead of hanging, and shared-memory atomics against plain accesses.

Simulator-only (a GPU session skips unmarked tests): these are the simulator's own semantics."""
import threading

import numpy as np
import pytest
from numba import cuda

from lab.core import blocks, simt

FULL = 0xFFFFFFFF


def _run(fn, block, *arrays, grid=1):
    trace = simt.Trace()
    simt.run(fn, grid, block, list(arrays), np.random.default_rng(0), trace=trace)
    return trace


def _shuffles(src, down, up, xor, idx):
    t = cuda.threadIdx.x
    v = src[t]
    down[t] = cuda.shfl_down_sync(FULL, v, 3)
    up[t] = cuda.shfl_up_sync(FULL, v, 5)
    xor[t] = cuda.shfl_xor_sync(FULL, v, 6)
    idx[t] = cuda.shfl_sync(FULL, v, 35)  # source lane 35 % 32 = 3


def test_shuffles_follow_cuda():
    """Lane l of each warp gets lane l+3 (own value past lane 31), l-5 (own below 0), l^6, lane 3."""
    n = 64
    src = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    outs = [np.full(n, np.nan, np.float32) for _ in range(4)]
    _run(_shuffles, n, src, *outs)
    lane = np.arange(n) % 32
    base = np.arange(n) - lane
    np.testing.assert_array_equal(outs[0], src[np.where(lane + 3 < 32, np.arange(n) + 3, np.arange(n))])
    np.testing.assert_array_equal(outs[1], src[np.where(lane >= 5, np.arange(n) - 5, np.arange(n))])
    np.testing.assert_array_equal(outs[2], src[base + (lane ^ 6)])
    np.testing.assert_array_equal(outs[3], src[base + 3])


def _down_only(src, out):
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_down_sync(FULL, src[t], 4)


def test_a_lane_missing_from_a_partial_warp_gives_a_poison():
    """A block of 40 threads: lanes 8..31 of warp 1 do not exist, so lanes 4..7 read garbage (NaN)."""
    src = np.arange(40, dtype=np.float32)
    out = np.full(40, -1.0, np.float32)
    _run(_down_only, 40, src, out)
    assert np.array_equal(out[32:36], src[36:40]) and np.isnan(out[36:40]).all()
    assert np.array_equal(out[:28], src[4:32]) and np.array_equal(out[28:32], src[28:32])


def _early_return(src, out):
    t = cuda.threadIdx.x
    if t >= src.shape[0]:
        return
    out[t] = cuda.shfl_down_sync(FULL, src[t], 1)


def _divergent(src, out):
    t = cuda.threadIdx.x
    if t < 16:
        out[t] = cuda.shfl_down_sync(FULL, src[t], 1)
    cuda.syncthreads()


@pytest.mark.parametrize("fn,phrase", [(_early_return, "lanes 20..31 of warp 0 never reached the warp shuffle (call 1 "
                                                         "of the warp) that the other lanes of its mask wait at; they "
                                                         "returned before it"),
                                       (_divergent, "lanes 16..31 of warp 0 never reached the warp shuffle (call 1 of "
                                                    "the warp) that the other lanes of its mask wait at; they wait "
                                                    "elsewhere")])
def test_lanes_that_never_reach_a_shuffle_are_reported_not_waited_for(fn, phrase):
    src = np.arange(20, dtype=np.float32)
    with pytest.raises(simt.KernelError) as e:
        _run(fn, 32, src, np.zeros(32, np.float32))
    assert isinstance(e.value.error, blocks.WarpError) and phrase in str(e.value.error)


def _votes(src, out):
    t = cuda.threadIdx.x
    p = src[t] > 0
    out[0 + 3 * (t // 32)] = cuda.ballot_sync(FULL, p)
    cuda.syncwarp()
    out[1 + 3 * (t // 32)] = cuda.any_sync(FULL, p)
    out[2 + 3 * (t // 32)] = cuda.all_sync(FULL, p)


def test_votes_and_syncwarp():
    src = np.full(64, -1.0, np.float32)
    src[[0, 5, 31]] = 1.0
    out = np.zeros(6, np.int64)
    _run(_votes, 64, src, out)
    assert out.tolist() == [(1 << 0) | (1 << 5) | (1 << 31), 1, 0, 0, 0, 0]


def _shared_counts(x, out, zero_barrier):
    local = cuda.shared.array(4, np.int32)
    t = cuda.threadIdx.x
    if t < 4:
        local[t] = 0
    if zero_barrier:  # the same for every thread of the block
        cuda.syncthreads()
    cuda.atomic.add(local, x[t], 1)
    cuda.syncthreads()
    if t < 4:
        out[t] = local[t]


def test_atomics_race_with_plain_accesses_of_the_same_epoch_only():
    """Atomics on a shared bin among themselves are ordered; an atomic on a bin another thread zeroed
    with no barrier between is a race."""
    x = np.arange(32) % 4
    out = np.zeros(4, np.int32)
    trace = _run(_shared_counts, 32, x, out, True)
    assert not trace.races and out.tolist() == [8, 8, 8, 8]
    trace = _run(_shared_counts, 32, x, np.zeros(4, np.int32), False)
    assert trace.races and "atomically updated" in {trace.races[0][1], trace.races[0][5]}


def _row_views(A, out):
    """out[y][x] = A[y][x] + 1 through partial indices (row views), thread (x, y)."""
    x, y = cuda.threadIdx.x, cuda.threadIdx.y
    row = out[y]
    row[x] = A[y][x] + 1


def _slice_store(a, out):
    if cuda.threadIdx.x == 0:
        out[1:] = a[1:]


def test_views_taken_in_a_kernel_are_traced_as_the_arrays_elements():
    """A partial index (``out[y]``) or a slice taken in a kernel is a traced view: its elements are the
    array's (who wrote each, out of bounds), and a slice store is the thread's store of every element."""
    trace = simt.Trace()
    lock = threading.RLock()
    A = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.full((3, 4), np.nan, np.float32)
    tA, tout = simt.traced(A, "A", trace, lock), simt.traced(out, "out", trace, lock, output=True)
    simt.run(_row_views, 1, (4, 3), [tA, tout], np.random.default_rng(0), trace=trace, lock=lock)
    np.testing.assert_array_equal(out, A + 1)
    writer = tout._lab_tracker.writer
    assert sorted(writer) == list(range(12)) and writer[6] == ((0, 0, 0), (2, 1, 0))  # out[1][2] by thread (2, 1)
    assert trace.stats.per_thread[("A", "load")][((0, 0, 0), (3, 2, 0))] == 1  # A[2][3] read by thread (3, 2)
    trace = simt.Trace()
    a, out = np.arange(8, dtype=np.float32), np.full(8, np.nan, np.float32)
    ta, tout = simt.traced(a, "a", trace, lock), simt.traced(out, "out", trace, lock, output=True)
    simt.run(_slice_store, 1, 32, [ta, tout], np.random.default_rng(0), trace=trace, lock=lock)
    assert sorted(tout._lab_tracker.writer) == list(range(1, 8))
    assert set(tout._lab_tracker.writer.values()) == {((0, 0, 0), (0, 0, 0))} and np.isnan(out[0])
    assert (trace.stats.stored["out"][((0, 0, 0), (0, 0, 0))]) == set(range(1, 8))
