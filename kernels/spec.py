"""What a kernel module declares: its launch math, its variants, and its NumPy reference.

The runner only ever talks to a :class:`KernelSpec`; a kernel module (``kernels/vecadd.py`` …)
builds one at its bottom, after the kernels it describes. Nothing here imports ``numba.cuda``.
"""
from __future__ import annotations

import math
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Sequence

import numpy as np

from kernels import device_limits, tuning
from kernels.arrays import agnostic
from kernels.gemm.precision import PRECISIONS
from kernels.torch_op import TorchOp

Size = tuple[int, ...]


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word``, in the plural unless n is 1: plural(1, "block") == "1 block",
    plural(3, "block") == "3 blocks", plural(2, "matrix", "matrices") == "2 matrices". Numbers keep
    thousands separators (plural(4096, "row") == "4,096 rows"). For the notes and lines the kernels
    and lab print (kernels import nothing of lab, so it lives here)."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def poison_value(dtype, which: int = 0) -> Any:
    """What outputs are filled with before a run, so that an element the kernel never writes shows
    up as wrong: NaN for floats; for integers 0xAB-like (``which=0``: 171 in uint8) or, for the
    second run of the two-poison check (``which=1``), a different value (86 in uint8). Any integer
    poison is a legal value, which is why integer outputs are run and checked twice (lab.core.check)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.nan
    top = np.iinfo(dtype).max
    return top // 3 * 2 + 1 if which == 0 else top // 3 + 1


@dataclass(frozen=True)
class Bounds:
    """A tolerance given as the closed interval [lo, hi] of accepted values per element (arrays
    broadcast to the output): lo == hi demands an exact value (vecadd's correctly rounded sum);
    lo < hi accepts either neighbour of a rounding boundary (quantize's codes)."""

    lo: Any
    hi: Any


DOT_SIGMAS = 6.0  # the bound in standard deviations of the rounding-error model below (~10 in practice)
DOT_CHUNKS = 16  # points along K where the partial sums are sampled


DOT_BLOCK = 1 << 18  # elements of A a block of rows holds when B is a vector (2 MB in float64: see _row_blocks)


def _row_blocks(A: np.ndarray, B64: np.ndarray):
    """(r0, r1, A[r0:r1] in float64) for the products below. A vector B (matvec): blocks of about
    DOT_BLOCK elements, converted into one reused float64 buffer, so the whole float64 A (512 MB
    for a 16384 x 4096 matrix, all fresh pages) is never made and each block is read from cache by
    the several products that follow; DOT_BLOCK stays below the size at which OpenBLAS's gemv starts
    threads (460,800 elements), whose start-up per small call costs more than the product. A
    matrix B (matmul): all of A at once (the products are compute-bound and want large blocks)."""
    rows, cols = A.shape
    step = rows if B64.ndim > 1 else max(1, DOT_BLOCK // max(cols, 1))
    if step >= rows:
        yield 0, rows, np.asarray(A, np.float64)
        return
    buf = None if A.dtype == np.float64 else np.empty((step, cols))
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        if buf is None:  # float64 already: the rows themselves
            yield r0, r1, A[r0:r1]
            continue
        block = buf[:r1 - r0]
        np.copyto(block, A[r0:r1])
        yield r0, r1, block


def dot_reference(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B in float64 (each element the BLAS product of A's row in float64 and B in float64), for
    A in any float dtype, without a float64 copy of all of A when B is a vector (:func:`_row_blocks`).
    The values of ``A.astype(np.float64) @ B.astype(np.float64)`` up to float64 rounding: BLAS may
    add a row's products in another order for a block than for the whole matrix (at most 2e-14
    relative seen at 100 x 5000; bit for bit at 16384 x 4096)."""
    B64 = np.asarray(B, np.float64)
    out = np.empty(A.shape[:1] + B64.shape[1:])
    for r0, r1, block in _row_blocks(A, B64):
        np.matmul(block, B64, out=out[r0:r1])
    return out


def dot_tolerance(A: np.ndarray, B: np.ndarray, dtype) -> np.ndarray:
    """Absolute tolerance for A @ B computed in ``dtype`` (matvec: B is a vector; matmul), calibrated
    on the statistics of float32 rounding, so that a correct float32 kernel passes and a product
    whose inputs were rounded to TF32 (10 mantissa bits, the tensor cores' float32 mode) fails.

    Model: a K-term dot product summed in any order that a kernel uses (one accumulator along K is
    the worst case) rounds each partial sum S_k once, by a relative error up to u = eps / 2 that is
    as likely up as down, so its error is a random walk with standard deviation
    u / sqrt(3) * sqrt(sum_k S_k^2) (plus sqrt(sum_k (a_k b_k)^2) when the products are rounded too).
    sum_k S_k^2 is estimated from the exact (float64) partial sums at DOT_CHUNKS points along K
    (the larger square at each chunk's two ends times its width, plus half a chunk of squared
    products for the walk inside it); the bound is DOT_SIGMAS times u of that, plus as much for the
    float64 reference's own rounding. Measured on random normal inputs: float32 errors stay below
    0.3 of the bound (sequential with and without FMA, and NumPy's blocked sgemm, K = 64..16384);
    TF32-rounded products exceed it at every K >= 64 (median element 5x-85x over the bound).
    The old bound, eps * sqrt(K) * |A| @ |B|, was hundreds of times the float32 error at K = 4096
    and let TF32 through. Cost: about two float64 matrix products on the host; for a vector B in
    blocks of rows (:func:`_row_blocks`: each row's bound depends on that row alone).
    """
    B64 = np.asarray(B, np.float64)
    K = A.shape[1]
    edges = np.linspace(0, K, min(K, DOT_CHUNKS) + 1).astype(np.int64)
    widest = max(1, int(np.diff(edges).max()))
    squares = np.square(B64)
    u = np.finfo(dtype).eps / 2 + np.finfo(np.float64).eps / 2
    out = np.empty(A.shape[:1] + B64.shape[1:])
    for r0, r1, A64 in _row_blocks(A, B64):
        S = np.zeros(out[r0:r1].shape)
        walk = np.zeros_like(S)
        for k0, k1 in zip(edges[:-1], edges[1:]):
            prev = S
            S = S + A64[:, k0:k1] @ B64[k0:k1]
            walk += (k1 - k0) * np.maximum(prev ** 2, S ** 2)
        products = np.square(A64) @ squares
        walk += widest / 2 * products
        out[r0:r1] = DOT_SIGMAS * u * (np.sqrt(walk) + np.sqrt(products)) + 4 * float(np.finfo(dtype).tiny)
    return out


def dot_tolerances(inputs, ref, dtype) -> list:
    """The ``tolerance`` of a spec whose one output is the product of its two inputs (matvec's
    A @ x, matmul's A @ B): :func:`dot_tolerance`."""
    A, B = inputs
    return [dot_tolerance(A, B, dtype)]


@dataclass(frozen=True)
class Launch:
    """A launch configuration: ``kernel[grid, block]`` and how many threads the problem needs.

    grid, block: 1-3 ints each (blocks per grid, threads per block).
    threads_needed: threads that compute something; the rest of the launched threads idle.
    """

    grid: tuple[int, ...]
    block: tuple[int, ...]
    threads_needed: int
    note: str = ""
    rung: str = ""  # set by an ``auto`` variant: the rung it chose (its prepare runs that rung)
    params: tuple = ()  # (name, value) pairs of a rung's tunable parameters (Variant.tunables), sorted

    @property
    def param(self) -> dict:
        """The tunable parameters this launch was configured with ({} = the rung's defaults)."""
        return dict(self.params)

    @property
    def threads_per_block(self) -> int:
        return math.prod(self.block)

    @property
    def threads_total(self) -> int:
        return math.prod(self.grid) * self.threads_per_block

    @property
    def threads_idle(self) -> int:
        return self.threads_total - self.threads_needed

    def as_dict(self) -> dict[str, Any]:
        d = {"grid": list(self.grid), "block": list(self.block),
             "threads_total": self.threads_total, "threads_needed": self.threads_needed,
             "threads_idle": self.threads_idle, "note": self.note}
        if self.rung:
            d["rung"] = self.rung
        if self.params:
            d["params"] = self.param
        return d


def blocks_for(n: int, per_block: int) -> int:
    """Blocks needed to cover ``n`` items at ``per_block`` items a block (ceiling division)."""
    return (n + per_block - 1) // per_block


PARALLEL_DRAW = 1 << 22  # from this many elements on, standard_normal draws in parallel streams


def standard_normal(rng, shape, dtype):
    """Standard normals of ``shape`` in ``dtype`` (float32 or float64: NumPy's ziggurat in that dtype)
    from ``rng``. A large array (at least PARALLEL_DRAW elements) is drawn as 16 equal slices from 16
    child generators (``rng.spawn(16)``), on up to 8 threads (NumPy releases the GIL while it fills):
    the values depend on the seed alone, not on the thread count; a 16384 x 4096 float32 matrix takes
    ~0.1 s on 16 cores instead of ~0.9 s. Smaller arrays: ``rng.standard_normal`` itself."""
    n = int(np.prod(shape, dtype=np.int64))
    if n < PARALLEL_DRAW:
        return rng.standard_normal(shape, dtype=dtype)
    out = np.empty(shape, dtype)
    flat, children = out.reshape(-1), rng.spawn(16)
    bounds = [n * i // 16 for i in range(17)]

    def fill(i):
        children[i].standard_normal(out=flat[bounds[i]:bounds[i + 1]], dtype=dtype)

    with ThreadPoolExecutor(min(8, os.cpu_count() or 1)) as pool:
        list(pool.map(fill, range(16)))
    return out


def launch_once(kernel, kernel_f64=None):
    """The common ``prepare`` of a one-launch rung: configure ``kernel[grid, block]`` once (keeping
    that out of the timed call) and return a function that launches it on (*inputs, *outputs).
    ``kernel_f64``, if given, is the build that runs float64 inputs. The returned prepare's
    ``single_launch`` attribute is ``(kernel, kernel_f64)``: the rung is this one launch of
    ``kernel[grid, block](*inputs, *outputs)`` (torch_bridge.lab_ops launches it itself)."""
    def prepare(cfg, inputs, outputs):
        k = kernel_f64 if kernel_f64 is not None and inputs[0].dtype == np.float64 else kernel
        from kernels.compiler import bound  # lazy: backend chosen first (numba)

        return bound(k[cfg.grid, cfg.block], (*inputs, *outputs))
    prepare.single_launch = (kernel, kernel_f64)
    return prepare


def split_columns(rows: int, cols: int, threads: int, per_thread: int, blocks_per_sm: int = 4):
    """(chunk, splits) for rungs that cut each row into chunks of columns, one block a chunk
    (matvec split_k, softmax split_row): enough splits for about ``blocks_per_sm`` blocks on every
    SM over all ``rows``, but no chunk shorter than one trip of the block (threads * per_thread
    columns); chunks are whole multiples of 32 columns (128-byte lines in float32)."""
    splits = max(1, min(blocks_for(blocks_per_sm * sm_count(), rows), blocks_for(cols, threads * per_thread)))
    chunk = blocks_for(blocks_for(cols, splits), 32) * 32
    return chunk, blocks_for(cols, chunk)


def sm_count() -> int:
    """Streaming multiprocessors of the device launch math sizes grids for
    (:func:`kernels.device_limits.current`: the GPU's own count; in the simulator the described
    device, an H100 SXM's 132 unless a caller describes another)."""
    return device_limits.current().sm_count


def auto_variant(choose, rungs: dict, doc: str, kernel: str = "", first=None) -> Variant:
    """An ``auto`` variant: the tuned configuration of ``kernel`` for the shape's class when
    ``lab tune`` cached one for this device (kernels.tuning.lookup), else ``choose(size) -> (rung
    name, threads, why[, params])``, the heuristic (params: the rung's tunables, as
    Variant.configure takes them), which picks a rung of ``rungs`` and its launch configuration from
    the shape (and the device, through :func:`sm_count`); an entry whose rung is
    ``tuning.HEURISTIC_RUNG`` says the heuristic won the class (the note says so too). The user's
    ``--threads`` is ignored (the named rungs honour it). The Launch note says what was chosen, by
    which ("tuned (cache)", "tuned (shipped)" or "heuristic") and why; ``Launch.rung`` and
    ``Launch.params`` carry the choice to ``prepare``. ``first(size)``, when given, is asked before the tuned
    cache: (rung, threads, why) to run instead of any SIMT choice (matmul's tensor-core route, kernels/gemm/
    tensor_core_3xtf32.auto_route), or None."""
    def launch(size, threads):
        pick = first(size) if first else None
        if pick:
            name, t, why = pick
            cfg = rungs[name].configure(size, t)
            note = f"auto: {name} at {t} threads, {why}" + (f"; {cfg.note}" if cfg.note else "")
            return Launch(cfg.grid, cfg.block, cfg.threads_needed, note=note, rung=name, params=cfg.params)
        hit = tuning.lookup(kernel, size) if kernel else None
        cfg = None
        if hit and hit[0]["rung"] == tuning.HEURISTIC_RUNG:  # tuned: the per-shape choice won the class
            hit, kept = None, f"tuned ({hit[1]}) for class {tuning.shape_class(size)}: the heuristic; "
        else:
            kept = ""
        if hit:
            entry, source = hit
            name, t = entry["rung"], entry["threads"]
            variant = rungs.get(name)
            try:
                if variant is None or variant.accepts(t):
                    raise ValueError(f"{name} at {t} threads is not a rung here")
                cfg = variant.configure(size, t, entry["params"])
                params = tuning.describe_params(entry["params"])
                how = f"tuned ({source}) for class {tuning.shape_class(size)}" + (f": {params}" if params else "")
            except Exception as e:  # a stale entry (rung renamed, parameter gone): the heuristic
                cfg, stale = None, f"tuned entry unusable ({' '.join(str(e).split())}); "
        if cfg is None:
            name, t, why, *params = choose(size)  # a fourth item: the rung's tunable parameters
            cfg = rungs[name].configure(size, t, params[0] if params else None)
            how = kept + ("" if not hit else stale) + f"heuristic: {why}"
        note = f"auto: {name} at {t} threads, {how}" + (f"; {cfg.note}" if cfg.note else "")
        return Launch(cfg.grid, cfg.block, cfg.threads_needed, note=note, rung=name, params=cfg.params)

    def prepare(cfg, inputs, outputs):
        return rungs[cfg.rung].prepare(cfg, inputs, outputs)

    return Variant("auto", doc, launch, prepare, choose=choose)


@dataclass(frozen=True)
class Variant:
    """One rung of a kernel's ladder.

    launch(size, threads) -> Launch: the launch math for ``threads`` threads per block.
    prepare(launch, inputs, outputs) -> callable: allocates any scratch space once and returns a
      zero-argument function that enqueues the whole computation (one or more launches), so that
      only the kernels are timed. inputs/outputs are device arrays of any owner: Numba's (either
      compiler), torch CUDA tensors or CuPy arrays; the rung's own function sees device arrays
      (:func:`kernels.arrays.agnostic`, applied here) and allocates its scratch with the inputs' library.
    warp_multiple: the variant needs whole warps (threads per block a multiple of 32).
    """

    name: str
    doc: str
    launch: Callable[[Size, int], Launch]
    prepare: Callable[[Launch, Sequence[Any], Sequence[Any]], Callable[[], None]]
    warp_multiple: bool = False
    max_threads: int | None = None  # a variant's own limit below the device's, if any
    # The tuner's axes besides threads per block (``lab tune``): parameter -> values to try, e.g.
    # {"splits": (0, 2, 4, 8)}; ``launch_with(size, threads, params)`` is the launch math for any
    # subset of them (missing ones take the rung's defaults; ValueError for values it cannot run),
    # and sets ``Launch.params``, which ``prepare`` reads.
    tunables: dict = field(default_factory=dict)
    launch_with: Callable[[Size, int, dict], Launch] | None = None
    choose: Callable | None = None  # auto only: the heuristic, (rung, threads, why[, params]) = choose(size)
    # suits(size) -> bool: the shapes the rung is meant for (None: all). A rung stays correct at every
    # shape (lab run runs it anywhere); ``lab tune`` tries it only where it suits.
    suits: Callable[[Size], bool] | None = None

    def __post_init__(self):
        object.__setattr__(self, "prepare", agnostic(self.prepare))

    def configure(self, size, threads: int, params: dict | None = None) -> Launch:
        """The launch configuration at ``threads`` with tunable ``params`` (None or {}: defaults)."""
        if params:
            unknown = sorted(set(params) - set(self.tunables))
            if unknown or self.launch_with is None:
                raise ValueError(f"{self.name} has no tunable parameter {', '.join(unknown or sorted(params))}")
            return self.launch_with(size, threads, params)
        return self.launch(size, threads)

    def accepts(self, threads: int) -> str | None:
        """None when this variant runs at ``threads`` threads per block, else why not (the caller
        names the variant): whole warps for a ``warp_multiple`` variant, at most ``max_threads``."""
        if self.warp_multiple and threads % 32:
            return "needs whole warps: --threads must be a multiple of 32"
        if self.max_threads and threads > self.max_threads:
            return f"supports at most {self.max_threads} threads per block"
        return None


# The libraries a kernel's contenders come from (KernelSpec.contenders' keys), and the options an entry may
# carry (what each does: lab.core.registry).
LIBRARIES = ("cupy", "torch", "triton")
CONTENDER_OPTIONS = ("float32_inside", "tf32", "tolerance", "why")


@dataclass(frozen=True)
class Sweep:
    """The kernel in the public shape sweep (lab.bench.shapes): the shapes a user has (``--size``
    text: tiny, skinny both ways, square, huge, odd), the lesson rungs left out (slow on purpose:
    never the best rung), the torch contender label it is measured against ("" for Numba rows only),
    and whether it counts in the memory-bound geometric mean and the >= 0.8x target; ``floors``: the
    kernel's own targets (:class:`SweepFloor`)."""

    shapes: tuple[str, ...] = ()
    skip: frozenset = frozenset()
    against: str = ""
    memory_bound: bool = False
    floors: tuple = ()


@dataclass(frozen=True)
class SweepFloor:
    """A target of the public sweep (lab.bench.shapes): ``auto`` at least ``bound`` x the speed of the
    sweep's ``against`` op at the sweep shape ``shape``, or, with ``shape`` "", at every shape of at least
    ``min_flops`` FLOPs a call. ``text``: the target as the sweep's table names it."""

    text: str
    bound: float
    shape: str = ""
    min_flops: int = 0


@dataclass(frozen=True)
class Target:
    """A bench target at a standard size (lab.bench.suite): the best Numba rung at ``size`` must
    reach ``bound`` x the speed of library row ``against`` (kind "speed"), or, with ``against`` None,
    take at most ``bound`` ms (kind "ms")."""

    size: tuple[int, ...]
    against: str | None
    bound: float
    kind: str = "speed"


@dataclass(frozen=True)
class KernelSpec:
    """Everything the runner needs to run, check and time one problem.

    size_help: how ``--size`` is written (e.g. ``ROWSxCOLS``).
    default_size(simulator): the size used when none is given (small in the simulator); its length
      is the number of dimensions a size has (``size_dims``).
    in_shapes(size) -> shapes of the inputs, in order.
    make_inputs(size, dtype, rng) -> tuple of host arrays, fresh random values.
    out_specs(size, dtype) -> list of (shape, dtype) of the outputs.
    reference(*inputs) -> tuple of outputs, NumPy; the runner calls it on float64 copies of the
      inputs for the reference (unless ``reference64`` is given) and on the inputs themselves for
      the NumPy contender.
    tolerance(inputs, ref, dtype) -> per-output absolute tolerances (arrays or floats).
    bytes_moved(size, dtype), flops(size): the minimum traffic and arithmetic per call.

    The fields after those declare what lab's commands know of the kernel (contenders, torch op,
    bench sizes and targets, shape sweep, tuner shapes, simulator cost, counters): each is read from
    here by the command that needs it, and no table elsewhere names a kernel (docs/adding-a-kernel.md).
    """

    name: str
    summary: str
    size_help: str
    default_size: Callable[[bool], Size]
    in_shapes: Callable[[Size], list[tuple[int, ...]]]
    make_inputs: Callable[[Size, np.dtype, np.random.Generator], tuple[np.ndarray, ...]]
    out_specs: Callable[[Size, np.dtype], list[tuple[tuple[int, ...], np.dtype]]]
    reference: Callable[..., tuple[np.ndarray, ...]]
    tolerance: Callable[..., list[Any]]
    bytes_moved: Callable[[Size, np.dtype], int]
    flops: Callable[[Size], int]
    variants: dict[str, Variant] = field(default_factory=dict)
    dtypes: tuple[str, ...] = ("float32", "float64")
    square_ok: bool = False  # one number N means N x N (x N)
    # Where the kernel stands in the lesson order (``lab list``, ``lab bench``): lower first, ties by
    # name. kernels.NAMES reads it from the module's source (a literal int), without importing it.
    order: int = 100
    # summarize(inputs, outputs) -> lines the report prints about a checked result (e.g. quantize's
    # round-trip error); called on the first Numba variant that passed.
    summarize: Callable[..., list[str]] | None = None
    # reference64(*inputs) -> the float64 reference straight from the inputs in their own dtype: the
    # values of reference() of float64 copies (to float64 rounding) without making the copies (matvec:
    # kernels.spec.dot_reference converts A a block of rows at a time). None: reference() of float64
    # copies (float64_reference).
    reference64: Callable[..., tuple[np.ndarray, ...]] | None = None

    # --- what lab's commands know of the kernel: declared here, read by lab and torch_bridge ----------
    # Library contenders: library (one of LIBRARIES) -> ((label, function[, options]), ...), written in
    # the kernel's module (or kernels/contenders/<kernel>.py beside it). The function is
    # ``fn(lib, *inputs, out=outputs)`` on device arrays: ``lib`` is the library's module, passed in by
    # lab so that kernels/ imports no library (``cupy``; ``torch``; for "triton" a namespace with
    # ``triton``, ``tl``, ``torch`` and ``interpreted``). A label is a string, or a function of no
    # argument that returns it (matmul's CuPy row says whether CUPY_TF32 is set). Options
    # (CONTENDER_OPTIONS): {"float32_inside": True}, the op computes in float32 whatever the input
    # dtype; {"tf32": True}; {"tolerance": fn, "why": text} (lab.core.registry says what each does).
    contenders: dict = field(default_factory=dict)
    no_contenders: str = ""  # why the kernel has no library contender yet (one or the other is required)
    torch_op: TorchOp | None = None  # the kernel as torch.ops.lab.<name>, if it is one
    # ``lab bench``'s standard sizes on a GPU: (--size text, --threads) a run; in the simulator (and
    # --quick) the bench runs default_size(True) at 32 threads.
    bench_sizes: tuple[tuple[str, int], ...] = ()
    targets: tuple[Target, ...] = ()  # bench targets at the standard sizes
    sweep: Sweep = field(default_factory=Sweep)  # the public shape sweep
    # The simulator's cost model (lab.core.simcost): ms per simulated thread launched, per variant,
    # measured by lab.bench.suite.measure_simcost (``python -m lab.cli.scripts simcost``).
    sim_cost: dict = field(default_factory=dict)
    # ``lab tune``'s shapes per backend, as --size text: {"simulator": tiny shapes (default: the
    # simulator's default size), "gpu": shapes the tuner tries beside the public sweep's}.
    tune_shapes: dict = field(default_factory=dict)
    # ``lab counters --sim``'s size: seconds a kernel, yet whole warps and 128-byte lines (None:
    # default_size(True)).
    counter_size: Size | None = None
    # The counters the ladder's lessons are about (names of lab.inspect.counters.METRICS, e.g.
    # "sectors_per_request", "bank_conflicts"): what a reader of ``lab counters KERNEL`` looks at first.
    counter_metrics: tuple[str, ...] = ("dram_bytes_ratio", "sectors_per_request")
    # ``lab run --precision``'s meaning for a float32 run of this kernel: precision -> what ``auto`` may run
    # (kernels/gemm/precision.py's words, e.g. matmul's); empty: the kernel's auto ignores --precision.
    precision_auto: dict = field(default_factory=dict)

    def __post_init__(self):
        """The declarations may be written as plain dicts (a kernel module then imports nothing more):
        ``torch_op=dict(...)``, ``sweep=dict(...)``, ``targets=(dict(...), ...)`` become TorchOp,
        Sweep and Target; contenders become tuples of (label, path, options)."""
        def as_(cls, value):
            return cls(**value) if isinstance(value, dict) else value

        set_ = object.__setattr__  # frozen: normalised once, here
        set_(self, "torch_op", as_(TorchOp, self.torch_op))
        sweep = as_(Sweep, self.sweep)
        set_(self, "sweep", Sweep(tuple(sweep.shapes), frozenset(sweep.skip), sweep.against, sweep.memory_bound,
                                  tuple(as_(SweepFloor, f) for f in sweep.floors)))
        set_(self, "targets", tuple(as_(Target, t) for t in self.targets))
        set_(self, "contenders", {lib: tuple((e[0], e[1], dict(e[2]) if len(e) > 2 else {}) for e in rows)
                                  for lib, rows in self.contenders.items()})
        if self.counter_size is not None:
            set_(self, "counter_size", tuple(self.counter_size))
        self._check_references()

    def contender_rows(self, library: str) -> list[tuple[str, Callable, dict]]:
        """(label, function, options) of ``library``'s contenders, labels resolved (empty if none)."""
        return [(label() if callable(label) else label, fn, dict(opts))
                for label, fn, opts in self.contenders.get(library, ())]

    def _check_references(self) -> None:
        """Cross-references checked when the spec is defined, so that a misspelling fails here and not
        silently later (a misspelled ``against`` would drop its target from ``lab bench``): every
        contender's library is one of LIBRARIES, its function callable, its options known and its label
        unique; every ``against`` (targets, sweep) is one of the contenders' labels; every rung named
        by the sweep's ``skip``, the torch op's ``rungs`` and ``sim_cost`` is a variant; a target's size
        and ``counter_size`` have ``size_dims`` numbers; ``tune_shapes``' keys are "simulator" and "gpu".
        ValueError naming the kernel, the field and what it may be."""
        def wrong(what: str, value, allowed) -> ValueError:
            return ValueError(f"kernel {self.name}: {what} {value!r} is not one of {', '.join(map(str, sorted(allowed))) or 'none'}")

        for library, rows in self.contenders.items():
            if library not in LIBRARIES:
                raise wrong("contender library", library, LIBRARIES)
            for label, fn, opts in rows:
                if not (isinstance(label, str) or callable(label)) or not callable(fn):
                    raise ValueError(f"kernel {self.name}: a {library} contender is (label, function[, options]) "
                                     f"with a callable function, not ({label!r}, {fn!r})")
                for key in opts:
                    if key not in CONTENDER_OPTIONS:
                        raise wrong(f"{library} contender option", key, CONTENDER_OPTIONS)
            labels = [label for label, _, _ in self.contender_rows(library)]
            if len(set(labels)) != len(labels):
                raise ValueError(f"kernel {self.name}: two {library} contenders share a label ({', '.join(labels)})")
        labels = {label for library in self.contenders for label, _, _ in self.contender_rows(library)}
        for a in [t.against for t in self.targets if t.against] + ([self.sweep.against] if self.sweep.against else []):
            if a not in labels:
                raise ValueError(f"kernel {self.name}: against {a!r} is not one of its contenders' labels "
                                 f"({', '.join(sorted(labels)) or 'none'})")
        rungs = set(self.variants)
        named = [("the sweep's skip", r) for r in sorted(self.sweep.skip)] + [("sim_cost", r) for r in self.sim_cost]
        if self.torch_op is not None:
            named += [("torch_op's rung", r) for r in self.torch_op.rungs if r]
        for what, rung in named:
            if rung not in rungs:
                raise wrong(what, rung, rungs)
        if self.torch_op is not None:
            for op_name, op in {self.name: self.torch_op, **self.torch_op.helpers}.items():
                for problem in op.problems():
                    raise ValueError(f"kernel {self.name}: torch op {op_name}: {problem}")
        dims = self.size_dims
        for size in [t.size for t in self.targets] + ([self.counter_size] if self.counter_size else []):
            if len(size) != dims:
                raise ValueError(f"kernel {self.name}: size {size!r} has {len(size)} numbers, a size has {dims}")
        for floor in self.sweep.floors:
            if floor.shape and floor.shape not in self.sweep.shapes:
                raise wrong("a sweep floor's shape", floor.shape, self.sweep.shapes)
            if not self.sweep.against:
                raise ValueError(f"kernel {self.name}: sweep floors need the sweep's against (the op they are ratios to)")
        for key in self.tune_shapes:
            if key not in ("simulator", "gpu"):
                raise wrong("tune_shapes key", key, ("simulator", "gpu"))
        for key in self.precision_auto:
            if key not in PRECISIONS:
                raise wrong("precision_auto key", key, PRECISIONS)

    def float64_reference(self, inputs) -> tuple:
        """The float64 reference outputs of ``inputs``: ``reference64(*inputs)`` where the kernel
        gives one, else ``reference`` of float64 copies of the inputs."""
        if self.reference64 is not None:
            return tuple(self.reference64(*inputs))
        return tuple(self.reference(*[np.asarray(a).astype(np.float64) for a in inputs]))

    @property
    def size_dims(self) -> int:
        """How many numbers a size has (the length of the default size)."""
        return len(self.default_size(True))

    def parse_size(self, text: str) -> Size:
        """Parse ``N`` or ``AxB[xC]`` into ``size_dims`` positive ints; ValueError names the form."""
        parts = re.split(r"[x×,]", text.strip().lower())
        try:
            dims = tuple(int(p) for p in parts)
        except ValueError:
            raise ValueError(f"size {text!r} is malformed: write it as {self.size_help}") from None
        if len(dims) == 1 and self.square_ok:
            dims = dims * self.size_dims  # one number means square
        if len(dims) != self.size_dims:
            raise ValueError(f"size {text!r} is malformed: write it as {self.size_help}")
        if min(dims) <= 0:
            raise ValueError(f"size {text!r}: every dimension must be at least 1")
        return dims

    def footprint_bytes(self, size: Size, dtype: np.dtype) -> int:
        """Bytes of inputs plus outputs on the device for one contender."""
        n_in = sum(math.prod(s) for s in self.in_shapes(size)) * np.dtype(dtype).itemsize
        n_out = sum(math.prod(shape) * np.dtype(dt).itemsize for shape, dt in self.out_specs(size, dtype))
        return n_in + n_out
