"""The library first: every ``lab`` command's options are its library function's keywords (lab.library),
with the same names, the same defaults and the same one-line errors (the CLI exits 2); the command and
the notebook API are views over that function."""
import inspect

import click
import pytest

import lab.library as L
from lab.cli import cli
from tests.cli.test_options import bad_value
from tests.conftest import SIMULATOR, run_lab

# options that only choose how a result is shown or written as text, not what is computed
VIEW_ONLY = {"as_json", "wide", "png", "svg"}
VIEW_ONLY_OF = {"sweep": {"metric"}, "exercise solution": {"yes"}}  # yes: the view asks first
INTERNAL = {"progress", "counters_engine"}  # the library's hooks, filled in by the views


def _commands(group=cli, prefix=""):
    """Every command of the ``lab`` group, its subgroups' commands by their full name ("exercise check")."""
    found = []
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            found += _commands(cmd, f"{prefix}{name} ")
        else:
            found.append((f"{prefix}{name}", cmd))
    return found


def _params(name, cmd):
    skip = VIEW_ONLY | VIEW_ONLY_OF.get(name, set())
    return [p for p in cmd.params if p.name not in skip and p.name != "help"]


def _keywords(fn):
    return {n: p for n, p in inspect.signature(fn).parameters.items() if n not in INTERNAL}


def test_every_command_has_a_library_function():
    assert {name for name, _ in _commands()} == set(L.COMMANDS)


@pytest.mark.parametrize("name, cmd", _commands())
def test_same_names_and_defaults(name, cmd):
    fn, keywords = L.COMMANDS[name], _keywords(L.COMMANDS[name])
    params = _params(name, cmd)
    assert [p.name for p in params if p.name not in keywords] == [], f"lab {name}: options the library lacks"
    assert sorted(set(keywords) - {p.name for p in params}) == [], f"lab.library {fn.__name__}: keywords the CLI lacks"
    ctx = click.Context(cmd)
    for p in params:
        want, got = p.get_default(ctx), keywords[p.name].default
        if type(want).__name__ == "Sentinel":  # click 8.3's UNSET: no default given, i.e. None
            want = None
        if isinstance(p, click.Argument):
            if p.required:
                assert got is inspect.Parameter.empty, f"{name} {p.name}: a required argument"
                continue
            want = () if p.nargs == -1 else want
        if p.multiple or getattr(p, "nargs", 1) == -1:  # click gives () for none
            want, got = tuple(want or ()), tuple(got or ())
        assert got == want, f"lab {name} {p.opts}: CLI default {want!r}, library default {got!r}"
        if isinstance(p, click.Option) and not isinstance(p, click.Argument):
            assert keywords[p.name].kind is inspect.Parameter.KEYWORD_ONLY, f"{fn.__name__}({p.name}=...) is keyword-only"


def _bad_values(p):
    """(value the CLI is given, value the library is given) that the option refuses, or None: from the
    option's one declaration (p.declared, lab.core.options), whatever its kind."""
    import os

    return bad_value(p.declared, here=os.path.abspath(__file__))


def _error_cases():
    cases = []
    for name, cmd in _commands():
        args = [p for p in _params(name, cmd) if isinstance(p, click.Argument) and p.required]
        given = {p.name: "x.json" if name == "compare" else "nowhere" if name == "exercise grade" else "vecadd"
                 for p in args}
        for p in _params(name, cmd):
            bad = _bad_values(p)
            if bad is None:
                continue
            cases.append(pytest.param(name, cmd, given, p, *bad, id=f"{name}-{p.name}"))
    return cases


