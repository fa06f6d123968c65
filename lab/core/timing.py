"""Timing, in the spirit of torch.utils.benchmark: a Timer measures, a Measurement holds the result.

GPU work is timed with CUDA events recorded on the stream the work runs on (the legacy default
stream, which Numba, CuPy and torch all use unless told otherwise), one event pair per call, after
warm-up; the first call (JIT compile, module load) is timed on its own and kept out of the median.

Why the calls are queued behind a blocked GPU: Numba spends ~46 us on the host to launch one kernel
(~94 us with torch tensors as arguments), longer than many kernels take to run. If each call is
enqueued only when the GPU is already idle, an event pair around it measures the host's launch gap,
not the kernel. So the timer first launches a one-thread kernel that waits on a flag in mapped
(page-locked, device-visible) host memory, enqueues a batch of timed calls behind it, and then sets
the flag: the calls run back to back and each event pair times the device work alone. This is
nvbench's blocking kernel (NVIDIA/nvbench, ``blocking_kernel.cu``); the kernel reads the flag with a
volatile load (inline PTX ``ld.volatile``; a plain load could be hoisted out of the loop or served
from L1) and gives up after a time limit, so a call that waits for the GPU cannot deadlock the host.
If the blocking kernel does not work on a machine (its self-test times out), the timer falls back to
a kernel that sleeps (``cuda.nanosleep``) for longer than the host needs to enqueue the batch.
Either way, after enqueueing the timer checks that the GPU was still held (the first call's start
event not yet complete); if not (a call that blocks the host, e.g. one that copies a result to the
host), the samples include host gaps and the method says so.

How many calls: a stop rule like nvbench's (lab.core.stopping: named criteria, and why sampling
stopped); ``repeats`` fixes the count instead. The GPU rows never use the CPU rows' median test. Calls are enqueued in batches of at most BATCH_MAX behind one
blocker, so the launch queue (about a thousand pending launches) never fills, whatever the count.
Two blockers alternate: while the GPU runs one batch, the host enqueues the next behind the other
(held until that batch is in), so a batch costs the larger of the host's enqueueing and the GPU's
running, not their sum; each batch is still checked to be held, and the samples are the ones the
rule stopped on (a batch in flight when it stops is dropped).

Why an L2 flush: back-to-back calls on the same buffers find the end of the previous call's data
in the 50 MB L2 (H100) and run faster than a cold call would. Before each timed call (outside its
event pair) a kernel *reads* a buffer twice the L2's size, so every call starts with an L2 full
of clean, unrelated lines. (A flush that writes, like ``cache.zero_()``, would leave 50 MB of dirty
lines whose write-back to DRAM is then charged to the timed call.)

Launch overhead (``Timer(..., "host", calls=N)``): what a small op costs the host to issue, not what
its kernel costs the GPU. Each sample is ``time.perf_counter`` around N back-to-back calls, divided by
N (one call is a few microseconds: a single call would be read near the clock's resolution and its
Python loop overhead); the device is synchronized after each sample, outside the timed calls, so the
launch queue never fills (a full queue would make the host wait for the GPU). No L2 flush and no
blocking kernel: both would put work of their own on the host's timed path or hold back the GPU
work the calls queue, and the host time is the quantity. The stop rule is the same (a fixed count,
or the adaptive criteria with the host rows' median test), tested on the samples' whole durations
(N calls each), so ``min_time_s`` counts the time really measured.

Source: CUDA C++ Best Practices Guide, "Using CUDA GPU Timers"; NVIDIA nvbench (stopping criterion,
blocking kernel); the GPU MODE lecture notes (torch.cuda.Event timing) in the seed notebooks.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from collections.abc import Callable
import warnings

import numpy as np

from lab.core.stopping import Stop, StopRule
from kernels.backend import launcher, param_block
from kernels.cache import compile_allowed

DEVICE_EVENTS = ("CUDA events, one pair a call, calls queued behind a blocked GPU (no host launch gaps), "
                 "L2 flushed before each call")
DEVICE_EVENTS_GAPS = ("CUDA events, one pair a call, L2 flushed before each call; the call blocks the host, "
                      "so host gaps are included")
HOST_CLOCK = "time.perf_counter around each call"
HOST_CALLS_CLOCK = ("time.perf_counter around {calls} back-to-back calls, divided by the calls (host time a call); "
                    "device synchronized between samples, outside the timing; no L2 flush, no blocking kernel")
SIMULATOR_CLOCK = "CUDA simulator: wall clock of the simulation, not a GPU time"
NOISY = 0.10  # a row whose noise (IQR / median) exceeds this is flagged in the report


@dataclass
class Measurement:
    """Per-call times in ms of one callable, and how they were taken.

    method: one sentence saying how (one of the constants above, plus the stop rule in ``meta``).
    meta: {"stop": why sampling stopped, "blocker": "flag" or "sleep" (device mode), ...}.
    """

    samples_ms: list[float]
    method: str
    meta: dict = field(default_factory=dict)

    @property
    def median_ms(self) -> float:
        return float(np.median(self.samples_ms))

    @property
    def min_ms(self) -> float:
        return float(np.min(self.samples_ms))

    @property
    def iqr_ms(self) -> float:
        q1, q3 = np.percentile(self.samples_ms, [25, 75])
        return float(q3 - q1)

    @property
    def n(self) -> int:
        return len(self.samples_ms)

    @property
    def noise(self) -> float:
        """IQR / median, the relative spread of the samples (nan for a zero median)."""
        med = self.median_ms
        return self.iqr_ms / med if med > 0 else math.nan

    @property
    def noisy(self) -> bool:
        """Noise above NOISY (10%; nan counts). Never for simulator rows: their times mean nothing."""
        return self.method != SIMULATOR_CLOCK and not self.noise <= NOISY

    @property
    def host_gaps(self) -> bool:
        return self.method == DEVICE_EVENTS_GAPS

    @property
    def stop(self) -> dict | None:
        """The named criterion that stopped sampling and the noise then (``results[].stop`` of ``lab run
        --json``), or None (no criterion: a simulator clock, a single call)."""
        why = self.meta.get("stop")
        return why.as_dict() if isinstance(why, Stop) else None

    @property
    def timing(self) -> str:
        """The method sentence plus the count: what ``--json`` puts in ``results[].timing``."""
        return f"median of {self.n}: {self.method}" + (f"; {self.meta['stop']}" if self.meta.get("stop") else "")


class Timer:
    """Time ``fn`` (a zero-argument callable that enqueues work).

    mode: "device" (CUDA events on the default stream), "host" (perf_counter; CPU work such as
    NumPy, or with ``calls`` the host time of issuing GPU work) or "simulator" (perf_counter, marked
    as not a GPU time).
    sync: waits for the device (needed for the first call in device mode).
    flush_l2: read a buffer of twice the L2 size before each timed device call (default True).
    calls: host and simulator modes: each sample is the time of ``calls`` back-to-back calls divided by
      ``calls`` (ms a call), and ``sync`` runs after each sample, outside the timing: the launch
      overhead of a small op (the module docstring, "Launch overhead"). Device mode: 1 only.
      ValueError for a count below 1 or above 1 in device mode.
    """

    def __init__(self, fn: Callable[[], object], mode: str, sync: Callable[[], None] = lambda: None,
                 flush_l2: bool = True, calls: int = 1):
        if mode not in ("device", "host", "simulator"):
            raise ValueError(f"unknown timer mode {mode!r}")
        if not (isinstance(calls, int) and calls >= 1) or (mode == "device" and calls != 1):
            raise ValueError(f"calls must be an int >= 1 (1 in device mode), got {calls!r}")
        self.fn, self.mode, self.sync, self.flush_l2, self.calls = fn, mode, sync, flush_l2, calls

    def first_call(self) -> tuple[float, object]:
        """Run fn once, synchronized; returns (wall ms: compile + load + run, fn's result)."""
        self.sync()
        t0 = time.perf_counter()
        result = self.fn()
        self.sync()
        return (time.perf_counter() - t0) * 1e3, result

    def measure(self, repeats: int | None = None, warmup: int = 5, rule: StopRule | None = None) -> Measurement:
        """Warm up, then time calls; returns a Measurement of per-call ms.

        repeats: a fixed number of timed calls; None: the adaptive ``rule`` (default StopRule()).
        """
        if repeats is not None and repeats < 1:
            raise ValueError("repeats must be at least 1")
        rule = rule or StopRule()
        if repeats is not None:
            rule = replace(rule, repeats=repeats)
        device = self.mode == "device"
        t0 = time.perf_counter()
        # a GPU or a CPU call is warmed up at least once; a simulated one only if asked (it is slow, and
        # its wall clock is no GPU time anyway)
        for _ in range(warmup if self.mode == "simulator" else max(warmup, 1)):
            if device and self.flush_l2:
                _flush_l2()
            self.fn()
        enqueue_s = (time.perf_counter() - t0) / max(warmup, 1)
        self.sync()
        call_ms = (time.perf_counter() - t0) * 1e3 / max(warmup, 1)
        if device:
            samples, covered, meta = _device_samples(self.fn, rule, enqueue_s, call_ms, self.flush_l2)
            return Measurement(samples, DEVICE_EVENTS if covered else DEVICE_EVENTS_GAPS, meta)
        if self.calls > 1:
            return self._measure_calls(rule)
        samples, start, host = [], time.perf_counter(), self.mode == "host"
        while not (why := rule.done(samples, time.perf_counter() - start, settle=len(samples) % 16 == 0, host=host)):
            t = time.perf_counter()
            self.fn()
            samples.append((time.perf_counter() - t) * 1e3)
        method = HOST_CLOCK if self.mode == "host" else SIMULATOR_CLOCK
        return Measurement(samples, method, {"stop": why})

    def _measure_calls(self, rule: StopRule) -> Measurement:
        """Host or simulator mode with ``calls`` > 1: a sample is the wall time of ``calls`` back-to-back
        calls; the rule decides on those durations (so its minimum time is the time measured), the
        Measurement holds them divided by ``calls``; ``sync`` after each, untimed."""
        fn, calls, host = self.fn, range(self.calls), self.mode == "host"
        totals, start = [], time.perf_counter()  # measure() synchronized after the warm-up
        while not (why := rule.done(totals, time.perf_counter() - start, settle=len(totals) % 16 == 0, host=host)):
            t = time.perf_counter()
            for _ in calls:
                fn()
            totals.append((time.perf_counter() - t) * 1e3)
            self.sync()
        method = HOST_CALLS_CLOCK.format(calls=self.calls) if host else SIMULATOR_CLOCK  # meta["calls"] says how many
        return Measurement([t / self.calls for t in totals], method, {"stop": why, "calls": self.calls})


# --- device timing -----------------------------------------------------------------------------
BATCH_MAX = 64  # timed calls behind one blocker: <= 2 x 64 x (flush + 2 events + a few launches) queued
BLOCK_TIMEOUT_S = 2.0  # the blocking kernel gives up after this long (a call that waits for the GPU)
_MAX_SPIN_US = 2_000_000
_spin_kernel = None
_blocker = {}  # "kernel", "flag", "status", "works" (bool), "why" (str)


def _spin(us: int) -> None:
    """Enqueue one GPU thread that sleeps ~``us`` microseconds (nanosleep of 1 us, repeated)."""
    global _spin_kernel
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    if _spin_kernel is None:
        @cuda.jit
        def spin(n):
            for _ in range(n):
                cuda.nanosleep(1000)

        with warnings.catch_warnings():  # one thread on purpose: not the low occupancy it warns of
            warnings.filterwarnings("ignore", message=".*Grid size")  # either compiler's warning class
            _spin_kernel = spin[1, 1]
    _spin_kernel(np.int64(us))


def _volatile_load():
    """A device function returning ``arr[0]`` (int32) through ``ld.volatile``: read from memory every
    time, never hoisted out of a loop nor served from L1 (CUDA has no volatile in Numba). One line of
    inline PTX under either compiler: numba-cuda's through an llvmlite intrinsic, numba-cuda-mlir's
    through ``inline_ptx`` (the array's address: ``arr.ctypes.data``, as kernels/gemm/mma.py takes it)."""
    from kernels.compiler import COMPILER, MLIR  # lazy: backend chosen first (numba)

    if COMPILER == MLIR:
        import numba_cuda_mlir.cuda.experimental as X  # lazy: backend chosen first (numba_cuda_mlir)

        from kernels.compiler import cuda  # lazy: backend chosen first (numba)

        @cuda.jit(device=True, forceinline=True)
        def volatile_load0_mlir(arr):
            return X.inline_ptx("ld.volatile.u32 %0, [%1];", "=r", np.int32, "l", arr.ctypes.data)

        return volatile_load0_mlir

    from llvmlite import ir  # lazy: backend chosen first (llvmlite)
    from numba import types  # lazy: backend chosen first (numba)
    from numba.cuda.extending import intrinsic  # lazy: backend chosen first (numba)

    @intrinsic
    def volatile_load0(typingctx, arr):
        sig = types.int32(arr)

        def codegen(context, builder, sig, args):
            ptr = context.make_array(sig.args[0])(context, builder, args[0]).data
            asm = ir.InlineAsm(ir.FunctionType(ir.IntType(32), [ptr.type]), "ld.volatile.u32 $0, [$1];",
                               "=r,l", side_effect=True)
            return builder.call(asm, [ptr])
        return sig, codegen

    return volatile_load0


def _blocking_kernel_function():
    """The blocking kernel (not launched): one thread naps 1 us at a time until the host sets
    flag[0] (mapped memory, read with :func:`_volatile_load`) or max_sleeps naps have passed."""
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    load = _volatile_load()

    @cuda.jit
    def block_until_released(flag, status, max_sleeps):
        """One thread waits (1 us naps) until the host sets flag[0]; status 1 = released,
        2 = gave up after max_sleeps naps."""
        if cuda.grid(1) == 0:
            naps = 0
            while load(flag) == 0 and naps < max_sleeps:
                cuda.nanosleep(1000)
                naps += 1
            status[0] = 1 if naps < max_sleeps else 2

    return block_until_released


def blocking_kernel() -> dict:
    """The blocking kernel and its mapped flag, self-tested once a process (a GPU is required).

    Returns {"works": bool, "why": str, ...}: works is False (and the timer sleeps instead) when
    the kernel could not be built or did not see the host's release within BLOCK_TIMEOUT_S.
    """
    if _blocker:
        return _blocker
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    try:
        with compile_allowed("the timer's blocking kernel"):  # also inside a rung's no-compile probe
            return _build_blocker(cuda)
    except Exception as e:  # no inline PTX, no mapped memory...: fall back to the sleep
        _blocker.clear()
        _blocker.update(works=False, why=f"blocking kernel unavailable ({type(e).__name__}: {e}); sleeping instead")
    return _blocker


def _build_blocker(cuda) -> dict:
    """:func:`blocking_kernel`'s work: build, load and self-test the kernel (raises where it cannot)."""
    block_until_released = _blocking_kernel_function()
    flags = [cuda.mapped_array(1, np.int32) for _ in range(2)]  # two: batches overlap (_overlapped_samples)
    statuses = [cuda.mapped_array(1, np.int32) for _ in range(2)]
    flag, status = flags[0], statuses[0]
    _blocker.update(kernel=block_until_released[1, 1], flag=flag, status=status, flags=flags, statuses=statuses)
    flag[0], status[0] = 1, 0  # first launch pre-released: compiles and loads the kernel
    _blocker["kernel"](flag, status, np.int64(1000))
    cuda.synchronize()
    flag[0], status[0] = 0, 0
    t0 = time.perf_counter()
    _blocker["kernel"](flag, status, np.int64(BLOCK_TIMEOUT_S * 1e6))
    time.sleep(0.005)
    held = status[0] == 0  # still waiting 5 ms later: it does block
    flag[0] = 1
    cuda.synchronize()
    waited = time.perf_counter() - t0
    works = held and status[0] == 1
    _blocker["works"] = works
    _blocker["why"] = (f"blocking kernel released by the host after {waited * 1e3:.1f} ms" if works else
                       f"blocking kernel did not work (held: {held}, status {status[0]}); sleeping instead")
    return _blocker


FLUSH_L2 = True
_flush_kernel = None
_flush_buffer = None


def _flush_l2() -> None:
    """Enqueue a kernel that reads a buffer of twice the L2 size (evicting the last call's data)."""
    global _flush_kernel
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    if _flush_kernel is None:
        with compile_allowed("the timer's L2 flush"):  # also inside a rung's no-compile probe
            _flush_kernel = _build_flush(cuda)
    if FLUSH_L2:
        _flush_kernel()


def _build_flush(cuda):
    """:func:`_flush_l2`'s kernel over a buffer of twice the L2 size, compiled and bound once."""
    global _flush_buffer

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
    from kernels.compiler import bound  # lazy: backend chosen first (numba)

    fast = _direct_launch(flush, (1024, 256), _flush_buffer)  # numba-cuda; numba-cuda-mlir: bound()
    return fast or bound(flush[1024, 256], _flush_buffer)


def _direct_launch(dispatcher, config: tuple[int, int], arrays):
    """``launch()`` of ``dispatcher[config](*arrays)`` on the default stream straight through
    cuLaunchKernel (kernels.backend.launcher, as torch_bridge.launch.FastKernel does): a few us of
    host time instead of the dispatcher's ~46 us, for a kernel launched thousands of times with the same
    1-D int32 arrays (the L2 flush before every timed call). Checked once: the kernel must find a
    marker planted in the first array (it writes it to the second). None where this is not
    numba-cuda on a GPU or the check fails: the dispatcher launches it then."""
    from kernels.compiler import COMPILER, cuda  # lazy: backend chosen first (numba)

    if COMPILER != "numba-cuda":
        return None
    try:
        kernel = dispatcher.compile(tuple(dispatcher.typeof_pyval(a) for a in arrays))
        cufunc = kernel._codelibrary.get_cufunc()
        kernel.bind()
        layout = []  # numba-cuda's flattening of a 1-D array: meminfo, parent, nitems, itemsize, data, shape, stride
        for a in arrays:
            if a.ndim != 1 or a.dtype != np.int32:
                return None
            layout += [0, 0, a.size, 4, a.device_ctypes_pointer.value, a.size, 4]
        values, pointers = param_block(layout)
        go = launcher(int(cufunc.handle), (config[0], 1, 1, config[1], 1, 1), pointers)
        buf, sink = arrays
        buf[buf.size - 1:].copy_to_device(np.array([0x5EED], np.int32))  # the marker, in the last element
        sink.copy_to_device(np.zeros(1, np.int32))
        go(0)
        cuda.synchronize()
        found = int(sink.copy_to_host()[0]) == 0x5EED
        buf[buf.size - 1:].copy_to_device(np.zeros(1, np.int32))
        sink.copy_to_device(np.zeros(1, np.int32))
        if not found:
            return None

        def launch(values=values):  # values: the parameter block ``pointers`` points into, kept alive
            go(0)
        return launch
    except Exception:  # no libcuda symbol, another numba-cuda layout...: the dispatcher
        return None


def _timeout_naps(n: int, enqueue_s: float) -> np.int64:
    """How long (in 1 us naps) the blocking kernel waits for a batch of ``n`` calls: ten times the
    host's enqueue time of the batch plus 50 ms, at most BLOCK_TIMEOUT_S."""
    return np.int64(min(BLOCK_TIMEOUT_S, 10 * enqueue_s * (n + 2) + 0.05) * 1e6)


_event_pool: dict = {"context": None, "starts": [], "ends": []}


def _events(n: int) -> tuple[list, list]:
    """``n`` (start, end) pairs of timing events of the current context, made once and reused by every
    batch (a batch reads its events' times before the next one records them again): creating them
    anew cost ~19 us an event on the H100 (cProfile of ``lab run matvec``: 1.3 s of a 37 s run)."""
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    pool, context = _event_pool, cuda.current_context()
    if pool["context"] is not context:  # a new context (or the first batch): its own events
        pool.update(context=context, starts=[], ends=[])
    while len(pool["starts"]) < n:
        pool["starts"].append(cuda.event(timing=True))
        pool["ends"].append(cuda.event(timing=True))
    return pool["starts"][:n], pool["ends"][:n]


def _device_batch(fn, n: int, enqueue_s: float, flush: bool, hold: str):
    """Time ``n`` calls queued behind one hold ("flag": the blocking kernel; "sleep": a spin;
    "none"): returns (samples ms, covered). covered: the GPU was still held when the last call had
    been enqueued, so no call waited for the host."""
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    starts, ends = _events(n)
    b = _blocker
    if hold == "flag":
        b["flag"][0], b["status"][0] = 0, 0
        b["kernel"](b["flag"], b["status"], _timeout_naps(n, enqueue_s))
    elif hold == "sleep":
        _spin(int(min(_MAX_SPIN_US, 2 * enqueue_s * 1e6 * (n + 2) + 500)))
    for start, end in zip(starts, ends):
        if flush:
            _flush_l2()
        start.record()
        fn()
        end.record()
    if hold == "flag":  # still waiting for the flag: no call has started yet
        covered = b["status"][0] == 0
    else:  # still pending: the GPU had not reached call 1 (cuEventQuery; Numba logs NOT_READY)
        covered = hold == "sleep" and not starts[0].query()
    if hold == "flag":
        b["flag"][0] = 1
    ends[-1].synchronize()
    if hold == "flag" and b["status"][0] != 1:
        covered = False  # the blocker gave up: the calls waited for it, not for each other
    return [cuda.event_elapsed_time(a, e) for a, e in zip(starts, ends)], covered


def _device_samples(fn, rule: StopRule, enqueue_s: float, call_ms: float, flush: bool):
    """Per-call device times (ms) under ``rule``, in batches of at most BATCH_MAX behind a hold.

    Returns (samples, covered, meta): covered is True when every batch ran with the GPU held
    while the host enqueued it. A batch that was not covered is retried once with a longer sleep
    (or, behind the flag, taken as is: the call blocks the host); later batches then skip the hold.
    Behind the flag the batches overlap (:func:`_overlapped_samples`).
    """
    hold = "flag" if blocking_kernel()["works"] else "sleep"
    meta = {"stop": "", "blocker": _blocker.get("why", ""), "hold": hold}
    samples, covered_all, start, retried = [], True, time.perf_counter(), False
    if hold == "flag" and len(_blocker.get("flags", ())) == 2:
        samples, covered_all, meta["stop"], hold = _overlapped_samples(fn, rule, enqueue_s, call_ms, flush, start)
        if hold == "flag":
            return samples, covered_all, meta
    while not (why := rule.done(samples, time.perf_counter() - start)):
        n = rule.batch(samples, float(np.median(samples)) if samples else call_ms, BATCH_MAX)
        batch, covered = _device_batch(fn, n, enqueue_s, flush, hold)
        if not covered and hold == "sleep" and not retried:  # the host was slower than guessed
            retried, enqueue_s = True, enqueue_s * 4
            batch, covered = _device_batch(fn, n, enqueue_s, flush, hold)
        if not covered:
            hold = "none"  # the call waits for the GPU: holding it only adds a timeout per batch
        covered_all &= covered
        samples += batch
    meta["stop"] = why
    return samples, covered_all, meta


def _overlapped_samples(fn, rule: StopRule, enqueue_s: float, call_ms: float, flush: bool, start: float):
    """:func:`_device_samples` behind the flag, with the host's enqueueing overlapped with the GPU's
    running: while the GPU runs batch k (released), the host enqueues batch k+1 behind the other of
    two blocking kernels (it waits at that blocker once batch k is done), releases it, and only then
    reads batch k's events. Every batch is still queued behind a held GPU and checked to be (its
    blocker not yet done when its last call was enqueued); the wall time a batch costs is the larger
    of the host's enqueueing and the GPU's running instead of their sum (a second ``lab run matvec``
    on the H200 waited 3 s in 342 batch synchronizations).

    The rule decides on the samples read so far, as in the sequential loop: the next batch is sized
    counting the batch in flight at the median so far (a fixed count is never exceeded), and when
    the rule stops, the batch in flight is waited for and dropped: the samples kept are the ones the
    rule stopped on (only where it checks may differ: batch sizes count the batch in flight). Returns (samples, covered, stop reason, hold): hold "flag", or
    "none" after a batch that was not covered (a call that blocks the host; its samples are kept,
    and the caller goes on without a hold)."""
    samples, covered_all = [], True
    starts, ends = _events(2 * BATCH_MAX)
    pending = None  # (slot, n) of the batch enqueued and released, events not read yet
    slot = 0
    while True:
        if pending is None and (why := rule.done(samples, time.perf_counter() - start)):
            return samples, covered_all, why, "flag"
        in_flight = pending[1] if pending else 0
        est = float(np.median(samples)) if samples else call_ms
        n = rule.batch(samples + [est] * in_flight, est, BATCH_MAX)
        if rule.repeats is not None and len(samples) + in_flight >= rule.repeats:
            n = 0
        covered = True
        if n:
            covered = _enqueue_held(fn, n, enqueue_s, flush, slot, starts[slot * BATCH_MAX:], ends[slot * BATCH_MAX:])
        if pending is not None:
            batch, held = _read_batch(*pending, starts, ends)
            covered_all &= held
            samples += batch
            pending = None
            if not held:  # the blocker gave up: the calls waited for it, not for each other
                if n:
                    _read_batch(slot, n, starts, ends)
                return samples, False, "", "none"
            why = rule.done(samples, time.perf_counter() - start)
            if why:
                if n:  # the rule stopped on the samples before this batch: wait for it, drop it
                    _read_batch(slot, n, starts, ends)
                return samples, covered_all, why, "flag"
        if n:
            if not covered:  # a call that blocks the host: keep the batch, go on without holding
                batch, _ = _read_batch(slot, n, starts, ends)
                return samples + batch, False, "", "none"
            pending, slot = (slot, n), 1 - slot


def _enqueue_held(fn, n: int, enqueue_s: float, flush: bool, slot: int, starts, ends) -> bool:
    """Launch blocking kernel ``slot`` (of two), enqueue ``n`` timed calls behind it, release it;
    returns whether it still held the GPU when the last call had been enqueued."""
    b = _blocker
    flag, status = b["flags"][slot], b["statuses"][slot]
    flag[0], status[0] = 0, 0
    b["kernel"](flag, status, _timeout_naps(n, enqueue_s))
    for start, end in zip(starts[:n], ends[:n]):
        if flush:
            _flush_l2()
        start.record()
        fn()
        end.record()
    covered = status[0] == 0
    flag[0] = 1
    return bool(covered)


def _read_batch(slot: int, n: int, starts, ends):
    """Wait for the batch of ``n`` calls enqueued behind blocker ``slot`` and read its event pairs;
    returns (samples ms, whether the blocker was released rather than giving up)."""
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    first = slot * BATCH_MAX
    ends[first + n - 1].synchronize()
    released = _blocker["statuses"][slot][0] == 1
    return [cuda.event_elapsed_time(starts[i], ends[i]) for i in range(first, first + n)], bool(released)
