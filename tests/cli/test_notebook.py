"""The lab in a notebook (issue 17): the Python API (``lab.run`` ... with rich display, ``to_dict``
as the CLI's ``--json``, the CLI's one-line errors), ``lab exercise notebook``, and the generated
notebooks executed in a real Jupyter kernel (nbclient + ipykernel, this Python, in the simulator):
the vecadd scaffold fails with the checker's message, the solution passes, ``lab.run`` renders its
results table as HTML, ``lab.grid`` an image. One kernel session runs every cell (CI time)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lab
from lab.core.errors import SCHEMA_VERSION
from tests.conftest import SIMULATOR, run_lab

ROOT = Path(__file__).resolve().parents[2]
nbformat = pytest.importorskip("nbformat")


# --- the API in this process ----------------------------------------------------------------------
def test_import_lab_stays_cheap():
    code = ("import sys, lab; heavy = [m for m in ('numba', 'click', 'rich', 'lab.cli', 'numpy') if m in sys.modules];"
            "print(heavy, callable(lab.run), lab.LabError.__module__, callable(lab.load_ipython_extension))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    first = out.split("]")[0] + "]"
    assert first == "[]", out  # nothing heavy before an API name is used
    assert "True lab.core.errors True" in out
    with pytest.raises(AttributeError):
        lab.no_such_thing  # noqa: B018


@pytest.mark.skipif(not SIMULATOR, reason="simulator-sized API run")
def test_run_result_is_the_cli_json_and_renders_its_tables():
    r = lab.run("vecadd", size="100", threads=32, contenders="numba,numpy", seed=5)
    doc = r.to_dict()
    code, out, err = run_lab("run", "vecadd", "--size", "100", "--threads", "32", "--contenders", "numba,numpy",
                             "--seed", "5", "--json")
    cli = json.loads(out)
    assert doc["schema_version"] == SCHEMA_VERSION and set(doc) == set(cli)
    assert [(x["contender"], x["variant"], x["status"]) for x in doc["results"]] == \
        [(x["contender"], x["variant"], x["status"]) for x in cli["results"]]
    from tests.cli.test_schemas import validate

    validate(doc, "run.json")
    html = r._repr_html_()
    assert "results" in html and "element_per_thread" in html and "<pre" in html
    assert "launch configuration" in r._repr_markdown_() and r._repr_markdown_().startswith("```text")
    assert {x["variant"] for x in r.rows()} >= {"element_per_thread", "reference (CPU)"}


def test_to_pandas_names_pandas_when_missing_else_one_row_per_contender():
    r = lab.Result("run", {"results": [{"contender": "numba", "variant": "a"}, {"contender": "numpy", "variant": "b"}]},
                   lambda out: out.print("x"), rows=lambda d: d["results"])
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(lab.LabError, match=r"pip install pandas"):
            r.to_pandas()
    else:
        assert list(r.to_pandas()["contender"]) == ["numba", "numpy"]


@pytest.mark.parametrize("call, cli", [
    (lambda: lab.run("vecadd", dtype="float16"), ["run", "vecadd", "--dtype", "float16"]),
    (lambda: lab.run("nope"), ["run", "nope"]),
    (lambda: lab.run("vecadd", variant=""), ["run", "vecadd", "--variant", ""]),
    (lambda: lab.run("vecadd", threads="many"), ["run", "vecadd", "--threads", "many"]),
    (lambda: lab.grid("vecadd", threads=2048), ["grid", "vecadd", "--threads", "2048"]),
    (lambda: lab.occupancy("vecadd", arch="sm_10"), ["occupancy", "vecadd", "--arch", "sm_10"]),
    (lambda: lab.sweep("vecadd", threads=[32, "x"]), ["sweep", "vecadd", "--threads", "32,x"]),
    (lambda: lab.counters("vecadd", variant="nope"), ["counters", "vecadd", "--variant", "nope"]),
])
def test_bad_arguments_raise_laberror_with_the_cli_message(call, cli):
    with pytest.raises(lab.LabError) as e:
        call()
    code, out, err = run_lab(*cli)
    assert code == 2 and err.strip() == f"error: {e.value}"


def test_progress_in_a_notebook_is_an_html_bar_that_goes_away(monkeypatch):
    """In a Jupyter kernel the progress is an HTML <progress> updated in place (IPython's display
    handle), not lines on stderr; it is cleared when the work is done."""
    display_mod = pytest.importorskip("IPython.display")
    from lab.cli import api

    shown = []

    class Handle:
        def update(self, obj):
            shown.append(obj.data)

    monkeypatch.setattr(api, "_kernel_shell", lambda: object())
    monkeypatch.setattr(display_mod, "display", lambda obj, display_id=None: Handle())
    with api.progress_bar("lab sweep vecadd") as update:
        update(1, 4, "vecadd 100 --threads 64")
        update(0, 0, "numba auto: time (10 calls)")
    assert '<progress value="1" max="4">' in shown[0] and "1/4" in shown[0] and "--threads 64" in shown[0]
    assert "<progress >" in shown[1] and "0 done" in shown[1]  # no total yet: an indeterminate bar
    assert shown[-1] == ""


def test_unknown_keyword_names_the_choices():
    with pytest.raises(lab.LabError, match=r"lab.run\(\) got an unknown argument 'thread'; choose from: kernel, threads"):
        lab.run("vecadd", thread=32)


def test_grid_shows_the_map_picture():
    pytest.importorskip("matplotlib")
    g = lab.grid("vecadd", size="100", threads=32, waves=False)
    assert g.to_dict()["threads_idle"] == 28 and g.images and g.images[0][:4] == b"\x89PNG"
    assert "data:image/png;base64," in g._repr_html_() and g._repr_png_() == g.images[0]
    assert len(g.rows()) == 100 and {r["block"] for r in g.rows()} == {0, 1, 2, 3}
    from tests.cli.test_schemas import validate

    validate(g.to_dict(), "grid.json")


def test_grid_in_a_child_process_is_the_same_map():
    """On a GPU process lab.grid records the map in a child simulator process (lab grid --json)."""
    from lab.cli import api

    child = api._child_json(["grid", "vecadd", "--size", "100", "--threads", "32", "--no-waves", "--json"])
    here = lab.grid("vecadd", size="100", threads=32, waves=False).to_dict()
    assert child["map"] == here["map"] and child["threads_idle"] == here["threads_idle"] == 28
    with pytest.raises(lab.LabError, match="threads per block"):
        api._child_json(["grid", "vecadd", "--threads", "2048", "--json"])


def test_occupancy_and_device_render():
    from tests.cli.test_schemas import validate

    o = lab.occupancy(arch="sm_75", registers=32, shared=0, threads=256, sweep=True)  # a Colab T4 (calculator)
    assert o.to_dict()["arch"] == "sm_75" and "sm_75" in o._repr_html_()
    validate(o.to_dict(), "occupancy.json")
    assert len(o.rows()) == 32 and (not _has("matplotlib") or o.images)  # 32..1024 threads, and its plot
    d = lab.device()
    validate(d.to_dict(), "device.json")
    assert d._repr_html_() and {"attribute", "value"} == set(d.rows()[0])


@pytest.mark.skipif(not SIMULATOR, reason="simulator-sized sweep")
def test_sweep_table_plot_and_json():
    from tests.cli.test_schemas import validate

    s = lab.sweep("vecadd", threads=[32, 64], sizes="100", contenders="numba", variant="element_per_thread")
    validate(s.to_dict(), "sweep.json")
    assert [(r["threads"], r["status"]) for r in s.rows()] == [(32, "ok"), (64, "ok")]
    assert "lab sweep vecadd" in s._repr_html_() and (not _has("matplotlib") or s.images)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.skipif(not SIMULATOR, reason="the who-wrote-what map is recorded in the simulator")
def test_exercise_cell_shows_the_checkers_messages_and_the_map_of_an_indexing_failure(tmp_path):
    """%%exercise on a wrong vecadd (no block offset): the same tests and messages as lab exercise
    check --json with the same seed, a map picture, and to_dict() without the map (the CLI's JSON)."""
    import exercises
    from lab.cli import magics

    wrong = exercises.load("vecadd").solution.read_text().replace("cuda.blockIdx.x * cuda.blockDim.x + ", "")
    r = magics.exercise(f"vecadd --sim --seed 11 --dir {tmp_path / 'ws'}", wrong)
    doc = r.to_dict()
    (tmp_path / "wrong.py").write_text(wrong)
    code, out, err = run_lab("exercise", "check", "vecadd", "--sim", "--seed", "11", "--json", "--file",
                             tmp_path / "wrong.py", "--dir", tmp_path / "other")
    cli = json.loads(out)
    assert code == 1 and doc == cli  # tests, messages, seed, backend: the CLI's document
    assert all(set(t) == {"name", "passed", "message"} for t in cli["tests"])  # the map is not in the JSON
    assert not doc["passed"] and any("is blockIdx.x * blockDim.x in your index?" in t["message"] for t in doc["tests"])
    assert all(t["name"] in r.text for t in doc["tests"])
    assert r.images and r.images[0][:4] == b"\x89PNG" and "data:image/png" in r._repr_html_()
    assert (tmp_path / "ws" / "vecadd.py").read_text() == wrong  # the cell is the workspace's file
    r2 = magics.exercise(f"vecadd --sim --dir {tmp_path / 'ws'}", exercises.load("vecadd").solution.read_text())
    assert r2.passed and not r2.images and (tmp_path / "ws" / "vecadd.py~").read_text() == wrong


def test_exercise_magic_bad_line_is_one_laberror():
    from lab.cli import magics

    with pytest.raises(lab.LabError, match=r"^%%exercise: .*--seed"):
        magics.exercise("vecadd --seed -1", "pass")
    with pytest.raises(lab.LabError, match="unknown exercise 'nope'"):
        magics.exercise("nope", "pass")
    with pytest.raises(lab.LabError, match=r"^%exercise_hint: .*'x' is not a valid integer"):
        magics.exercise_hint("vecadd x")


def test_exercise_solution_asks_first_and_never_blocks_an_unattended_run(capsys):
    """Asked: y shows it, anything else not. No input box (ipykernel's StdinNotImplementedError
    under nbclient / jupyter execute, or EOF): one line naming --yes, no solution, nothing raised."""
    from lab.cli import magics

    magics.exercise_solution("vecadd", ask=lambda prompt: "n")
    assert capsys.readouterr().out == "aborted\n"
    magics.exercise_solution("vecadd", ask=lambda prompt: "y")
    assert "def vecadd_kernel" in capsys.readouterr().out

    class StdinNotImplementedError(Exception):
        pass

    for no_box in (EOFError(), StdinNotImplementedError("raw_input was called, but this frontend does not support")):
        assert magics.exercise_solution("vecadd", ask=lambda prompt, no_box=no_box: (_ for _ in ()).throw(no_box)) is None
        out = capsys.readouterr().out
        assert out.startswith("not shown: no input box") and "%exercise_solution vecadd --yes" in out
        assert "def vecadd_kernel" not in out and out.count("\n") == 1
    with pytest.raises(KeyboardInterrupt):  # anything else is not "no input box"
        magics.exercise_solution("vecadd", ask=lambda prompt: (_ for _ in ()).throw(KeyboardInterrupt()))


def test_hint_number_shows_that_hint_every_time_and_the_cli_goes_on_after_it(tmp_path):
    """%exercise_hint NAME K (the generated cell): hint K at every run, remembered as shown; without
    K, and lab exercise hint NAME, the next one (the CLI contract); K out of range: one line, exit 2."""
    import exercises
    from lab.cli import magics

    hints = exercises.load("vecadd").hints
    ws = tmp_path / "ws"
    ws.mkdir()  # a workspace (only lab exercise start, or a %%exercise cell, makes one)
    env = {"LAB_EXERCISES_DIR": str(ws)}
    first = [magics.exercise_hint(f"vecadd 2 --dir {ws}") for _ in range(3)]
    assert [r.to_dict()["hint"] for r in first] == [2, 2, 2] and first[0].to_dict()["text"] == hints[1]
    assert all(f"Hint 2/{len(hints)} for vecadd" in r.text for r in first)
    assert "%exercise_hint vecadd 3" in first[0].text  # how to get the next one
    assert json.loads((ws / ".lab-state.json").read_text())["hints"]["vecadd"] == 2
    code_, out, _ = run_lab("exercise", "hint", "vecadd", env=env)
    assert code_ == 0 and out.startswith(f"Hint 3/{len(hints)} for vecadd")  # the next after the shown one
    code_, out, _ = run_lab("exercise", "hint", "vecadd", "1", env=env)
    assert code_ == 0 and out.startswith(f"Hint 1/{len(hints)} for vecadd")  # the CLI takes a number too
    assert json.loads((ws / ".lab-state.json").read_text())["hints"]["vecadd"] == 3  # not lowered
    code_, out, _ = run_lab("exercise", "hint", "vecadd", env=env)
    assert code_ == 0 and out.startswith("No more hints for vecadd")
    from tests.helpers import one_line_exit_2

    for bad in ("0", str(len(hints) + 1)):
        one_line_exit_2(*run_lab("exercise", "hint", "vecadd", bad, env=env)[::2], f"choose 1 to {len(hints)}")
    with pytest.raises(lab.LabError, match=f"hint 9 of vecadd: there is no such hint; choose 1 to {len(hints)}"):
        magics.exercise_hint(f"vecadd 9 --dir {ws}")


# --- lab exercise notebook ------------------------------------------------------------------------
def test_exercise_notebook_writes_one_valid_notebook_each_from_the_metadata(tmp_path):
    import exercises

    out = tmp_path / "nb"
    code, stdout, err = run_lab("exercise", "notebook", "vecadd", "dot", "--out", out)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["dot.ipynb", "vecadd.ipynb"]
    nb = nbformat.read(out / "vecadd.ipynb", as_version=4)
    nbformat.validate(nb)
    by_tag = {c.metadata["lab"]: c for c in nb.cells}
    ex = exercises.load("vecadd")
    assert ex.title in by_tag["title"].source and ex.statement in by_tag["statement"].source
    assert "%load_ext lab" in by_tag["setup"].source and 'pip", "install' in by_tag["setup"].source
    assert by_tag["exercise"].source == "%%exercise vecadd\n" + ex.scaffold.read_text().rstrip()
    assert by_tag["hint"].source == "%exercise_hint vecadd 1"
    assert by_tag["solution"].source == "%exercise_solution vecadd"
    hardware = by_tag["hardware"].source  # shown, or one line saying why not: never stops a run
    assert 'display(lab.counters("vecadd"))' in hardware and "except lab.LabError as e:" in hardware
    before = (out / "vecadd.ipynb").read_bytes()
    code, stdout, err = run_lab("exercise", "notebook", "vecadd", "--out", out)
    assert code == 0 and stdout == f"up to date {out / 'vecadd.ipynb'}\n"
    assert (out / "vecadd.ipynb").read_bytes() == before  # generated: the same every time


def test_exercise_notebook_keeps_an_edited_notebook_unless_force(tmp_path):
    """Regenerating: a notebook with an edited, added or removed cell is kept (one line each, exit 0),
    as is a file the lab did not write; one only run (outputs, execution counts, a front end's
    metadata) is regenerated; --force overwrites them all. An older lab's notebook (no hash) is
    regenerated when its cells are today's, else kept ("edited?")."""
    out = tmp_path / "nb"
    names = ["vecadd", "dot", "map_guard", "block_sum", "minmax", "histogram", "quantize"]
    assert run_lab("exercise", "notebook", *names, "--out", out)[0] == 0
    path = {n: out / f"{n}.ipynb" for n in names}
    nb = {n: nbformat.read(path[n], as_version=4) for n in names}
    nb["vecadd"].cells[4].source += "\n    # my change"  # edited the %%exercise cell
    nb["dot"].cells.append(nbformat.v4.new_code_cell("print('mine')"))  # added a cell
    for c in nb["map_guard"].cells:  # only run: outputs, counts, metadata of a front end
        if c.cell_type == "code":
            c.outputs, c.execution_count = [nbformat.v4.new_output("stream", text="ran\n")], 7
            c.metadata["execution"] = {"iopub.status.busy": "2026-11-25T10:00:00"}
    del nb["block_sum"].cells[6]  # removed a cell
    nb["histogram"].metadata["lab"].pop("cells_sha256")  # an older lab's notebook, unedited
    nb["quantize"].metadata["lab"].pop("cells_sha256")  # an older lab's, another statement (or edited)
    nb["quantize"].cells[1].source += "\nsaid otherwise"
    for n in ("vecadd", "dot", "map_guard", "block_sum", "histogram", "quantize"):
        nbformat.write(nb[n], path[n])
    path["minmax"].write_text("not a notebook\n")
    edited = {n: path[n].read_bytes() for n in names}
    code, stdout, err = run_lab("exercise", "notebook", *names, "--out", out)
    assert code == 0 and not err, err
    lines = stdout.splitlines()
    assert len(lines) == len(names)
    for n in ("vecadd", "dot", "block_sum"):
        assert f"kept {path[n]}: you edited it (--force overwrites it)" in lines
        assert path[n].read_bytes() == edited[n]
    assert f"kept {path['minmax']}: the lab did not generate it (--force overwrites it)" in lines
    assert path["minmax"].read_text() == "not a notebook\n"
    assert f"kept {path['quantize']}: maybe edited: it differs from the generated one (--force overwrites it)" in lines
    from lab.teach.notebooks import text

    for n in ("map_guard", "histogram"):
        assert f"wrote {path[n]}" in lines and path[n].read_text() == text(n)
    code, stdout, err = run_lab("exercise", "notebook", *names, "--out", out, "--force")
    assert code == 0 and all(path[n].read_text() == text(n) for n in names)
    assert stdout.count("wrote ") == 5 and stdout.count("up to date ") == 2 and "kept" not in stdout


def test_exercise_notebook_bad_input_writes_nothing(tmp_path):
    from tests.helpers import one_line_exit_2

    one_line_exit_2(*run_lab("exercise", "notebook", "vecadd", "nope", "--out", tmp_path / "a")[::2], "unknown exercise 'nope'")
    assert not (tmp_path / "a").exists()
    one_line_exit_2(*run_lab("exercise", "notebook", "--out", tmp_path / "x" / "y")[::2], "does not exist")
    (tmp_path / "f").write_text("")
    one_line_exit_2(*run_lab("exercise", "notebook", "--out", tmp_path / "f")[::2], "not a folder")


# --- in a real Jupyter kernel ---------------------------------------------------------------------
def execute(nb, tmp_path, env: dict, timeout: int = 120):
    """Execute ``nb`` in a fresh ipykernel of this Python (a kernelspec written under tmp_path, the
    worktree first on PYTHONPATH, ``env`` added) as ``jupyter execute`` does: an error in a cell stops
    the run (nbclient's CellExecutionError), except in a cell tagged ``raises-exception``; errors
    stay in the outputs."""
    nbclient = pytest.importorskip("nbclient")
    client = nbclient.NotebookClient(nb, km=kernel_manager(tmp_path, env), timeout=timeout, allow_errors=False,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    return nb


def kernel_manager(tmp_path, env: dict):
    """A KernelManager of a fresh ipykernel of this Python (a kernelspec written under tmp_path, the
    worktree first on PYTHONPATH, ``env`` added)."""
    pytest.importorskip("ipykernel")
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    spec_dir = tmp_path / "kernels" / "lab-test"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "lab test", "language": "python",
        "env": {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), "COLUMNS": "80",
                "MPLBACKEND": "module://matplotlib_inline.backend_inline", **env}}))
    return KernelManager(kernel_name="lab-test",
                         kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")]))


def test_solution_cell_asks_in_a_front_end_with_an_input_box(tmp_path):
    """In a real kernel whose front end answers input requests (JupyterLab, Colab, VS Code), the
    generated solution cell asks first: "n" shows nothing, "y" the solution; the same cell without an
    input box (allow_stdin off, as nbclient) says how to see it, without raising."""
    from lab.teach.notebooks import build

    (setup,) = [c.source for c in build("vecadd").cells if c.metadata["lab"] == "setup"]
    (cell,) = [c.source for c in build("vecadd").cells if c.metadata["lab"] == "solution"]
    km = kernel_manager(tmp_path, {"NUMBA_ENABLE_CUDASIM": "1", "LAB_EXERCISES_DIR": str(tmp_path / "ws")})
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)

        def run(source, answer=None):
            shown, asked = [], []

            def stdin_hook(msg):
                asked.append(msg["content"]["prompt"])
                kc.input(answer)

            def output_hook(msg):
                c = msg["content"]
                shown.append(c.get("text") or c.get("evalue") or "")
            reply = kc.execute_interactive(source, allow_stdin=answer is not None, stdin_hook=stdin_hook,
                                           output_hook=output_hook, timeout=60)
            return reply["content"]["status"], asked, "".join(shown)

        assert run(setup)[0] == "ok"
        status, asked, shown = run(cell, "n")
        assert status == "ok" and asked == ["Show the reference solution of vecadd? [y/N]: "] and shown == "aborted\n"
        status, asked, shown = run(cell, "y")
        assert status == "ok" and len(asked) == 1 and "def vecadd_kernel" in shown
        status, asked, shown = run(cell)
        assert status == "ok" and not asked and shown.startswith("not shown: no input box") and "def " not in shown
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def text_of(cell) -> str:
    """Everything a cell showed: stdout/stderr, errors, and every text/html/plain output."""
    parts = []
    for o in cell.outputs:
        if o.output_type == "stream":
            parts.append(o.text)
        elif o.output_type == "error":
            parts.append(f"{o.ename}: {o.evalue}\n" + "\n".join(o.traceback))
        else:
            parts += [str(o.data.get(k, "")) for k in ("text/html", "text/plain")]
    return "\n".join(parts)


