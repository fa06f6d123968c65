"""The simulator tracer's raw counts of one launch, as the executor hands them back (the counting
half of the mapping lessons, next to the student's code in the checker's child; the judging half,
:func:`lab.teach.lessons.facts_from_counts`, runs in the judge's process). Thread ids: a launch-wide
linear id, block x fastest, then the thread's (CUDA C++ Programming Guide, "Thread Hierarchy");
32-byte sectors per warp request (CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory")."""
from __future__ import annotations

from lab.core.trace import site_line

SECTOR = 32  # bytes of a global memory sector


def dims3(d) -> list:
    """A grid or block (an int, or a tuple of 1-3 ints) as 3 ints, the missing ones 1."""
    d = [int(v) for v in d] if hasattr(d, "__len__") else [int(d)]
    return d + [1] * (3 - len(d))


KINDS = ("load", "store", "atomic")


def thread_id(who, g, b) -> int:
    """The launch-wide linear id of ``who`` = (block, thread): block x fastest, then the thread's."""
    (bx, by, bz), (tx, ty, tz) = (tuple(who[0]) + (0, 0))[:3], (tuple(who[1]) + (0, 0))[:3]
    return ((bx + g[0] * (by + g[1] * bz)) * (b[0] * b[1] * b[2])) + tx + b[0] * (ty + b[1] * tz)


def who_of(tid: int, g, b) -> tuple:
    """The (block, thread) of launch-wide linear id ``tid`` (:func:`thread_id`'s inverse)."""
    per = b[0] * b[1] * b[2]
    blk, t = divmod(int(tid), per)
    return ((blk % g[0], blk // g[0] % g[1], blk // (g[0] * g[1])), (t % b[0], t // b[0] % b[1], t // (b[0] * b[1])))


def stats_counts(stats, grid, block) -> dict:
    """What the tracer counted in one launch (:class:`lab.core.simt.Stats`), as raw counts the
    judge derives the lesson's facts from (:func:`lab.teach.lessons.facts_from_counts`): ``arrays`` ([name, elements,
    bytes an element, output?], the tracer's order), ``per_thread`` (rows [kind: 0 load, 1 store,
    2 atomic, array, thread id, accesses]), ``stored`` (rows [array, thread id, distinct elements
    it stored]), ``requests`` (rows [kind, array, elements, 32-byte sectors] of each warp request),
    ``load_lines`` (rows [array, thread id, line of the kernel's file, loads, lowest and highest flat
    index loaded there]: where each thread loaded, and what),
    ``atomic_elements`` and ``block_elements`` (per array: elements updated atomically; distinct
    (block, element) loads), ``shared_read_max`` ([thread id, plain shared-memory reads] of the thread
    that made the most), the scalar counts. Thread ids: :func:`thread_id`. Executor side."""
    g, b = dims3(grid), dims3(block)
    names = list(stats.size)
    index = {n: k for k, n in enumerate(names)}
    ids: dict = {}  # who -> thread id, each thread's once (a launch's accesses name the same threads again and again)

    def tid(who) -> int:
        got = ids.get(who)
        if got is None:
            got = ids[who] = thread_id(who, g, b)
        return got

    per_thread = [[KINDS.index(kind), index[name], tid(who), int(c)]
                  for (name, kind), d in stats.per_thread.items() if name in index for who, c in d.items()]
    stored = [[index[name], tid(who), len(flats)]
              for name, d in stats.stored.items() if name in index for who, flats in d.items()]
    load_lines: dict = {}  # (array, thread id, line) -> [loads, lowest flat, highest flat]
    for key0, c in stats._seen.items():
        kind, name, blk, thread, site = key0
        if kind == "load" and name in index and site is not None:
            key = (index[name], tid((blk, thread)), site_line(site))
            lo, hi = stats.span.get(key0, (0, 0))
            row = load_lines.get(key)
            if row is None:
                load_lines[key] = [int(c), int(lo), int(hi)]
            else:
                row[0] += int(c)
                row[1], row[2] = min(row[1], int(lo)), max(row[2], int(hi))
    requests = []
    for (kind, name, _blk, _warp, _site, _n), flats in stats.requests.items():
        if name not in index:
            continue
        isz = stats.itemsize.get(name, 4) or 4
        requests.append([KINDS.index(kind), index[name], len(flats), len({f * isz // SECTOR for f in flats})])
    top = max(stats.shared_reads.items(), key=lambda kv: kv[1], default=None)
    return {"arrays": [[n, int(stats.size[n]), int(stats.itemsize.get(n, 4) or 4), bool(stats.output.get(n))]
                       for n in names],
            "per_thread": per_thread, "stored": stored, "requests": requests,
            "load_lines": [[a, t, ln, c, lo, hi] for (a, t, ln), (c, lo, hi) in load_lines.items()],
            "atomic_elements": [len(stats.atomic_elems.get(n, ())) for n in names],
            "block_elements": [len(stats.block_loads.get(n, ())) for n in names],
            "shared_accesses": int(stats.shared_accesses), "warp_collectives": int(stats.warp_collectives),
            "shared_read_max": [tid(top[0]), int(top[1])] if top else [0, 0],
            "async_copies": int(stats.async_copies), "async_groups": int(stats.async_groups),
            "async_overlap": int(stats.async_overlap), "shared_atomics": int(getattr(stats, "shared_atomics", 0)),
            "mma_calls": int(getattr(stats, "mma_calls", 0)), "async_loads": int(getattr(stats, "async_loads", 0))}
