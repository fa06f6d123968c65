"""The lab from Python (notebooks and scripts): ``import lab; lab.run("vecadd", size="4096")``.

Each function is a ``lab`` command without the terminal: a thin view over the command's library
function (:mod:`lab.library`), which takes the command's options as keyword arguments (the same
names: ``threads``, ``size``, ``variant``, ``contenders``, ``sim`` ...; lists may stand for
comma-separated values), checks them as the command does and does the work. Every option is declared
once (:mod:`lab.core.options`); each function's signature (``help(lab.run)``) is made from those
declarations: the library function's options, then the view's own (``wide``, ``png`` ...). The view adds what a
notebook shows, and returns a :class:`Result`:

* ``_repr_html_`` / ``_repr_markdown_``: the command's tables (:mod:`lab.cli.views`, recorded by a
  rich Console), and for ``grid``, ``sweep`` and ``occupancy(sweep=True)`` the picture, inline;
* ``.to_dict()``: exactly the command's ``--json`` document (docs/schemas/, with ``schema_version``);
* ``.to_pandas()``: its rows as a DataFrame (pandas needed).

Bad arguments raise :class:`lab.core.errors.LabError` with the CLI's one-line message. Long work
(``run``, ``sweep``, ``counters``) shows a progress bar in the notebook (an HTML ``<progress>``
updated through IPython's display handle: no ipywidgets needed), or on stderr in a script.

    lab.run(kernel, threads=, size=, dtype=, variant=, contenders=, repeats=, warmup=, seed=, yes=, counters=, sim=, compiler=)
    lab.grid(kernel, variant=, size=, threads=256, arch=, sms=, waves=True, warp=, png=, svg=)
    lab.occupancy(kernel=None, variant=, threads=256, arch=, registers=, shared=, sweep=False, png=, sim=)
    lab.counters(kernel, variant=, size=, threads=, dtype=, contenders=, seed=, tool=, sim=)
    lab.sweep(kernel, threads=, sizes=, variant=, contenders=, dtype=, repeats=, warmup=, seed=, png=, metric=, sim=, compiler=)
    lab.device(measure=False, sim=)

``wide=True`` shows every column (a wider table). The backend (GPU or simulator) is fixed for the
process by the first call, as for one ``lab`` command: a later ``sim=`` that disagrees is a LabError.
"""
from __future__ import annotations

import base64
import contextlib
import html
import inspect
import io
import json
import os
import subprocess
import sys
import tempfile
import importlib.util


from lab import library as L
from lab.cli import options as O
from lab.core import options as D, simulator
from lab.core.errors import LabError
import numpy as np
from kernels.backend import is_simulator
from kernels.spec import plural
from lab.bench import sweep as S
from lab.cli.views import report as V, inspect as views_inspect, bench
from lab.cli.views.hardware import print_counters
from lab.cli.views.progress import bar
from lab.cli.views.report import print_device
from lab.cli.views.table import print_tables
from lab.core.session import child_env
from rich.console import Console
from rich.markup import escape

WIDTH = 100  # columns of the recorded tables (a terminal's COLUMNS; a notebook has none)
WIDE_WIDTH = 400  # wide=True: every column fits
_PRE = ('<pre style="white-space:pre;overflow-x:auto;line-height:normal;'
        'font-family:Menlo,\'DejaVu Sans Mono\',consolas,\'Courier New\',monospace">{code}</pre>')