def errors(cell) -> list:
    return [o for o in cell.outputs if o.output_type == "error"]


def code(source, tag, raises=False):
    """A code cell tagged ``tag`` (metadata "lab"); ``raises``: an error is expected there."""
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["lab"] = tag
    if raises:
        cell.metadata["tags"] = ["raises-exception"]
    return cell


def with_cell(nb, tag, source):
    """``nb`` with the source of its cell tagged ``tag`` replaced: what a learner types there."""
    (cell,) = [c for c in nb.cells if c.metadata.get("lab") == tag]
    cell.source = source
    return nb


@pytest.mark.slow  # a Jupyter kernel, the hidden tests and lab.counters in the simulator: 5-10 s
@pytest.mark.skipif(not SIMULATOR, reason="the simulator notebook (the GPU one is test_gpu_notebook_with_bench)")
def test_generated_notebook_runs_in_a_jupyter_kernel(tmp_path):
    """The generated vecadd notebook, untouched, runs to its end as under ``jupyter execute`` (no
    cell raises): the scaffold's %%exercise cell shows FAIL with the checker's message (a FAIL does
    not raise), the hint cell hint 1, the solution cell one line instead of blocking on a question;
    then cells of the API (an error expected only where tagged raises-exception)."""
    from lab.teach.notebooks import build
    import exercises

    nb = build("vecadd")
    solution = exercises.load("vecadd").solution.read_text()
    nb.cells += [
        code("%exercise_hint vecadd 1", "hint-again"),
        code(f"%%exercise vecadd --sim\n{solution}", "solution-cell"),
        code("%exercise_solution vecadd --yes", "solution-yes"),
        code('r = lab.run("vecadd", size="100", threads=32, contenders="numba,numpy")\nr', "run"),
        code('lab.grid("vecadd", size="100", threads=32)', "grid"),
        code('lab.run("vecadd", dtype="float16")', "bad", raises=True),
        code("%%exercise nope\npass", "bad-exercise", raises=True),
    ]
    ws = tmp_path / "ws"
    execute(nb, tmp_path, {"NUMBA_ENABLE_CUDASIM": "1", "LAB_EXERCISES_DIR": str(ws)})
    cells = {c.metadata["lab"]: c for c in nb.cells if c.cell_type == "code"}
    generated = [c.metadata["lab"] for c in build("vecadd").cells if c.cell_type == "code"]
    assert all(cells[t].execution_count and not errors(cells[t]) for t in generated), \
        {t: text_of(cells[t]) for t in generated}  # every generated cell ran, none raised

    scaffold = text_of(cells["exercise"])  # the untouched scaffold: the checker's messages, inline
    assert "FAIL" in scaffold and "round the number of blocks up (ceiling division)" in scaffold
    assert any("image/png" in o.get("data", {}) for o in cells["exercise"].outputs)  # the map of who wrote what
    assert "hidden tests on the CUDA simulator" in scaffold and "not yet" in scaffold
    hints = exercises.load("vecadd").hints
    hint = text_of(cells["hint"])
    assert f"Hint 1/{len(hints)} for vecadd" in hint and "%exercise_hint vecadd 2" in hint
    assert text_of(cells["hint-again"]) == text_of(cells["hint"])  # the same cell again: the same hint
    shown = text_of(cells["solution"])
    assert "not shown: no input box" in shown and "%exercise_solution vecadd --yes" in shown
    assert "def vecadd_kernel" not in shown
    assert "sect/req" in text_of(cells["hardware"])  # simulated counters of kernels/vecadd.py

    passed = text_of(cells["solution-cell"])
    assert not errors(cells["solution-cell"]) and "FAIL" not in passed and "passed" in passed, passed
    assert "def vecadd_kernel" in text_of(cells["solution-yes"])
    state = json.loads((ws / ".lab-state.json").read_text())
    assert state["status"]["vecadd"] == "passed" and state["hints"]["vecadd"] == 1
    assert (ws / "vecadd.py").read_text().rstrip() == solution.rstrip()  # the cell is the workspace's file
    code_, out, _ = run_lab("exercise", "list", "--json", env={"LAB_EXERCISES_DIR": str(ws)})
    assert {r["name"]: r["status"] for r in json.loads(out)}["vecadd"] == "passed"  # the CLI sees it

    run_html = [o.data["text/html"] for o in cells["run"].outputs if "text/html" in o.get("data", {})]
    assert run_html and "results" in run_html[-1] and "element_per_thread" in run_html[-1]
    assert any("image/png" in o.get("data", {}) for o in cells["grid"].outputs)
    bad = errors(cells["bad"])
    assert bad and "Invalid value for '--dtype'" in bad[0].evalue and len(bad[0].traceback) == 1
    assert errors(cells["bad-exercise"]) and "unknown exercise 'nope'" in text_of(cells["bad-exercise"])


