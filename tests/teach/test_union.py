"""One verdict for both backends (issue 28, item 1): on a GPU the hidden tests also run in the
simulator, and a test fails when either backend fails it (lab.teach.union.merge); the score is hidden
tests passed / hidden tests whatever happened (lab.teach.union.score). The end-to-end tests run the
GPU's leg as a stand-in here: the checker's own GPU code path (guard bands, no tracer) on the
simulator's arrays, so right values with a mapping bug pass there, as they do on a GPU."""
import json
import sys

import pytest

import exercises
from lab.teach import union
from tests.conftest import SIMULATOR
from tests.helpers import mutated_solution

OK = lambda name, msg="ok (max abs error 1e-07)": {"name": name, "passed": True, "message": msg}  # noqa: E731
BAD = lambda name, msg: {"name": name, "passed": False, "message": msg}  # noqa: E731


# --- merge: pure ---------------------------------------------------------------------------------------------
def test_a_test_passes_only_when_both_backends_pass_it():
    gpu = [OK("compiles for a GPU", "ok"), OK("n=1"), OK("n=33"), BAD("n=1000", "c[3] = 0, expected 1.5"),
           BAD("n=5", "timed out after 10 s while running this test")]
    sim = [BAD("n=1", "race: thread 3 of block 0 wrote s[3]"), OK("n=33"), OK("n=1000"),
           BAD("n=5", "timed out after 10 s while running this test")]
    got = {t["name"]: t for t in union.merge(gpu, sim)}
    assert [t["name"] for t in union.merge(gpu, sim)] == ["compiles for a GPU", "n=1", "n=33", "n=1000", "n=5"]
    assert got["compiles for a GPU"] == gpu[0] and got["n=33"] == gpu[2]  # passing entries keep the GPU's message
    one = got["n=1"]  # the trace saw what the GPU's run did not show
    assert not one["passed"] and one["seen_by"] == ["simulator"]
    assert one["message"].startswith("seen in the simulator's trace: race: thread 3 of block 0")
    assert one["message"].endswith("(on the GPU the values were right; the trace sees what the values do not show)")
    k = got["n=1000"]  # the GPU saw wrong values where the simulator's were right
    assert not k["passed"] and k["seen_by"] == ["gpu"]
    assert k["message"].startswith("seen on the GPU: c[3] = 0, expected 1.5")
    assert "(the simulator's values were right: the two backends disagree on values" in k["message"]
    both = got["n=5"]  # the same message from both: said once
    assert not both["passed"] and both["seen_by"] == ["simulator", "gpu"]
    assert both["message"] == "seen on the GPU and in the simulator's trace: timed out after 10 s while running this test"


def test_values_that_only_one_backend_got_wrong_are_a_disagreement_on_values():
    sim_wrong = union.merge([OK("n=8")], [BAD("n=8", "s[0] = 3, expected 4 (tolerance 0); 1 of 1 element wrong")])[0]
    assert "(the GPU's values were right: the two backends disagree on values" in sim_wrong["message"]
    gpu_hung = union.merge([BAD("n=8", "timed out after 3 s while running this test")], [OK("n=8")])[0]
    assert gpu_hung["message"] == ("seen on the GPU: timed out after 3 s while running this test "
                                   "(the simulator passed this test)")
    assert union.values_wrong("c elements 3..9 (7 of 10) never written")
    assert not union.values_wrong("race: thread 1 of block 0 wrote s[1] at line 9, which thread 0 ...")
    assert not union.values_wrong("out of bounds: thread 31 of block 0 read a[31], outside its shape (31,)")


def test_the_judges_kind_decides_not_the_message():
    """The judge marks each failure "values" or "diagnosis" (lab.teach.messages.Failed): the union goes by
    that, not by the wording; an entry without a kind (a timeout, an older record) by its message."""
    said_values = dict(BAD("n=8", "race: a message that reads like a finding"), kind="values")
    assert "the two backends disagree on values" in union.merge([OK("n=8")], [said_values])[0]["message"]
    said_finding = dict(BAD("n=8", "c[0] = 1, expected 2"), kind="diagnosis")
    assert "the trace sees what the values do not show" in union.merge([OK("n=8")], [said_finding])[0]["message"]


