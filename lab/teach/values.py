"""Value evidence for a wrong float output that names its cause by itself (used by the checker where
no trace fact is stronger): every wrong element a whole number where the expected values have a
fraction (a value went through an integer). Pure functions of the outputs; None where the evidence
does not single the cause out.
"""
from __future__ import annotations

import math

import numpy as np
from lab.teach.contained.counts import dims3, thread_id, who_of
from lab.teach.messages import quote, fmt_who
from lab.teach.reference import reference


def whole_number_hint(out64, ref, bad, dtype) -> str | None:
    """The fraction-dropped hint: a float output whose wrong elements are all whole numbers, where the
    expected values at those elements are not and at least one is 1 or more in magnitude (a 0 alone is
    no evidence: nothing added gives it too)."""
    if np.dtype(dtype).kind != "f" or not bad.any():
        return None
    o, r = np.asarray(out64, np.float64)[bad], np.asarray(ref, np.float64)[bad]
    if not (np.all(np.isfinite(o)) and np.all(np.isfinite(r))):
        return None
    if not np.all(o == np.round(o)) or np.any(r == np.round(r)) or not np.any(np.abs(r) >= 1) or not np.any(o):
        return None
    return ("every wrong element is a whole number where the expected value has a fraction: the fraction was "
            "dropped on the way: a value went through an integer (a shared array or variable declared int32, int(), "
            "or // where / was meant): keep it float32")


def output_read_first(counts, oname: str, who, flat: int, grid, block, source=None) -> str | None:
    """Why output element ``flat`` of ``oname``, written by ``who``, is NaN when its writer also loaded
    that element of the output (the tracer's ``load_lines``: an ``out[i] += ...`` on an output that
    starts as garbage, NaN in the simulator); None when the writer did not read it."""
    if not counts:
        return None
    arrays = counts.get("arrays") or []
    tid = thread_id(who, dims3(grid), dims3(block))
    lines = sorted(int(r[2]) for r in counts.get("load_lines") or () if len(r) == 6 and 0 <= int(r[0]) < len(arrays)
                   and arrays[int(r[0])][0] == oname and int(r[1]) == tid and int(r[4]) <= flat <= int(r[5]))
    if not lines:
        return None
    at = quote(source, lines[0]) if lines[0] > 0 else ""
    return (f"its writer read {oname} itself{f' at {at}' if at else ''}: an output starts with whatever memory held "
            f"(NaN in the simulator), so adding into it (`+=`) adds to garbage: accumulate in a local variable that "
            f"starts at 0.0 and store the result once (or store 0 before adding)")


LAST_TERM_RESET = ": the accumulator is reset inside the loop"  # exercises.sum_hints' words for "the last term only"


def repeated_store_words(counts, oname: str, who, grid, block, at: str = "") -> str | None:
    """Why an output element is its sum's last term only, where its writer stored it many times (the
    tracer's per-thread stores and distinct elements stored: one element, ``m`` > 1 stores): the store
    sits inside the loop, each step's term replacing the one before, and no running sum was kept.
    ``at``: the store's quoted line. None when the writer stored the element once (an accumulator reset
    in the loop then)."""
    if not counts:
        return None
    names = [a[0] for a in counts.get("arrays") or ()]
    if oname not in names:
        return None
    k, tid = names.index(oname), thread_id(who, dims3(grid), dims3(block))
    stores = sum(int(c) for kd, a, t, c in counts.get("per_thread") or () if int(kd) == 1 and int(a) == k and int(t) == tid)
    distinct = [int(n) for a, t, n in counts.get("stored") or () if int(a) == k and int(t) == tid]
    if stores < 2 or distinct != [1]:
        return None
    return (f": its writer stored it {stores} times{f' at {at}' if at else ''}, once at every step of the loop, each "
            f"store replacing the one before: the terms are never added up: add them into a local accumulator inside "
            f"the loop (acc += ...) and store it once, after the loop")


def last_term_words(extra: str, counts, oname: str, who, grid, block, at: str = "") -> str:
    """``extra`` (exercises.sum_hints' "the last term only" words) with :func:`repeated_store_words` in place of
    its accumulator-reset guess where the writer ``who`` stored the element many times; else ``extra``."""
    again = repeated_store_words(counts, oname, who, grid, block, at) if who is not None else None
    return extra[:extra.index(LAST_TERM_RESET)] + again if again and LAST_TERM_RESET in extra else extra


def index_shift_hint(out64, ref, bad, most: int = 4) -> str | None:
    """'each value landed d elements below (above) its own' when a 1-D output is the reference moved by
    one constant d (1 <= |d| <= ``most``): out[k] = ref[k + d] wherever k + d is inside, and at least two
    of the moved elements are non-zero (a lone non-zero element moves the same way whatever the rule);
    None otherwise."""
    o, r = np.asarray(out64, np.float64), np.asarray(ref, np.float64)
    if o.ndim != 1 or o.size < 3 or not bad.any() or not np.all(np.isfinite(o)) or not np.all(np.isfinite(r)):
        return None
    for d in [v for k in range(1, most + 1) for v in (k, -k)]:
        a, b = (o[:o.size - d], r[d:]) if d > 0 else (o[-d:], r[:r.size + d])
        if np.count_nonzero(b) < 2 or not np.allclose(a, b, rtol=1e-5, atol=1e-6) or np.allclose(o, r, rtol=1e-5, atol=1e-6):
            continue
        where = "below" if d > 0 else "above"
        return (f"every value landed {abs(d)} element{'s' if abs(d) > 1 else ''} {where} its own: out[k] holds what "
                f"out[k {'+' if d > 0 else '-'} {abs(d)}] should: the index of the store (or of the load) is "
                f"{abs(d)} too {'small' if d > 0 else 'large'} (a {'- ' if d > 0 else '+ '}{abs(d)} in it?)")
    return None


