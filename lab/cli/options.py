"""The click side of the options declared once in :mod:`lab.core.options`: :func:`command` makes a
command's arguments and options from its library function's declarations (and the views' own:
``--json``, ``--wide``, ``--png`` ...), so the command line and the library take the same names and
defaults and fail with the same one-line message from the same place (:meth:`Option.check`, called
by each parameter's click type: LabError, exit code 2). Also the helpers that turn options into the
engine's arguments.
"""
from __future__ import annotations

import json

import click

from lab.core.options import Option


class DeclaredOption(click.Option):
    """A click option made from an :class:`lab.core.options.Option` (``declared``)."""

    def __init__(self, *args, declared: Option, **kwargs):
        super().__init__(*args, **kwargs)
        self.declared = declared


class DeclaredArgument(click.Argument):
    """A click argument made from an :class:`lab.core.options.Option` (``declared``)."""

    def __init__(self, *args, declared: Option, **kwargs):
        super().__init__(*args, **kwargs)
        self.declared = declared


_TYPES = {"text": (click.types.StringParamType, {}), "int": (click.types.IntParamType, {}),
          "float": (click.types.FloatParamType, {}), "file": (click.Path, dict(exists=True, dir_okay=False)),
          "folder": (click.Path, dict(file_okay=False)), "path": (click.Path, dict(dir_okay=False))}


def click_type(o: Option) -> click.ParamType:
    """The click type of a declared option: click's own (so ``--help`` shows its range, choices or
    path kind, and the shell completes it) with its conversion replaced by the declaration's check."""
    if o.kind == "choice":
        base, kwargs = click.Choice, dict(choices=o.choices)
    elif o.kind in ("int", "float") and o.minimum is not None:
        base = click.IntRange if o.kind == "int" else click.FloatRange
        kwargs = dict(min=o.minimum, min_open=o.open_) if o.kind == "float" else dict(min=int(o.minimum))
    else:
        base, kwargs = _TYPES[o.kind]

    def convert(self, value, param, ctx):
        return o.check_item(value)

    return type(f"Declared{base.__name__}", (base,), {"convert": convert})(**kwargs)


def param(o: Option):
    """The click decorator of one declared option or argument."""
    if o.argument:
        return click.argument(o.name, cls=DeclaredArgument, declared=o, type=click_type(o), required=o.required,
                              nargs=-1 if o.multiple else 1, metavar=o.metavar)
    extra = dict(show_default=o.show_default) if o.show_default else {}
    if o.kind in ("flag", "backend"):
        flag = dict(is_flag=True) if "/" not in o.flag else {}
        default = dict(default=o.default) if o.default is not False else {}
        return click.option(o.flag, o.name, cls=DeclaredOption, declared=o, help=o.help, **flag, **default, **extra)
    return click.option(o.flag, o.name, cls=DeclaredOption, declared=o, type=click_type(o), default=o.default,
                        multiple=o.multiple, metavar=o.metavar, help=o.help, **extra)


def command(fn=None, *views: Option):
    """Decorator of a click command: the arguments and options of library function ``fn`` (its
    :func:`lab.core.options.declares`), then ``views``: options only the view reads (``--json``,
    ``--wide``, ``--png`` ...), each from lab.core.options too. ``fn`` None (a script, a notebook
    magic's line): only ``views``, in their order."""
    declared = [*(fn.options if fn is not None else ()), *views]

    def wrap(f):
        for o in reversed(declared):
            f = param(o)(f)
        return f
    return wrap


def session(sim, compiler_=None, allow_both: bool = False):
    """--sim/--gpu and --compiler fixed once for this process (:func:`lab.core.session.start`), before
    anything compiles; LabError (exit 2) when either cannot be had here. ``compiler_`` None:
    LAB_COMPILER or numba-cuda; "both" only where ``allow_both`` (lab run)."""
    from lab.core.session import start  # lazy: heavy for lab --help's start (ctypes)

    return start("auto" if sim is None else ("sim" if sim else "gpu"), compiler_, allow_both)


def needs_plot(*paths) -> None:
    """Fail before any work when a picture is asked for and matplotlib is missing, or a path cannot
    be written (exit 2)."""
    from lab.core.files import check_writable  # lazy: heavy for lab --help's start (lab.core.files)

    for p in paths:
        check_writable(p, "picture")
    if any(paths):
        from lab.cli.views.plot import pyplot  # lazy: heavy for lab --help's start (lab.cli.views)

        pyplot()


def emit_json(doc) -> None:
    """Print a JSON document (a result's ``to_dict()``) as the commands' ``--json`` output."""
    print(json.dumps(doc, indent=2, default=str))


def counters_engine(counters: bool, sim, compiler=None):
    """``lab run --counters`` on a GPU: the engine that profiles the passed rows afterwards
    (lab.inspect.counters.for_run), checked before the run (no ncu nor CUPTI is one line and exit 2,
    not a run without the columns); None in the simulator (the runner traces the rows itself), with
    --compiler both (the library's error says why) or without --counters."""
    if not counters:
        return None
    chosen = session(sim, compiler, allow_both=True)
    if chosen.compiler == "both" or chosen.backend == "simulator":
        return None
    from lab.inspect import counters as K  # lazy: heavy for lab --help's start (csv)

    K.find_engine("auto")
    return K.for_run
