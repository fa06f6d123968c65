"""The lab from Python (notebooks and scripts): ``import lab; lab.run("vecadd", size="4096")``.

Each function is a ``lab`` command without the terminal: it takes the command's options as keyword
arguments (the same names: ``threads``, ``size``, ``variant``, ``contenders``, ``sim`` ...; lists
may stand for comma-separated values), checks them with the command's own click parameters, calls
the same library function, and returns a :class:`Result`:

* ``_repr_html_`` / ``_repr_markdown_``: the command's tables (:mod:`lab.cli.views`, recorded by a
  rich Console), and for ``grid``, ``sweep`` and ``occupancy(sweep=True)`` the picture, inline;
* ``.to_dict()``: exactly the command's ``--json`` document (docs/schemas/, with ``schema_version``);
* ``.to_pandas()``: its rows as a DataFrame (pandas needed).

Bad arguments raise :class:`lab.core.errors.LabError` with the CLI's one-line message. Long work
(``run``, ``sweep``, ``counters``) shows a progress bar in the notebook (an HTML ``<progress>``
updated through IPython's display handle: no ipywidgets needed), or on stderr in a script.

    lab.run(kernel, threads=, size=, dtype=, variant=, contenders=, repeats=, warmup=, seed=, yes=, sim=, compiler=)
    lab.grid(kernel, variant=, size=, threads=256, arch=, sms=, waves=True, png=, svg=)
    lab.occupancy(kernel=None, variant=, threads=256, arch=, registers=, shared=, sweep=False, png=, sim=)
    lab.counters(kernel, variant=, size=, threads=, dtype=, contenders=, seed=, sim=)
    lab.sweep(kernel, threads=, sizes=, variant=, contenders=, dtype=, repeats=, warmup=, seed=, png=, metric=, sim=, compiler=)
    lab.device(measure=False, sim=)

``wide=True`` shows every column (a wider table). The backend (GPU or simulator) is fixed for the
process by the first call, as for one ``lab`` command: a later ``sim=`` that disagrees is a LabError.
"""
from __future__ import annotations

import base64
import contextlib
import html
import io
import json
import os
import subprocess
import sys
import tempfile

import click

from lab.cli import options as O
from lab.core.errors import LabError

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
            import pandas as pd
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
    from rich.console import Console

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


# --- the arguments: the commands' own click parameters --------------------------------------------
def _params(command: click.Command, kwargs: dict, api_name: str, skip=("as_json",)) -> dict:
    """Check ``kwargs`` as the CLI checks ``command``'s options: turn them into arguments, let click
    parse them (types, ranges, choices, callbacks), return the parsed values by parameter name.
    click's errors become LabError with the CLI's one-line message."""
    from lab.cli import _one_line

    by_name = {p.name: p for p in command.params if p.name not in skip}
    args, positional = [], []
    for key, value in kwargs.items():
        p = by_name.get(key)
        if p is None:
            choices = ", ".join(n for n in by_name if n != "help")
            raise LabError(f"lab.{api_name}() got an unknown argument {key!r}; choose from: {choices}")
        if value is None:
            continue
        if isinstance(value, (list, tuple)) and not (isinstance(p, click.Argument) and p.nargs != 1):
            value = ",".join(map(str, value))
        if isinstance(p, click.Argument):
            positional += [str(v) for v in value] if p.nargs != 1 else [str(value)]
        elif p.is_flag and p.secondary_opts:  # --sim/--gpu
            args.append(p.opts[0] if value else p.secondary_opts[0])
        elif p.is_flag:
            if value:
                args.append(p.opts[0])
        else:
            args += [max(p.opts, key=len), str(value)]
    try:
        ctx = command.make_context(f"lab {command.name}", args + ["--"] + positional, resilient_parsing=False)
    except click.ClickException as e:
        raise LabError(_one_line(e.format_message())) from None
    return ctx.params


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
        from lab.cli.views.progress import bar

        with bar(description) as update:
            yield update
        return
    from IPython.display import HTML, display

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
        import matplotlib
    except ImportError:
        yield
        return
    before = matplotlib.get_backend()
    try:
        yield
    finally:
        if matplotlib.get_backend() != before:
            matplotlib.use(before)


