"""Issue 41's measure: over tests/teach/hint_mutants.py (wrong kernels that each declare their bug
class), the share whose FIRST failing message names that bug, the share whose first message names
another bug, and the share that only describes the symptom; printed, with floors asserted. Also:
every mutant fails, and each fails at least two hidden cases (one size away from passing is not a
test). The kernels run in this process through the library's own entry (lab.teach.inprocess.run_all:
executor and judge, no GPU compile), one hidden test a call, in the tests' order, until two have failed
(tests/teach/catalogue.py first_failures).
"""
import os
import re
from collections import Counter

import pytest

from tests.conftest import BACKEND
from tests.teach import catalogue as C
from tests.teach import hint_mutants as H

# measured on main before issue 41 (fa43a1e, these 24 mutants): named 1/24 = 4%, another bug 10/24 = 42%, symptom
# only 12/24, 1 passed (dot with block 0 doing the whole vector); after: 24/24 named. Four more from the fresh set's classes
# (launch() ignoring its threads, a tree step with no test, a per-block array at the global index, a missing offset).
# The second fresh set's classes (hints4): 17 mutants more, 88 in all, about 50-75 s on 2 loaded cores; the judge
# keeps the reference solution's runs of the last cases, so one exercise's mutants share them (67 -> 53 runs)
NAMED_FLOOR = 0.95   # the share of first messages that name the mutant's bug, at least (issue 41: 95% on the catalogue)
OTHER_CEILING = 0.02  # the share that names another bug, at most
pytestmark = pytest.mark.skipif(BACKEND != "simulator", reason="the tracer's diagnoses: simulator only")


def _first_failures(tmp_path):
    seed = int.from_bytes(os.urandom(4), "little")
    rows = []
    # one exercise's mutants after another, one seed: the judge keeps the reference solution's runs of the
    # last cases (lab.teach.reference.reference), so each case's reference runs once, not once a mutant
    for k, (ex, label, subs, cls) in enumerate(sorted(H.MUTANTS, key=lambda m: m[0])):
        d = tmp_path / str(k)
        d.mkdir()
        path = d / f"{ex}.py"
        path.write_text(C.source(C.Wrong(ex, label, subs, [], [], cls)))
        bad = C.first_failures(ex, path, seed)  # the first two failing tests (the floor below needs two)
        first = bad[0]["message"] if bad else ""
        rows.append((ex, label, cls, len(bad), first, H.classify(first, cls) if bad else "passed",
                     _unquoted(first, path.read_text())))
    return seed, rows


# messages whose evidence points to one line of the student's file: a store, a load, an access, launch()
ONE_LINE = ("written by thread", "out of bounds:", "race:", "launch() divides", "round the number of blocks up")
QUOTE = re.compile(r"line (\d+)(?: of your file)?: `([^`]*)`")


def _unquoted(message: str, text: str) -> str | None:
    """Why ``message`` does not quote the student's line where it should (None when it does): each
    'line N: `code`' must be line N of the file, and a message of :data:`ONE_LINE` must have one."""
    lines = text.splitlines()
    quotes = QUOTE.findall(message)
    for n, code in quotes:
        want = " ".join(lines[int(n) - 1].split())
        if code != want and not (code.endswith("…") and want.startswith(code[:-1])):
            return f"line {n} quoted as {code!r}, but it is {lines[int(n) - 1].strip()!r}"
    if not quotes and any(k in message for k in ONE_LINE):
        return "no line quoted"
    return None


