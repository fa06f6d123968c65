"""Every option declared once (issue 42, item 2): each click parameter of every ``lab`` command (and of
the notebook magics' lines) is made from one entry of lab.core.options.TABLE; the library function of
the command takes exactly the same options (names, order, defaults: lab.core.options.declares), and
so does the notebook API; a bad value fails with the same one line from the CLI, the library and the
notebook API. An option added with a bare ``click.option``, or a keyword with a default written in
a library function, fails here (or at import)."""
import dataclasses
import inspect
import os

import click
import pytest

import lab.library as L
from lab.cli import cli
from lab.cli import options as O
from lab.core import options as D
from lab.core.errors import LabError
from tests.conftest import run_lab

INTERNAL = {"progress", "counters_engine"}  # the library's hooks, filled in by the views


def bad_value(option: D.Option, here: str):
    """(value the command line is given, value the library is given) that ``option`` refuses, from
    its declaration; None for a flag (the command line cannot give anything but the flag)."""
    if option.kind == "int":
        bad = int(option.minimum) - 1 if option.minimum is not None else "x"
    elif option.kind == "float":
        bad = (option.minimum if option.open_ else option.minimum - 1) if option.minimum is not None else "x"
    elif option.kind == "choice":
        bad = "nope"
    elif option.kind == "file":
        bad = "no/such/file.json"
    elif option.kind == "folder":
        bad = here  # a file
    elif option.kind == "path":
        bad = os.path.dirname(here)  # a folder
    elif option.kind == "text":
        bad = ""
    else:
        return None
    return str(bad), bad


def commands(group=cli, prefix=""):
    """Every command of the ``lab`` group by its full name ("exercise check")."""
    found = []
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            found += commands(cmd, f"{prefix}{name} ")
        else:
            found.append((f"{prefix}{name}", cmd))
    return found


def _lines():
    """The notebook magics' lines and the script entry points (python -m lab.shape_sweep ...), but the
    alias that hands its arguments to lab bench unparsed."""
    from lab.cli import magics, scripts

    return [magics._exercise_line, magics._hint_line, magics._solution_line,
            *(c for c in scripts.scripts.commands.values() if c is not scripts.bench_alias_command)]


@pytest.mark.parametrize("name, cmd", commands() + [(c.name, c) for c in _lines()])
def test_every_parameter_comes_from_the_one_declaration(name, cmd):
    """No bare click.option: each parameter is a DeclaredOption/DeclaredArgument whose declaration is
    an entry of the table (or the entry with the command's own help), and click's name, flags,
    default and kind are the declaration's."""
    ctx = click.Context(cmd)
    for p in cmd.params:
        if p.name == "help":
            continue
        o = getattr(p, "declared", None)
        assert isinstance(p, (O.DeclaredOption, O.DeclaredArgument)) and o is not None, \
            f"lab {name} {p.name}: declared outside lab.core.options"
        assert D.base_of(o) is not None, f"lab {name} {p.name}: {o} differs from its table entry in more than its help"
        assert p.name == o.name
        if isinstance(p, click.Argument):
            assert p.required == o.required and (p.nargs == -1) == o.multiple
            continue
        assert "/".join(p.opts + p.secondary_opts) == o.flag
        want = o.default
        got = p.get_default(ctx)
        if type(got).__name__ == "Sentinel":  # click 8.3's UNSET: no default, i.e. None
            got = None
        assert (tuple(got or ()) if o.multiple else got) == (() if o.multiple else want), (name, p.name)
        assert p.help == o.help
        if o.kind not in ("flag", "backend"):
            assert p.type.convert.__qualname__.startswith("click_type"), f"lab {name} {p.name}: click converts it"


