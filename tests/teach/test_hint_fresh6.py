"""Issue 41, sixth fresh set (hints8): the first failing message of each mutant of
tests/teach/hint_mutants8.py names its bug and says none of the wrong words it used to get; and the
rules behind them, each beside the look-alike evidence it must stay silent on."""
import os

import pytest

from tests.conftest import BACKEND
from tests.teach import catalogue as C
from tests.teach import hint_mutants8 as H8

pytestmark = pytest.mark.skipif(BACKEND != "simulator", reason="the tracer's diagnoses: simulator only")


@pytest.mark.parametrize("mutant", H8.MUTANTS, ids=[f"{m[0]}-{m[1]}" for m in H8.MUTANTS])
def test_first_message_names_the_bug(mutant, tmp_path):
    ex, label, subs, cls = mutant
    path = tmp_path / f"{ex}.py"
    path.write_text(C.source(C.Wrong(ex, label, subs, [], [], cls)))
    seed = int.from_bytes(os.urandom(4), "little")
    bad = C.first_failures(ex, path, seed, most=1)
    assert bad, f"{ex} / {label} passed (seed {seed})"
    first = bad[0]["message"]
    phrases = H8.CLASSES[cls]
    alternatives = list(phrases) if isinstance(phrases, tuple) else [phrases]  # a tuple: any one list names it
    missing = min(([p for p in ps if p not in first] for ps in alternatives), key=len)
    wrong = [p for p in H8.AVOID.get(cls, ()) if p in first]
    assert not missing and not wrong, f"{ex} / {label} (seed {seed}): missing {missing}, wrong {wrong}: {first}"


def test_same_cell_stores_only_on_their_evidence():
    """Two threads storing one shared cell: an index with no thread in it, an index equal for both threads
    while other names differ, two stores indexing in another order; silent on a store in a loop (its
    index's value is not the text's alone), on an index that differs between the threads, on two stores
    with different expressions."""
    from lab.teach.store_words import same_cell_words

    head = "T = 64\nR = 3\ndef k(x):\n    s = cuda.shared.array(70, float32)\n    t = cuda.threadIdx.x\n"
    me, them = ((0, 0, 0), (1, 0, 0)), ((0, 0, 0), (2, 0, 0))
    text = head + "    if t < R:\n        s[T + R] = x[t]\n"
    assert "does not depend on the thread" in same_cell_words(text, "s", (7, 7), me, them, (64, 1, 1))
    text = head + "    if t < R:\n        s[t + T + R] = x[t]\n"  # the thread's own cell: not this rule's
    assert same_cell_words(text, "s", (7, 7), me, them, (64, 1, 1)) is None
    text = head + "    for j in range(3):\n        s[j] = x[t]\n"  # a loop variable: silent
    assert same_cell_words(text, "s", (7, 7), me, them, (64, 1, 1)) is None
    text = head + "    lane = t % 32\n    w = t // 32\n    if lane == 0:\n        s[lane] = x[t]\n"
    words = same_cell_words(text, "s", (9, 9), ((0, 0, 0), (0, 0, 0)), ((0, 0, 0), (32, 0, 0)), (64, 1, 1))
    assert "has the same value (0) for both threads" in words and "w = 0 and 1" in words
    text = head.replace("t = cuda.threadIdx.x\n", "tx, ty = cuda.threadIdx.x, cuda.threadIdx.y\n")
    two = text + "    if x[0] > 0:\n        s[tx, ty] = 1.0\n    else:\n        s[ty, tx] = 0.0\n"
    words = same_cell_words(two, "s", (7, 9), ((0, 0, 0), (5, 3, 0)), ((0, 0, 0), (3, 5, 0)), (8, 8, 1))
    assert "s[tx, ty]" in words and "s[ty, tx]" in words and "another order" in words
    other = text + "    if x[0] > 0:\n        s[tx, ty] = 1.0\n    else:\n        s[ty, 0] = 0.0\n"
    assert same_cell_words(other, "s", (7, 9), ((0, 0, 0), (5, 3, 0)), ((0, 0, 0), (3, 5, 0)), (8, 8, 1)) is None


def test_pipeline_order_only_on_its_evidence():
    """The first tile's copies with no commit before the loop, and a wait that leaves 2+ groups in flight,
    named from the text; the reference's order (commit before the loop, cp_async_wait(1)), and a kernel
    with no loop waiting, say nothing."""
    from lab.teach.pipeline_words import async_order_words

    loop = ("    for t in range(n):\n        cp_async4(s, 64 + i, a, 0, t + 1, 1)\n        cp_async_commit()\n"
            "        cp_async_wait(WAIT)\n        cuda.syncthreads()\n")
    right = "def k(a, n):\n    cp_async4(s, i, a, 0, 0, 1)\n    cp_async_commit()\n" + loop.replace("WAIT", "1")
    assert async_order_words(right) is None
    assert "are not committed before it" in async_order_words(right.replace("    cp_async_commit()\n    for", "    for"))
    assert "cp_async_wait(2) at line" in async_order_words(right.replace("cp_async_wait(1)", "cp_async_wait(2)"))
    assert async_order_words(right.replace("cp_async_wait(1)", "cp_async_wait(0)")) is None  # no overlap: another lesson
    assert async_order_words("def k(a):\n    cp_async4(s, 0, a, 0, 0, 1)\n    cp_async_wait(0)\n") is None


def test_minmax_operator_mistake_needs_both_slots_updated():
    """minmax's wrong-operator mistakes are said only where the launch's atomics reached both elements of
    out (a max sent to out[0] leaves out[1] at -inf as well)."""
    import exercises

    ex = exercises.load("minmax")
    from lab.teach.diagnose import Mistake

    evidence = Mistake(*ex.hidden().MISTAKES[0]).evidence
    counts = {"arrays": [["x", 100, 4, False], ["out", 2, 4, True], ["lo", 64, 4, False]],
              "atomic_elements": [0, 2, 0]}
    assert evidence(None, counts)
    counts["atomic_elements"] = [0, 1, 0]
    assert not evidence(None, counts)
