"""Seventh fresh set (hints9): the first failing message of each mutant of tests/teach/hint_mutants9.py names its
bug and says none of the words it used to get; and the rules behind them, each beside the look-alike evidence
(correct code, or another bug) it must stay silent on."""

import pytest

from tests.conftest import BACKEND
from tests.teach import catalogue as C
from tests.teach import hint_mutants9 as H9

pytestmark = pytest.mark.skipif(BACKEND != "simulator", reason="the tracer's diagnoses: simulator only")

MISMATCH = ("not every thread of block (0,) reached the same cuda.syncthreads() calls (63 threads passed 0, 1 thread "
            "passed 3): a barrier inside a branch or after an early return is undefined behaviour and can hang on a "
            "GPU; let all threads reach every barrier")


@pytest.mark.parametrize("mutant", H9.MUTANTS, ids=[f"{m[0]}-{m[1]}" for m in H9.MUTANTS])
def test_first_message_names_the_bug(mutant, tmp_path):
    C.check_first_message(mutant, H9.CLASSES, H9.AVOID, tmp_path)


def test_barrier_words_only_for_a_return_before_a_barrier_or_a_branched_one():
    """An early return before a barrier, and a barrier inside an if, quoted; a return after the last barrier, a
    barrier outside the tree's if, another message, or no text: nothing."""
    from lab.teach.barrier_words import barrier_words

    head = ["def k(x, p):", "    t = cuda.threadIdx.x", "    i = cuda.grid(1)"]
    early = head + ["    if i >= x.shape[0]:", "        return", "    c[t] = x[i]", "    cuda.syncthreads()"]
    words = barrier_words(MISMATCH, early)
    assert "the early return at line 5: `return` (under `if i >= x.shape[0]:` at line 4)" in words
    assert "before the barrier at line 7" in words and "undefined behaviour and can hang" not in words
    tree = head + ["    s = 32", "    while s > 0:", "        if t < s:", "            c[t] += c[t + s]",
                   "            cuda.syncthreads()", "        s //= 2"]
    assert "stands inside `if t < s:` (line 6)" in barrier_words(MISMATCH, tree)
    right = head + ["    c[t] = x[i] if i < x.shape[0] else 0.0", "    cuda.syncthreads()", "    s = 32",
                    "    while s > 0:", "        if t < s:", "            c[t] += c[t + s]", "        cuda.syncthreads()",
                    "        s //= 2", "    if t != 0:", "        return", "    p[0] = c[0]"]
    assert barrier_words(MISMATCH, right) is None  # the return comes after every barrier
    assert barrier_words("race: ...", early) is None
    assert barrier_words(MISMATCH, None) is None


def test_cells_per_thread_only_for_unlooped_stores_short_of_the_array():
    """local[t] = 0 (or local[cuda.threadIdx.x], local[t + 128]) for 128 threads and 256 cells: said for a cell
    none of them stores; a loop over the cells, two stores covering them, an array no larger than the block, a
    store under a test, or a cell one of the stores fills: nothing."""
    from lab.teach.cover_words import cells_per_thread_words

    head = "BINS = 256\ndef k(x, h):\n    local = cuda.shared.array(BINS, int32)\n    t = cuda.threadIdx.x\n"
    words = cells_per_thread_words(head + "    local[t] = 0\n", "local", (200,), 128, None)
    assert "local[0..127] for the block's 128 threads, but local has 256 cells" in words
    assert "for b in range(t, 256, 128)" in words
    assert "local[128..255]" in cells_per_thread_words(head + "    local[t + 128] = 0\n", "local", (3,), 128, None)
    assert cells_per_thread_words(head + "    local[cuda.threadIdx.x] = 0\n", "local", (130,), 128, 256)
    assert cells_per_thread_words(head + "    local[t + 128] = 0\n", "local", (200,), 128, None) is None  # stored
    loop = head + "    for b in range(t, BINS, 128):\n        local[b] = 0\n"
    assert cells_per_thread_words(loop, "local", (200,), 128, None) is None
    both = head + "    local[t] = 0\n    local[t + 128] = 0\n"
    assert cells_per_thread_words(both, "local", (200,), 128, None) is None
    assert cells_per_thread_words(head + "    local[t] = 0\n", "local", (200,), 256, None) is None  # as many threads
    guarded = head + "    if t < 100:\n        local[t] = 0\n"
    assert cells_per_thread_words(guarded, "local", (200,), 128, None) is None


def test_one_column_only_for_one_unlooped_store_a_thread():
    """Columns 32.. of out unwritten, every thread storing one element at a line in no loop: said; a store in a
    loop, a thread storing two elements, unwritten columns from another start, or other words: nothing."""
    from lab.teach.cover_words import one_column_words

    text = ("20 of 148 elements of out never written, the first out[0, 32] (columns 32.. all unwritten although the "
            "checker's grid has 128 x 1 threads for 37 columns x 4 rows: the guard, a loop bound or the index stops "
            "short of 37 columns)")
    src = ["def k(x, out):", "    t = cuda.threadIdx.x", "    r = cuda.blockIdx.x", "    if t < x.shape[1]:",
           "        out[r, t] = x[r, t]"]
    counts = {"arrays": [["x", 148, 4, False], ["out", 148, 4, True]], "stored": [[1, 0, 1], [1, 1, 1]]}
    words = one_column_words(text, src, counts, "out", 0, 5, (4, 37), 32)
    assert "thread t column t, at line 5: `out[r, t] = x[r, t]`, which stands in no loop" in words
    assert "37 columns for a block of 32 threads" in words and "stops short" not in words
    looped = src[:3] + ["    for j in range(t, 32, 32):", "        out[r, j] = x[r, j]"]
    assert one_column_words(text, looped, counts, "out", 0, 5, (4, 37), 32) is None
    two = {**counts, "stored": [[1, 0, 2]]}
    assert one_column_words(text, src, two, "out", 0, 5, (4, 37), 32) is None
    assert one_column_words(text.replace("columns 32..", "columns 16.."), src, counts, "out", 0, 5, (4, 37), 32) is None
    assert one_column_words("out[0, 3] = 1, expected 2", src, counts, "out", 0, 5, (4, 37), 32) is None


