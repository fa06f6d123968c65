"""``lab exercise check`` and ``list`` as a student meets them (issues 28 and 29): bad input is one
line and exit 2; the status is what the last check of the current file found (a content hash, an
HMAC outside the workspace), never a claim in the state file; a terminal sees which test runs; a
hanging test is stopped within its timeout and named; tests that timed out are not run again under
compute-sanitizer."""
import json
import time

import pytest

import exercises
from lab.teach import workspace as W
from lab.teach.records import KEY_FILE, STATE
from lab.teach.child import KILL_WAIT_S, MAX_TIMEOUTS, _kill
from tests.conftest import SIMULATOR, run_lab
from tests.helpers import mutated_solution, one_line_exit_2

SOLUTION = exercises.load("map_guard").solution.read_text()
GUARD_OFF_BY_ONE = [("if i < out.shape[0]:", "if i < out.shape[0] - 1:")]


@pytest.mark.parametrize("make,needle", [
    (lambda d: (d / "notes.txt").write_text("my notes") and d / "notes.txt", "not a Python file (.py)"),
    (lambda d: d, "a folder, not a file"),
    (lambda d: d / "missing.py", "no such file"),
])
def test_a_bad_file_is_one_line_and_exit_2(tmp_path, make, needle):
    code, _, err = run_lab("exercise", "check", "map_guard", "--file", make(tmp_path), "--sim")
    one_line_exit_2(code, err, needle)


@pytest.mark.parametrize("value", ["abc", "-1", "0", "nan", "inf"])
def test_a_bad_timeout_in_the_environment_is_one_line_and_exit_2(tmp_path, value):
    (tmp_path / "map_guard.py").write_text(SOLUTION)
    code, _, err = run_lab("exercise", "check", "map_guard", "--file", tmp_path / "map_guard.py", "--sim",
                           env={"LAB_EXERCISE_TIMEOUT": value})
    one_line_exit_2(code, err, f"LAB_EXERCISE_TIMEOUT={value!r}: ")  # the settings' line (lab.core.settings)


def test_an_unwritable_workspace_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "a_file").write_text("")
    for args in (["start", "vecadd"], ["hint", "vecadd"]):  # the setting is checked before any command runs
        code, _, err = run_lab("exercise", *args, env={"LAB_EXERCISES_DIR": str(tmp_path / "a_file" / "ws")})
        one_line_exit_2(code, err, "LAB_EXERCISES_DIR=")


# --- the status records checks -----------------------------------------------------------------------------
def _status(ws):
    return {r["name"]: r for r in W.listing(ws)}["map_guard"]


def _show(ws):
    from lab.cli.views.exercise import status_text

    return status_text(_status(ws))


@pytest.mark.skipif(not SIMULATOR, reason="simulator")
def test_list_shows_the_latest_check_of_the_current_file(tmp_path):
    ws = tmp_path / "ws"
    path, _ = W.start("map_guard", ws)
    assert _show(ws) == "in progress" and _status(ws)["last_check"] is None
    path.write_text(SOLUTION)
    first = W.check("map_guard", None, ws, "sim", 20, 1)
    assert first["passed"], ([t for t in first["tests"] if not t["passed"]], first.get("notes"))  # (a CI run once failed it)
    assert _show(ws) == "passed" and _status(ws)["last_check"]["verified"]
    path.write_text(mutated_solution(tmp_path, "map_guard", GUARD_OFF_BY_ONE).read_text())
    assert _show(ws) == "changed since check"  # edited after the passing check
    assert not W.check("map_guard", None, ws, "sim", 20, 1)["passed"]
    assert _show(ws) == "failed last check" and _status(ws)["status"] == W.IN_PROGRESS  # not "passed" any more
    path.write_text(SOLUTION)  # back to the content that passed: still not passed, the last check failed
    assert _show(ws) == "changed since check"


def test_a_hand_edited_state_file_cannot_say_passed(tmp_path):
    import hashlib

    ws = tmp_path / "ws"
    path, _ = W.start("map_guard", ws)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    state = json.loads((ws / STATE).read_text())
    state["status"]["map_guard"] = "passed"  # the old claim
    state["checks"] = {"map_guard": {"passed": True, "sha256": digest, "backend": "simulator",
                                     "at": "2026-01-01T00:00:00+00:00", "mac": "0" * 64}}
    (ws / STATE).write_text(json.dumps(state))
    row = _status(ws)
    assert row["status"] == W.IN_PROGRESS and not row["last_check"]["verified"]
    # a real record of a failed check, flipped to passed by hand: its HMAC no longer verifies
    W.record_check(state, "map_guard", False, digest, "simulator", W.record_key())
    state["checks"]["map_guard"]["passed"] = True
    (ws / STATE).write_text(json.dumps(state))
    assert _status(ws)["status"] == W.IN_PROGRESS
    # the same record with the right HMAC (what a check writes) says passed: the key is what counts
    W.record_check(state, "map_guard", True, digest, "simulator", W.record_key())
    (ws / STATE).write_text(json.dumps(state))
    assert _status(ws)["status"] == W.PASSED
    assert not any(p.name == KEY_FILE for p in ws.rglob("*"))  # the key lives outside the workspace