def test_both_failing_differently_says_both_and_only_one_leg_keeps_its_entry():
    gpu = [BAD("n=1", "c[0] = nan, expected 2"), BAD("compiles for a GPU", "does not compile for a GPU: np.dot")]
    sim = [BAD("n=1", "c elements 0 (1 of 1) never written"), OK("n=7"), BAD("load", "importing x.py raised")]
    got = {t["name"]: t for t in union.merge(gpu, sim)}
    assert got["n=1"]["message"] == ("seen in the simulator's trace: c elements 0 (1 of 1) never written; "
                                     "seen on the GPU: c[0] = nan, expected 2")
    assert got["compiles for a GPU"]["message"] == "seen on the GPU: does not compile for a GPU: np.dot"
    assert got["n=7"] == sim[1]  # only the simulator ran it (the GPU's child stopped early)
    assert got["load"]["message"] == "seen in the simulator's trace: importing x.py raised"
    assert not got["load"]["passed"]


def test_the_simulators_map_rides_along_and_the_inputs_are_not_changed():
    m = {"output": "c", "shape": [4]}
    gpu, sim = [OK("n=4")], [dict(BAD("n=4", "c[0] was written by 2 threads"), map=m)]
    before = json.dumps([gpu, sim])
    (t,) = union.merge(gpu, sim)
    assert t["map"] == m and not t["passed"]
    assert json.dumps([gpu, sim]) == before


def test_sanitizer_entries_say_compute_sanitizer_saw_them():
    ok = OK("GPU racecheck", "no shared-memory race found (compute-sanitizer racecheck)")
    assert union.sanitizer_entry(ok) == ok
    bad = union.sanitizer_entry(BAD("GPU memcheck", "out of bounds (compute-sanitizer memcheck on the GPU): ..."))
    assert bad["message"].startswith("seen by compute-sanitizer on the GPU: out of bounds")
    assert bad["seen_by"] == ["compute-sanitizer"]


# --- score: pure ---------------------------------------------------------------------------------------------
HIDDEN = ["n=1", "n=33", "n=1000"]


@pytest.mark.parametrize("tests,want", [
    ([OK("compiles for a GPU", "ok"), OK("n=1"), OK("n=33"), OK("n=1000")], 3),  # the compile test is no hidden test
    ([OK("compiles for a GPU", "ok"), OK("n=1"), BAD("n=33", "x"), OK("n=1000")], 2),
    ([BAD("load", "SyntaxError")], 0),  # does not load: 0 of N, not 0 of 1
    ([BAD("compiles for a GPU", "np.dot"), OK("n=1"), OK("n=33"), OK("n=1000")], 0),  # does not compile: 0
    ([OK("compiles for a GPU", "ok"), BAD("n=1", "timed out"), BAD("n=33", "not run"), BAD("n=1000", "not run")], 0),
    ([OK("n=1"), OK("n=33"), OK("n=1000"), BAD("GPU racecheck", "race")], 3),  # a gate: fails the verdict only
    ([OK("n=1"), BAD("n=1", "again"), OK("n=33")], 1),  # a name that failed anywhere is not passed
    ([OK("n=1"), OK("extra"), OK("n=33")], 2),  # a name that is no hidden test adds nothing
])
def test_score_is_hidden_tests_passed_of_hidden_tests(tests, want):
    assert union.score(tests, HIDDEN) == (want, 3)


