"""Performance grading (``lab exercise check --bench``) and class grading (``lab exercise grade``):
a class of a right, a wrong, a syntax-error, a hanging and a forking/file-writing submission gets a
complete gradebook with the right reasons; in the simulator --bench compares sectors per warp
request; on a GPU (``-m gpu``) --bench times the solution against the reference."""
import csv
import json
import sys

import pytest

import exercises
from tests.conftest import SIMULATOR, run_lab
from tests.helpers import mutated_solution, one_line_exit_2

VECADD_RIGHT = exercises.load("vecadd").solution.read_text()
KERNEL_AND_LAUNCH = '''
@cuda.jit
def vecadd_kernel(a, b, c):
    i = cuda.grid(1)
    if i < c.shape[0]:
        c[i] = a[i] + b[i]


def launch(n, threads):
    return (n + threads - 1) // threads, threads
'''
SUBMISSIONS = {
    "alice": VECADD_RIGHT,
    "bob": VECADD_RIGHT.replace("(n + threads - 1) // threads", "n // threads"),  # rounds the grid down
    "carol": "from numba import cuda\n\ndef vecadd_kernel(a, b, c)\n    pass\n",  # SyntaxError
    "dave": "from numba import cuda\n\n@cuda.jit\ndef vecadd_kernel(a, b, c):\n    while True:\n        pass\n\n\n"
            "def launch(n, threads):\n    return (n + threads - 1) // threads, threads\n",  # hangs
    "eve": "import os\nfrom numba import cuda\ntry:\n    os.fork()\nexcept Exception:\n    pass\n" + KERNEL_AND_LAUNCH,
    "frank": "from numba import cuda\nopen(os.path.join(os.path.dirname(__file__), 'mine.txt'), 'w').write('ok')\n"
             "try:\n    open(TARGET, 'w').write('gotcha')\nexcept OSError:\n    pass\n" + KERNEL_AND_LAUNCH,
    "grace": "import numpy as np\nfrom numba import cuda\nbig = np.ones(1 << 30)\n" + KERNEL_AND_LAUNCH,  # 8 GiB
    "heidi": "from numba import cuda\nopen('big.bin', 'wb').write(bytes(80 << 20))\n" + KERNEL_AND_LAUNCH,  # 80 MiB
    "judy": "import resource\nfrom numba import cuda\ntry:\n    resource.setrlimit(resource.RLIMIT_AS, (-1, -1))\n"
            "except Exception:\n    pass\n" + KERNEL_AND_LAUNCH,  # lifts its memory limit
}


def _class(tmp_path):
    root = tmp_path / "class"
    target = tmp_path / "outside.txt"
    for student, src in SUBMISSIONS.items():
        (root / student).mkdir(parents=True)
        if student == "frank":
            src = f"import os\nTARGET = {str(target)!r}\n" + src
        (root / student / "vecadd.py").write_text(src)
    (root / "alice" / "map_guard.py").write_text(exercises.load("map_guard").solution.read_text())
    (root / "alice" / "README.txt").write_text("not a submission")
    return root, target


@pytest.mark.skipif(not SIMULATOR, reason="the class is graded in the simulator")
def test_a_class_with_broken_hanging_and_hostile_submissions(tmp_path):
    from tests.cli.test_schemas import validate

    root, target = _class(tmp_path)
    out_csv = tmp_path / "grades.csv"
    # the per-test timeout is wall-clock: generous enough for a right solution on a loaded 2-core CI machine
    code, out, err = run_lab("exercise", "grade", root, "--sim", "--json", "--timeout", "6", "--jobs", "3",
                             "--csv", out_csv)
    assert code == 0, err
    doc = validate(json.loads(out), "exercise-grade.json")
    rows = {(r["student"], r["exercise"]): r for r in doc["rows"]}
    assert doc["exercises"] == ["map_guard", "vecadd"] and len(rows) == 18  # 9 students x 2, the missing ones too
    assert rows[("alice", "vecadd")]["status"] == "passed" and rows[("alice", "map_guard")]["status"] == "passed", \
        (rows[("alice", "vecadd")], rows[("alice", "map_guard")])
    assert rows[("alice", "vecadd")]["tests_passed"] == rows[("alice", "vecadd")]["tests_total"] >= 3
    bob = rows[("bob", "vecadd")]
    assert bob["status"] == "failed" and "round the number of blocks up" in bob["reason"]
    assert 0 <= bob["tests_passed"] < bob["tests_total"] and bob["failures"]
    assert "SyntaxError" in rows[("carol", "vecadd")]["reason"]
    assert "timed out after 6 s" in rows[("dave", "vecadd")]["reason"]
    eve = rows[("eve", "vecadd")]
    assert eve["status"] == "failed" and "start a process (os.fork)" in eve["reason"]
    frank = rows[("frank", "vecadd")]
    assert frank["status"] == "failed" and "outside its private working folder" in frank["reason"]
    assert str(target) in frank["reason"] and not target.exists()
    assert not (root / "frank" / "mine.txt").exists()  # it wrote into its private copy's folder only
    assert "ran out of memory (the 4096 MiB address-space limit)" in rows[("grace", "vecadd")]["reason"]
    assert "wrote a file larger than 64 MiB" in rows[("heidi", "vecadd")]["reason"]
    judy = rows[("judy", "vecadd")]
    assert judy["status"] == "failed" and "change its resource limits (resource.setrlimit)" in judy["reason"], judy
    assert rows[("bob", "map_guard")]["status"] == "missing"
    assert doc["summary"] == {"students": 9, "exercises": 2, "passed": 2, "failed": 8, "missing": 8}
    assert not any("README.txt" in n for n in doc["notes"])  # only .py files are considered
    with open(out_csv, newline="") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 18 and {r["status"] for r in table} == {"passed", "failed", "missing"}
    assert [r["student"] for r in table][:2] == ["alice", "alice"]