@pytest.mark.parametrize("name, cmd", commands())
def test_the_library_takes_the_commands_options(name, cmd):
    """The command's parameters, less the views' own (--json, --wide, --png ...), are its library
    function's declared options, in order; the function takes those names and no other (but its
    hooks), with the declared defaults."""
    fn = L.COMMANDS[name]
    params = inspect.signature(fn).parameters
    assert [n for n in params if n not in INTERNAL] == [o.name for o in fn.options], fn.__name__
    declared = [p.declared for p in cmd.params if hasattr(p, "declared")]
    assert declared[:len(fn.options)] == list(fn.options), f"lab {name}: its options are not the library's"
    views = declared[len(fn.options):]
    assert all(not o.argument for o in views)
    assert {o.name for o in views} <= {"as_json", "wide", "png", "svg", "metric", "yes"}, views
    for o in fn.options:
        if o.argument and o.required:
            assert params[o.name].default is inspect.Parameter.empty
        else:
            assert params[o.name].default == (() if o.multiple else o.default), (name, o.name)


def test_every_table_entry_is_used_and_named_once():
    """Each entry is used by some command; no two entries are the same option (one would be the
    other with another help)."""
    used = {D.base_of(p.declared) for _, cmd in commands() + [(c.name, c) for c in _lines()] for p in cmd.params
            if hasattr(p, "declared")}
    assert not set(D.TABLE) - used, sorted(o.flag for o in set(D.TABLE) - used)
    for i, a in enumerate(D.TABLE):
        for b in D.TABLE[i + 1:]:
            assert dataclasses.replace(a, help=b.help) != b, (a.name, b.name)


def test_a_keyword_declared_twice_is_refused_at_import():
    """A library function that writes a declared option's default itself, lacks one, or declares one
    twice: TypeError when the module loads, not a second declaration that drifts."""
    with pytest.raises(TypeError, match="defaults written"):
        @D.declares(D.REPEATS)
        def twice(*, repeats=None):
            """Its default again."""
    with pytest.raises(TypeError, match="missing"):
        @D.declares(D.REPEATS, D.SEED)
        def lacks(*, repeats):
            """No seed."""
    with pytest.raises(TypeError, match="twice"):
        @D.declares(D.REPEATS, D.REPEATS)
        def double(*, repeats):
            """Twice."""


def test_the_declared_check_runs_before_the_body():
    calls = []

    @D.declares(D.KERNEL, D.REPEATS, D.FROM_JSONS)
    def fn(kernel, *, repeats, from_json):
        calls.append((kernel, repeats, from_json))

    fn(" vecadd ", repeats="3")
    fn("vecadd", repeats=2, from_json=[__file__])
    assert calls == [(" vecadd ", 3, ()), ("vecadd", 2, (__file__,))]
    for bad in (dict(repeats=0), dict(repeats=True), dict(repeats=1.5), dict(from_json="no/such")):
        with pytest.raises(LabError):
            fn("vecadd", **bad)
    with pytest.raises(LabError, match="KERNEL is empty"):
        fn("  ")
    assert len(calls) == 2


@pytest.mark.parametrize("option", [o for o in D.TABLE if o.kind in ("flag", "backend")], ids=lambda o: o.name)
def test_a_flag_from_python_is_true_or_false(option):
    assert option.check(True) is True and option.check(False) is False
    with pytest.raises(LabError, match=option.flag.split("/")[0]):
        option.check("yes")


def test_the_choices_are_the_kernels():
    """Choices kept here so that lab run --help imports no NumPy are the ones the kernels define."""
    from kernels.arrays import ARRAYS
    from kernels.gemm.precision import PRECISIONS
    from lab.bench.sweep import METRICS

    assert D.ARRAYS == ARRAYS and D.PRECISIONS == PRECISIONS and set(D.METRICS) == {"auto", *METRICS}


SHARED = [("run", ["vecadd"]), ("bench", []), ("sweep", ["vecadd", "--threads", "32"]), ("profile", ["vecadd"]),
          ("roofline", []), ("counters", ["vecadd"]), ("exercise check", ["vecadd"])]


