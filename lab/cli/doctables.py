"""The lists in the docs that the code knows, generated from the code: the kernels and their rungs
(README.md), the options of ``lab run`` (docs/running.md) and of every command (docs/commands.md), the
torch ops (docs/torch.md) and the exercises in ``lab exercise list`` order (exercises/README.md).

Each list sits in its markdown file between ``<!-- generated:NAME -->`` and
``<!-- /generated:NAME -->``; :func:`render` rewrites every such region from :data:`GENERATORS`.
``python -m lab.cli.doctables`` rewrites the files after a change to the code; ``--check`` only says
which regions differ (exit 1). tests/docs/test_generated_docs.py keeps the files equal to the code,
as tests/core/test_settings.py does for docs/settings.md's table (lab.core.settings.markdown_table).
"""
from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import click
import exercises
import kernels
from lab.cli import cli
from lab.cli.run import run
from lab.core import simulator
from lab.core.catalog import catalog
from lab.core.files import write_atomic

ROOT = Path(__file__).resolve().parents[2]
REGION = re.compile(r"(?P<open><!-- generated:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(?P<close><!-- /generated:(?P=name) -->)",
                    re.DOTALL)
LIBRARIES = (("numpy", "NumPy"), ("cupy", "CuPy"), ("torch", "torch"), ("triton", "Triton"))