@pytest.mark.parametrize("name, cmd, given, p, cli_value, lib_value", _error_cases())
def test_same_errors(name, cmd, given, p, cli_value, lib_value):
    """Bad input: the library raises LabError with the message the CLI prints on one line, exit 2."""
    from lab.core.errors import LabError

    argv = name.split()
    for a in cmd.params:
        if isinstance(a, click.Argument) and a.name in given and a is not p:
            argv.append(given[a.name])
    if isinstance(p, click.Argument):
        argv.insert(len(name.split()) + [a.name for a in cmd.params if isinstance(a, click.Argument)].index(p.name), cli_value)
        kwargs = dict(given, **{p.name: lib_value})
    else:
        argv += [max(p.opts, key=len), cli_value]
        kwargs = dict(given, **{p.name: lib_value})
    code, out, err = run_lab(*argv)
    assert code == 2 and len(err.strip().splitlines()) == 1, (argv, code, err)
    fn = L.COMMANDS[name]
    positional = [kwargs.pop(a.name) for a in cmd.params if isinstance(a, click.Argument) and a.name in kwargs]
    with pytest.raises(LabError) as e:
        fn(*positional, **kwargs)
    assert err.strip() == f"error: {e.value}"


@pytest.mark.skipif(not SIMULATOR, reason="a simulator-sized run")
def test_run_counters_from_python_is_lab_run_counters():
    """lab.library.run(counters=True) and lab.run(counters=True) add the DRAM× and sec/req numbers,
    as lab run --counters does (in the simulator: from the Numba rows' recorded addresses)."""
    import lab

    report = L.run("vecadd", size="100", threads=32, contenders="numba", variant="element_per_thread", seed=1,
                   counters=True)
    (row,) = report.rows
    assert row.ok and row.sectors_per_request is not None and row.dram_ratio is not None
    assert report.counters["tool"] == "simulator"
    doc = lab.run("vecadd", size="100", threads=32, contenders="numba", variant="element_per_thread", seed=1,
                  counters=True).to_dict()
    assert doc["counters"]["tool"] == "simulator" and doc["results"][0]["dram_ratio"] == row.dram_ratio
    plain = L.run("vecadd", size="100", threads=32, contenders="numba", variant="element_per_thread", seed=1)
    assert plain.counters is None and plain.rows[0].dram_ratio is None


def test_importing_the_library_chooses_no_backend():
    """lab.library imports no Numba: the first call's ``sim=`` still chooses the backend."""
    import subprocess
    import sys

    code = "import sys, lab; lab.library.run; print([m for m in ('numba', 'click', 'rich') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_cli_calls_the_library_not_the_packages_commands():
    """The commands and the notebook API call lab.library's functions (the one place the CLI reaches
    the work through); a constant declared beside them (DTYPES, METRICS) may come from its module."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "lab" / "cli"
    found = [f"{p.name}: {m.group(0)}" for p in sorted(root.glob("*.py"))
             for m in re.finditer(r"from lab\.(?:bench|inspect|teach|core)\.commands import ([\w, ]+)", p.read_text())
             if set(n.strip() for n in m.group(1).split(",")) - {"DTYPES", "METRICS"}]
    assert not found, found


def test_an_option_shared_by_commands_fails_the_same_way_everywhere():
    """--repeats, --warmup, --threads and --seed: the same bad value gets the same message from every
    command that has the option (one declaration, lab.cli.options) and from its library function."""
    import re

    bad = {"repeats": "0", "warmup": "-1", "seed": "-1"}
    seen: dict = {}
    who: dict = {}
    for name, cmd in _commands():
        params = {p.name for p in cmd.params}
        for opt, value in bad.items():
            if opt not in params:
                continue
            args = name.split() + ["vecadd" for p in cmd.params if isinstance(p, click.Argument) and p.required]
            code, _, err = run_lab(*args, f"--{opt}", value, *(["--sim"] if "sim" in params else []))
            if code != 2 or "Invalid value" not in err:
                continue  # another error first (an argument the command needs): not this option's message
            seen.setdefault(opt, set()).add(re.sub(r"^error: ", "", err.strip().splitlines()[-1]))
            who.setdefault(opt, []).append(name)
    assert len(who.get("repeats", [])) >= 4 and len(who.get("seed", [])) >= 4, who  # run, sweep, bench, profile ...
    for opt, messages in seen.items():
        assert len(messages) == 1, (opt, messages, who[opt])
    for opt, value in bad.items():  # the library's message is the command's
        with pytest.raises(Exception) as e:
            L.run("vecadd", **{opt: int(value)}, sim=True)
        assert str(e.value) in seen.get(opt, {str(e.value)})