# --- the result -----------------------------------------------------------------------------------
class Result:
    """One command's result: its ``--json`` document, its tables as text and HTML, its pictures.

    ``command``: the lab command ("run", "grid" ...); ``doc``: the ``--json`` document (``to_dict``);
    ``text``/``html``: the CLI's view as plain text and HTML; ``images``: PNG bytes shown inline.
    """

    def __init__(self, command: str, doc, render, images=(), rows=None):
        self.command = command
        self._doc = json.loads(json.dumps(doc, default=str))  # what `lab COMMAND --json` prints
        self.images = [p for p in images if p]
        self._rows = rows
        self.text, self.html = _record(render)

    def to_dict(self):
        """The ``lab COMMAND --json`` document (a fresh copy): docs/schemas/COMMAND.json, with
        ``schema_version``."""
        return json.loads(json.dumps(self._doc))

    def rows(self) -> list[dict]:
        """The result's rows (what ``to_pandas`` makes a DataFrame of)."""
        return [dict(r) for r in (self._rows(self._doc) if self._rows else [self._doc])]

    def to_pandas(self):
        """The rows as a pandas DataFrame (run: one row per contender and variant; sweep: per
        configuration and contender; counters: per rung and op; grid: per output element).
        LabError when pandas is not installed."""
        try:
            import pandas as pd  # lazy: optional (pandas)
        except ImportError:
            raise LabError("to_pandas() needs pandas, which is not installed: pip install pandas") from None
        return pd.DataFrame(self.rows())

    @property
    def passed(self) -> bool | None:
        """Exercise checks: whether every test passed (None for other commands)."""
        return self._doc.get("passed") if isinstance(self._doc, dict) else None

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        imgs = "".join(f'<img src="data:image/png;base64,{base64.b64encode(p).decode()}" style="max-width:100%"/>'
                       for p in self.images)
        return f'<div class="lab-{html.escape(self.command)}">{self.html}{imgs}</div>'

    def _repr_markdown_(self) -> str:
        fence = "````" if "```" in self.text else "```"
        imgs = "".join(f"\n\n![{self.command}](data:image/png;base64,{base64.b64encode(p).decode()})"
                       for p in self.images)
        return f"{fence}text\n{self.text.rstrip()}\n{fence}{imgs}"

    def _repr_png_(self):
        return self.images[0] if self.images else None


def _record(render) -> tuple[str, str]:
    """Run ``render(console)`` on a recording rich Console (never a terminal or a notebook display);
    return its text and HTML."""
    out = Console(record=True, file=io.StringIO(), width=WIDTH, force_terminal=True, force_jupyter=False,
                  color_system="truecolor", highlight=False, legacy_windows=False)
    render(out)
    return out.export_text(clear=False), out.export_html(clear=True, inline_styles=True, code_format=_PRE)


def _console_width(wide: bool) -> int:
    return WIDE_WIDTH if wide else WIDTH


def _with_width(render, wide: bool):
    """``render(console)`` on a console as wide as ``wide`` asks (the views fit their tables to it)."""
    def run(out):
        out.width = _console_width(wide)
        render(out)
    return run


# --- the arguments: the library function's keywords -----------------------------------------------
INTERNAL = ("progress", "counters_engine")  # the library's hooks, which the views fill in


def _check(fn, api_name: str, kwargs: dict) -> None:
    """LabError naming the choices when ``kwargs`` has a keyword that ``fn`` (a library function)
    does not take; the values themselves are the library function's to check."""
    names = [o.name for o in fn.options]
    for key in kwargs:
        if key not in names:
            raise LabError(f"lab.{api_name}() got an unknown argument {key!r}; choose from: {', '.join(names)}")


def _signature(work, *views: D.Option, also: tuple = ()):
    """Decorator: the notebook function's signature made from the declarations, ``work``'s options
    (its library function) then ``views`` (the view's own options) and ``also`` (extra keyword
    names of the view: inspect.Parameter objects); the body takes them as ``**options``."""
    def wrap(f):
        lib = [p for p in inspect.signature(work).parameters.values() if p.name not in INTERNAL]
        kw = inspect.Parameter.KEYWORD_ONLY
        own = [inspect.Parameter(o.name, kw, default=o.default) for o in views]
        f.__signature__ = inspect.Signature([*lib, *own, *also])
        f.options = (*work.options, *views)
        return f
    return wrap


# --- progress in a notebook -----------------------------------------------------------------------
def _kernel_shell():
    """The IPython shell when running in a Jupyter kernel (a notebook, Colab), else None."""
    ip = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return ip if ip is not None and getattr(ip, "kernel", None) is not None else None