@pytest.mark.slow  # about 15 s of CPU (30 s on 2 loaded cores): every hidden case of 24 mutants, in this process
def test_first_message_names_the_bug(tmp_path):
    seed, rows = _first_failures(tmp_path)
    n = len(rows)
    count = Counter(r[5] for r in rows)
    named, other = count["named"] / n, count["other"] / n
    lines = [f"  {kind:7s} {ex} / {label} [{cls}] ({nbad}+ failing): {msg[:160]}"
             for ex, label, cls, nbad, msg, kind, _ in rows if kind != "named"]
    print(f"\nhint accuracy (first failing message, seed {seed}): named {count['named']}/{n} = {named:.0%}, "
          f"another bug {count['other']}/{n} = {other:.0%}, symptom only {count['symptom']}/{n}, "
          f"passed {count['passed']}\n" + "\n".join(lines))
    assert not count["passed"], [r[:2] for r in rows if r[5] == "passed"]
    unquoted = [f"{ex} / {label}: {why}: {msg[:200]}" for ex, label, _, _, msg, _, why in rows if why]
    assert not unquoted, "\n".join(unquoted)  # issue 41: every message quotes the line its evidence points to
    once = [f"{ex} / {label}" for ex, label, _, nbad, _, _, _ in rows if nbad < 2]
    assert not once, f"caught by one hidden case only (one size away from passing): {once}"
    assert named >= NAMED_FLOOR and other <= OTHER_CEILING, "\n".join(lines)


