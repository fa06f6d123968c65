"""Issue 41, fifth fresh set (hints7): the first failing message of each mutant of
tests/teach/hint_mutants7.py names its bug and says none of the wrong words it used to get; and the
rules behind them, each beside the look-alike evidence it must stay silent on."""

import pytest

from tests.conftest import BACKEND
from tests.teach import catalogue as C
from tests.teach import hint_mutants7 as H7

pytestmark = pytest.mark.skipif(BACKEND != "simulator", reason="the tracer's diagnoses: simulator only")


@pytest.mark.parametrize("mutant", H7.MUTANTS, ids=[f"{m[0]}-{m[3]}" for m in H7.MUTANTS])
def test_first_message_names_the_bug(mutant, tmp_path):
    C.check_first_message(mutant, H7.CLASSES, H7.AVOID, tmp_path)


def test_block_axis_from_the_references_own_steps():
    """Only blocks with blockIdx.y = 0 seen (a run that raised early): a load index that moves by 16 per
    blockIdx.x is the y axis's only where the reference's whole run moves by 16 per blockIdx.y and not
    with blockIdx.x; without those steps, no stride is claimed from one block (block 0 unseen)."""
    from lab.teach.diagnose import _index_label

    whos = [((1, 0, 0), (t, 0, 0)) for t in range(4)]
    assert _index_label([16] * 4, whos, [32, 1, 1], steps={0: 0, 1: 16}) == ("bswap", 0, 1, 16, "one-sided")
    assert _index_label([16] * 4, whos, [32, 1, 1], steps={0: 0, 1: 8}) is None or \
        _index_label([16] * 4, whos, [32, 1, 1], steps={0: 0, 1: 8})[0] != "bswap"
    assert _index_label([16] * 4, whos, [32, 1, 1])[0] == "const"  # no stride of 48 guessed from block 1 alone
    # the reference's own step per block (by * 32) against the student's (by * 8): the stride said is 8, not 8 + 8
    tw = [((0, b, 0), (x, t, 0)) for b in (0, 1) for x, t in ((0, 0), (1, 1), (2, 0))]
    refs = [(32 * b + t, 0) for b in (0, 1) for _, t in ((0, 0), (1, 1), (2, 0))]
    assert _index_label([0, 0, 0, -24, -24, -24], tw, [32, 8, 1], refs) == ("bstride", 1, 8, 32)
    # the moved block's threads seen along one row only: a threadIdx.x term is not ruled out, no stride said
    one_row = [((0, 1, 0), (x, 0, 0)) for x in range(3)] + [((0, 0, 0), (0, 0, 0))]
    assert _index_label([-24, -24, -24, 0], one_row, [32, 8, 1]) is None or \
        _index_label([-24, -24, -24, 0], one_row, [32, 8, 1])[0] != "bstride"


def test_equality_guard_and_excluded_store_only_on_their_evidence():
    """The source rules: an `==` guard on the index named (an order test is not), and a store's own test
    that leaves out the one thread that would fill a cell (a store under no test, or one the thread
    passes, says nothing)."""
    from lab.teach.indices import equality_guard
    from lab.teach.messages import quote
    from lab.teach.shared_words import excluded_store

    src = ["def k(a, c):", "    i = cuda.grid(1)", "    if i == a.shape[0]:", "        return", "    c[i] = a[i]"]
    assert "tests equality" in equality_guard(src, 5, quote) and "line 3" in equality_guard(src, 5, quote)
    src[2] = "    if i >= a.shape[0]:"
    assert equality_guard(src, 5, quote) is None
    text = ("T = 64\nR = 3\ndef k(x, y):\n    s = cuda.shared.array(70, float32)\n    t = cuda.threadIdx.x\n"
            "    s[t + R] = x[t]\n    if t > T - R:\n        s[t + 2 * R] = x[t + R]\n")
    words = excluded_store(text, "s", (67,), 64)
    assert "is false for t = 61" in words and "`>=` lets it through" in words
    assert excluded_store(text, "s", (68,), 64) is None  # thread 62 passes its test
    assert excluded_store(text, "s", (67,), 32) is None  # no thread 61 in a block of 32


def test_launch_from_the_other_extent_only_on_its_evidence():
    """launch(): blocks along y counted from cols named; a right launch, or plain rounding down, not."""
    from lab.teach.launches import launch_mismatch

    def from_cols(rows, cols):
        return ((cols + 15) // 16, (cols + 7) // 8), (16, 8)

    def right(rows, cols):
        return ((cols + 15) // 16, (rows + 7) // 8), (16, 8)

    text = launch_mismatch(from_cols, "launch", (50, 37), (50, 37))
    assert "counts the blocks along y from cols" in text and "whatever the rows" in text
    assert launch_mismatch(right, "launch", (50, 37), (50, 37)) is None
    assert launch_mismatch(right, "launch", (37, 50), (37, 50)) is None
