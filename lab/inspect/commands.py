"""The inspecting commands as library functions: ``grid``, ``occupancy``, ``counters``, ``sanitize`` and
``doctor``. Each takes the ``lab`` command's options as keyword arguments (the same names and defaults;
lists may stand for comma-separated values), declared once in :mod:`lab.core.options`
(:func:`~lab.core.options.declares` checks them, with the command's one-line LabError), does the work and returns the command's ``--json`` document. Nothing
here prints: the ``lab`` commands and the notebook API (:mod:`lab.cli`) are views over these.
"""
from __future__ import annotations

from lab.core import args as A
from lab.core import options as D
from lab.core.errors import LabError
from lab.core.options import declares
import kernels


def _backend(sim) -> str:
    from lab.core.simulator import select  # lazy: heavy for lab --help's start (ctypes)

    return select(A.backend(sim))


@declares(D.KERNEL, D.VARIANT.but(help="Numba variant (default: the kernel's first)."),
          D.SIZE.but(help="Problem size as for lab run (default: a small one)."), D.THREADS_256,
          D.ARCH.but(help="sm_XX for waves (default: this GPU's, else sm_90)."), D.SMS, D.WAVES, D.WARP)
def grid(kernel: str, *, variant: str | None, size: str | None, threads: int, arch: str | None, sms: int | None,
         waves: bool, warp: int | None) -> dict:
    """``lab grid KERNEL``: which block and thread wrote each output element of one launch of
    ``variant`` (default: the kernel's first) at ``size``, idle threads, and waves on ``arch``/``sms``
    (default: this GPU's, else sm_90); ``warp``: also warp N's global requests and their 32-byte
    sectors. Recorded in Numba's CUDA simulator, so this process must be (or become) a simulator
    process: LabError where numba.cuda already runs on a GPU (the notebook API then asks a child
    process). Returns docs/schemas/grid.json's document."""
    from lab.core.simulator import select  # lazy: heavy for lab --help's start (ctypes)

    select("sim")  # writes are tagged per simulated thread: the map always comes from the simulator
    from lab.inspect import grid as G  # lazy: heavy for lab --help's start (lab.inspect.grid)

    return G.describe(kernel, variant, size, threads, arch, sms, waves, warp)


@declares(D.KERNEL_OPTIONAL, D.VARIANT.but(help="Numba variant (default: the kernel's first)."), D.THREADS_256,
          D.ARCH, D.REGISTERS, D.SHARED, D.SWEEP, D.SIM)
def occupancy(kernel: str | None, *, variant: str | None, threads: int, arch: str | None, registers: int | None,
              shared: int | None, sweep: bool, sim: bool | None) -> dict:
    """``lab occupancy [KERNEL]``: theoretical occupancy of KERNEL's ``variant`` on ``arch`` (this
    GPU's, else sm_90), or the calculator (``registers`` per thread, ``shared`` bytes a block, no
    kernel); ``sweep``: also 32..1024 threads per block. Returns docs/schemas/occupancy.json's
    document; LabError on bad input."""
    from lab.inspect import occupancy as Occ  # lazy: heavy for lab --help's start (concurrent)

    return Occ.occupancy(kernel, variant, threads, arch, registers, shared,
                         None if kernel is None else _backend(sim), with_sweep=sweep)


@declares(D.KERNEL, D.VARIANT, D.SIZE, D.THREADS, D.DTYPE, D.CONTENDERS, D.SEED, D.TOOL, D.yes_for("traced run"),
          D.SIM)
def counters(kernel: str, *, variant: str | list | None, size: str | None, threads: int | None, dtype: str,
             contenders: str | list | None, seed: int | None, tool: str, yes: bool, sim: bool | None,
             progress=None) -> dict:
    """``lab counters KERNEL``: one call of each rung and library op under Nsight Compute (else CUPTI;
    ``tool``) with a verdict; in the simulator sectors per request from the recorded addresses.
    Returns docs/schemas/counters.json's document; LabError on bad input or when no engine is
    usable on a GPU."""
    from lab.inspect import counters as K  # lazy: heavy for lab --help's start (csv)

    backend = _backend(sim)
    return K.counters(kernel, backend, A.csv(variant), size, threads, dtype, A.csv(contenders),
                      seed if seed is not None else 0, progress, tool=tool, yes=yes)


@declares(D.KERNEL, D.VARIANT, D.SANITIZER_TOOLS,
          D.SIZE.but(help="Problem size as for lab run (default: the simulator's small size)."), D.THREADS_256,
          D.DTYPE, D.SEED, D.SIM)
def sanitize(kernel: str, *, variant: str | list | None, tools: str | list, size: str | None, threads: int,
             dtype: str, seed: int | None, sim: bool | None, progress=None) -> dict:
    """``lab sanitize KERNEL``: each rung once under NVIDIA compute-sanitizer (``tools``: memcheck,
    racecheck, synccheck, initcheck; comma-separated or a list): clean, or how many errors and the
    first, by file and line. Returns docs/schemas/sanitize.json's document; LabError when
    compute-sanitizer or a GPU is missing, or on bad input."""
    from lab.core import sanitizer as San  # lazy: heavy for lab --help's start (glob)
    from lab.inspect import sanitize as S  # lazy: heavy for lab --help's start (glob)

    if kernel not in kernels.NAMES:  # the name first: a typo is the user's first problem, not the toolkit
        try:
            kernels.load(kernel)
        except KeyError as e:
            raise LabError(e.args[0]) from None
    if San.find_sanitizer() is None:  # before choosing a backend: it is the first thing missing here
        raise LabError(San.unavailable_reason())
    backend = _backend(sim)
    return S.sanitize(kernel, backend, A.csv(variant), A.csv(tools), size, threads, dtype,
                      seed if seed is not None else 0, progress)


@declares()
def doctor() -> list:
    """``lab doctor``: versions, CUDA driver, compilers, GPUs, CuPy, torch, a tiny kernel. Returns the
    checks in order (:class:`lab.inspect.doctor.Check`: ok, warn or fail, with detail and fix);
    :func:`lab.inspect.doctor.to_dict` makes docs/schemas/doctor.json's document of them."""
    from lab.inspect import doctor as D  # lazy: heavy for lab --help's start (ctypes)

    return D.run_checks()
