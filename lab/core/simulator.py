"""Numba's CUDA simulator as the lab uses it, set up in one place: the backend choice (simulator or
GPU), the thread switch interval, the shared-array lock and the sector tracer's hook-up.

Every path that simulates kernels goes through here: ``lab run`` (:mod:`lab.core.runner`), ``lab
counters --sim`` (:mod:`lab.inspect.counters`), the exercise checker's tracing executor
(:func:`lab.core.simt.run`, in the checker's child process) and the test suite (tests/conftest.py).

The backend
    :func:`choose` / :func:`select` (re-exported by :mod:`lab.core.session`): Numba reads
    ``NUMBA_ENABLE_CUDASIM`` once, when ``numba.cuda`` is first imported, so the choice is made
    before anything imports it; a GPU is detected through the CUDA driver API without importing
    Numba (``kernels.backend.gpu_count``).

A block's threads on greenlets: :func:`run_blocks_on_greenlets`
    numba-cuda's simulator runs each CUDA thread of a block as an OS thread, polled by a manager;
    the lab runs them as greenlets in one OS thread (:func:`lab.core.blocks.run_numba_block`), 8-14x
    less CPU where a block has barriers. The switch interval below still paces the Python threads
    that remain (a student's, the checker's watchdogs).

The switch interval: :data:`SWITCH_INTERVAL_S` = 0.2 ms, the one setting
    (Measured when blocks ran on threads:) every barrier and warp
    shuffle waits for all of them while the block's manager thread polls them. A thread woken at a
    barrier gets the GIL only when the running thread blocks or its switch interval (5 ms by
    default, ``sys.getswitchinterval``) runs out, so each simulated barrier cost up to 5 ms. At
    0.2 ms a simulated call of 32-thread blocks ran 2-7x faster on a 2-core CPU machine (matvec
    67x7 warp_per_row 6.8 -> 1.3 s, softmax fused 0.7 -> 0.1 s, quantize block_partials 1.9 ->
    0.3 s: best of 3); 1024-thread blocks, dominated by starting the threads, gain less. ``lab
    counters --sim`` used 0.5 ms and the exercise child the default 5 ms before; all use 0.2 ms now.
    The interval is lowered (never raised) inside :func:`threads` and restored after.

The shared-array lock: :func:`serialize_shared_arrays`
    Switching that often exposes a race in numba-cuda's simulator (0.30.4): two threads of a block
    that reach the same ``cuda.shared.array`` call together can get two different arrays.
    docs/upstream-simulator-race.md has a reproducer and the patch offered upstream; until a fixed
    numba-cuda is released, the patch is applied here, at run time, once a process.

How long a simulation takes: :func:`simulator_seconds`, :func:`quick_options`
    A rough wall time from lab.core.simcost before a run starts (``lab run`` announces a long one with
    a smaller ``--size``, and refuses one above 10 minutes without ``--yes``).

The tracer: :func:`tracing`
    ``with tracing(True) as tracer:`` records every simulated global load and store
    (:class:`lab.core.trace.SectorTracer`); ``tracing(False)`` yields None and records nothing.

Source: Numba's CUDA simulator documentation ("Debugging CUDA Python with the CUDA Simulator");
Python's ``sys.setswitchinterval``.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading

from kernels.backend import SIM_ENV as _SIM_ENV
from kernels.backend import gpu_count, is_simulator
from lab.core import compilers, simcost
from lab.core.blocks import run_numba_block
from lab.core.errors import LabError
import numpy as np
from lab.core.trace import SectorTracer

SWITCH_INTERVAL_S = 2e-4  # seconds: Python's thread switch interval while kernels are simulated


# --- the backend -----------------------------------------------------------------------------------
def _numba_cuda_loaded() -> bool:
    return "numba.cuda" in sys.modules


def choose(prefer: str = "auto") -> str:
    """Which backend ``prefer`` means here, "gpu" or "simulator", without setting it (the exercise
    checker sets it in its child process).

    prefer: "auto" (an explicit NUMBA_ENABLE_CUDASIM=1 wins, =0 demands a GPU, else a usable GPU, else
    the simulator), "gpu" or "sim". Raises LabError when a GPU is demanded but none is usable.
    """
    want_sim = {"sim": True, "gpu": False}.get(prefer)
    if want_sim is None and os.environ.get(_SIM_ENV, "").strip() == "0":  # the user insists on a GPU
        n, why = gpu_count()
        if n == 0:
            raise LabError(f"{_SIM_ENV}=0 insists on a CUDA GPU, but {why}; unset it (or use --sim) for the CUDA "
                           "simulator")
        want_sim = False
    if want_sim is None:
        want_sim = is_simulator() or gpu_count()[0] == 0
    elif not want_sim:
        n, why = gpu_count()
        if n == 0:
            raise LabError(f"--gpu asked for a CUDA GPU, but {why}; use --sim for the CUDA simulator")
    return "simulator" if want_sim else "gpu"


def select(prefer: str = "auto") -> str:
    """Pick the backend for this process (:func:`choose`) and return "gpu" or "simulator".

    Raises LabError when a GPU is demanded but none is usable, when the simulator is asked for with
    ``LAB_COMPILER=numba-cuda-mlir`` (it has none), or when ``numba.cuda`` was already imported with
    the other backend (the choice cannot change inside one process).
    """
    want_sim = choose(prefer) == "simulator"
    if want_sim and os.environ.get(compilers.ENV) == compilers.MLIR:  # one line, not kernels.compiler's ImportError
        raise LabError(f"{compilers.ENV}={compilers.MLIR} has no CUDA simulator: set {compilers.ENV}="
                       f"{compilers.NUMBA_CUDA} (or unset it) for the simulator")
    if _numba_cuda_loaded():
        if want_sim != is_simulator():
            have = "simulator" if is_simulator() else "gpu"
            raise LabError(f"numba.cuda is already loaded with the {have} backend in this process")
    else:
        os.environ[_SIM_ENV] = "1" if want_sim else "0"
        # Numba's low-occupancy warning (a grid under 128 blocks) stays on: it teaches something
        # when a student's launch is too small. The timer's 1-thread spin kernel silences it locally.
    return "simulator" if want_sim else "gpu"


# --- a block's threads on greenlets ----------------------------------------------------------------
def run_blocks_on_greenlets() -> bool:
    """Run numba-cuda's simulated blocks on greenlets (once a process; True when patched now or
    before, False where there is nothing to patch).

    numba-cuda's simulator (0.30.4, ``simulator/kernel.py``, ``BlockManager.run``) starts an OS thread
    per CUDA thread of a block and polls them from the calling thread until all ended, releasing a
    ``cuda.syncthreads()`` once every live thread waits there. Handing the interpreter lock among up
    to 1,024 threads cost most of a simulation's CPU time, most of it in the kernel's own system
    calls: a 40-block, 256-thread tree reduction took 13.4 s of CPU (9.2 s of it system time) in the
    lab's tracing executor on threads, 1.6 s on greenlets. :func:`lab.core.blocks.run_numba_block`
    runs the same threads as greenlets (one OS thread, switched where a thread waits: the same
    semantics, in a legal schedule of the block) with numba-cuda's thread attributes and errors."""
    try:
        from numba.cuda.simulator import kernel as simkernel  # lazy: backend chosen first (numba)
    except ImportError:  # not the simulator (or another compiler): nothing to patch
        return False
    manager = getattr(simkernel, "BlockManager", None)
    if manager is None or not hasattr(manager, "run") or not hasattr(manager, "__init__"):
        return False
    if getattr(manager.run, "lab_greenlets", False):
        return True

    def run(self, grid_point, *args):
        return run_numba_block(self, grid_point, *args)

    run.lab_greenlets = True
    run.lab_original = manager.run
    manager.run = run
    return True