@pytest.mark.slow  # a Jupyter kernel, the hidden tests and lab.counters in the simulator: 5-10 s
@pytest.mark.skipif(not SIMULATOR, reason="the simulator notebook (the GPU one is test_gpu_notebook_with_bench)")
def test_generated_notebook_with_the_solution_pasted_in_passes(tmp_path):
    """The generated map_guard notebook with the reference solution typed into its %%exercise cell
    (the cell's first line kept) runs to its end as under ``jupyter execute``: that cell shows every
    hidden test passed, and the workspace records it."""
    from lab.teach.notebooks import build
    import exercises

    solution = exercises.load("map_guard").solution.read_text()
    nb = with_cell(build("map_guard"), "exercise", f"%%exercise map_guard\n{solution}")
    ws = tmp_path / "ws"
    execute(nb, tmp_path, {"NUMBA_ENABLE_CUDASIM": "1", "LAB_EXERCISES_DIR": str(ws)})
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count and not errors(c) for c in cells), [text_of(c) for c in cells]
    (cell,) = [c for c in cells if c.metadata["lab"] == "exercise"]
    shown = text_of(cell)
    assert "PASS" in shown and "FAIL" not in shown and "passed" in shown and "not yet" not in shown, shown
    assert json.loads((ws / ".lab-state.json").read_text())["status"]["map_guard"] == "passed"


