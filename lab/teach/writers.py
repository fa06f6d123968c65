"""Why an output element has more than one writer, from the writers the simulator recorded and each
writer's loads (the tracer's ``load_lines`` table): every thread of one block computing the same
element (its index from the block alone), every thread of a block storing a value the block combined
(the store not restricted to one thread), or a loop whose step is the block's size (blocks overlap).
Pure functions of the judge's data; None where the evidence does not single one of them out.

Source: CUDA C++ Programming Guide, "Thread Hierarchy" (cuda.grid, the grid's size).
"""
from __future__ import annotations

import math

from lab.teach.contained.counts import dims3, thread_id


def _by_thread(writer: dict, others: dict) -> dict:
    """{(block, thread): sorted flat indices it stored} over every recorded writer."""
    out: dict = {}
    for f, w in writer.items():
        out.setdefault((tuple(w[0]), tuple(w[1])), set()).add(int(f))
    for f, ws in others.items():
        for w in ws:
            out.setdefault((tuple(w[0]), tuple(w[1])), set()).add(int(f))
    return {k: sorted(v) for k, v in out.items()}


def _loads(counts, tid: int) -> dict:
    """{(array, line): (loads, lowest, highest)} thread ``tid`` made (the ``load_lines`` table)."""
    arrays = counts.get("arrays") or []
    out = {}
    for r in counts.get("load_lines") or ():
        if len(r) == 6 and int(r[1]) == tid and 0 <= int(r[0]) < len(arrays):
            out[(arrays[int(r[0])][0], int(r[2]))] = (int(r[3]), int(r[4]), int(r[5]))
    return out


def many_writers_cause(name, shape, writer: dict, others: dict, grid, block, counts=None) -> str | None:
    """The cause of the first element of output ``name`` (``shape``) with several writers, where the
    evidence names one: see the module's doc. ``writer``: flat -> (block, thread) of the first store;
    ``others``: flat -> the other writers; ``counts``: the tracer's raw counts (None: no loads known)."""
    if not others:
        return None
    flat = min(others)
    who = [writer[flat], *others[flat]]
    blocks = {tuple(w[0]) for w in who}
    g, b = dims3(grid), dims3(block)
    per = _by_thread(writer, others)
    idx = ", ".join(str(v) for v in _unravel(flat, shape))
    el = f"{name}[{idx}]"
    if len(blocks) == 1 and len(who) > 1 and all(len(per[(tuple(w[0]), tuple(w[1]))]) == 1 for w in who):
        blk = tuple(who[0][0])[:max(1, sum(1 for v in g if v > 1))]
        bt = blk[0] if len(blk) == 1 else blk
        if counts is None:
            return None
        loads = [_loads(counts, thread_id(w, g, b)) for w in who]
        if all(ld == loads[0] for ld in loads) and loads[0]:
            return (f"{el} was written by {len(who)} threads of block {bt}, each storing only it, and each read the "
                    f"same input elements: every thread of the block computed the same element: its index comes "
                    f"from the block alone (cuda.blockIdx.x): give each thread its own element (cuda.grid(1), "
                    f"blockIdx.x * blockDim.x + threadIdx.x)")
        if any(ld != loads[0] for ld in loads):
            return (f"{el} was written by {len(who)} threads of block {bt}, each storing only it, after reading "
                    f"different input elements (each its part): every thread of the block stores the element the "
                    f"block computes together: only one thread stores it, after the partials are combined (e.g. "
                    f"`if cuda.threadIdx.x == 0:`, storing the combined value)")
        return None
    nblocks = math.prod(g)
    if len(blocks) == len(who) == nblocks > 1 and len(tuple(shape)) == 1 and g[1:] == [1, 1] and b[1:] == [1, 1]:
        first = per.get(((0, 0, 0)[:len(tuple(who[0][0]))], (0, 0, 0)[:len(tuple(who[0][1]))]))
        steps = {v[1] - v[0] for v in per.values() if len(v) > 1}
        starts_own = all(v[0] == int(k[0][0]) * b[0] + int(k[1][0]) for k, v in per.items())
        if first and steps == {b[0]} and starts_own:
            return (f"{el} was written by {len(who)} threads, one per block: each thread starts at its own global "
                    f"index but its loop steps by the block's size (blockDim.x = {b[0]}), so each block runs on to the end over the "
                    f"next blocks' elements: step by the grid's size, cuda.gridsize(1) = blockDim.x * gridDim.x")
    return None


def _unravel(flat: int, shape) -> tuple:
    shape = tuple(int(v) for v in shape)
    if not shape:
        return (0,)
    out = []
    for n in reversed(shape):
        flat, r = divmod(flat, n)
        out.append(r)
    return tuple(reversed(out))