# --- the shared-array lock -------------------------------------------------------------------------
def serialize_shared_arrays() -> bool:
    """Make the simulator's ``cuda.shared.array`` atomic (once a process); True when patched now or
    before, False where there is nothing to patch (no simulator, another version's layout).

    numba-cuda's simulator (0.30.4, ``simulator/kernelapi.py``, ``FakeCUDAShared.array``) finds a
    block's shared array by the calling file and line: a dict get, and on a miss ``np.empty`` and a
    store, with no lock. Two threads of a block that miss together get two different arrays, and
    what one of them writes the others never read: a wrong result now and then (the test suite failed
    about one run in two, in quantize, matmul shared and tile64, once threads switched every 0.2 ms;
    none in 12 runs with this lock). The same lookup, under a lock; the caller's file and line are
    read from its frame (the original's traceback.extract_stack, without reading source lines).
    """
    try:
        from numba.cuda.simulator import kernelapi  # lazy: backend chosen first (numba)
    except ImportError:  # not the simulator (or another compiler): nothing to fix
        return False
    types, numpy_support = getattr(kernelapi, "types", None), getattr(kernelapi, "numpy_support", None)
    shared = getattr(kernelapi, "FakeCUDAShared", None)
    original = getattr(shared, "array", None)
    if original is None or types is None or numpy_support is None:
        return False
    if getattr(original, "lab_serialized", False):
        return True
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if alignment is not None or shape == 0:  # an error, or dynamic shared memory: no lookup
            return original(self, shape, dtype, alignment)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)
        with lock:
            res = self._allocations.get(caller)
            if res is None:
                res = self._allocations[caller] = kernelapi.np.empty(shape, dtype)  # the simulator's numpy
        return res

    array.lab_serialized = True
    array.lab_original = original  # the stock lookup (docs/upstream-simulator-race.md's reproducer uses it)
    shared.array = array
    return True


