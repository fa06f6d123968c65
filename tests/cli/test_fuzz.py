"""Bad input never crashes (issue "The first ten minutes", sections 2-3): every command, driven with
paths it cannot write, empty values and garbage files, answers with exactly one line on stderr,
starting "error:", and exit code 2; never a traceback, and never after doing the work.

The empty values come from the commands themselves: every option and argument that takes a value is
tried with '' (and the numeric ones with 0 and -1), so a new option is covered without a new test."""
import contextlib
import io
import json
import os

import click
import pytest

from lab.cli import cli, main
from tests.conftest import SIMULATOR

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="the bad-input checks run in the simulator")


def lab(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def one_error_line(args, code, out, err, needle=""):
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in out + err, (args, err)
    assert code == 2, (args, code, out[-500:], err[-500:])
    assert len(lines) == 1 and lines[0].startswith("error:"), (args, err)
    assert needle in lines[0], (args, lines[0])


# --- the commands' own parameters -------------------------------------------------------------------
def _commands(group=cli, path=()):
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, path + (name,))
        else:
            yield path + (name,), cmd


ARGUMENTS = {"kernel": "vecadd", "name": "vecadd", "a": "A.json", "b": "B.json",  # a valid value of each
             "submissions": "class"}  # (a folder the fuzzed grade never reaches: a bad option stops it first)


def _base(path, cmd):
    """The command with its required arguments filled in with valid values."""
    return [*path, *[ARGUMENTS[p.name] for p in cmd.params if isinstance(p, click.Argument) and p.required]]


def _empty_cases():
    for path, cmd in _commands():
        for p in cmd.params:
            if isinstance(p, click.Option) and (p.is_flag or p.count):
                continue
            if isinstance(p, click.Argument):
                if not p.required:
                    continue
                args = [*path] + ["" if q is p else ARGUMENTS[q.name] for q in cmd.params
                                  if isinstance(q, click.Argument) and q.required]
                yield pytest.param(args, id=f"{' '.join(path)} {p.name}=''")
                continue
            yield pytest.param([*_base(path, cmd), p.opts[-1], ""], id=f"{' '.join(path)} {p.opts[-1]}=''")
            if isinstance(p.type, (click.types.IntParamType, click.types.FloatParamType)) \
                    and p.name not in ("registers", "shared"):  # 0 registers or bytes are valid inputs
                for v in ("-1",) if p.name == "warp" else ("0", "-1"):  # warp 0: the first warp, valid
                    yield pytest.param([*_base(path, cmd), p.opts[-1], v], id=f"{' '.join(path)} {p.opts[-1]}={v}")


@pytest.fixture(scope="module")
def run_json():
    code, out, err = lab("run", "vecadd", "--size", "40", "--threads", "32", "--repeats", "1", "--warmup", "0",
                         "--contenders", "numba", "--variant", "element_per_thread", "--json")
    assert code == 0, err
    return out