def test_a_test_the_simulator_never_ran_fails_on_a_gpu():
    """Fail closed: a hidden test the GPU ran and the simulator's leg did not (its child stopped, its offline
    compile gate failed or timed out) cannot pass, whatever the GPU said; the GPU's own failures keep
    their words; with no hidden test on the GPU (load or compile failed) nothing is added."""
    gpu = [OK("compiles for a GPU", "ok"), OK("n=1"), OK("n=33"), BAD("n=1000", "c[3] = 0, expected 1.5")]
    for sim in ([], [OK("n=1")]):
        got = {t["name"]: t for t in union.merge(gpu, union.not_run_in_simulator(gpu, sim, "its child stopped"))}
        assert got["compiles for a GPU"]["passed"] and got["n=1000"]["message"].startswith("seen on the GPU: c[3]")
        assert not got["n=33"]["passed"] and got["n=33"]["seen_by"] == ["simulator"]
        assert got["n=33"]["message"].startswith("not run in the simulator: its child stopped")
        assert got["n=1"]["passed"] == bool(sim)
    gate = [BAD("compiles for a GPU", "does not compile for a GPU: ...")]
    assert union.not_run_in_simulator(gate, [], "x") == []


def test_hidden_of_skips_the_gates():
    tests = [OK("load"), OK("compiles for a GPU"), OK("n=1"), BAD("n=2", "x"), OK("GPU racecheck"), OK("n=1")]
    assert union.hidden_of(tests) == ["n=1", "n=2"]


# --- end to end, the GPU's leg a stand-in ---------------------------------------------------------------------
STAND_IN = '''
import json, os, sys
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
args = sys.argv[sys.argv.index("-m") + 2:]
if sys.argv[sys.argv.index("-m") + 1] == "lab.teach.contained.sandbox":
    args = args[1:]  # the limits (the stand-in runs uncontained)
name, path, backend, seed, progress = args[:5]
skip = json.loads(args[5]) if len(args) > 5 and args[5].startswith("[") else []
from lab.core.simulator import select
select("sim")
import numpy as np
from lab.teach.contained import executor
folder = os.path.dirname(os.path.abspath(progress))
with open(os.path.join(folder, executor.REQUEST)) as f:
    request = json.load(f)
request["compile"] = None  # the stand-in compiles nothing
with np.load(os.path.join(folder, executor.INPUTS), allow_pickle=False) as inputs, open(progress, "a", buffering=1) as out:
    out.write(json.dumps({"ready": True}) + "\\n")
    executor.execute(request, inputs, path, folder, lambda o: out.write(json.dumps(o) + "\\n"), skip=skip)
os._exit(0)
'''


@pytest.fixture
def gpu_stand_in(tmp_path, monkeypatch):
    """``choose`` finds a "GPU", and every child for the backend "gpu" runs the stand-in."""
    from lab.core import simulator
    from lab.teach import workspace as W

    script = tmp_path / "gpu_stand_in.py"
    script.write_text(STAND_IN)
    monkeypatch.setattr(simulator, "choose", lambda prefer="auto": "simulator" if prefer == "sim" else "gpu")
    real = W.run_child
    backends = []

    def run_child(name, path, backend, *args, **kw):
        backends.append(backend)
        if backend == "gpu":  # uncontained: the stand-in's script lies outside what a sandbox may read
            kw["wrap"], kw["sandbox"] = [sys.executable, str(script)], None
        return real(name, path, backend, *args, **kw)

    monkeypatch.setattr(W, "run_child", run_child)
    monkeypatch.setenv("LAB_GPU_COMPILE", "0")
    return backends


EVERY_BLOCK = [("    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x\n    if i < c.shape[0]:\n        c[i]",
                "    for i in range(cuda.threadIdx.x, c.shape[0], cuda.blockDim.x):\n        c[i]")]