@contextlib.contextmanager
def progress_bar(description: str):
    """A ``progress(done, total, label)`` callback: in a notebook an HTML progress bar that updates in
    place and disappears when done; elsewhere the CLI's (:func:`lab.cli.views.progress.bar`)."""
    if _kernel_shell() is None:
        with bar(description) as update:
            yield update
        return
    from IPython.display import HTML, display  # lazy: optional (IPython)

    handle = display(HTML(""), display_id=True)

    def update(done, total, label):
        value = f'value="{done}" max="{total}"' if total else ""
        count = f"{done}/{total}" if total else f"{done} done"
        handle.update(HTML(f"<div><b>{html.escape(description)}</b> <progress {value}></progress> "
                           f"{count} <code>{html.escape(str(label))}</code></div>"))

    try:
        yield update
    finally:
        handle.update(HTML(""))


def _run_events(update):
    """lab.core.runner's ``progress(event, report, **info)`` events as bar steps (rows done, stage)."""
    def events(event, report, **info):
        if event == "stage":
            calls = f" ({info['calls']} calls)" if info.get("calls") else ""
            update(len(report.rows), 0, f"{info['contender']} {info['variant']}: {info['stage']}{calls}")
    return events


@contextlib.contextmanager
def _keep_matplotlib_backend():
    """The views draw with matplotlib's Agg backend (lab.cli.views.plot.pyplot); a notebook's own
    (inline) backend comes back afterwards."""
    try:
        import matplotlib  # lazy: optional (matplotlib)
    except ImportError:
        yield
        return
    before = matplotlib.get_backend()
    try:
        yield
    finally:
        if matplotlib.get_backend() != before:
            matplotlib.use(before)


def picture(draw) -> bytes | None:
    """PNG bytes of a view's picture: ``draw(path)`` writes it (lab.cli.views.*, atomically); None
    without matplotlib (the tables still show)."""
    if importlib.util.find_spec("matplotlib") is None:
        return None
    with _keep_matplotlib_backend(), tempfile.TemporaryDirectory(prefix="lab-api-") as d:
        path = os.path.join(d, "picture.png")
        draw(path)
        with open(path, "rb") as f:
            return f.read()


# --- the commands ---------------------------------------------------------------------------------
@_signature(L.run, D.WIDE, also=(inspect.Parameter("variants", inspect.Parameter.KEYWORD_ONLY, default=None),))
def run(kernel: str, *, wide: bool = False, variants=None, **options) -> Result:
    """``lab run KERNEL``: each Numba variant beside NumPy, CuPy and torch, checked against float64,
    then timed (CUDA events on a GPU; in the simulator each row is checked once, not timed).

    Options as the CLI's: threads (per block), size ("N", "ROWSxCOLS" ...), dtype, variant (also
    ``variants=``; comma-separated or a list), contenders, repeats, warmup, seed, yes, counters (the
    DRAM× and sec/req columns, as ``lab run --counters``), sim (True: simulator, False: GPU, None:
    auto), compiler, arrays ("numba", "torch" or "cupy": who owns the Numba rows' device buffers), precision
    ("highest", "high" or "medium": what a float32 matmul's auto may run, kernels/gemm/precision.py).
    ``to_dict()``: docs/schemas/run.json (or run-both.json with ``compiler="both"``). A FAIL row is in the result, not an exception.
    Raises LabError on bad input (the CLI's message)."""
    work = L.run
    if variants is not None:
        options.setdefault("variant", variants)
    _check(work, "run", dict(kernel=kernel, **options))
    wide = D.WIDE.check(wide)
    engine = O.counters_engine(options.get("counters", False), options.get("sim"), options.get("compiler"))
    with progress_bar(f"lab run {kernel}") as update:
        report = work(kernel, counters_engine=engine, progress=_run_events(update), **options)
    if isinstance(report, dict):  # compiler="both": one row per variant and compiler
        return Result("run", report, _with_width(lambda out: V.print_compare(report, out, wide), wide),
                      rows=lambda d: d["results"])
    return Result("run", report.to_dict(), _with_width(lambda out: V.print_table(report, out, wide), wide),
                  rows=lambda d: d["results"])


