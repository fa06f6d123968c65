"""Issue 28's catalogue (tests/teach/catalogue.py) in the simulator: every wrong kernel fails, every
correct variant passes, and hint accuracy (the share of wrong kernels whose failing message names
their bug: every ``want`` phrase, no ``avoid`` phrase) is a tested property, >= 95% over the
catalogue and the mutants of tests/teach/mutants.py that carry expected phrases.

On a GPU machine, scripts/catalogue_gpu.py runs the same catalogue through ``lab exercise check
--gpu`` (the child process, compute-sanitizer) and reports the counts per exercise.
"""
import os
from collections import Counter

import pytest

import exercises
from tests.conftest import BACKEND
from tests.teach import catalogue as C
from tests.teach import mutants

TARGET = 0.95
pytestmark = pytest.mark.skipif(BACKEND != "simulator", reason="the tracer's diagnoses: simulator only "
                                                               "(scripts/catalogue_gpu.py runs it on a GPU)")


def _seed():
    return int.from_bytes(os.urandom(4), "little")


def _write(tmp_path, k, entry):
    d = tmp_path / f"{k}"
    d.mkdir()
    path = d / f"{entry.exercise}.py"
    path.write_text(C.source(entry))
    return path


def _mutant_entries():
    """tests/teach/mutants.py's entries that carry expected phrases (the offline-compile ones need NVVM
    and are tested in test_checker_classes.py)."""
    return [C.Wrong(m[0], m[1], m[2], m[3], m[4], "mutants.py")
            for m in mutants.NOT_A_KERNEL + mutants.EVERY_BLOCK + mutants.ADVERSARIAL + mutants.HINTS
            if any(m[3])]


def test_catalogue_covers_every_exercise_and_every_class():
    per = Counter(w.exercise for w in C.WRONG)
    assert set(per) == set(exercises.names()) and min(per.values()) >= 5, per
    assert C.ISSUE_CLASSES <= {w.cls for w in C.WRONG}, C.ISSUE_CLASSES - {w.cls for w in C.WRONG}
    assert {r.exercise for r in C.RIGHT} == set(exercises.names())
    labels = [(e.exercise, e.label) for e in C.WRONG + C.RIGHT]
    assert len(labels) == len(set(labels))
    for e in C.WRONG + C.RIGHT:  # every substitution applies, every entry names what it must get
        assert "def " in C.source(e)
    for w in C.WRONG:
        assert w.want and all(w.want), w.label


def test_every_exercise_declares_its_lesson():
    from lab.teach.lessons import LESSONS

    for name in exercises.names():
        lesson = exercises.load(name).lesson
        assert lesson, name
        assert set((lesson,) if isinstance(lesson, str) else lesson) <= set(LESSONS), (name, lesson)


@pytest.mark.slow  # about 40 s in the simulator on 2 cores
def test_wrong_kernels_fail_with_the_hint_that_names_the_bug(tmp_path):
    """Every wrong kernel fails (pending ones are reported); hint accuracy >= 95%, per exercise shown."""
    entries = C.WRONG + _mutant_entries()
    passed, missed, per = [], [], {}
    for k, e in enumerate(entries):
        seed = _seed()
        r = C.run_entry(e, _write(tmp_path, k, e), seed)
        row = per.setdefault(e.exercise, Counter())
        if e.pending:
            row["pending"] += 1
            continue
        row["kernels"] += 1
        if not r["failed"]:
            passed.append(f"{e.exercise} / {e.label} (seed {seed})")
            continue
        row["failed"] += 1
        if r["hint_ok"]:
            row["hint"] += 1
        else:
            missed.append(f"{e.exercise} / {e.label} (seed {seed}): want {e.want}, avoid {e.avoid}; got {r['messages'][:2]}")
    total = sum(r["kernels"] for r in per.values())
    hits = sum(r["hint"] for r in per.values())
    share = hits / total
    report = "\n".join(f"  {n:17s} {r['kernels']:3d} wrong, {r['failed']:3d} failed, hint {r['hint']}/{r['kernels']}"
                       + (f" ({r['pending']} pending)" if r["pending"] else "") for n, r in sorted(per.items()))
    print(f"\nhint accuracy {hits}/{total} = {share:.1%} (target {TARGET:.0%})\n{report}")
    assert not passed, f"wrong kernels that passed every hidden test: {passed}"
    assert share >= TARGET, f"hint accuracy {share:.1%} < {TARGET:.0%}:\n" + "\n".join(missed)


@pytest.mark.slow  # about 25 s: a correct kernel runs every hidden test
def test_correct_variants_pass(tmp_path):
    """Grid-stride loops where the exercise allows them, early returns after the last barrier, other
    block sizes: no false alarm (the mapping lessons included)."""
    bad = []
    for k, e in enumerate(C.RIGHT):
        seed = _seed()
        r = C.run_entry(e, _write(tmp_path, k, e), seed)
        if r["failed"]:
            bad.append(f"{e.exercise} / {e.label} (seed {seed}): {r['messages'][:1]}")
    assert not bad, bad


