"""A run's rows: each one a :class:`Task` (what ran), its :class:`Check` (what checking it found) and
its :class:`lab.core.timing.Measurement` (how long it took), held to the run's :class:`Rates`.

``lab.core.runner`` makes them (and re-exports every name here); ``lab.core.compile_child`` builds the
row of a rung whose compiler crashed; the views and the JSON read them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from lab.core.timing import SIMULATOR_CLOCK, Measurement


@dataclass(frozen=True)
class Task:
    """One row's work, fixed before it runs: a contender (and its variant) on one problem.

    kernel: the KernelSpec name; contender: "numba", "numpy", "cupy" or "torch"; variant: the Numba
    rung, the library op's label, "reference (CPU)" for NumPy or "-" for a contender that cannot run;
    size: the problem's dimensions; dtype: the inputs' element type; launch: a Numba rung's launch
    (``Launch.as_dict()``: grid, block, threads; after its checked call also registers, shared memory
    and occupancy, lab.core.occupancy.launch_usage), None otherwise; bytes_moved / flops: the
    problem's minimum DRAM traffic (bytes) and floating-point operations (the KernelSpec's)."""

    kernel: str
    contender: str
    variant: str
    size: tuple = ()
    dtype: str = "float32"
    launch: dict | None = field(default=None, compare=False)
    bytes_moved: int = 0
    flops: int = 0


@dataclass(frozen=True)
class Check:
    """What checking a task found: ``status`` "ok", "FAIL" or "skipped", with the ``reason``; the
    largest absolute and relative errors against the reference; the first (poisoned, checked) call's
    wall time in ms (compile + load + run for a Numba rung)."""

    status: str
    reason: str = ""
    max_abs_err: float | None = None
    rel_err: float | None = None
    first_call_ms: float | None = None


@dataclass(frozen=True)
class Rates:
    """The yardsticks a timed row is held to: the device's measured copy bandwidth (GB/s), its peak
    FP32 rate (GFLOP/s), and NumPy's median time on the same problem (ms); None where not known."""

    copy_gbps: float | None = None
    peak_fp32_gflops: float | None = None
    numpy_ms: float | None = None


@dataclass(frozen=True)
class Row:
    """One contender (and variant) of a run: its :class:`Task`, its :class:`Check`, its
    :class:`lab.core.timing.Measurement` (None when not timed), and what the compiler and the counters
    reported. GB/s, GFLOP/s, % of copy bandwidth and of peak FP32, and the speedup over NumPy are
    derived (properties) from the task's bytes and FLOPs, the measurement's median and ``rates``;
    None where not timed on a GPU (a simulated kernel's wall clock says nothing about GPU speed)."""

    task: Task
    check: Check
    measurement: Measurement | None = None
    compiler: str | None = None  # numba rows: numba-cuda or numba-cuda-mlir
    registers: int | None = None  # numba rows: registers a thread (the most among the rung's kernels)
    spill_bytes: int | None = None  # numba rows: ptxas spill stores + loads a thread (summed)
    local_bytes: int | None = None  # numba rows: local memory a thread (spills and local arrays)
    # --counters (None where not measured): DRAM bytes read + written / the kernel's minimum traffic (in
    # the simulator: distinct 32-byte sectors touched x 32 / the minimum), and 32-byte sectors a warp's
    # global load request fetched (l1tex__t_sectors / l1tex__t_requests, _op_ld)
    dram_ratio: float | None = None
    sectors_per_request: float | None = None
    rates: Rates = Rates()

    # the task's and the check's facts, by the names the views and the JSON use
    contender = property(lambda self: self.task.contender)
    variant = property(lambda self: self.task.variant)
    launch = property(lambda self: self.task.launch)
    status = property(lambda self: self.check.status)
    reason = property(lambda self: self.check.reason)
    max_abs_err = property(lambda self: self.check.max_abs_err)
    rel_err = property(lambda self: self.check.rel_err)
    first_call_ms = property(lambda self: self.check.first_call_ms)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def seconds(self) -> float | None:
        """The median timed call in seconds; None when not timed, or timed on the simulator's clock."""
        m = self.measurement
        return None if m is None or m.method == SIMULATOR_CLOCK else m.median_ms * 1e-3

    @property
    def gbps(self) -> float | None:
        """The task's minimum bytes moved / the median time, GB/s (1e9 bytes a second)."""
        return self.task.bytes_moved / self.seconds / 1e9 if self.seconds else None

    @property
    def gflops(self) -> float | None:
        """The task's floating-point operations / the median time, GFLOP/s."""
        return self.task.flops / self.seconds / 1e9 if self.seconds else None

    @property
    def pct_copy(self) -> float | None:
        """GB/s as a % of the measured device-to-device copy bandwidth (GPU contenders only)."""
        copy = self.rates.copy_gbps
        return 100 * self.gbps / copy if copy and self.seconds and self.contender != "numpy" else None

    @property
    def pct_peak_flops(self) -> float | None:
        """GFLOP/s as a % of the device's peak FP32 rate (GPU contenders only)."""
        peak = self.rates.peak_fp32_gflops
        return 100 * self.gflops / peak if peak and self.seconds and self.contender != "numpy" else None

    @property
    def speedup_vs_numpy(self) -> float | None:
        """NumPy's median time / this row's (above 1: faster than NumPy)."""
        numpy_ms = self.rates.numpy_ms
        return numpy_ms / self.measurement.median_ms if numpy_ms and self.seconds else None


def row(contender: str, variant: str, status: str = "ok", reason: str = "", *, kernel: str = "",
        measurement: Measurement | None = None, launch: dict | None = None, **facts) -> Row:
    """A :class:`Row` from its parts' main fields (tests and stand-ins): ``facts`` are Row fields
    (compiler, registers, dram_ratio ...) or Check fields (max_abs_err, rel_err, first_call_ms)."""
    check = {k: facts.pop(k) for k in ("max_abs_err", "rel_err", "first_call_ms") if k in facts}
    return Row(Task(kernel, contender, variant, launch=launch), Check(status, reason, **check), measurement, **facts)