def _cell(text: str) -> str:
    """``text`` as one markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def kernels_table() -> str:
    """README.md's table: every kernel (kernels.NAMES order), its rungs, whether it has ``auto`` and
    the libraries it is run against (``lab list`` names each contender; lab.core.catalog)."""
    simulator.select("auto")
    rows = ["| kernel | rungs (`--variant`, textbook first) | `auto` | contenders |", "|---|---|---|---|"]
    for k in catalog():
        rungs = [r["name"] for r in k["rungs"] if r["name"] != "auto"]
        libs = [title for lib, title in LIBRARIES if k["contenders"].get(lib)]
        if len(libs) == 1:
            why = next((w for w in k["unavailable"].values() if w), "")
            libs.append(f"no library op yet: {why.removeprefix('none yet: ')}" if why else "")
        torch_op = next((c for c in k["contenders"]["torch"] if "torch.ops.lab." in c), None)
        if torch_op:
            libs.append(f"as `torch.ops.lab.{k['name']}`")
        rows.append(f"| `{k['name']}` | {', '.join(f'`{r}`' for r in rungs)} | "
                    f"{'yes' if len(rungs) < len(k['rungs']) else 'no'} | {_cell(', '.join(x for x in libs if x))} |")
    return "\n".join(rows)


def _takes(param: click.Parameter) -> str:
    """What an option takes, in words: a flag, a choice, a range of integers, a value."""
    if isinstance(param, click.Option) and (param.is_flag or param.secondary_opts):
        return "flag"
    kind = param.type
    if isinstance(kind, click.Choice):
        return " or ".join(f"`{c}`" for c in kind.choices)
    if isinstance(kind, click.IntRange):
        lo = f"{kind.min}" if kind.min is not None else ""
        return f"an integer >= {lo}" if lo else "an integer"
    if isinstance(kind, click.types.IntParamType):
        return "an integer"
    return "text" if isinstance(param, click.Option) else "a name"


def options_table(command: click.Command, arguments: dict[str, str] | None = None) -> str:
    """A command's arguments and options, as click declares them: name, what it takes, its default
    (when click shows one) and its help (every default the help states); ``arguments``: the help of
    each argument (click's arguments have none), by name."""
    rows = ["| option | takes | what it does |", "|---|---|---|"]
    for p in command.params:
        if isinstance(p, click.Argument):
            declared = getattr(getattr(p, "declared", None), "help", "")  # lab.cli.options.DeclaredArgument
            name, help_ = p.human_readable_name, (arguments or {}).get(p.human_readable_name, declared)
        else:
            if p.hidden:
                continue
            name = "/".join(p.opts + p.secondary_opts)
            help_ = p.help or ""
            if p.show_default and p.default is not None and not p.is_flag:
                help_ += f" Default: {p.default}."
        rows.append(f"| `{name}` | {_cell(_takes(p))} | {_cell(help_)} |")
    return "\n".join(rows)


def run_options_table() -> str:
    """docs/running.md's table: every argument and option of ``lab run``."""
    return options_table(run, {"KERNEL": f"The kernel, one of: {', '.join(kernels.NAMES)}."})


def every_command_options() -> str:
    """docs/commands.md's reference: for every ``lab`` command and subcommand (the click group walked in
    name order), its one-line help and its options table (:func:`options_table`), as ``lab CMD --help``
    declares them (each option made from its one declaration, lab.core.options)."""
    out = []

    def walk(group: click.Group, prefix: str) -> None:
        ctx = click.Context(group)
        for name in sorted(group.list_commands(ctx)):
            cmd = group.get_command(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            full = f"{prefix} {name}"
            if isinstance(cmd, click.Group):
                walk(cmd, full)
                continue
            out.append(f"#### `{full}`\n\n{_cell(cmd.get_short_help_str(limit=200))}\n\n{options_table(cmd)}\n")

    walk(cli, "lab")
    return "\n".join(out).rstrip()


def torch_ops_table() -> str:
    """docs/torch.md's table: every op of torch_bridge.lab_ops, its schema (as torch registered it),
    whether it has a backward, and the kernel module it runs."""
    import torch  # lazy: optional (torch)

    from torch_bridge import lab_ops  # lazy: backend chosen first (numba)

    rows = ["| op | schema | gradient | what it computes |", "|---|---|---|---|"]
    for name, (doc, backward) in lab_ops.DECLARED.items():
        schema = str(getattr(torch.ops.lab, name).default._schema).removeprefix("lab::")
        rows.append(f"| `torch.ops.lab.{name}` | `{_cell(schema)}` | {'yes' if backward else 'no'} | {_cell(doc)} |")
    return "\n".join(rows)


def exercises_table() -> str:
    """exercises/README.md's table: every exercise in ``lab exercise list`` order (exercises.names),
    numbered as it numbers them, with its title, difficulty, the kernels/ module it mirrors and its
    ``--bench`` pass line."""
    rows = ["| # | name | title | difficulty | mirrors | `--bench`: pass line, peak |", "|---|---|---|---|---|---|"]
    for k, name in enumerate(exercises.names(), 1):
        ex = exercises.load(name)
        peak = "FP32 peak" if ex.peak == "fp32" else "copy bandwidth"
        rows.append(f"| {k} | `{name}` | {_cell(ex.title)} | {'*' * ex.difficulty} | {_cell(ex.mirrors)} | "
                    f"{ex.pass_pct:g}%, {peak} |")
    return "\n".join(rows)


GENERATORS: dict[str, Callable[[], str]] = {
    "kernels": kernels_table,
    "run-options": run_options_table,
    "torch-ops": torch_ops_table,
    "exercises": exercises_table,
    "every-command": every_command_options,
}
# where each generated list lives (a file may hold several); every name here must be found there
FILES = {"README.md": ("kernels",), "docs/running.md": ("run-options",), "docs/torch.md": ("torch-ops",),
         "exercises/README.md": ("exercises",), "docs/commands.md": ("every-command",)}


def regions(text: str) -> dict[str, str]:
    """name -> body (without the markers) of every generated region of a markdown text."""
    return {m["name"]: m["body"] for m in REGION.finditer(text)}


def render(text: str, made: dict[str, str] | None = None) -> str:
    """``text`` with the body of every generated region replaced by its generator's output (``made``:
    name -> text already generated). ValueError for a region no generator knows."""
    made = {} if made is None else made

    def body(m: re.Match) -> str:
        name = m["name"]
        if name not in GENERATORS:
            raise ValueError(f"<!-- generated:{name} -->: no such list; lab.cli.doctables has {', '.join(GENERATORS)}")
        if name not in made:
            made[name] = GENERATORS[name]()
        return m["open"] + made[name] + "\n" + m["close"]

    return REGION.sub(body, text)


def stale(root: Path = ROOT) -> dict[str, str]:
    """path (relative to ``root``) -> its text as generated now, for every file of :data:`FILES` whose
    generated regions differ from the code. ValueError when a file lacks a region it must hold."""
    made, out = {}, {}
    for rel, names in FILES.items():
        text = (root / rel).read_text(encoding="utf-8")
        missing = [n for n in names if n not in regions(text)]
        if missing:
            raise ValueError(f"{rel}: no <!-- generated:{missing[0]} --> ... <!-- /generated:{missing[0]} --> region")
        new = render(text, made)
        if new != text:
            out[rel] = new
    return out


def main(argv: list[str] | None = None) -> int:
    """Rewrite the generated lists of the docs (each file written whole, atomically); ``--check``:
    write nothing, exit 1 when a list differs from the code."""
    argv = sys.argv[1:] if argv is None else argv
    check = "--check" in argv
    try:
        changed = stale()
    except ImportError as e:  # torch: docs/torch.md's table is what torch registered
        print(f"error: {e.name} is needed to generate the docs' lists (pip install -e \".[torch]\")", file=sys.stderr)
        return 2
    for rel, text in changed.items():
        if check:
            print(f"{rel}: a generated list differs from the code (python -m lab.cli.doctables rewrites it)")
        else:
            write_atomic(ROOT / rel, text)
            print(f"{rel}: rewritten")
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