def blocks_without_atomic(counts, oname: str, grid, block) -> str | None:
    """Why a grid-wide accumulator misses blocks' partials, from the tracer's per-thread atomics: some
    blocks ran an atomic into ``oname`` and the others none, though every block loaded its data (did
    its work); None otherwise."""
    if not counts:
        return None
    g, b = dims3(grid), dims3(block)
    per = math.prod(b)
    nblocks = math.prod(g)
    arrays = counts.get("arrays") or []
    names = [a[0] for a in arrays]
    if oname not in names or nblocks < 2:
        return None
    k = names.index(oname)
    atomic_blocks, loading, threads = set(), set(), set()
    for kind, a, tid, c in counts.get("per_thread") or ():
        if int(c) <= 0:
            continue
        if int(kind) == 2 and int(a) == k:
            atomic_blocks.add(int(tid) // per)
            threads.add(int(tid))
        elif int(kind) == 0 and not arrays[int(a)][3]:
            loading.add(int(tid) // per)
    if not atomic_blocks or len(loading) < nblocks or len(atomic_blocks) >= nblocks:
        return None
    ran = sorted(atomic_blocks)
    which = f"block {ran[0]}" if len(ran) == 1 else f"blocks {', '.join(map(str, ran[:4]))}"
    head = (f"only {which} of the {nblocks} blocks ran the atomic into {oname}, though every block loaded its data: "
            f"the test around the atomic lets through threads of {'one block' if len(ran) == 1 else 'some blocks'} only")
    each = len(threads) // len(ran)
    if each > 1:  # several threads a block merge (one per bin, say): every block must run that merge
        return (f"{head} ({each} threads a block in {'that block' if len(ran) == 1 else 'those blocks'}, none in the "
                f"others): each block's result is lost unless the block adds it: every block runs the same merge "
                f"of its own partials into {oname} (no test on the block's index)")
    return (f"{head} (a global index such as i == 0?): each block's thread 0 adds its block's partial, "
            f"`if cuda.threadIdx.x == 0:`")


def tile_extent_fact(ex, case, name: str, shape) -> str | None:
    """Which of :data:`lab.teach.shared_words.TILE_CHOICE` the reference solution's run on ``case``
    supports for the student's 2-D shared tile ``name`` of ``shape``: the reference reads a tile of that
    name at flat cells past the student's size (the tile is declared too small), or only inside it
    (the index runs past the tile); None when the reference has no tile of that name or cannot run."""
    if not getattr(ex, "has_solution", False):
        return None
    ref = reference(ex, case)
    cells = getattr(getattr(ref[1], "stats", None), "shared_cells", {}).get(name) if ref is not None else None
    if not cells:
        return None
    size = math.prod(int(v) for v in shape)
    if max(cells) >= size:
        return (f"the reference solution's {name} holds more: its block reads {name} up to cell {max(cells)} (flat), "
                f"past your {size}: declare the tile with the extent its loop fills (the whole tile, e.g. "
                f"(TILE, TILE + 1)), not the block's shape")
    return (f"the reference solution reads {name} only inside {tuple(shape)}: this index runs past the tile: a loop "
            f"over the tile's cells runs to the tile's size (range(TILE)), not to the matrix's")


def last_loaded_words(counts, case, grid, block, source=None) -> str | None:
    """Where the result leaves out the input's last element (:data:`exercises.LAST_LEFT_OUT`, from the
    values): whether a thread loaded that element at all, from the tracer's ``load_lines`` (each row's
    highest index is one it loaded). Loaded: it was lost where the block's values were combined, not
    at the guard (the words say so, with the thread and the line); None when no thread loaded it (the
    guard's guess stands) or the input is not found (the kernel's first input of the case's size)."""
    if not counts or not case.args:
        return None
    n = int(np.size(case.args[0]))
    arrays = counts.get("arrays") or []
    inputs = [k for k, a in enumerate(arrays) if not a[3] and int(a[1]) == n]
    if n < 2 or not inputs:
        return None
    x = arrays[inputs[0]][0]
    rows = [r for r in counts.get("load_lines") or () if len(r) == 6 and int(r[0]) == inputs[0] and int(r[5]) == n - 1]
    if not rows:
        return None
    g, b = dims3(grid), dims3(block)
    who = who_of(int(rows[0][1]), g, b)
    nd = max(len(block) if isinstance(block, tuple) else 1, 1)
    at = quote(source, int(rows[0][2])) if int(rows[0][2]) > 0 else ""
    return (f"the last element, {x}[{n - 1}], is left out of the result, though {fmt_who(who, nd)} loaded it"
            f"{f' at {at}' if at else ''}: the guard let it in, and it was lost where the block's values were "
            f"combined: does the combine reach every cell (a tree's first step is s = half the block, whatever n is, "
            f"and each step keeps the pair's min and max)?")