@_signature(L.grid, D.PNG, D.SVG)
def grid(kernel: str, **options) -> Result:
    """``lab grid KERNEL``: which block and thread wrote each output element (recorded in the
    simulator), idle threads, waves; the map picture inline. Options as the CLI's: variant, size,
    threads (default 256), arch, sms, waves, png/svg (also write the picture to a file).

    The map always comes from the simulator: in a process already on a GPU it is recorded in a child
    process (``lab grid --json``). ``to_dict()``: docs/schemas/grid.json; ``to_pandas()``: one row per
    output element (block, thread, writers). Raises LabError on bad input (the CLI's message)."""
    work = L.grid
    png, svg = options.pop("png", None), options.pop("svg", None)
    _check(work, "grid", dict(kernel=kernel, **options))
    png, svg = D.PNG.check(png), D.SVG.check(svg)
    O.needs_plot(png, svg)
    if "numba.cuda" in sys.modules and not is_simulator() or "numba.cuda" not in sys.modules and simulator.choose() == "gpu":
        # this process runs kernels on a GPU: the map is recorded in a simulator process of its own
        info = _child_json(["grid", kernel, *_cli_args(options), "--json"])
    else:
        info = work(kernel, **options)
    for path, fmt in ((png, "png"), (svg, "svg")):
        if path:
            with _keep_matplotlib_backend():
                views_inspect.plot_map(info, path, fmt)
    image = picture(lambda path: views_inspect.plot_map(info, path, "png"))
    return Result("grid", info, lambda out: views_inspect.print_grid(info, out), [image], rows=_grid_rows)


def _grid_rows(info: dict) -> list[dict]:
    block, thread, writers = (np.asarray(info["map"][k]) for k in ("block_of", "thread_of", "writers"))
    rows = []
    for idx in np.ndindex(block.shape):
        rows.append({"element": idx[0] if len(idx) == 1 else idx, "block": int(block[idx]),
                     "thread": int(thread[idx]), "writers": int(writers[idx])})
    return rows


def _cli_args(options: dict) -> list[str]:
    """Keyword arguments as command-line options (for a child ``lab`` process): ``waves=False`` is
    ``--no-waves``, a list is comma-separated, None is left out."""
    args = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None:
            continue
        if isinstance(value, bool):
            args.append(flag if value else f"--no-{key.replace('_', '-')}")
        else:
            args += [flag, ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)]
    return args


def _child_json(args: list[str]) -> dict:
    """``python -m lab ARGS`` (a ``--json`` command) in a child process: its document, or LabError
    with its one-line error."""
    proc = subprocess.run([sys.executable, "-m", "lab", *args], capture_output=True, text=True,
                          env=child_env(NUMBA_ENABLE_CUDASIM="1"), stdin=subprocess.DEVNULL)
    if proc.returncode not in (0, 1):
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        raise LabError(lines[-1].removeprefix("error: ") if lines else f"lab {args[0]} failed "
                        f"(exit code {proc.returncode})")
    return json.loads(proc.stdout)