def test_other_buffer_only_where_the_read_picks_the_next_tiles_buffer():
    """A read whose base is ((t + 1) % 2) * 64 (through a name, or inline) at a cell of buffer 1: said; the right
    base (t % 2), a cell of buffer 0, or a base with no % 2: nothing."""
    from lab.teach.pipeline_words import other_buffer_words

    head = ("TILE = 8\nBUFFERS = 2 * TILE * TILE\ndef k(A, C):\n    sA = cuda.shared.array(BUFFERS, float32)\n"
            "    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y\n    acc = 0.0\n    for t in range(4):\n")
    wrong = head + "        base = ((t + 1) % 2) * TILE * TILE\n        acc += sA[base + ty * TILE]\n"
    words = other_buffer_words(wrong, "sA", (64,), 9)
    assert "sA[64] lies in buffer 1 (sA[64..127])" in words and "line 8: `base = ((t + 1) % 2) * TILE * TILE`" in words
    inline = head + "        acc += sA[(t + 1) % 2 * TILE * TILE + ty * TILE]\n"
    assert "picked at line 8" in other_buffer_words(inline, "sA", (70,), 8)
    right = head + "        base = (t % 2) * TILE * TILE\n        acc += sA[base + ty * TILE]\n"
    assert other_buffer_words(right, "sA", (64,), 9) is None
    assert other_buffer_words(wrong, "sA", (3,), 9) is None  # buffer 0's cell
    plain = head + "        base = TILE * TILE\n        acc += sA[base + ty * TILE]\n"
    assert other_buffer_words(plain, "sA", (64,), 9) is None


def test_float_blocks_only_for_a_float_from_a_true_division():
    """launch() returning a float from `/`: said with the line; one returning ints through int(n / threads), or a
    float without a `/` in its text, or another failure's words: nothing."""
    from lab.teach.contained.source import Launch, extract
    from lab.teach.launches import FLOAT_SHAPE, float_blocks_words

    case = type("Case", (), {"launch_args": (100, 32)})()
    text = f"your launch(100, 32) returned (4.125, 32): {FLOAT_SHAPE}"

    def launch_of(src):
        kernel = "from numba import cuda\n\n\n@cuda.jit\ndef k(a):\n    pass\n\n\n"
        return Launch(extract(kernel + src, "f.py", "k", "launch"), "launch")

    words = float_blocks_words(launch_of("def launch(n, threads):\n    b = (n + threads - 1) / threads\n    return b, threads\n"),
                               case, text)
    assert "4.09375 is a float: `/` is Python's true division" in words and "line 10: `b = (n + threads - 1) / threads`" in words
    ints = launch_of("def launch(n, threads):\n    return int(n / threads) + 1, threads\n")
    assert float_blocks_words(ints, case, text) is None
    mult = launch_of("def launch(n, threads):\n    return n * 0.5, threads\n")
    assert float_blocks_words(mult, case, text) is None
    assert float_blocks_words(ints, case, "your launch(100, 32) raised ZeroDivisionError") is None


def test_wait_before_commit_only_for_wait_one_ahead_of_the_loops_commit():
    """cp_async_wait(1) ahead of the loop's commit (the copies through a helper or inline): said; the reference's
    order (copies, commit, wait(1)), or a wait(0) ahead of the commit (no overlap: another lesson): nothing."""
    from lab.teach.pipeline_words import async_order_words

    helper = "def issue(s, a, t):\n    cp_async4(s, 0, a, 0, t, 1)\n"
    head = "def k(s, a, n):\n    issue(s, a, 0)\n    cp_async_commit()\n    for t in range(n):\n"
    wrong = helper + head + ("        cp_async_wait(1)\n        issue(s, a, t + 1)\n        cp_async_commit()\n"
                             "        cuda.syncthreads()\n")
    assert "cp_async_wait(1) at line 7 comes before the loop's commit (line 9)" in async_order_words(wrong)
    right = helper + head + ("        issue(s, a, t + 1)\n        cp_async_commit()\n        cp_async_wait(1)\n"
                             "        cuda.syncthreads()\n")
    assert async_order_words(right) is None
    assert async_order_words(wrong.replace("cp_async_wait(1)", "cp_async_wait(0)")) is None


def test_own_element_words_only_where_the_store_leaves_it_out():
    """The storing line subtracting the input's element, or reading the cell before the thread's own: said; a
    line that subtracts another array, reads its own cell, or a line that is no statement: nothing."""
    from lab.teach.cover_words import own_element_words

    src = ["def k(x, out):", "    t = cuda.threadIdx.x", "    out[t] = temp[t] - x[t] + off[0]"]
    assert "subtracts x[t]: that is the exclusive scan" in own_element_words(src, 3, "out", "x")
    src[2] = "    out[t] = (temp[t - 1] if t > 0 else 0) + off[0]"
    assert "reads temp[t - 1], the cell before the thread's own" in own_element_words(src, 3, "out", "x")
    src[2] = "    out[t] = temp[t] - off[0]"
    assert own_element_words(src, 3, "out", "x") is None
    src[2] = "    out[t] = temp[t] + off[0]"
    assert own_element_words(src, 3, "out", "x") is None
    assert own_element_words(src, 9, "out", "x") is None