# --- the switch interval ---------------------------------------------------------------------------
def enter() -> float:
    """Simulate from now on with a switch interval of at most :data:`SWITCH_INTERVAL_S` and atomic
    shared-array allocation (:func:`serialize_shared_arrays`); returns the interval before."""
    serialize_shared_arrays()
    run_blocks_on_greenlets()
    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, SWITCH_INTERVAL_S))
    return old


@contextlib.contextmanager
def threads(active: bool = True):
    """Within: :func:`enter` (when ``active``: the backend is the simulator); the switch interval
    restored after."""
    if not active:
        yield
        return
    old = enter()
    try:
        yield
    finally:
        sys.setswitchinterval(old)


# --- how long a simulation takes ---------------------------------------------------------------------
def simulator_calls(repeats: int, warmup: int, check_calls: int = 1) -> int:
    """Calls a simulator run makes of each variant: the checked first call (``check_calls``: 2 for a
    kernel with integer outputs, checked under two poisons), then (only when some are timed) the
    warm-up and the timed calls."""
    return check_calls + (warmup + repeats if repeats else 0)


def check_calls(spec, size, dtype) -> int:
    """1, or 2 when an output is an integer array (lab.core.check's two-poison check)."""
    return 2 if any(np.issubdtype(dt, np.integer) for _, dt in spec.out_specs(size, dtype)) else 1


def minutes(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{seconds / 60:.0f} min"


REFUSE_S = 600.0  # as lab.core.runner.REFUSE_SIMULATION_S: longer simulations need --yes
# a traced call (lab counters --sim: every global load and store recorded) against a plain one:
# matvec 64x200, every rung at 32 threads, 47 s traced vs 41 s for lab run (2-core CPU, loaded)
TRACE_FACTOR = 1.5


def refuse_long(estimate_s: float, what: str, advice: str, yes: bool = False) -> None:
    """LabError (one line) when a simulation estimated at ``estimate_s`` seconds is above
    :data:`REFUSE_S` and ``yes`` (--yes) was not given: how long, for ``what``, and ``advice`` (options
    of the command that asks, e.g. "smaller --shapes")."""
    if estimate_s > REFUSE_S and not yes:
        raise LabError(f"the simulator would take roughly {minutes(estimate_s)} for {what} (estimated); "
                       f"try {advice}, or --yes to run it anyway")


def simulator_seconds(spec, size, variant_names, threads: int, calls: int) -> float:
    """Rough wall seconds of a simulator run of ``variant_names`` (``calls`` calls each; lab.core.simcost)."""
    launched = {}
    for v in variant_names:
        variant = spec.variants[v]
        if variant.accepts(threads):
            continue  # skipped rungs cost nothing
        try:
            launched[v] = variant.launch(size, threads).threads_total
        except Exception:
            continue
    return calls * simcost.call_seconds(spec.name, launched, spec.flops(size))


def quick_options(spec, size, variant_names, threads: int, calls: int, target_s: float = 15.0) -> str:
    """Options for a simulator run of about ``target_s``: a --size with every dimension shrunk by the
    same factor, and --threads 32 when blocks of ``threads`` simulated threads alone cost too much."""
    def shrink(t):
        smaller = size
        while simulator_seconds(spec, smaller, variant_names, t, calls) > target_s and max(smaller) > 1:
            smaller = tuple(max(1, int(d * 0.8)) for d in smaller)
        return smaller, simulator_seconds(spec, smaller, variant_names, t, calls) <= target_s

    smaller, quick = shrink(threads)
    if not quick and threads > 32:
        smaller, _ = shrink(32)
        return f"--threads 32 --size {'x'.join(map(str, smaller))}"
    return f"--size {'x'.join(map(str, smaller))}"


# --- the tracer ------------------------------------------------------------------------------------
@contextlib.contextmanager
def tracing(active: bool = True):
    """``with tracing(active) as tracer``: a :class:`lab.core.trace.SectorTracer` recording every
    simulated global load and store within (its ``summary()`` after), or None when not ``active``."""
    if not active:
        yield None
        return
    with SectorTracer() as tracer:
        yield tracer
