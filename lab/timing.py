"""Timing, in the spirit of torch.utils.benchmark: a Timer measures, a Measurement holds the result.

GPU work is timed with CUDA events recorded on the stream the work runs on (the legacy default
stream, which Numba, CuPy and torch all use unless told otherwise), one event pair per call, after
warm-up; the first call (JIT compile, module load) is timed on its own and kept out of the median.

Why a spin kernel: Numba spends ~46 us on the host to launch one kernel (~94 us with torch tensors
as arguments), longer than many kernels take to run. If each call is enqueued only when the GPU is
already idle, an event pair around it measures the host's launch gap, not the kernel. So the timer
first enqueues a kernel that sleeps on the GPU (``cuda.nanosleep``) for longer than the host needs
to enqueue every timed call; the calls then run back to back, and each event pair times the device
work alone. After enqueueing, the timer checks that the spin was still running (its end event not
yet complete); if not, it retries with a longer spin, and a call that blocks the host (e.g. one
that copies a result to the host) is reported as "host gaps included".

Why an L2 flush: back-to-back calls on the same buffers find the end of the previous call's data
in the 50 MB L2 (H100) and run faster than a cold call would. Before each timed call (outside its
event pair) a kernel *reads* a buffer twice the L2's size, so every call starts with an L2 full
of clean, unrelated lines. (A flush that writes, like ``cache.zero_()``, would leave 50 MB of dirty
lines whose write-back to DRAM is then charged to the timed call.)

Source: CUDA C++ Best Practices Guide, "Using CUDA GPU Timers"; the GPU MODE lecture notes
(torch.cuda.Event timing) in the seed notebooks.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

DEVICE_EVENTS = ("CUDA events, one pair a call, calls queued behind a spin kernel (no host launch gaps), "
                 "L2 flushed before each call")
DEVICE_EVENTS_GAPS = ("CUDA events, one pair a call, L2 flushed before each call; the call blocks the host, "
                      "so host gaps are included")
HOST_CLOCK = "time.perf_counter around each call"
SIMULATOR_CLOCK = "CUDA simulator: wall clock of the simulation, not a GPU time"


@dataclass
class Measurement:
    """Per-call times in ms of one callable, and how they were taken."""

    samples_ms: list[float]
    method: str
    meta: dict = field(default_factory=dict)

    @property
    def median_ms(self) -> float:
        return float(np.median(self.samples_ms))

    @property
    def iqr_ms(self) -> float:
        q1, q3 = np.percentile(self.samples_ms, [25, 75])
        return float(q3 - q1)


class Timer:
    """Time ``fn`` (a zero-argument callable that enqueues work).

    mode: "device" (CUDA events on the default stream), "host" (perf_counter; CPU work such as
    NumPy) or "simulator" (perf_counter, marked as not a GPU time).
    sync: waits for the device (needed for the first call in device mode).
    """

    def __init__(self, fn: Callable[[], object], mode: str, sync: Callable[[], None] = lambda: None):
        if mode not in ("device", "host", "simulator"):
            raise ValueError(f"unknown timer mode {mode!r}")
        self.fn, self.mode, self.sync = fn, mode, sync

    def first_call(self) -> tuple[float, object]:
        """Run fn once, synchronized; returns (wall ms: compile + load + run, fn's result)."""
        self.sync()
        t0 = time.perf_counter()
        result = self.fn()
        self.sync()
        return (time.perf_counter() - t0) * 1e3, result

    def measure(self, repeats: int, warmup: int) -> Measurement:
        """Warm up, then time ``repeats`` calls; returns a Measurement of per-call ms."""
        if repeats < 1:
            raise ValueError("repeats must be at least 1")
        t0 = time.perf_counter()
        for _ in range(max(warmup, 1)):
            if self.mode == "device":
                _flush_l2()
            self.fn()
        enqueue_s = (time.perf_counter() - t0) / max(warmup, 1)
        self.sync()
        if self.mode == "device":
            samples, covered, spin_ms = _device_samples(self.fn, repeats, enqueue_s)
            method = DEVICE_EVENTS if covered else DEVICE_EVENTS_GAPS
            return Measurement(samples, method, {"spin_ms": spin_ms})
        samples = []
        for _ in range(repeats):
            t = time.perf_counter()
            self.fn()
            samples.append((time.perf_counter() - t) * 1e3)
        method = HOST_CLOCK if self.mode == "host" else SIMULATOR_CLOCK
        return Measurement(samples, method)


# --- device timing -----------------------------------------------------------------------------
_spin_kernel = None
_MAX_SPIN_US = 2_000_000


def _spin(us: int) -> None:
    """Enqueue one GPU thread that sleeps ~``us`` microseconds (nanosleep of 1 us, repeated)."""
    global _spin_kernel
    from numba import cuda

    if _spin_kernel is None:
        @cuda.jit
        def spin(n):
            for _ in range(n):
                cuda.nanosleep(1000)

        import warnings

        from numba.core.errors import NumbaPerformanceWarning

        with warnings.catch_warnings():  # one thread on purpose: not the low occupancy it warns of
            warnings.simplefilter("ignore", NumbaPerformanceWarning)
            _spin_kernel = spin[1, 1]
    _spin_kernel(np.int64(us))


FLUSH_L2 = True
_flush_kernel = None
_flush_buffer = None


def _flush_l2() -> None:
    """Enqueue a kernel that overwrites a buffer of twice the L2 size (evicting the last call's data)."""
    global _flush_kernel, _flush_buffer
    from numba import cuda

    if _flush_kernel is None:
        @cuda.jit
        def flush(buf, sink):
            i = cuda.grid(1)
            stride = cuda.gridsize(1)
            acc = 0
            while i < buf.shape[0]:
                acc ^= buf[i]
                i += stride
            if acc == 0x5EED:  # the buffer is zeros: never true, but the loads must stay
                sink[0] = acc

        l2 = int(getattr(cuda.get_current_device(), "L2_CACHE_SIZE", 0) or 64 << 20)
        _flush_buffer = (cuda.to_device(np.zeros(2 * l2 // 4, np.int32)), cuda.device_array(1, np.int32))
        _flush_kernel = flush[1024, 256]
    if FLUSH_L2:
        _flush_kernel(*_flush_buffer)


def _device_samples(fn, repeats: int, enqueue_s: float):
    """Per-call device times (ms) of ``repeats`` calls queued behind a spin kernel.

    Returns (samples, covered, spin_ms): covered is True when the spin outlasted the host's
    enqueueing of all calls, i.e. the GPU never waited for the host between calls.
    """
    from numba import cuda

    spin_us = int(min(_MAX_SPIN_US, 2 * enqueue_s * 1e6 * (repeats + 2) + 500))
    for _ in range(3):
        starts = [cuda.event(timing=True) for _ in range(repeats)]
        ends = [cuda.event(timing=True) for _ in range(repeats)]
        _spin(spin_us)
        for start, end in zip(starts, ends):
            _flush_l2()
            start.record()
            fn()
            end.record()
        covered = not starts[0].query()  # still pending: the GPU had not reached the first call
        ends[-1].synchronize()
        samples = [cuda.event_elapsed_time(a, b) for a, b in zip(starts, ends)]
        if covered or spin_us >= _MAX_SPIN_US:
            break
        spin_us = min(_MAX_SPIN_US, spin_us * 4)
    return samples, covered, spin_us / 1e3
