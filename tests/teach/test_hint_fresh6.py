"""Issue 41, sixth fresh set (hints8): the first failing message of each mutant of
tests/teach/hint_mutants8.py names its bug and says none of the wrong words it used to get; and the
rules behind them, each beside the look-alike evidence it must stay silent on."""

import numpy as np
import pytest

from tests.conftest import BACKEND
from tests.teach import catalogue as C
from tests.teach import hint_mutants8 as H8

pytestmark = pytest.mark.skipif(BACKEND != "simulator", reason="the tracer's diagnoses: simulator only")


@pytest.mark.parametrize("mutant", H8.MUTANTS, ids=[f"{m[0]}-{m[1]}" for m in H8.MUTANTS])
def test_first_message_names_the_bug(mutant, tmp_path):
    C.check_first_message(mutant, H8.CLASSES, H8.AVOID, tmp_path)


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


def test_guard_order_and_other_shape_only_on_their_evidence():
    """A 2-D guard's `>` quoted where it lets the bound itself through (a `>` against `shape - 1` is not);
    the other array's shape advised only where a guard around the access tests it (a loop whose variable is
    not the index is no guard); the launch's block count said to divide something else only below n // tpb - 1."""
    from types import SimpleNamespace

    import numpy as np

    from lab.teach.indices import blocks_count_words, equality_guard, other_shape_advice
    from lab.teach.messages import quote

    src = ["def k(A, C):", "    x, y = cuda.grid(2)", "    if y > C.shape[0] or x >= C.shape[1]:", "        return",
           "    C[y, x] = A[y, x]"]
    assert "tests `y > C.shape[0]`" in equality_guard(src, 5, quote, order=True)
    assert equality_guard(src, 5, quote) is None  # the 1-D words' caller: equality only
    src[2] = "    if y > C.shape[0] - 1 or x >= C.shape[1]:"
    assert equality_guard(src, 5, quote, order=True) is None
    case = SimpleNamespace(args=[np.zeros((16, 8)), np.zeros((8, 8))], outputs=[((16, 8), np.float32)])
    names = ["A", "B", "C"]
    loop = ["def k(A, B, C):", "    for k0 in range(0, A.shape[1], 8):", "        b = B[k0 + 8, 0]"]
    assert other_shape_advice("B", (9, 0), (8, 8), "read", case, names, loop, 3) is None
    guarded = ["def k(A, B, C):", "    r = 9", "    if r < A.shape[0]:", "        b = B[r, 0]"]
    assert "must test B's shape" in other_shape_advice("B", (9, 0), (8, 8), "read", case, names, guarded, 4)
    assert "must test B's shape" in other_shape_advice("B", (9, 0), (8, 8), "read", case, names)  # no text: as before
    assert "divides something else" in blocks_count_words(1, 1024, 5466)
    assert "divides something else" not in blocks_count_words(5, 1024, 5466)  # rounded down
    assert "divides something else" not in blocks_count_words(4, 1024, 5466)  # (n - 1) // threads - 1: one short


def test_stride_mistake_access_not_for_a_thread_past_out():
    """strided_index's stride mistakes claim an access only for a thread with an element of out: a thread
    past out's rows whose read coincides with swapped strides (r == c) is the guard's."""
    import exercises
    from lab.teach.diagnose import Mistake

    hidden = exercises.load("strided_index").hidden()
    case = hidden.cases(np.random.default_rng(0))[0]
    rows, cols = case.outputs[0][0]
    swapped = Mistake(*hidden.MISTAKES[2]).access
    assert swapped(case, ((0, 0, 0), (0, 0, 0)))[0] == "storage"  # thread (0, 0): out[0, 0]
    for who in (((0, 0, 0), (cols, 0, 0)), ((0, 0, 0), (0, rows, 0))):  # one column, one row past out
        if who[1][0] < 8 * 8 and who[1][1] < 8 * 8:
            bx, tx = divmod(who[1][0], 8)
            by, ty = divmod(who[1][1], 8)
            with pytest.raises(ValueError):
                swapped(case, ((bx, by, 0), (tx, ty, 0)))