def _picture(draw) -> bytes | None:
    """PNG bytes of a view's picture: ``draw(path)`` writes it (lab.cli.views.*, atomically); None
    without matplotlib (the tables still show)."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        return None
    with _keep_matplotlib_backend(), tempfile.TemporaryDirectory(prefix="lab-api-") as d:
        path = os.path.join(d, "picture.png")
        draw(path)
        with open(path, "rb") as f:
            return f.read()


# --- the commands ---------------------------------------------------------------------------------
def run(kernel: str, *, wide: bool = False, variants=None, **options) -> Result:
    """``lab run KERNEL``: each Numba variant beside NumPy, CuPy and torch, checked against float64,
    then timed (CUDA events on a GPU; in the simulator each row is checked once, not timed).

    Options as the CLI's: threads (per block), size ("N", "ROWSxCOLS" ...), dtype, variant (also
    ``variants=``; comma-separated or a list), contenders, repeats, warmup, seed, yes, sim (True:
    simulator, False: GPU, None: auto), compiler. ``to_dict()``: docs/schemas/run.json (or
    run-both.json with ``compiler="both"``). A FAIL row is in the result, not an exception.
    Raises LabError on bad input (the CLI's message)."""
    from lab.cli.run import run as command
    from lab.cli.views import report as V

    if variants is not None:
        options.setdefault("variant", variants)
    p = _params(command, dict(kernel=kernel, **options), "run", skip=("as_json", "wide"))
    chosen = O.session(p["sim"], p["compiler"], allow_both=True)
    args = dict(kernel=p["kernel"], threads=p["threads"], size=p["size"], dtype=p["dtype"], variant=p["variant"],
                contenders=p["contenders"], repeats=p["repeats"], warmup=p["warmup"], seed=p["seed"])
    if chosen.compiler == "both":
        from lab.bench.compilers import run_both

        doc = run_both(args, chosen.backend)
        return Result("run", doc, _with_width(lambda out: V.print_compare(doc, out, wide), wide),
                      rows=lambda d: d["results"])
    from lab.core.runner import Options, run as run_kernel

    opts = Options(kernel=p["kernel"], threads=p["threads"], size=p["size"], dtype=p["dtype"],
                   variants=O.csv(p["variant"]), contenders=O.csv(p["contenders"]), repeats=p["repeats"],
                   warmup=p["warmup"], seed=p["seed"], yes=p["yes"])
    with progress_bar(f"lab run {p['kernel']}") as update:
        report = run_kernel(opts, chosen.backend, progress=_run_events(update))
    return Result("run", report.to_dict(), _with_width(lambda out: V.print_table(report, out, wide), wide),
                  rows=lambda d: d["results"])


def grid(kernel: str, **options) -> Result:
    """``lab grid KERNEL``: which block and thread wrote each output element (recorded in the
    simulator), idle threads, waves; the map picture inline. Options as the CLI's: variant, size,
    threads (default 256), arch, sms, waves, png/svg (also write the picture to a file).

    The map always comes from the simulator: in a process already on a GPU it is recorded in a child
    process (``lab grid --json``). ``to_dict()``: docs/schemas/grid.json; ``to_pandas()``: one row per
    output element (block, thread, writers). Raises LabError on bad input (the CLI's message)."""
    from lab.cli.inspect import grid as command
    from lab.cli.views import inspect as V
    from lab.core.session import choose, is_simulator

    p = _params(command, dict(kernel=kernel, **options), "grid")
    O.needs_plot(p["png"], p["svg"])
    if "numba.cuda" in sys.modules and not is_simulator() or "numba.cuda" not in sys.modules and choose() == "gpu":
        info = _child_json(["grid", p["kernel"], *_cli_args(command, p, ("kernel", "png", "svg", "as_json")), "--json"])
    else:
        from lab.core.session import select

        select("sim")
        from lab.inspect import grid as G

        info = G.describe(p["kernel"], p["variant"], p["size"], p["threads"], p["arch"], p["sms"], p["waves"])
    for path, fmt in ((p["png"], "png"), (p["svg"], "svg")):
        if path:
            with _keep_matplotlib_backend():
                V.plot_map(info, path, fmt)
    image = _picture(lambda path: V.plot_map(info, path, "png"))
    return Result("grid", info, lambda out: V.print_grid(info, out), [image], rows=_grid_rows)


def _grid_rows(info: dict) -> list[dict]:
    import numpy as np

    block, thread, writers = (np.asarray(info["map"][k]) for k in ("block_of", "thread_of", "writers"))
    rows = []
    for idx in np.ndindex(block.shape):
        rows.append({"element": idx[0] if len(idx) == 1 else idx, "block": int(block[idx]),
                     "thread": int(thread[idx]), "writers": int(writers[idx])})
    return rows


def _cli_args(command: click.Command, params: dict, skip=()) -> list[str]:
    """Parsed option values back as command-line options (for a child ``lab`` process)."""
    args = []
    for p in command.params:
        v = params.get(p.name)
        if p.name in skip or isinstance(p, click.Argument) or v is None or v == p.default:
            continue
        if p.is_flag and p.secondary_opts:
            args.append(p.opts[0] if v else p.secondary_opts[0])
        elif p.is_flag:
            args += [p.opts[0]] if v else []
        else:
            args += [max(p.opts, key=len), str(v)]
    return args


def _child_json(args: list[str]) -> dict:
    """``python -m lab ARGS`` (a ``--json`` command) in a child process: its document, or LabError
    with its one-line error."""
    from lab.core.session import child_env

    proc = subprocess.run([sys.executable, "-m", "lab", *args], capture_output=True, text=True,
                          env=child_env(NUMBA_ENABLE_CUDASIM="1"), stdin=subprocess.DEVNULL)
    if proc.returncode not in (0, 1):
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        raise LabError((lines[-1].removeprefix("error: ") if lines else f"lab {args[0]} failed "
                        f"(exit code {proc.returncode})"))
    return json.loads(proc.stdout)


def occupancy(kernel: str | None = None, *, wide: bool = False, **options) -> Result:
    """``lab occupancy [KERNEL]``: theoretical occupancy of KERNEL's variant on an arch (this GPU's,
    else sm_90; any sm_70+ in the tables), or the calculator (``registers=``, ``shared=``, no kernel).
    Options as the CLI's: variant, threads (default 256), arch, registers, shared, sweep (32..1024
    threads per block, with its plot inline), png, sim. ``to_dict()``: docs/schemas/occupancy.json.
    Raises LabError on bad input (the CLI's message)."""
    from kernels.spec import plural
    from lab.cli.inspect import occupancy as command
    from lab.cli.views import inspect as V
    from lab.inspect import occupancy as Occ

    p = _params(command, dict(kernel=kernel, **options), "occupancy", skip=("as_json", "wide"))
    O.needs_plot(p["png"])
    result = Occ.occupancy(p["kernel"], p["variant"], p["threads"], p["arch"], p["registers"], p["shared"],
                           None if p["kernel"] is None else O.backend(p["sim"]), with_sweep=bool(p["sweep"] or p["png"]))
    images = []
    if result.get("sweep"):
        name = f"{p['kernel']} / {result.get('variant')}" if p["kernel"] else "calculator"
        title = (f"{name} on {result['arch']}: {plural(result['registers'], 'register')}, "
                 f"{result['shared_bytes']} B shared a block")
        draw = lambda path: V.plot_sweep(result["sweep"], result["threads"], path, title)  # noqa: E731
        if p["png"]:
            with _keep_matplotlib_backend():
                draw(p["png"])
        images.append(_picture(draw))

    def render(out):
        V.print_result(result, out, wide)
        if result.get("sweep"):
            V.print_sweep(result["sweep"], result["threads"], out, wide)
    return Result("occupancy", result, _with_width(render, wide), images,
                  rows=lambda d: d.get("sweep") or [{k: v for k, v in d.items() if not isinstance(v, (dict, list))}])


def counters(kernel: str, *, wide: bool = False, **options) -> Result:
    """``lab counters KERNEL``: one call of each rung and library op under Nsight Compute (DRAM bytes,
    sectors per request, occupancy, stalls) with a verdict; in the simulator, sectors per request from
    the recorded addresses. Options as the CLI's: variant, size, threads, dtype, contenders, seed,
    sim. ``to_dict()``: docs/schemas/counters.json. Raises LabError on bad input or when ncu is
    missing on a GPU (the CLI's message)."""
    from lab.cli.hardware import counters as command
    from lab.cli.views.hardware import print_counters
    from lab.inspect import counters as K

    p = _params(command, dict(kernel=kernel, **options), "counters", skip=("as_json", "wide"))
    backend = O.backend(p["sim"])
    with progress_bar(f"lab counters {p['kernel']}") as update:
        doc = K.counters(p["kernel"], backend, O.csv(p["variant"]), p["size"], p["threads"], p["dtype"],
                         O.csv(p["contenders"]), p["seed"] if p["seed"] is not None else 0, update)
    return Result("counters", doc, _with_width(lambda out: print_counters(doc, out, wide), wide),
                  rows=lambda d: d["rows"])


def sweep(kernel: str, *, wide: bool = False, **options) -> Result:
    """``lab sweep KERNEL``: run it at every threads-per-block value and/or size, each checked and timed;
    the table and the plot (``metric``: auto, ms, gbps, gflops) inline. Options as the CLI's: threads
    ("32,64,128" or a list), sizes, variant, contenders, dtype, repeats, warmup, seed, png (also write
    the plot to a file), metric, sim, compiler. ``to_dict()``: docs/schemas/sweep.json. Raises
    LabError on bad input (the CLI's message)."""
    from rich.markup import escape

    from lab.bench import sweep as S
    from lab.cli.bench import sweep as command
    from lab.cli.views import bench as V
    from lab.cli.views.table import print_tables

    if "threads" in options:
        options["threads_csv"] = options.pop("threads")
    p = _params(command, dict(kernel=kernel, **options), "sweep", skip=("as_json", "wide"))
    threads, size_list = S.parse_threads(p["threads_csv"]), S.parse_sizes(p["sizes"])
    O.needs_plot(p["png"])
    backend = O.session(p["sim"], p["compiler"]).backend
    with progress_bar(f"lab sweep {p['kernel']}") as update:
        doc = S.sweep(p["kernel"], backend, threads, size_list, variants=O.csv(p["variant"]),
                      contenders=O.csv(p["contenders"]), dtype=p["dtype"], repeats=p["repeats"],
                      warmup=p["warmup"], seed=p["seed"], progress=update)
    if p["png"]:
        with _keep_matplotlib_backend():
            V.sweep_plot(doc, p["png"], p["metric"])
    images = [_picture(lambda path: V.sweep_plot(doc, path, p["metric"]))] if S.rows(doc) else []

    def render(out):
        print_tables(out, [*V.sweep_table(doc, out, wide=False), *[f"[dim]{escape(n)}[/]" for n in S.notes(doc)]])
    return Result("sweep", doc, _with_width(render, wide), images, rows=S.rows)


def device(*, measure: bool = False, sim: bool | None = None) -> Result:
    """``lab device``: the GPU's attributes (or what the simulator reports) and which compilers are
    usable; ``measure=True`` adds the measured device-to-device copy bandwidth (GB/s).
    ``to_dict()``: docs/schemas/device.json."""
    from lab.cli.run import device as command
    from lab.cli.views.report import print_device
    from lab.core.device import device_info

    p = _params(command, dict(measure=measure, sim=sim), "device")
    backend = O.session(p["sim"]).backend
    info = device_info(backend == "simulator", p["measure"])
    return Result("device", info, lambda out: print_device(info, out),
                  rows=lambda d: [{"attribute": k, "value": v} for k, v in d.items() if k != "schema_version"])