@pytest.mark.parametrize("option, value", [("--repeats", "0"), ("--seed", "-1"), ("--warmup", "-1"),
                                           ("--dtype", "float16"), ("--contenders", "")])
def test_a_shared_option_fails_alike_in_every_command_and_the_library(option, value):
    """``lab run --repeats 0``, ``lab bench --repeats 0`` ... and ``lab.run(repeats=0)``,
    ``lab.library.bench(repeats=0)``: one line, the same, from the option's declaration."""
    import lab

    messages, who = set(), []
    for name, args in SHARED:
        cmd = dict(commands())[name]
        if option not in {o for p in cmd.params for o in getattr(p, "opts", ())}:
            continue
        code, _, err = run_lab(*name.split(), *args, option, value, "--sim")
        assert code == 2 and len(err.strip().splitlines()) == 1, (name, err)
        messages.add(err.strip().removeprefix("error: "))
        who.append(name)
        key = next(p.name for p in cmd.params if option in getattr(p, "opts", ()))
        fn = L.COMMANDS[name]
        positional = [a for a in args[:1] if not a.startswith("-")]
        with pytest.raises(LabError) as e:
            fn(*positional, **{key: int(value) if value.lstrip("-").isdigit() else value}, sim=True)
        messages.add(str(e.value))
    assert len(who) >= 2 and len(messages) == 1, (who, messages)
    with pytest.raises(LabError) as e:  # the notebook API too
        lab.run("vecadd", **{option.lstrip("-"): int(value) if value.lstrip("-").isdigit() else value})
    assert {str(e.value)} == messages


NOTEBOOK = ["run", "grid", "occupancy", "counters", "sweep", "device"]


@pytest.mark.parametrize("api_name", NOTEBOOK)
def test_the_notebook_api_takes_the_same_options(api_name):
    """lab.run, lab.grid ...: the library function's options (same names, defaults), then the view's
    own, each from the table."""
    import lab

    fn, work = getattr(lab, api_name), L.COMMANDS[api_name]
    params = inspect.signature(fn).parameters
    lib = [n for n in inspect.signature(work).parameters if n not in INTERNAL]
    assert list(params)[:len(lib)] == lib
    for o in fn.options:
        assert D.base_of(o) is not None
        assert o.argument and o.required or params[o.name].default == (() if o.multiple else o.default)
    with pytest.raises(LabError, match="unknown argument 'nope'; choose from"):
        fn(*(["vecadd"] if api_name not in ("device", "occupancy") else []), nope=1)


def test_a_view_option_fails_alike_in_the_cli_and_the_notebook():
    import lab

    code, _, err = run_lab("sweep", "vecadd", "--threads", "32", "--metric", "nope", "--sim")
    assert code == 2
    with pytest.raises(LabError) as e:
        lab.sweep("vecadd", threads="32", metric="nope", sim=True)
    assert err.strip() == f"error: {e.value}"
    with pytest.raises(LabError, match="--wide is a flag"):
        lab.run("vecadd", wide="yes")


def _notebook_cases():
    import lab

    cases = []
    for api_name in NOTEBOOK:
        for o in getattr(lab, api_name).options:
            bad = bad_value(o, os.path.abspath(__file__))
            if bad is not None and not (o.argument and o.required):
                cases.append(pytest.param(api_name, o, bad[1], id=f"{api_name}-{o.name}"))
    return cases


@pytest.mark.parametrize("api_name, option, value", _notebook_cases())
def test_the_notebook_api_fails_as_the_library_does(api_name, option, value):
    """Each option of lab.run, lab.grid ... with a value its declaration refuses: the library's
    LabError, word for word (the views' own options: their declaration's)."""
    import lab

    args = ["vecadd"] if api_name not in ("device", "occupancy") else []
    with pytest.raises(LabError) as e:
        getattr(lab, api_name)(*args, **{option.name: value})
    with pytest.raises(LabError) as want:
        option.check(value)
    assert str(e.value) == str(want.value)
