"""The inspecting commands as library functions: ``grid``, ``occupancy``, ``counters``, ``sanitize`` and
``doctor``. Each takes the ``lab`` command's options as keyword arguments (the same names and defaults;
lists may stand for comma-separated values), checks them as the command does (the same one-line
LabError, :mod:`lab.core.args`), does the work and returns the command's ``--json`` document. Nothing
here prints: the ``lab`` commands and the notebook API (:mod:`lab.cli`) are views over these.
"""
from __future__ import annotations

from lab.core import args as A
from lab.core.errors import LabError

DTYPES = ("float32", "float64")
COUNTER_TOOLS = ("auto", "ncu", "cupti")


def _backend(sim) -> str:
    from lab.core.simulator import select

    return select(A.backend(sim))


def grid(kernel: str, *, variant: str | None = None, size: str | None = None, threads: int = 256,
         arch: str | None = None, sms: int | None = None, waves: bool = True, warp: int | None = None) -> dict:
    """``lab grid KERNEL``: which block and thread wrote each output element of one launch of
    ``variant`` (default: the kernel's first) at ``size``, idle threads, and waves on ``arch``/``sms``
    (default: this GPU's, else sm_90); ``warp``: also warp N's global requests and their 32-byte
    sectors. Recorded in Numba's CUDA simulator, so this process must be (or become) a simulator
    process: LabError where numba.cuda already runs on a GPU (the notebook API then asks a child
    process). Returns docs/schemas/grid.json's document."""
    kernel, variant, size = A.text(kernel, "KERNEL"), A.text(variant, "--variant"), A.text(size, "--size")
    threads = A.integer(threads, "--threads")
    arch, sms = A.text(arch, "--arch"), A.integer(sms, "--sms", min=1)
    waves, warp = A.flag(waves, "--waves/--no-waves"), A.integer(warp, "--warp", min=0)
    from lab.core.simulator import select

    select("sim")  # writes are tagged per simulated thread: the map always comes from the simulator
    from lab.inspect import grid as G

    return G.describe(kernel, variant, size, threads, arch, sms, waves, warp)


def occupancy(kernel: str | None = None, *, variant: str | None = None, threads: int = 256, arch: str | None = None,
              registers: int | None = None, shared: int | None = None, sweep: bool = False,
              sim: bool | None = None) -> dict:
    """``lab occupancy [KERNEL]``: theoretical occupancy of KERNEL's ``variant`` on ``arch`` (this
    GPU's, else sm_90), or the calculator (``registers`` per thread, ``shared`` bytes a block, no
    kernel); ``sweep``: also 32..1024 threads per block. Returns docs/schemas/occupancy.json's
    document; LabError on bad input."""
    from lab.inspect import occupancy as Occ

    kernel, variant = (None if kernel is None else A.text(kernel, "KERNEL")), A.text(variant, "--variant")
    threads, arch = A.integer(threads, "--threads"), A.text(arch, "--arch")
    registers, shared = A.integer(registers, "--registers"), A.integer(shared, "--shared")
    sweep = A.flag(sweep, "--sweep")
    return Occ.occupancy(kernel, variant, threads, arch, registers, shared,
                         None if kernel is None else _backend(sim), with_sweep=sweep)


def counters(kernel: str, *, variant: str | list | None = None, size: str | None = None, threads: int | None = None,
             dtype: str = "float32", contenders: str | list | None = None, seed: int | None = None,
             tool: str = "auto", sim: bool | None = None, yes: bool = False, progress=None) -> dict:
    """``lab counters KERNEL``: one call of each rung and library op under Nsight Compute (else CUPTI;
    ``tool``) with a verdict; in the simulator sectors per request from the recorded addresses.
    Returns docs/schemas/counters.json's document; LabError on bad input or when no engine is
    usable on a GPU."""
    from lab.inspect import counters as K

    kernel, variant, size = A.text(kernel, "KERNEL"), A.text(variant, "--variant"), A.text(size, "--size")
    threads, dtype = A.integer(threads, "--threads"), A.choice(dtype, "--dtype", DTYPES)
    contenders, seed = A.text(contenders, "--contenders"), A.integer(seed, "--seed", min=0)
    tool, yes = A.choice(tool, "--tool", COUNTER_TOOLS), A.flag(yes, "--yes")
    backend = _backend(sim)
    return K.counters(kernel, backend, A.csv(variant), size, threads, dtype, A.csv(contenders),
                      seed if seed is not None else 0, progress, tool=tool, yes=yes)


def sanitize(kernel: str, *, variant: str | list | None = None, tools: str | list = "memcheck",
             size: str | None = None, threads: int = 256, dtype: str = "float32", seed: int | None = None,
             sim: bool | None = None, progress=None) -> dict:
    """``lab sanitize KERNEL``: each rung once under NVIDIA compute-sanitizer (``tools``: memcheck,
    racecheck, synccheck, initcheck; comma-separated or a list): clean, or how many errors and the
    first, by file and line. Returns docs/schemas/sanitize.json's document; LabError when
    compute-sanitizer or a GPU is missing, or on bad input."""
    from lab.core import sanitizer as San
    from lab.inspect import sanitize as S

    kernel, variant = A.text(kernel, "KERNEL"), A.text(variant, "--variant")
    tools, size = A.text(tools, "--tool"), A.text(size, "--size")
    threads, dtype = A.integer(threads, "--threads"), A.choice(dtype, "--dtype", DTYPES)
    seed = A.integer(seed, "--seed", min=0)
    import kernels

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


def doctor() -> list:
    """``lab doctor``: versions, CUDA driver, compilers, GPUs, CuPy, torch, a tiny kernel. Returns the
    checks in order (:class:`lab.inspect.doctor.Check`: ok, warn or fail, with detail and fix);
    :func:`lab.inspect.doctor.to_dict` makes docs/schemas/doctor.json's document of them."""
    from lab.inspect import doctor as D

    return D.run_checks()
