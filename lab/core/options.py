"""Every option of the ``lab`` commands, declared once: its keyword, how the command line spells it,
what it takes (type, bounds, choices), its default and its help. From one :class:`Option` come the
click option or argument (:func:`lab.cli.options.command`), the library function's keyword with its
default and its check (:func:`declares`, on the functions of lab.bench/inspect/core/teach.commands),
the notebook API's signature (:mod:`lab.cli.api`) and the docs' option tables
(:mod:`lab.cli.doctables`). So ``lab run --repeats 0``, ``lab bench --repeats 0`` and
``lab.run(..., repeats=0)`` fail with the same one line, raised here (:meth:`Option.check`:
LabError, the CLI's exit code 2).

An option whose help (only its help) differs between commands is ``REPEATS.but(help=...)`` where the
command is declared; anything else that differs (another default, another type) is another entry of
this table, so tests/cli/test_options.py can tell that every click parameter and every library
keyword comes from here. Importing this module imports neither click nor Numba: the library checks
its keywords without the CLI.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass

from lab.core import args as A
from kernels import size_forms

# Kinds of value, and the check (lab.core.args) each is given by
KINDS = ("text", "int", "float", "choice", "flag", "backend", "file", "folder", "path")


@dataclass(frozen=True)
class Option:
    """One option (or positional argument) of the ``lab`` commands.

    ``name``: the library's keyword and click's parameter name ("as_json"); ``flag``: as the command
    line spells it ("--json", "--sim/--gpu"; for an argument its metavar, "KERNEL"), which every
    message names; ``kind``: one of :data:`KINDS`; ``default``: what leaving it out means (None: the
    command decides, as its help says); ``minimum`` (with ``open_``: the bound excluded) for int and
    float; ``choices`` for choice; ``multiple``: repeatable (``--from A --from B``), or for an argument
    any number of them; ``argument``: positional (``required`` or not); ``metavar``: what click shows
    for the value; ``show_default``: the help shows the default."""

    name: str
    flag: str
    kind: str = "text"
    default: object = None
    help: str = ""
    minimum: float | None = None
    open_: bool = False
    choices: tuple = ()
    multiple: bool = False
    argument: bool = False
    required: bool = True
    metavar: str | None = None
    show_default: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: kind {self.kind!r} is not one of {KINDS}")
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"{self.name}: a choice needs its choices")

    def but(self, *, help: str) -> Option:
        """This option with another help text (the one thing a command may say its own way)."""
        return dataclasses.replace(self, help=help)

    @property
    def spelled(self) -> str:
        """The option as messages name it: ``--repeats``; an optional argument ``[NUMBER]``."""
        if self.argument and not self.required and not self.multiple:
            return f"[{self.flag}]"
        return self.flag

    def check(self, value):
        """``value`` checked (from Python: an int, a str, a list; from the command line: the string
        click parsed) and returned as the command uses it; LabError with the one-line message
        otherwise. None (left out) passes; ``multiple``: a tuple, each item checked."""
        if self.multiple:
            if value is None:
                return ()
            if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
                value = (value,)
            return tuple(self.check_item(v) for v in value)
        return self.check_item(value)

    def check_item(self, value):
        """One value checked (of a ``multiple`` option: one item), as :meth:`check`."""
        opt = self.spelled
        if self.kind == "text":
            return A.text(value, opt)
        if self.kind == "int":
            return A.integer(value, opt, min=None if self.minimum is None else int(self.minimum))
        if self.kind == "float":
            return A.number(value, opt, min=self.minimum, min_open=self.open_)
        if self.kind == "choice":
            return A.choice(value, opt, self.choices)
        if self.kind == "flag":
            return A.flag(value, opt)
        if self.kind == "backend":
            A.backend(value)
            return value
        if self.kind == "file":
            return A.existing_file(value, opt)
        if self.kind == "folder":
            return A.folder(value, opt)
        return A.path(value, opt)  # "path": a file that need not exist, never a folder


# --- the table -------------------------------------------------------------------------------------
DTYPES = ("float32", "float64")  # every kernel's KernelSpec.dtypes today; the runner checks per kernel
COMPILERS = ("numba-cuda", "numba-cuda-mlir", "both")
ARRAYS = ("numba", "torch", "cupy")  # kernels.arrays.ARRAYS (not imported: lab run --help stays light)
PRECISIONS = ("highest", "high", "medium")  # kernels.gemm.precision.PRECISIONS (the same; a test holds them)
METRICS = ("auto", "ms", "gbps", "gflops")  # auto and lab.bench.sweep.METRICS' keys
COUNTER_TOOLS = ("auto", "ncu", "cupti")


def _size_help() -> str:
    return f"The problem size: {size_forms()} (default: per backend; `lab list` gives each kernel's)."


# positional arguments
KERNEL = Option("kernel", "KERNEL", argument=True, help="A kernel of `lab list`.")
KERNEL_OPTIONAL = Option("kernel", "KERNEL", argument=True, required=False, help="A kernel of `lab list` (optional).")
KERNEL_NAMES = Option("kernel_names", "[KERNEL]...", argument=True, multiple=True, required=False,
                      metavar="[KERNEL]...", help="Kernels of `lab list` (default: all).")
NAME = Option("name", "NAME", argument=True, help="An exercise of `lab exercise list`.")
NAMES = Option("names", "[NAME]...", argument=True, multiple=True, required=False, metavar="[NAME]...",
               help="Exercises of `lab exercise list` (default: all).")
NUMBER = Option("number", "NUMBER", "int", argument=True, required=False, help="Which hint (default: the next).")
FILE_A = Option("a", "A", "path", argument=True, help="A `--json` file of a run (the baseline).")
FILE_B = Option("b", "B", "path", argument=True, help="A `--json` file of another run (compared with A).")
SUBMISSIONS = Option("submissions", "SUBMISSIONS", "folder", argument=True,
                     help="A folder with one folder of .py files a student.")

# what the result is shown as (the views'; the library never sees them)
JSON = Option("as_json", "--json", "flag", False, "Print one JSON object instead of tables.")
WIDE = Option("wide", "--wide", "flag", False, "Show every column, however wide the terminal.")
PNG = Option("png", "--png", help="Also draw the map to this PNG file (matplotlib).")
PNG_FILE = Option("png", "--png", metavar="FILE", help="Draw the picture to FILE (needs matplotlib).")
SVG = Option("svg", "--svg", help="Also draw the map to this SVG file (matplotlib).")
METRIC = Option("metric", "--metric", "choice", "auto", "What --png plots (auto: GB/s when measured, else ms).",
                choices=METRICS, show_default=True)

# what the work is
THREADS = Option("threads", "--threads", "int", None, "Threads per block (default: 256 on a GPU, 32 in the simulator).")
THREADS_256 = Option("threads", "--threads", "int", 256, "Threads per block.", show_default=True)
THREADS_LIST = Option("threads", "--threads", help="Comma-separated threads per block, e.g. 32,64,128,256,512,1024.")
SIZE = Option("size", "--size", help=_size_help())
SIZES = Option("sizes", "--sizes", help="Comma-separated sizes, e.g. 1000,4096 or 48x80,96x160 (as lab run --size).")
SHAPES = Option("shapes", "--shapes", help="Comma-separated sizes as lab run --size.")
DTYPE = Option("dtype", "--dtype", "choice", "float32", "Element type of the inputs (quantize writes uint8 codes).",
               choices=DTYPES, show_default=True)
VARIANT = Option("variant", "--variant", help="Comma-separated Numba variants (default: all).")
CONTENDERS = Option("contenders", "--contenders",
                    help="Comma-separated from numba,numpy,cupy,torch,triton (default: all but triton).")
KERNELS = Option("kernels", "--kernels", help="Comma-separated kernels (default: all).")
REPEATS = Option("repeats", "--repeats", "int", None, "Timed calls (default on a GPU: a stop rule, at least 10 calls "
                 "and 0.25 s, more while noisy; in the simulator: none, each variant is checked once).", minimum=1)
WARMUP = Option("warmup", "--warmup", "int", None, "Untimed calls before timing (default: 5 on a GPU; 0 in the "
                "simulator).", minimum=0)
SEED = Option("seed", "--seed", "int", None, "Seed for the random inputs (a non-negative integer; default: fresh, "
              "printed).", minimum=0)
YES = Option("yes", "--yes", "flag", False, "Start a simulator run estimated above 10 minutes anyway (without it: an "
             "error naming the estimate and a smaller --size).")


def yes_for(what: str) -> Option:
    """``--yes`` as a command that starts a simulator ``what`` says it (lab.core.simulator.refuse_long)."""
    return YES.but(help=f"Start a simulator {what} estimated above 10 minutes anyway (without it: an error naming "
                        "the estimate and what to shrink).")
SIM = Option("sim", "--sim/--gpu", "backend", None,
             "Force Numba's CUDA simulator or a GPU (default: a usable GPU, else the simulator).")
COMPILER = Option(
    "compiler", "--compiler", "choice", None,
    "Compiler of the Numba kernels: numba-cuda-mlir (GPU only; the default on a GPU where it is installed), "
    "numba-cuda (the simulator's, and the default elsewhere), or both (lab run: each variant once per compiler). "
    "Also LAB_COMPILER; `lab doctor` says which is used and why.", choices=COMPILERS)
COUNTERS = Option("counters", "--counters", "flag", False, "Add two columns: DRAM bytes / the minimum traffic, and "
                  "32-byte sectors per global load request. On a GPU every passed row is profiled once more, after the "
                  "run, by Nsight Compute (else CUPTI); in the simulator the Numba rows' checked calls are traced "
                  "(simulated: from the recorded addresses).")
ARRAYS_OPT = Option("arrays", "--arrays", "choice", "numba", "Who owns the Numba rows' device buffers (inputs, "
                    "outputs and their canaries, the rungs' scratch): numba (cuda.to_device / cuda.device_array), torch "
                    "(CUDA tensors) or cupy; the kernels take all three, zero-copy, under both compilers "
                    "(docs/compilers.md, \"Device arrays\"). torch and cupy need a GPU with that library installed.",
                    choices=ARRAYS, show_default=True)
PRECISION = Option("precision", "--precision", "choice", None, "What a float32 matmul's auto may run, in torch's "
                   "float32_matmul_precision words: highest (SIMT FP32 only), high (also 3xTF32 on tensor cores, "
                   "FP32-accurate: the default), medium (also TF32, checked at TF32's tolerance). Rungs named with "
                   "--variant run whatever it says.", choices=PRECISIONS)
MEASURE = Option("measure", "--measure", "flag", False, "Also measure device-to-device copy bandwidth.")
OUT = Option("out", "--out", metavar="FILE", help="Write the result to FILE.")
QUICK = Option("quick", "--quick", "flag", False,
               "Each kernel's small simulator size at 32 threads (always so in the simulator).")
FROM_JSON = Option("from_json", "--from", "file", help="Read a saved --json file instead of running.")
FROM_JSONS = Option("from_json", "--from", "file", multiple=True,
                    help="Place the rows of saved lab run/bench/sweep --json files instead of running (repeatable).")
SHAPE_SWEEP = Option("shapes", "--shapes/--no-shapes", "flag", True, "Add the public shape sweep (tiny, skinny, odd, "
                     "huge shapes; best variant, auto, torch); GPU only.", show_default=True)
FORCE = Option("force", "--force", "flag", False, "Overwrite what would otherwise be kept.")
TRACE = Option("trace", "--trace", metavar="FILE", help="Write a Chrome/Perfetto trace (JSON) to FILE.")
ROW_LIMIT = Option("row_limit", "--row-limit", "int", 15, "Rows of the key_averages table.", minimum=1,
                   show_default=True)
BUDGET = Option("budget", "--budget", "float", None,
                "Wall seconds for the whole search (default: 120 on a GPU, 30 in the simulator).")
MATCH = Option("match", "--match", help="With --out: the device-name text the shipped table applies to (e.g. H100).")
NO_CACHE = Option("no_cache", "--no-cache", "flag", False, "Do not write the winners to the user's tuned cache (a "
                  "simulator search never writes it: simulated times say nothing of a GPU).")
ARCH = Option("arch", "--arch", help="sm_XX (default: this GPU's; sm_90 without a GPU).")
SMS = Option("sms", "--sms", "int", None, "SM count for waves (default: this GPU's, else the arch's example GPU).",
             minimum=1)
WAVES = Option("waves", "--waves/--no-waves", "flag", True, "Compute waves (compiles the kernel to read its registers).")
WARP = Option("warp", "--warp", "int", None, "Also record warp N's global loads and stores (N = block id x warps a "
              "block + warp in the block): --png/--svg colour the 32-byte sectors each of its requests touched; "
              "--json lists them.", minimum=0)
REGISTERS = Option("registers", "--registers", "int", None, "Calculator mode: registers per thread.")
SHARED = Option("shared", "--shared", "int", None, "Calculator mode: shared memory per block, bytes (static + dynamic).")
SWEEP = Option("sweep", "--sweep", "flag", False, "Threads per block 32..1024 in steps of 32.")
TOOL = Option("tool", "--tool", "choice", "auto", "On a GPU: Nsight Compute (ncu), CUPTI PM sampling (cupti-python: DRAM "
              "bytes and, where the GPU offers them, sectors per request), or auto: ncu where found, else CUPTI.",
              choices=COUNTER_TOOLS, show_default=True)
SANITIZER_TOOLS = Option("tools", "--tool", default="memcheck", show_default=True,
                         help="Comma-separated from memcheck, racecheck, synccheck, initcheck.")
DIRECTORY = Option("directory", "--dir", help="Workspace (default ./lab-exercises or $LAB_EXERCISES_DIR).")
FILE = Option("file", "--file", help="The file to check (default: DIR/NAME.py).")
TIMEOUT = Option("timeout", "--timeout", "float", None, "Seconds per test (default 30 or $LAB_EXERCISE_TIMEOUT).",
                 minimum=0, open_=True)
BENCH = Option("bench", "--bench", "flag", False, "Once every test passes: time it against the reference (GPU), or "
               "compare its sectors per warp request (simulator); exit 1 below the pass line.")
EXERCISES = Option("exercises", "--exercises", help="Comma-separated exercises to grade (default: every one submitted).")
JOBS = Option("jobs", "--jobs", "int", None, "Submissions checked at once (default: the CPUs).", minimum=1)
CSV = Option("csv", "--csv", help="Also write the gradebook as CSV to FILE.")
CPU_LIMIT = Option("cpu_limit", "--cpu-limit", "int", None, "CPU seconds per submission (RLIMIT_CPU; default 120).",
                   minimum=1)
MEMORY_LIMIT = Option("memory_limit", "--memory-limit", "int", None, "Address space per submission in MiB, simulator "
                      "only (RLIMIT_AS; default 4096; 0: none).", minimum=0)
FILE_LIMIT = Option("file_limit", "--file-limit", "int", None,
                    "Largest file a submission may write, MiB (RLIMIT_FSIZE; default 64).", minimum=1)
NO_LANDLOCK = Option("no_landlock", "--no-landlock", "flag", False, "Do not confine file access with Landlock (if it "
                     "gets in the way of a GPU driver); the other limits stay.")
NO_GPU_COMPILE = Option("no_gpu_compile", "--no-gpu-compile", "flag", False, "Grade without the offline GPU compile "
                        "(where NVVM is missing): kernels checked from their source alone; the gradebook says so.")
TITLE = Option("title", "--title", default="TODO title", help="The exercise's title.")
SCRIPT_OUT = Option("out", "--out", default="-", metavar="FILE", show_default=True,
                    help="The markdown file to write ('-': stdout only).")
SCRIPT_REPEATS = Option("repeats", "--repeats", "int", 20, "Timed calls a configuration (its median is shown).",
                        minimum=1, show_default=True)
# python -m torch_bridge.bench_launch (lab.cli.scripts launch-overhead): spelled as its argparse version was
LAUNCH_KERNEL = Option("kernel", "--kernel", help="The kernel whose torch op is timed (default: the first with a torch "
                       "op in lesson order).")
LAUNCH_N = Option("n", "--n", "int", 1024, "The size: N elements (a 2-D kernel: N x N); --size overrides it.",
                  minimum=1, show_default=True)
LAUNCH_CALLS = Option("calls", "--calls", "int", 2000, "Back-to-back calls a sample (its time / calls: us a call).",
                      minimum=1, show_default=True)
LAUNCH_ROUNDS = Option("rounds", "--rounds", "int", 15, "Samples a row (a fixed count; 0: the adaptive stop rule).",
                       minimum=0, show_default=True)
LAUNCH_JSON = Option("json_path", "--json", "path", None, "Also write the rows as JSON to this path.", metavar="PATH")
LAUNCH_PROFILE = Option("profile", "--profile", "int", 0, "Also print the N functions of most own time in a cProfile "
                        "of --calls op calls.", minimum=0, metavar="N")
NOTEBOOKS_OUT = Option("out", "--out", default="lab-notebooks", show_default=True,
                       help="Folder for the notebooks (made when missing; its parent must exist).")

TABLE: tuple[Option, ...] = tuple(v for v in dict(globals()).values() if isinstance(v, Option))


def base_of(option: Option) -> Option | None:
    """The entry of :data:`TABLE` that ``option`` is (or is with another help text), else None."""
    for entry in TABLE:
        if entry == option or dataclasses.replace(option, help=entry.help) == entry:
            return entry
    return None


# --- the library functions' keywords ---------------------------------------------------------------
def declares(*options: Option) -> Callable:
    """Decorator of a library function (``lab run``'s is lab.bench.commands.run): its parameters named
    like ``options`` are those options, in that order: the call fills in their defaults and checks
    every value (:meth:`Option.check`, LabError with the CLI's message) before the body runs, which
    then gets the checked values. The function writes each such parameter without a default (the
    declaration has it); its other parameters (``progress`` ...: hooks the views fill in) keep their
    own. ``fn.options`` holds the declarations (the click command and the notebook API are made from
    them); ``inspect.signature(fn)`` shows the defaults. TypeError at import for a parameter the
    options do not match."""
    def wrap(fn):
        sig = inspect.signature(fn)
        by_name = {o.name: o for o in options}
        if len(by_name) != len(options):
            raise TypeError(f"{fn.__qualname__}: an option declared twice")
        declared = [p for p in sig.parameters.values() if p.name in by_name]
        missing = [o.name for o in options if o.name not in sig.parameters]
        written = [p.name for p in declared if p.default is not inspect.Parameter.empty]
        if missing or written or [p.name for p in declared] != list(by_name):
            raise TypeError(f"{fn.__qualname__}: parameters {[p.name for p in declared]} do not match the declared "
                            f"options {list(by_name)} (missing: {missing}; defaults written in the def: {written})")
        params = []
        for p in sig.parameters.values():
            o = by_name.get(p.name)
            if o is not None and not (o.argument and o.required):
                p = p.replace(default=() if o.multiple else o.default)
            params.append(p)
        public = sig.replace(parameters=params)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            bound = public.bind(*args, **kwargs)
            bound.apply_defaults()
            for name, o in by_name.items():
                bound.arguments[name] = o.check(bound.arguments[name])
            return fn(*bound.args, **bound.kwargs)

        call.__signature__ = public
        call.options = tuple(options)
        return call
    return wrap