@pytest.mark.gpu
@pytest.mark.skipif(SIMULATOR, reason="needs a CUDA GPU (compute capability 7.0 or more)")
def test_gpu_notebook_with_bench(tmp_path):
    """On a GPU (any with compute capability 7.0+): the generated vecadd notebook with the solution
    typed into its cell as ``%%exercise vecadd --gpu --bench`` runs to its end as under ``jupyter
    execute`` (no cell raises): the cell passes on the GPU and shows the bench table (where ``lab
    exercise check`` has --bench); the hint, the solution's one line, what the hardware did (Nsight
    Compute's counters, or one line saying why not); then the scaffold fails on the GPU, ``lab.run``
    on the GPU and ``lab.grid`` (recorded in a child simulator process) in the same kernel."""
    from lab.cli.magics import bench_supported
    from lab.teach.notebooks import build
    import exercises

    ex = exercises.load("vecadd")
    nb = with_cell(build("vecadd"), "exercise", f"%%exercise vecadd --gpu --bench\n{ex.solution.read_text()}")
    nb.cells += [code(f"%%exercise vecadd --gpu\n{ex.scaffold.read_text()}", "scaffold"),
                 code('lab.run("vecadd", size="1000000", contenders="numba,numpy")', "run"),
                 code('lab.grid("vecadd", size="100", threads=32)', "grid")]
    execute(nb, tmp_path, {"LAB_EXERCISES_DIR": str(tmp_path / "ws")}, timeout=600)
    cells = {c.metadata["lab"]: c for c in nb.cells if c.cell_type == "code"}
    assert all(c.execution_count and not errors(c) for c in cells.values()), {t: text_of(c) for t, c in cells.items()}
    shown = text_of(cells["exercise"])
    assert "hidden tests on the GPU" in shown and "not yet" not in shown and "FAIL" not in shown, shown
    assert "Hint 1/" in text_of(cells["hint"]) and "not shown: no input box" in text_of(cells["solution"])
    hardware = text_of(cells["hardware"])  # Nsight Compute's counters, or one line saying why not (no ncu ...)
    assert "hardware counters" in hardware or "not measured:" in hardware, hardware
    assert "hidden tests on the GPU" in text_of(cells["scaffold"]) and "FAIL" in text_of(cells["scaffold"])
    assert "GB/s" in text_of(cells["run"]) and "results" in text_of(cells["run"])
    assert any("image/png" in o.get("data", {}) for o in cells["grid"].outputs)
    if not bench_supported():
        assert "--bench: not available" in shown
        pytest.skip("lab exercise check has no --bench in this lab: the table cannot show (the rest ran)")
    assert "bench" in shown.lower(), shown