def test_launch_mismatch_only_on_its_evidence():
    """launch() evaluated over many sizes: named when its blocks were counted for another block size,
    silent for a right launch and for plain rounding down (the unwritten message's case)."""
    from lab.teach.launches import launch_mismatch

    def hard(n, threads):
        return (n + 255) // 256, threads

    def floor(n, threads):
        return max(1, n // threads), threads

    def right(n, threads):
        return (n + threads - 1) // threads, threads

    def rows16(rows, cols):
        return ((cols + 15) // 16, (rows + 15) // 16), (16, 8)

    text = launch_mismatch(hard, "launch", (33, 32), (33,))
    assert "divides n by 256" in text and "launch(33, 32)" in text and "1 block x 32 = 32 threads" in text
    assert launch_mismatch(floor, "launch", (33, 32), (33,)) is None
    assert launch_mismatch(right, "launch", (33, 32), (33,)) is None
    text = launch_mismatch(rows16, "launch", (37, 50), (37, 50))
    assert "divides rows by 16" in text and "8 threads along y" in text


def test_tree_step_race_only_on_its_evidence():
    """A tree step's race is named only with a writer in the block's upper half at the add's line; a
    missing barrier between tree steps (lower-half writers), or two lines, keeps the plain race."""
    from lab.teach.messages import tree_step_race

    upper = [(((0,), (40,)), "wrote", "cache", [40], (24,), "read")]
    lower = [(((0,), (6,)), "wrote", "cache", [6], (2,), "read")]
    assert "if t < s" in tree_step_race(upper, [(20, 20)], 64)[1]
    assert tree_step_race(lower, [(20, 20)], 64) is None
    assert tree_step_race(upper, [(20, 21)], 64) is None
    assert tree_step_race(upper, [(20, 20)], (16, 4)) is None  # a 2-D block: no thread index to read
    scan = [(((0,), (3,)), "wrote", "temp", [3], (4,), "read")]
    assert "scan step" in tree_step_race(scan, [(9, 9)], 64)[1]


def test_declared_mistakes_only_on_the_students_values():
    """A declared mistake is named only when the outputs are that mistake's (and not the reference's)."""
    import numpy as np

    from exercises import Case
    from lab.teach.diagnose import mistake_message

    x = np.array([1.0, -2.0, 3.0], np.float32)
    case = Case("c", [x], [((2,), np.float32)], [np.array([-2.0, 3.0])], [0.0], grid=1, block=4)
    mistakes = [("identity", lambda c: [np.array([-np.inf, np.inf])], "identities swapped")]
    assert mistake_message(mistakes, case, [np.array([-np.inf, np.inf], np.float32)]) == "identities swapped"
    assert mistake_message(mistakes, case, [np.array([-np.inf, 3.0], np.float32)]) is None
    same_as_ref = [("no-op", lambda c: [np.array([-2.0, 3.0])], "never")]
    assert mistake_message(same_as_ref, case, [np.array([-2.0, 3.0], np.float32)]) is None


# mutants whose first failing event depends on the data or the threads' order (an out-of-bounds access, a race,
# the loads of a launch): the class named must not depend on the seed
SEED_STABLE = ("strides exchanged", "left halo read without its test", "tree step with no thread test at all",
               "guard with the extents exchanged", "column loop over the rows", "b read at the thread's slot",
               "grid-stride step of one block", "wait placed after the barrier")


@pytest.mark.slow  # about 20 s: 8 mutants, two seeds each
def test_first_message_names_the_same_bug_for_two_seeds(tmp_path):
    picked = [m for m in H.MUTANTS if m[1] in SEED_STABLE]
    assert len(picked) == len(SEED_STABLE)
    first = int.from_bytes(os.urandom(4), "little")
    seeds = (first, first ^ 0x5EED)
    unstable = []
    for k, (ex, label, subs, cls) in enumerate(picked):
        path = tmp_path / f"{k}_{ex}.py"
        path.write_text(C.source(C.Wrong(ex, label, subs, [], [], cls)))
        kinds = []
        for seed in seeds:
            bad = C.first_failures(ex, path, seed, most=1)
            kinds.append((H.classify(bad[0]["message"], cls), bad[0]["message"][:200]) if bad else ("passed", ""))
        if any(kind != "named" for kind, _ in kinds):
            unstable.append(f"{ex} / {label} (seeds {seeds}): {kinds}")
    assert not unstable, "\n".join(unstable)


def test_index_label_only_on_its_evidence():
    """The launch-wide load rule: the index within the block (block 0 and another block seen), threadIdx.x
    for threadIdx.y, blockIdx times a literal, one constant shift; nothing for differences without a rule."""
    from lab.teach.diagnose import _index_label

    bd = [64, 1, 1]
    whos = [((0, 0, 0), (5, 0, 0)), ((1, 0, 0), (5, 0, 0)), ((2, 0, 0), (7, 0, 0))]
    assert _index_label([0, -64, -128], whos, bd) == ("local", 0)
    assert _index_label([0, -32, -64], whos, bd) == ("bstride", 0, 32)
    assert _index_label([3, 3, 3], whos, bd) == ("const", 3)
    assert _index_label([0, 0, 0], whos, bd) == ("same",)
    assert _index_label([0, 5, -9], whos, bd) is None
    assert _index_label([-64, -64], whos[1:2] * 2, bd)[0] == "const"  # block 1 alone: no evidence of block 0's 0
    sq = [((0, 0, 0), (1, 3, 0)), ((1, 0, 0), (4, 2, 0)), ((0, 1, 0), (2, 2, 0))]
    assert _index_label([-2, 2, 0], sq, [8, 8, 1]) == ("swap", 0, 1)


def test_out_of_bounds_advice_names_what_the_index_is():
    """A negative index beside the thread's own: a left halo cell, an index off by some, or (unknown) both;
    in shared memory a halo offset subtracted twice; the first index past an axis: a loop bound or an
    offset (another axis's size named); a row past the rows but below the columns: the guard's extents."""
    from lab.teach.indices import oob_advice

    who = ((0, 0, 0), (1, 0, 0))
    assert "left halo" in oob_advice((-2,), (10,), who, 64, 1, [(10,)], halo=True)
    assert "off by 3" in oob_advice((-2,), (10,), who, 64, 1, [(10,)], halo=False)
    both = oob_advice((-2,), (10,), who, 64, 1, [(10,)])
    assert "off by 3" in both and "left halo" in both
    assert "subtracted twice" in oob_advice((-2,), (70,), ((0, 0, 0), (1, 0, 0)), 64, 1, [(10,)], shared=True)
    loop = oob_advice((15, 13), (45, 13), ((0, 0, 0), (15, 0, 0)), 32, 2, [(45,)])
    assert "a loop bound" in loop and "shape[0] = 45" in loop
    # thread 13 of a 1-D launch over rows: its x equals the column 13 by chance; it is no extra thread
    assert "a loop bound" in oob_advice((13, 13), (45, 13), ((0, 0, 0), (13, 0, 0)), 32, 2, [(45,)])
    rows = oob_advice((39, 15), (37, 50), ((0, 4, 0), (15, 7, 0)), (16, 8), (4, 5), [(37, 50)])
    assert "compares the row with the number of columns" in rows


def test_fresh_classes_only_on_their_evidence():
    """Issue 41's second fresh set: each rule on its evidence and silent without it: a 2-D guard that
    misses a dimension or compares it with the other's size (from the thread's own row and column), a
    constant offset, every thread of a block running its atomic, a store in the file that no thread
    reached, block axes exchanged in a load index."""
    import numpy as np

    from lab.teach.diagnose import _index_label, repeated_atomic
    from lab.teach.indices import guard_dims
    from lab.teach.messages import offset_hint, store_in_source, unwritten_message

    assert "does not test the row" in guard_dims((0, 6, 0), [(1, 1)])
    assert "`<=`, or not at all" in guard_dims((0, 1, 0), [(1, 1)])
    assert "compares the row with the number of columns" in guard_dims((12, 14, 0), [(13, 21)])
    assert guard_dims((12, 12, 0), [(13, 21)]) is None and guard_dims((30, 14, 0), [(13, 21)]) is None
    ref = np.array([1.0, 2.0, 3.0])
    bad = np.ones(3, bool)
    assert "the expected value + 1 exactly" in offset_hint(ref + 1, ref, bad)
    assert offset_hint(ref * 2, ref, bad) is None
    one = np.ones(1, bool)
    assert "+ 1.5 exactly" in offset_hint(np.array([3.25]), np.array([1.75]), one)  # one element: a round number
    assert offset_hint(np.array([3.2512]), np.array([1.75]), one) is None
    one = {"arrays": [["x", 64, 4, False], ["out", 1, 4, True]], "per_thread": [[2, 1, t, 1] for t in range(64)]}
    assert "every thread of each block ran the atomic" in repeated_atomic(one, "out", 1, 64, 64)
    lane0 = {"arrays": one["arrays"], "per_thread": [[2, 1, t, 1] for t in (0, 32)]}
    assert repeated_atomic(lane0, "out", 1, 64, 64) is None  # two threads a block: not 64 times
    src = ["def k(x, out):", "    i = cuda.grid(1)", "    if i < x.shape[0] - 1:", "        out[i] = x[i]"]
    assert store_in_source(src, "out") == 4 and store_in_source(src, "x") == 0
    text = unwritten_message("out", np.ones(1, bool), 1, 32, stored_at="line 4: `out[i] = x[i]`")
    assert "drops the last index" in text
    assert "does your kernel store" in unwritten_message("out", np.ones(1, bool), 1, 32)
    whos = [((0, 0, 0), (3, 0, 0)), ((1, 0, 0), (3, 0, 0)), ((0, 1, 0), (3, 0, 0)), ((2, 1, 0), (1, 0, 0))]
    assert _index_label([0, 16, -16, 16], whos, [32, 1, 1]) == ("bswap", 0, 1, 16)
    assert _index_label([0, 16, 16, 16], whos, [32, 1, 1]) is None  # block (0, 1) moved the other way
    lanes = [((2, 0, 0), (1, 0, 0)), ((2, 0, 0), (4, 0, 0)), ((1, 0, 0), (3, 0, 0))]
    assert _index_label([-1, 2, 2], lanes, [32, 1, 1]) == ("tforb", 0)  # threadIdx.x where blockIdx.x belongs
    block0 = [((0, 0, 0), (1, 0, 0)), ((0, 0, 0), (4, 0, 0))]  # block 0 alone: blockIdx.x is 0, nothing to tell
    assert _index_label([1, 4], block0, [32, 1, 1]) != ("tforb", 0)