@pytest.mark.parametrize("name", exercises.names())
def test_solutions_keep_their_lesson(name, tmp_path):
    """The reference solution's mapping facts pass its own lesson on the hidden tests' largest case."""
    import numpy as np

    from lab.teach.cases import hidden_cases

    from lab.teach.contained import executor
    from lab.teach.lessons import lesson_message, mapping_facts

    ex = exercises.load(name)
    rng = np.random.default_rng(_seed())
    mod = executor.load_student(str(ex.solution), ex)
    case = max(hidden_cases(ex, rng), key=lambda c: sum(np.prod(s) for s, _ in c.outputs))
    grid, block = executor.case_launch(mod, ex, case)
    _, trace, writers, _ = executor._launch_sim(mod, ex, getattr(mod, ex.kernel), case, grid, block, 0, rng,
                                                str(ex.solution))
    names = executor.out_names(getattr(mod, ex.kernel), case)
    facts = mapping_facts(trace, writers, grid, block, names)
    import json

    assert json.loads(json.dumps(facts)) == facts  # JSON-able numbers only
    assert lesson_message(ex.lesson, facts, launch=ex.launch if case.grid is None else None) is None, facts


@pytest.mark.parametrize("subs", [[("    cuda.syncthreads()  # every bin is zero", "    pass  # every bin is zero")],
                                  [("    cuda.syncthreads()  # every count", "    pass  # every count")]])
def test_race_lines_are_lines_of_the_students_file(tmp_path, subs):
    """An atomic's access is made inside Numba's simulator: the race names the student's line of the
    cuda.atomic call, never a line of another file."""
    import re

    e = C.Wrong("histogram", "race", subs, ["race"], [], "")
    path = _write(tmp_path, 0, e)
    r = C.run_entry(e, path, _seed())
    lines = path.read_text().splitlines()
    cited = [int(n) for m in r["messages"] for n in re.findall(r"at line (\d+)", m)]
    assert r["failed"] and cited, r
    assert all("local" in lines[n - 1] for n in cited), (cited, r["messages"])


def test_unwritten_hints_blame_only_the_students_grid():
    """'round the number of blocks up' only for the student's own grid; under the checker's grid (or
    with a grid that would fit the other way round) another hint."""
    import numpy as np

    from lab.teach.messages import unwritten_message

    tail = np.zeros(100, bool)
    tail[64:] = True
    assert "round the number of blocks up" in unwritten_message("c", tail, 2, 32)
    assert "round the number" not in unwritten_message("c", tail, 2, 32, checker_grid=True)
    cols = np.zeros((37, 50), bool)
    cols[:, 48:] = True  # 48 threads along x for 50 columns, 56 along y for 37 rows: fits swapped
    text = unwritten_message("C", cols, (3, 7), (16, 8))
    assert "grid's x and y swapped" in text and "round the number" not in text
    assert "round the number" not in unwritten_message("C", cols, (3, 7), (16, 8), checker_grid=True)
    short = np.zeros(100, bool)
    short[97:] = True  # three short: not "off by one"
    assert "off by one" not in unwritten_message("c", short, 4, 32) and "stops 3 elements short" in \
        unwritten_message("c", short, 4, 32)


def test_lesson_message_judges_facts_only():
    from lab.teach.lessons import lesson_message

    base = {"grid": [1, 1, 1], "block": [128, 1, 1], "blocks": 1, "threads_per_block": 128, "elements": 1000,
            "blocks_writing": 1, "threads_writing": 128, "max_stored": 8, "max_stored_by": [[0, 0, 0], [3, 0, 0]],
            "atomics": 0, "atomic_elements": 0, "blocks_atomic": 0, "threads_atomic": 0, "shared_accesses": 0,
            "warp_collectives": 0, "load": {"requests": 0, "sectors": 0, "ideal_sectors": 0},
            "store": {"requests": 0, "sectors": 0, "ideal_sectors": 0}, "inputs": []}
    assert "one block did all the work" in lesson_message("one_element_per_thread", base, launch="launch")
    assert lesson_message(None, base) is None
    assert lesson_message("one_element_per_thread", {**base, "max_stored": 1}) is None
    with pytest.raises(ValueError, match="unknown lesson"):
        lesson_message("no_such_lesson", base)


def test_async_overlap_and_tensor_core_judge_facts_only():
    """async_overlap: no copy at all, or two groups of copies or more and no shared read made with
    copies in flight, fails; one group (one tile along K: nothing to overlap) passes. tensor_core: a block that stored
    nothing fails."""
    from lab.teach.lessons import lesson_message

    f = {"async_copies": 16, "async_groups": 2, "async_overlap": 1}
    assert lesson_message("async_overlap", f) is None
    assert "no copy was ever in flight" in lesson_message("async_overlap", {**f, "async_overlap": 0})
    assert lesson_message("async_overlap", {**f, "async_groups": 1, "async_overlap": 0}) is None
    assert "no cp_async4" in lesson_message("async_overlap", {**f, "async_copies": 0})
    t = {"warp_collectives": 6, "mma_calls": 6, "blocks": 6, "blocks_writing": 6}
    assert lesson_message("tensor_core", t) is None
    assert "mma_tf32 never ran" in lesson_message("tensor_core", {**t, "mma_calls": 0})  # a shuffle is no mma
    loads = {**f, "inputs": [{"loads": 40}, {"loads": 40}]}
    assert lesson_message("async_overlap", {**loads, "async_loads": 80}) is None
    assert "were plain loads" in lesson_message("async_overlap", {**loads, "async_loads": 2})  # a dummy copy beside
    assert "5 blocks of 6 stored nothing" in lesson_message("tensor_core", {**t, "blocks_writing": 1}, output="C")