@pytest.mark.skipif(not SIMULATOR, reason="the GPU's leg is a stand-in on the simulator's arrays")
def test_check_on_a_gpu_fails_what_only_the_simulators_trace_sees(tmp_path, gpu_stand_in):
    """Every block redoes the whole problem: right values (the GPU passes it), each element written
    once per block (the trace's one-writer count): the union fails it, saying who saw it."""
    from lab.teach import workspace as W
    from tests.cli.test_schemas import validate

    path = mutated_solution(tmp_path, "vecadd", EVERY_BLOCK)
    seen = []
    doc = W.check("vecadd", path, tmp_path / "ws", "auto", 20, 7, progress=lambda d, t, label: seen.append(label))
    validate(doc, "exercise-check.json")
    assert sorted(gpu_stand_in) == ["gpu", "simulator"]  # both legs ran
    assert doc["backend"] == "gpu" and doc["verdict_from"] == ["gpu", "simulator"] and not doc["passed"]
    failed = [t for t in doc["tests"] if not t["passed"]]
    assert failed and all(t["seen_by"] == ["simulator"] for t in failed), failed
    assert any("one per block" in t["message"] and t["message"].startswith("seen in the simulator's trace: ")
               and "on the GPU the values were right" in t["message"] for t in failed)
    assert doc["tests_total"] == len(exercises.load("vecadd").hidden().cases(__import__("numpy").random.default_rng(7)))
    assert doc["tests_passed"] < doc["tests_total"]
    # the legs' progress, joined (the GPU leg may run its first tests alone while the simulator's leg waits
    # for its offline compile, so which test number first shows both is a matter of timing)
    assert any(label.startswith("GPU: running test ") for label in seen), seen
    assert any("simulator: running test" in label for label in seen), seen


@pytest.mark.slow  # two contained children (GPU stand-in, simulator) and the hidden-test listing: ~6 s
@pytest.mark.skipif(not SIMULATOR, reason="the GPU's leg is a stand-in on the simulator's arrays")
def test_grade_on_a_gpu_takes_the_union_in_the_sandbox(tmp_path, gpu_stand_in):
    from lab.teach import grade as G
    from lab.teach.contained.sandbox import Limits

    path = mutated_solution(tmp_path, "vecadd", EVERY_BLOCK)
    row = G.grade_one("bob", "vecadd", path, "gpu", 7, 20, Limits(), False)
    assert gpu_stand_in.count("simulator") == 1 and row["status"] == "failed", row
    assert row["reason"].split(": ", 1)[1].startswith("seen in the simulator's trace: ")
    assert "one per block" in row["reason"] and row["tests_total"] >= 6 and row["tests_passed"] < row["tests_total"]


@pytest.mark.skipif(not SIMULATOR, reason="the GPU's leg is a stand-in on the simulator's arrays")
def test_a_check_whose_simulator_leg_ran_nothing_does_not_pass(tmp_path, gpu_stand_in, monkeypatch):
    """The simulator's leg returns no test (as when its offline compile gate times out on a loaded machine,
    which on an H200 passed three wrong kernels of a fresh set on the GPU's word alone): the check fails,
    every hidden test saying the simulator did not run it, and a correct file too (it was not verified)."""
    from lab.teach import workspace as W

    stand_in = W.run_child

    def no_simulator(name, path, backend, *args, **kw):
        if backend == "simulator":
            if kw.get("extra") is not None:
                kw["extra"]["compile_gate"] = BAD("compiles for a GPU", "the compile took longer than 90 s")
            return []
        return stand_in(name, path, backend, *args, **kw)

    monkeypatch.setattr(W, "run_child", no_simulator)
    path = mutated_solution(tmp_path, "vecadd", [])
    doc = W.check("vecadd", path, tmp_path / "ws", "auto", 20, 7)
    assert doc["verdict_from"] == ["gpu", "simulator"] and not doc["passed"] and doc["tests_passed"] == 0
    hidden = [t for t in doc["tests"] if t["name"] not in ("compiles for a GPU", "load")]
    assert hidden and all(t["message"].startswith("not run in the simulator: the simulator's offline compile gate "
                                                  "failed (the compile took longer than 90 s)") for t in hidden)