@_signature(L.occupancy, D.WIDE, D.PNG)
def occupancy(kernel: str | None = None, *, wide: bool = False, png: str | None = None, **options) -> Result:
    """``lab occupancy [KERNEL]``: theoretical occupancy of KERNEL's variant on an arch (this GPU's,
    else sm_90; any sm_70+ in the tables), or the calculator (``registers=``, ``shared=``, no kernel).
    Options as the CLI's: variant, threads (default 256), arch, registers, shared, sweep (32..1024
    threads per block, with its plot inline), png, sim. ``to_dict()``: docs/schemas/occupancy.json.
    Raises LabError on bad input (the CLI's message)."""
    work = L.occupancy
    _check(work, "occupancy", dict(kernel=kernel, **options))
    wide, png = D.WIDE.check(wide), D.PNG.check(png)
    O.needs_plot(png)
    if png:
        options["sweep"] = True
    result = work(kernel, **options)
    images = []
    if result.get("sweep"):
        name = f"{kernel} / {result.get('variant')}" if kernel else "calculator"
        title = (f"{name} on {result['arch']}: {plural(result['registers'], 'register')}, "
                 f"{result['shared_bytes']} B shared a block")
        draw = lambda path: views_inspect.plot_sweep(result["sweep"], result["threads"], path, title)  # noqa: E731
        if png:
            with _keep_matplotlib_backend():
                draw(png)
        images.append(picture(draw))

    def render(out):
        views_inspect.print_result(result, out, wide)
        if result.get("sweep"):
            views_inspect.print_sweep(result["sweep"], result["threads"], out, wide)
    return Result("occupancy", result, _with_width(render, wide), images,
                  rows=lambda d: d.get("sweep") or [{k: v for k, v in d.items() if not isinstance(v, (dict, list))}])


@_signature(L.counters, D.WIDE)
def counters(kernel: str, *, wide: bool = False, **options) -> Result:
    """``lab counters KERNEL``: one call of each rung and library op under Nsight Compute (DRAM bytes,
    sectors per request, occupancy, stalls) with a verdict; in the simulator, sectors per request from
    the recorded addresses. Options as the CLI's: variant, size, threads, dtype, contenders, seed,
    tool, sim. ``to_dict()``: docs/schemas/counters.json. Raises LabError on bad input or when no
    counters engine is usable on a GPU (the CLI's message)."""
    work = L.counters
    _check(work, "counters", dict(kernel=kernel, **options))
    wide = D.WIDE.check(wide)
    with progress_bar(f"lab counters {kernel}") as update:
        doc = work(kernel, progress=update, **options)
    return Result("counters", doc, _with_width(lambda out: print_counters(doc, out, wide), wide),
                  rows=lambda d: d["rows"])


@_signature(L.sweep, D.WIDE, D.PNG_FILE, D.METRIC)
def sweep(kernel: str, *, wide: bool = False, png: str | None = None, metric: str = "auto", **options) -> Result:
    """``lab sweep KERNEL``: run it at every threads-per-block value and/or size, each checked and timed;
    the table and the plot (``metric``: auto, ms, gbps, gflops) inline. Options as the CLI's: threads
    ("32,64,128" or a list), sizes, variant, contenders, dtype, repeats, warmup, seed, png (also write
    the plot to a file), metric, sim, compiler. ``to_dict()``: docs/schemas/sweep.json. Raises
    LabError on bad input (the CLI's message)."""
    work = L.sweep
    _check(work, "sweep", dict(kernel=kernel, **options))
    wide, png, metric = D.WIDE.check(wide), D.PNG_FILE.check(png), D.METRIC.check(metric)
    O.needs_plot(png)
    with progress_bar(f"lab sweep {kernel}") as update:
        doc = work(kernel, progress=update, **options)
    if png:
        with _keep_matplotlib_backend():
            bench.sweep_plot(doc, png, metric)
    images = [picture(lambda path: bench.sweep_plot(doc, path, metric))] if S.rows(doc) else []

    def render(out):
        print_tables(out, [*bench.sweep_table(doc, out, wide=False), *[f"[dim]{escape(n)}[/]" for n in S.notes(doc)]])
    return Result("sweep", doc, _with_width(render, wide), images, rows=S.rows)


@_signature(L.device)
def device(**options) -> Result:
    """``lab device``: the GPU's attributes (or what the simulator reports) and which compilers are
    usable; ``measure=True`` adds the measured device-to-device copy bandwidth (GB/s).
    ``to_dict()``: docs/schemas/device.json."""
    _check(L.device, "device", options)
    info = L.device(**options)
    return Result("device", info, lambda out: print_device(info, out),
                  rows=lambda d: [{"attribute": k, "value": v} for k, v in d.items() if k != "schema_version"])