@pytest.mark.slow  # the hidden tests' listing and a contained child: ~5 s on a loaded 2-core machine
@pytest.mark.skipif(not SIMULATOR, reason="simulator")
def test_grading_never_reads_a_workspace(tmp_path, monkeypatch):
    """A student folder that holds a workspace state claiming "passed" is graded on the file alone."""
    from lab.teach import grade as G

    monkeypatch.setattr(W, "read_state", lambda ws: (_ for _ in ()).throw(AssertionError("read a workspace")))
    monkeypatch.setattr(W, "listing", lambda *a: (_ for _ in ()).throw(AssertionError("read a workspace")))
    (tmp_path / "c" / "alice").mkdir(parents=True)
    (tmp_path / "c" / "alice" / "map_guard.py").write_text(mutated_solution(tmp_path, "map_guard",
                                                                            GUARD_OFF_BY_ONE).read_text())
    (tmp_path / "c" / "alice" / STATE).write_text(json.dumps({"status": {"map_guard": "passed"}}))
    row = G.grade(tmp_path / "c", ["map_guard"], 1, "sim", 20, 1)["rows"][0]
    assert row["status"] == "failed" and row["tests_passed"] < row["tests_total"]


# --- time and progress ----------------------------------------------------------------------------------------
LOOP = [("if i < out.shape[0]:", "while i < out.shape[0]:")]


@pytest.mark.slow  # two children, each stopped after its 2 s timeout: ~8 s
@pytest.mark.skipif(not SIMULATOR, reason="simulator")
def test_progress_names_the_running_test_and_a_hang_is_named_within_its_timeout(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_GPU_COMPILE", "0")
    events = []
    doc = W.check("map_guard", mutated_solution(tmp_path, "map_guard", LOOP), None, "sim", 2, 1,
                  progress=lambda d, t, label: events.append((time.monotonic(), label)))
    labels = [label for _, label in events]
    first = doc["tests"][0]["name"]
    assert labels[0] == "loading your file" and f"running test 1/{doc['tests_total']}: {first}" in labels, labels
    started = next(t for t, label in events if label.startswith("running test 1/"))
    stopped = next(t for t, label in events if "timed out" in label)
    assert f"{first}: timed out after 2 s (stopped)" in labels
    assert 1.9 < stopped - started < 2 + 2.0  # the timeout plus the checker's 20 ms polling, not minutes
    timed = [t["name"] for t in doc["tests"] if t["message"].startswith("timed out")]
    assert len(timed) == MAX_TIMEOUTS == 2 and doc["tests_passed"] == 0  # then the rest is not run
    assert all(t["message"].startswith(("timed out", "not run")) for t in doc["tests"])


def test_json_and_a_pipe_show_no_progress(tmp_path):
    (tmp_path / "map_guard.py").write_text(SOLUTION)
    code, out, err = run_lab("exercise", "check", "map_guard", "--file", tmp_path / "map_guard.py", "--sim", "--json")
    assert code == 0 and err == "" and json.loads(out)["tests_passed"] == json.loads(out)["tests_total"]


def test_tests_that_timed_out_are_not_run_again_under_compute_sanitizer(tmp_path, monkeypatch):
    from lab.core import simulator

    path = tmp_path / "map_guard.py"
    path.write_text(SOLUTION)
    ok = lambda n: {"name": n, "passed": True, "message": "ok"}  # noqa: E731
    hung = {"name": "n=2", "passed": False, "message": "timed out after 10 s while running this test"}
    skipped = {"name": "n=3", "passed": False, "message": "not run (an earlier test was stopped)"}
    calls = []
    monkeypatch.setattr(simulator, "choose", lambda prefer="auto": "gpu")
    monkeypatch.setattr(W, "_gpu_diagnoses", lambda *a, **kw: calls.append(kw["skip"]) or ([], []))
    for gpu_tests in ([ok("n=1"), hung, skipped], [hung, skipped]):
        monkeypatch.setattr(W, "with_simulator", lambda *a, t=gpu_tests, **kw: (t, [], t))
        doc = W.check("map_guard", path, tmp_path, "gpu", 10, 1)
        assert not doc["passed"] and doc["tests_total"] == len(gpu_tests)
    assert calls == [["n=2", "n=3"]]  # the second time nothing was left to run under the sanitizer
    assert "not run under compute-sanitizer: every test timed out or was not run" in doc["notes"]


def test_a_child_that_dies_slowly_is_not_waited_for(monkeypatch):
    """A GPU process killed in the middle of a kernel that never ends can take seconds to tear down
    its context: the checker waits KILL_WAIT_S at most, then reaps it in the background."""
    import subprocess

    waits = []

    class Dying:
        pid = 2 ** 22 + 12345  # no such process group: killpg fails, kill() is called

        def kill(self):
            pass

        def wait(self, timeout=None):
            waits.append(timeout)
            if timeout is not None:
                raise subprocess.TimeoutExpired("gpu child", timeout)

        def poll(self):
            return None

    t0 = time.monotonic()
    proc = Dying()
    _kill(proc)
    assert time.monotonic() - t0 < 1 and waits[0] == KILL_WAIT_S and proc.lab_killed
    time.sleep(0.1)
    assert waits[1:] == [None]  # the background reaper