@pytest.mark.slow  # 3 s of CPU after ~1.5 s of start-up CPU: > 5 s of wall on a loaded CI machine
@pytest.mark.skipif(not SIMULATOR, reason="the simulator's CPU time")
def test_the_cpu_limit_stops_a_busy_loop(tmp_path):
    (tmp_path / "c" / "ivan").mkdir(parents=True)
    (tmp_path / "c" / "ivan" / "vecadd.py").write_text("x = 0\nwhile True:\n    x += 1\n")
    code, out, err = run_lab("exercise", "grade", tmp_path / "c", "--sim", "--json", "--cpu-limit", "3", "--timeout", "60")
    assert code == 0, err
    row = json.loads(out)["rows"][0]
    assert row["status"] == "failed" and row["reason"] == "used more than 3 s of CPU time (the CPU limit)", row


@pytest.mark.skipif(not SIMULATOR, reason="simulator: the table's layout")
def test_gradebook_table_fits_80_columns(tmp_path):
    from tests.helpers import fits

    root = tmp_path / "c"
    (root / "a_student_with_a_long_name").mkdir(parents=True)
    (root / "a_student_with_a_long_name" / "vecadd.py").write_text(
        VECADD_RIGHT.replace("(n + threads - 1) // threads", "n // threads"))
    code, out, err = run_lab("exercise", "grade", root, "--sim", "--jobs", "1")
    assert code == 0, err
    fits(out)
    assert "failed" in out and "1 failed" in out


@pytest.mark.parametrize("args,needle", [
    (["--exercises", "vecad"], "unknown exercise 'vecad'"),
    (["--csv", "/no/such/folder/grades.csv"], "folder /no/such/folder does not exist"),
])
def test_bad_input_is_one_line_before_any_work(tmp_path, args, needle):
    (tmp_path / "s" / "alice").mkdir(parents=True)
    (tmp_path / "s" / "alice" / "vecadd.py").write_text(VECADD_RIGHT)
    code, _, err = run_lab("exercise", "grade", tmp_path / "s", "--sim", *args)
    one_line_exit_2(code, err, needle)


def test_an_empty_or_missing_folder_is_one_line(tmp_path):
    code, _, err = run_lab("exercise", "grade", tmp_path / "nope", "--sim")
    one_line_exit_2(code, err, "no such submissions folder")
    (tmp_path / "empty").mkdir()
    code, _, err = run_lab("exercise", "grade", tmp_path / "empty", "--sim")
    one_line_exit_2(code, err, "no student folders")


# --- --bench ---------------------------------------------------------------------------------------------
UNCOALESCED = [("x, y = cuda.grid(2)", "y, x = cuda.grid(2)"),  # x (consecutive lanes) walks down a column
               ("grid = ((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])",
                "grid = ((rows + block[0] - 1) // block[0], (cols + block[1] - 1) // block[1])")]