def test_loop_bound_words_only_for_a_loop_variable_index():
    """A shared array indexed by a for-range's bare variable past its size: the loop's bound; a subscript
    with an offset (a tree's partner s[t + s]) or no loop around the line says nothing."""
    from lab.teach.shared_words import loop_bound_words

    src = ["def k(h):", "    t = cuda.threadIdx.x", "    for b in range(t, 257, 128):", "        h[0] += s[b]"]
    assert "its bound 257 lets b reach 256" in loop_bound_words(src, 4, "s", 256, 256)
    src[3] = "        h[0] += s[b + 128]"
    assert loop_bound_words(src, 4, "s", 256, 256) is None
    assert loop_bound_words(["def k(h):", "    b = 256", "    h[0] = s[b]"], 3, "s", 256, 256) is None
    neg = ["def k(w, y):", "    for d in range(-3, 4):", "        y[0] += w[d]"]
    assert "which starts at -3" in loop_bound_words(neg, 3, "w", -3, 7) and "w[d + 3]" in loop_bound_words(neg, 3, "w", -3, 7)
    neg[1] = "    for d in range(0, 7):"
    assert loop_bound_words(neg, 3, "w", -3, 7) is None


def test_reloaded_words_only_for_an_input_loaded_again_in_a_loop():
    """One element of an input loaded 6 times at a line inside a loop: said; a shared cell read again and
    again (a tree's own cell), an input loaded once, or a repeat at a line outside any loop: not."""
    from lab.teach.load_words import reloaded_words

    src = ["def k(x, p):", "    s = 32", "    while s > 0:", "        c[t] = x[i]", "        s //= 2", "    v = x[i]"]
    counts = {"arrays": [["x", 64, 4, False], ["p", 1, 4, True], ["c", 64, 4, False]],
              "load_lines": [[0, 0, 4, 6, 0, 0]]}
    assert "loaded the same element of x 6 times at line 4" in reloaded_words(counts, src, ["x", "p"])
    counts["load_lines"] = [[2, 0, 4, 6, 0, 0]]  # the shared cell c: not an input
    assert reloaded_words(counts, src, ["x", "p"]) is None
    counts["load_lines"] = [[0, 0, 4, 1, 0, 0], [0, 0, 6, 2, 0, 0]]  # once in the loop; twice outside any loop
    assert reloaded_words(counts, src, ["x", "p"]) is None
    counts["load_lines"] = [[0, 0, 4, 6, 0, 5]]  # six different elements: a strided loop
    assert reloaded_words(counts, src, ["x", "p"]) is None


def test_global_warp_slot_only_past_block_0():
    """A per-warp shared array indexed by the grid-wide warp number: said in block 1 (slot 7 of 4); a lane
    (per_warp_slot's), block 0 (the grid's warp is the block's), or an array of another size: not."""
    from lab.teach.shared_words import global_warp_slot

    assert "counted across the whole grid" in global_warp_slot(7, 4, (1, 0, 0), 96, (128, 1, 1))
    assert global_warp_slot(3, 4, (0, 0, 0), 96, (128, 1, 1)) is None  # block 0: inside the array anyway
    assert global_warp_slot(7, 8, (1, 0, 0), 96, (128, 1, 1)) is None  # not one slot per warp
    assert global_warp_slot(6, 4, (1, 0, 0), 96, (128, 1, 1)) is None  # not this thread's grid-wide warp


def test_guard_claim_dropped_only_where_the_difference_is_the_access():
    """The other-shape guard claim is dropped where kernel_diff's one difference is at the access's own
    line; kept where it is elsewhere (the guard's line), or where there is no such claim."""
    from lab.teach.kernel_words import _guard_claim_dropped

    text = ("out of bounds: thread (0, 0) of block (1, 0) wrote out[0, 32], outside its shape (33, 1), at line 24: "
            "`out[x, y + j] = t`; the index is inside A's shape (1, 33) but outside out's: the guard of this store (or "
            "the loop's range that makes this index) must test out's shape (33, 1), not A's")
    at_access = "your kernel is ... but one: at line 24: `out[x, y + j] = t`, `(x, y + j)` where ..."
    assert "must test" not in _guard_claim_dropped(text, at_access)
    at_guard = "your kernel is ... but one: at line 23: `if y + j < rows and x < cols:`, ..."
    assert _guard_claim_dropped(text, at_guard) == text
    plain = text.split("; the index is inside")[0]
    assert _guard_claim_dropped(plain, at_access) == plain
