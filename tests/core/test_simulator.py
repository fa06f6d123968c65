"""lab.core.simulator: the one simulator set-up (switch interval, shared-array lock, tracer), and the
shared-array race it fixes, shown on numba-cuda's stock lookup (docs/upstream-simulator-race.md)."""
import sys
import time

import numpy as np
import pytest
from numba import cuda, float32

from lab.core import simulator
from tests.conftest import SIMULATOR

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="Numba's CUDA simulator only")


@cuda.jit
def block_sum(out):
    s = cuda.shared.array(32, float32)  # one array per block, shared by its threads
    s[cuda.threadIdx.x] = 1.0
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        total = 0.0
        for i in range(32):
            total += s[i]
        out[cuda.blockIdx.x] = total


def _block_sums(blocks=4, threads=32):
    out = np.full(blocks, np.nan, np.float32)
    block_sum[blocks, threads](out)
    return out


class _SlowEmpty:
    """numpy as the simulator's kernelapi sees it, with a thread switch inside np.empty: the window
    between the lookup's miss and its store, made wide enough to hit on every run."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def empty(*args, **kwargs):
        time.sleep(0.05)  # wider than a thread start on a loaded machine (5 ms was missed under 4 workers on 2 cores)
        return np.empty(*args, **kwargs)


def test_shared_array_race_stock_vs_serialized(monkeypatch):
    from numba.cuda.simulator import kernel as simkernel
    from numba.cuda.simulator import kernelapi

    assert simulator.serialize_shared_arrays()
    assert simulator.run_blocks_on_greenlets()
    # numba-cuda's own threads (the lab runs a block's threads on greenlets, which switch only where a
    # thread waits: never inside the lookup)
    monkeypatch.setattr(simkernel.BlockManager, "run", simkernel.BlockManager.run.lab_original)
    patched = kernelapi.FakeCUDAShared.array
    monkeypatch.setattr(kernelapi, "np", _SlowEmpty())
    monkeypatch.setattr(kernelapi.FakeCUDAShared, "array", patched.lab_original)  # numba-cuda's own lookup
    # a loaded machine can still miss the window once: the race must show within a few launches
    raced = any(not np.all(_block_sums() == 32) for _ in range(5))
    assert raced, "the stock simulator's race did not show in 5 launches (fixed upstream?)"
    monkeypatch.setattr(kernelapi.FakeCUDAShared, "array", patched)
    assert np.all(_block_sums() == 32)


def test_threads_lowers_the_switch_interval_and_restores_it():
    before = sys.getswitchinterval()
    sys.setswitchinterval(5e-3)
    try:
        with simulator.threads():
            assert sys.getswitchinterval() == pytest.approx(simulator.SWITCH_INTERVAL_S)
        assert sys.getswitchinterval() == pytest.approx(5e-3)
        with simulator.threads(False):
            assert sys.getswitchinterval() == pytest.approx(5e-3)
    finally:
        sys.setswitchinterval(before)


def test_one_setting_for_run_counters_and_exercises():
    """The runner's, counters' and the exercise executor's set-up is this module's."""
    import inspect

    from lab.core import runner, simt
    from lab.inspect.counters import simulator as counters

    assert runner.SIMULATOR_SWITCH_INTERVAL_S == simulator.SWITCH_INTERVAL_S
    assert runner.simulator_threads is simulator.threads
    assert counters.simulator_threads is simulator.threads
    assert "simulation.enter()" in inspect.getsource(simt.run)


def test_tracing_hooks_the_sector_tracer():
    with simulator.tracing(False) as none:
        assert none is None
    with simulator.tracing() as tracer:
        _block_sums(blocks=1)
    assert tracer.summary()["store"].requests >= 1


@cuda.jit
def _vote_and_scan(x, counts, out):
    """Per block: how many of its elements are positive (cuda.syncthreads_count), and a barrier tree
    sum of the block's elements into out."""
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    v = x[i] if i < x.shape[0] else 0.0
    n = cuda.syncthreads_count(v > 0)
    s[t] = v
    cuda.syncthreads()
    step = 32
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        counts[cuda.blockIdx.x] = n
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def _raises_in_one_thread(x):
    if cuda.blockIdx.x == 1 and cuda.threadIdx.x == 5:
        x[10 ** 6] = 1.0  # past the end
    cuda.syncthreads()


def test_blocks_run_on_greenlets_with_the_simulators_semantics(rng):
    """numba-cuda's simulator blocks run on greenlets (lab.core.blocks.run_numba_block): barriers,
    syncthreads_count and a thread's exception behave as numba-cuda's threads do, no OS thread is
    started for a block, and the caller's thread is left as it was."""
    import threading

    from numba.cuda.simulator import kernel as simkernel

    simulator.enter()
    assert simkernel.BlockManager.run.lab_greenlets
    n = int(rng.integers(200, 400))
    x = rng.standard_normal(n).astype(np.float32)
    blocks = -(-n // 64)
    counts, out = np.zeros(blocks, np.int32), np.full(blocks, np.nan, np.float32)
    before = threading.active_count()
    _vote_and_scan[blocks, 64](x, counts, out)
    assert threading.active_count() == before
    padded = np.zeros(blocks * 64, np.float32)
    padded[:n] = x
    np.testing.assert_array_equal(counts, (padded.reshape(blocks, 64) > 0).sum(1))
    np.testing.assert_allclose(out, padded.reshape(blocks, 64).sum(1, dtype=np.float64), rtol=1e-5, atol=1e-5)
    with pytest.raises(IndexError, match=r"tid=\[5, 0, 0\] ctaid=\[1, 0, 0\]"):
        _raises_in_one_thread[3, 32](np.zeros(64, np.float32))
    me = threading.current_thread()
    assert not any(hasattr(me, k) for k in ("blockIdx", "threadIdx", "syncthreads", "_manager"))