@pytest.mark.skipif(not SIMULATOR, reason="the simulator's sector counts")
def test_bench_in_the_simulator_compares_sectors_per_request(tmp_path):
    from tests.cli.test_schemas import validate

    sol = exercises.load("matrix_add_2d").solution
    code, out, err = run_lab("exercise", "check", "matrix_add_2d", "--file", sol, "--sim", "--bench", "--json")
    assert code == 0, err
    b = validate(json.loads(out), "exercise-check.json")["bench"]
    assert b["passed"] and b["student_ms"] is None and b["sectors"]["student"] == b["sectors"]["reference"] > 0
    # right values, strided loads: every test passes, the bench does not
    path = mutated_solution(tmp_path, "matrix_add_2d", UNCOALESCED)
    code, out, err = run_lab("exercise", "check", "matrix_add_2d", "--file", path, "--sim", "--bench", "--json")
    doc = validate(json.loads(out), "exercise-check.json")
    assert doc["passed"] and code == 1, err
    b = doc["bench"]
    assert not b["passed"] and b["sectors"]["student"] > 1.25 * b["sectors"]["reference"]
    assert f"your loads touch {b['sectors']['student']:.3g} sectors per warp request" in b["message"]

    from lab.cli.views.exercise import print_check
    from tests.helpers import fits

    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()) as text:
        print_check(doc)
    fits(text.getvalue())
    assert "Bench (coalescing in the simulator): FAIL your loads touch" in " ".join(text.getvalue().split())


@pytest.mark.skipif(not SIMULATOR, reason="simulator")
def test_bench_waits_for_every_test(tmp_path):
    path = mutated_solution(tmp_path, "vecadd", [("(n + threads - 1) // threads", "n // threads")])
    code, out, _ = run_lab("exercise", "check", "vecadd", "--file", path, "--sim", "--bench", "--json")
    assert code == 1 and json.loads(out)["bench"] is None


@pytest.mark.gpu
@pytest.mark.skipif(SIMULATOR, reason="times kernels on a GPU")
def test_bench_on_a_gpu_times_the_solution_against_the_reference():
    sol = exercises.load("vecadd").solution
    code, out, err = run_lab("exercise", "check", "vecadd", "--file", sol, "--gpu", "--bench", "--json")
    b = json.loads(out)["bench"]
    assert b["student_ms"] > 0 and b["reference_ms"] > 0 and b["rung_ms"] > 0, b
    assert b["passed"] and b["pct_of_reference"] >= 70, b  # the same kernel: ~100%
    assert 0 < b["pct_of_peak"] <= 150 and b["peak_unit"] == "GB/s"
    assert code == 0, err + out


@pytest.mark.gpu
@pytest.mark.skipif(SIMULATOR, reason="times kernels on a GPU")
def test_grade_with_bench_on_a_gpu(tmp_path):
    (tmp_path / "c" / "alice").mkdir(parents=True)
    (tmp_path / "c" / "alice" / "vecadd.py").write_text(VECADD_RIGHT)
    code, out, err = run_lab("exercise", "grade", tmp_path / "c", "--gpu", "--bench", "--json", "--jobs", "1")
    assert code == 0, err
    row = json.loads(out)["rows"][0]
    assert row["status"] == "passed" and row["bench"]["student_ms"] > 0, row


def test_meta_keys_have_defaults():
    for n in exercises.names():
        ex = exercises.load(n)
        assert 0 < ex.pass_pct <= 100 and ex.peak in ("copy", "fp32") and ex.sector_factor >= 1
        if ex.rung:
            import kernels

            k, v = ex.rung.split(":")
            assert v in kernels.load(k).variants


FAKE_CHILD = '''
import json, os, sys, time
args = sys.argv[1:]
i = args.index("-m")
from lab.teach import executor
executor.main(args[i + 2:])  # the real launches: the parent judges their results
progress = args[i + 6]
go = os.path.join(os.path.dirname(progress), "bench-go")
while not os.path.exists(go):
    time.sleep(0.02)
with open(progress, "a", buffering=1) as out:
    w = lambda obj: out.write(json.dumps(obj) + "\\n")
    w({"start": "bench"}); time.sleep(4.0)  # a bench longer than the per-test limit, as on a GPU
    w({"bench": {"passed": True, "student_ms": 1.0}})
'''


def test_a_bench_longer_than_the_test_limit_does_not_fail_the_submission(tmp_path):
    """H100, 2026-11-23: ``grade --gpu --bench`` failed a right kernel as "timed out ... loading your file":
    the per-test clock still ran from the bench's start when its result came, so the child, which then only
    had to exit, was killed past the 10 s limit. A stand-in child (through ``wrap``) replays that protocol."""
    from lab.teach.workspace import _run_child

    fake = tmp_path / "fake_child.py"
    fake.write_text(FAKE_CHILD)
    sol = exercises.load("vecadd").solution
    extra: dict = {}
    tests = _run_child("vecadd", sol, "simulator", 0, 3.0, wrap=[sys.executable, str(fake)], bench=True, extra=extra,
                       env={"LAB_GPU_COMPILE": "0"})
    assert tests and all(t["passed"] for t in tests), tests
    assert extra["bench"] == {"passed": True, "student_ms": 1.0}