@pytest.fixture
def in_tmp(tmp_path, monkeypatch, run_json):
    """A working folder with valid A.json and B.json (lab run --json) for lab compare."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "A.json").write_text(run_json)
    (tmp_path / "B.json").write_text(run_json)
    return tmp_path


@pytest.mark.parametrize("args", list(_empty_cases()))
def test_empty_and_zero_values_are_one_line_exit_2(args, in_tmp):
    if args[-2:] in (["--seed", "0"], ["--warmup", "0"]):
        pytest.skip("0 is a valid seed and a valid warm-up count")
    one_error_line(args, *lab(*args))


def test_empty_values_name_the_option_as_typed(in_tmp):
    for args, needle in [(["bench", "--kernels", ""], "--kernels is empty"),
                         (["sweep", "vecadd", "--threads", ""], "--threads is empty"),
                         (["roofline", "--kernels", ""], "--kernels is empty"),
                         (["run", "vecadd", "--variant", " "], "--variant is empty"),
                         (["exercise", "list", "--dir", ""], "--dir is empty"),
                         (["compare", "", "B.json"], "A is empty")]:
        one_error_line(args, *lab(*args), needle)


# --- output paths that cannot be written: refused before any work ------------------------------------
def _unwritable(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    return {"missing folder": "/nonexistent/lab-fuzz/out.png", "a folder": str(tmp_path),
            "under a file": str(blocker / "out.png"),
            # a folder that says it is writable (to root) where nothing can be created
            "no file can be made": "/proc/lab-fuzz-out.png"}


PICTURES = [["grid", "vecadd", "--png"], ["grid", "vecadd", "--svg"], ["occupancy", "vecadd", "--sweep", "--png"],
            ["occupancy", "--registers", "32", "--shared", "0", "--png"],
            ["sweep", "vecadd", "--threads", "32", "--sizes", "50", "--png"], ["roofline", "--png"],
            ["bench", "vecadd", "--quick", "--out"], ["profile", "vecadd", "--size", "50", "--trace"]]


@pytest.mark.parametrize("args", PICTURES, ids=lambda a: " ".join(a))
@pytest.mark.parametrize("kind", ["missing folder", "a folder", "under a file", "no file can be made"])
def test_unwritable_output_paths_fail_first(args, kind, tmp_path, monkeypatch):
    from lab.core import runner

    path = _unwritable(tmp_path)[kind]
    ran = []
    monkeypatch.setattr(runner, "run", lambda *a, **k: ran.append(a))  # the work must not start
    code, out, err = lab(*args, path)
    one_error_line(args, code, out, err, "cannot write")
    assert not ran
    assert not os.path.exists("/nonexistent/lab-fuzz")


@pytest.mark.parametrize("kind", ["missing folder", "a folder", "under a file", "no file can be made"])
def test_tune_and_grade_refuse_an_unwritable_output_before_the_work(kind, tmp_path):
    path = _unwritable(tmp_path)[kind]
    (tmp_path / "class" / "alice").mkdir(parents=True)
    for args in (["tune", "matmul", "--sim", "--out", path, "--match", "H100"],
                 ["exercise", "grade", str(tmp_path / "class"), "--csv", path]):
        one_error_line(args, *lab(*args), "cannot write")


@pytest.mark.parametrize("kind", ["a file", "under a file"])
@pytest.mark.parametrize("sub", [["start", "vecadd"], ["hint", "vecadd"]])
def test_exercise_workspace_that_cannot_be_written(kind, sub, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    ws = str(blocker) if kind == "a file" else str(blocker / "ws")
    args = ["exercise", *sub, "--dir", ws]
    # start cannot make it; hint (which never makes a workspace) says it is not one
    want = "cannot write the exercise workspace" if sub[0] == "start" else (
        "is not a folder" if kind == "a file" else "does not exist")
    one_error_line(args, *lab(*args), want)
    assert blocker.read_text() == "x"


def test_scripts_refuse_an_unwritable_out_before_the_work(tmp_path, capsys):
    from lab.cli import scripts

    for fn in (scripts.shape_sweep, scripts.compiler_table):
        for path in _unwritable(tmp_path).values():
            assert fn(["--out", path]) == 2
            out, err = capsys.readouterr()
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: cannot write report"), err
    assert scripts.shape_sweep(["--kernels", "nosuch"]) == 2
    assert "unknown kernel 'nosuch'" in capsys.readouterr().err


# --- garbage files where a --json document is expected ------------------------------------------------
GARBAGE = {
    "binary": b"\x89PNG\r\n\x1a\n\x00\xff\xfe" + bytes(range(256)),
    "text": b"kernel results, but not JSON\n",
    "empty": b"",
    "a list of numbers": b"[1, 2, 3]",
    "no results": json.dumps({"kernel": "vecadd"}).encode(),
    "results not rows": json.dumps({"kernel": "vecadd", "results": [1, 2]}).encode(),
    "a bench without runs": json.dumps({"reports": [{"kernel": 3, "results": "x"}]}).encode(),
    "a run without its keys": json.dumps({"kernel": "vecadd", "results": [{"contender": "numba"}]}).encode(),
    "wrong types": json.dumps({"kernel": "vecadd", "backend": "gpu", "device": {}, "size": [8],
                               "threads_per_block": 32, "flops": 8, "bytes_moved": 96,
                               "results": [{"contender": "numba", "variant": "x", "status": "ok",
                                            "median_ms": "fast", "iqr_ms": [], "noise": {}}]}).encode(),
}


@pytest.mark.parametrize("kind", list(GARBAGE))
@pytest.mark.parametrize("command", [["bench", "--from"], ["roofline", "--from"], ["compare"], ["compare", "B.json"]],
                         ids=lambda c: " ".join(c))
def test_garbage_files_are_one_line_exit_2(command, kind, in_tmp):
    bad = in_tmp / "bad.json"
    bad.write_bytes(GARBAGE[kind])
    args = [*command, str(bad)] + (["A.json"] if command == ["compare"] else [])
    one_error_line(args, *lab(*args))


@pytest.mark.parametrize("command", [["bench", "--from"], ["roofline", "--from"], ["compare", "A.json"]])
def test_a_folder_or_a_missing_file_is_one_line_exit_2(command, in_tmp):
    for path in (str(in_tmp), str(in_tmp / "missing.json")):
        args = [*command, path]
        one_error_line(args, *lab(*args))


# --- bad names, said first ----------------------------------------------------------------------------
@pytest.mark.parametrize("args,needle", [
    (["bench", "--contenders", "nosuch"], "unknown contender 'nosuch'"),
    (["roofline", "--contenders", "nosuch"], "unknown contender 'nosuch'"),
    (["sweep", "vecadd", "--threads", "32", "--contenders", "nosuch"], "unknown contender 'nosuch'"),
    (["profile", "nosuch", "--trace", "/nonexistent/x.json"], "unknown kernel 'nosuch'"),
    (["profile", "nosuch"], "unknown kernel 'nosuch'"),
    (["exercise", "start", "nosuch"], "unknown exercise 'nosuch'"),
])
def test_unknown_names_are_one_line_exit_2(args, needle):
    one_error_line(args, *lab(*args), needle)


def test_an_unexpected_exception_is_one_line_not_a_traceback(monkeypatch):
    """A bug of the lab (not bad input): one line saying so, exit code 3; LAB_DEBUG=1 re-raises."""
    import lab.library as L

    def boom(*a, **k):
        raise RuntimeError("something broke\nacross two lines")

    monkeypatch.setattr(L, "list_kernels", boom)  # what the command calls (lab.library)
    code, out, err = lab("list")
    assert code == 3 and "Traceback" not in err
    assert err.strip().splitlines() == ["error: internal error (a bug in the lab, please report it): RuntimeError: "
                                        "something broke across two lines (LAB_DEBUG=1 shows the traceback)"]
    monkeypatch.setenv("LAB_DEBUG", "1")
    with pytest.raises(RuntimeError):
        main(["list"])
