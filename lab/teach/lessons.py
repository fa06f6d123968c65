"""Mapping lessons graded on mapping: an exercise declares what it teaches (``LESSON`` in
``exercises/<name>/meta.py``) and a kernel that reaches the right values another way fails, with a
message that names the lesson.

Two pure functions, so that the counting (next to the student's code, in the checker's child) and
the judging (where the verdict is computed) can live in different processes:

* :func:`mapping_facts` turns what the simulator's tracer counted (:class:`lab.core.simt.Stats`)
  into a dict of JSON-able numbers;
* :func:`lesson_message` judges those facts against a lesson: None when the kernel maps the work
  as the lesson asks, else one line for the student.

Lessons (:data:`LESSONS`):

* ``one_element_per_thread``: every thread stores at most one output element (no loop over the
  data: a grid-stride loop is fine where the grid covers the data), and a block is at least a warp;
* ``block_reduction`` / ``block_scan``: a block's threads share the work (no thread loads far more of
  the data than its share, and in a block of at least a warp no thread reads shared memory as many
  times as the block has threads: one thread summing the shared cells in a loop) and the block combines its values before it adds them into a global
  result (failed: more than one atomic a block and output element while the atomics number at
  least half the loads of the data, i.e. about one atomic per data element);
* ``warp_shuffle``: the reduction uses warp shuffles;
* ``coalesced``: the global loads and the global stores each take at most :data:`SECTOR_RATIO` x the
  32-byte sectors per warp request that their bytes need (consecutive threads, consecutive addresses);
* ``shared_reuse``: a block loads each element of its large inputs from global memory about once
  (at most :data:`RELOAD_RATIO` loads per distinct element a block), reading the reuse from shared
  memory;
* ``tensor_core``: the warp's fragments go through ``mma_tf32`` (kernels.gemm.mma), a warp collective,
  and every block stores (its own tile: one block doing every tile is not the mapping taught);
* ``async_overlap``: the tiles travel by ``cp_async4``/``cp_async16`` (kernels.gemm.mma), and where a
  thread committed at least two groups of copies, some thread read shared memory while copies of its
  own were in flight (the next tile's copy overlaps the products of this one: not one buffer with a
  wait(0) at every tile, not the next tile issued only after the products). Counted with
  kernels.gemm.mma's emulation, so judged in the simulator.

Sources: CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory" and "Shared Memory";
CUDA C++ Programming Guide, "Thread Hierarchy", "Atomic Functions", "Warp Shuffle Functions".
"""
from __future__ import annotations

import math

from lab.teach.contained.counts import KINDS, SECTOR, dims3, stats_counts, who_of

LESSONS = ("one_element_per_thread", "block_reduction", "block_scan", "warp_shuffle", "coalesced",
           "shared_reuse", "tensor_core", "async_overlap")
SECTOR_RATIO = 2.0    # coalesced: sectors per request at most this x what the request's bytes need
RELOAD_RATIO = 2.0    # shared_reuse: global loads per distinct element a block, at most
MIN_REQUESTS = 4      # coalesced: judged only with at least this many warp requests of a kind
SERIAL_FACTOR = 4     # block_*: a thread may load at most this x its share of the data (+ SERIAL_SLACK)
SERIAL_SLACK = 4
WARP = 32


def _who(who) -> list:
    b, t = who
    return [list(map(int, b)), list(map(int, t))]


def mapping_facts(trace, writers, grid, block, outputs) -> dict:
    """What the launch's threads did, as JSON-able numbers: :func:`facts_from_counts` of the trace's
    counts (:func:`stats_counts`). trace: the :class:`lab.core.simt.Trace` of one simulated launch."""
    return facts_from_counts(stats_counts(trace.stats, grid, block), writers, grid, block, outputs)


def facts_from_counts(counts: dict, writers, grid, block, outputs) -> dict:
    """What the launch's threads did, as JSON-able numbers (the judge's side), from the tracer's raw
    counts ``counts`` (:func:`stats_counts`).

    writers: per output, the {flat index: (block, thread)} of its first writer; grid, block: the
    launch configuration (an int or a tuple of 1-3 ints); outputs: the kernel's names of the output
    arrays, in order. Keys:
    ``grid``, ``block`` (3 ints), ``blocks``, ``threads_per_block``, ``elements`` (output elements),
    ``blocks_writing`` and ``threads_writing`` (stored to or atomically updated an output),
    ``max_stored`` (distinct output elements one thread stored) and ``max_stored_by`` ([block,
    thread] or None), ``atomics``, ``atomic_elements``, ``blocks_atomic``, ``threads_atomic``, ``shared_accesses``,
    ``warp_collectives``, ``mma_calls`` (mma_tf32 calls), ``async_loads`` (the inputs' loads cp.async made),
    ``shared_read_max`` and ``shared_read_max_by`` (the most plain shared-memory reads
    one thread made, and that thread or None), ``async_copies`` (cp.async copies issued), ``async_groups`` (the most groups
    holding copies that one thread committed), ``async_overlap`` (1 once a thread read shared memory with
    copies of its own in flight; the three counted with kernels.gemm.mma's emulation), ``load`` and
    ``store`` ({"requests", "sectors", "ideal_sectors"} of the global accesses per warp request),
    ``inputs`` (per input array, largest first: {"name", "size", "loads", "blocks_loading" (blocks that
    loaded any of it), "block_elements" (distinct (block, element) loads), "max_loads", "max_loads_by"}).
    """
    g, b = dims3(grid), dims3(block)
    arrays = counts["arrays"]
    index = {a[0]: k for k, a in enumerate(arrays)}
    size = {a[0]: int(a[1]) for a in arrays}
    itemsize = {a[0]: int(a[2]) for a in arrays}
    outs = [index[n] for n in outputs if n in index]
    elements = sum(size[arrays[k][0]] for k in outs) or sum(len(w) for w in (writers or []))
    writing, atomic_threads, atomics = set(), set(), 0
    max_stored, max_by = 0, None
    for out in outs:  # the outputs' order, then the tracer's: the first thread with the most is named
        for k, tid, n in counts["stored"]:
            if k == out:
                writing.add(tid)
                if n > max_stored:
                    max_stored, max_by = n, tid
    per_load: dict = {}
    for kind, k, tid, c in counts["per_thread"]:
        if kind == 2 and k in outs:
            writing.add(tid)
            atomic_threads.add(tid)
            atomics += c
        elif kind == 0:
            per_load.setdefault(k, []).append((tid, c))
    req = {kind: {"requests": 0, "sectors": 0, "ideal_sectors": 0} for kind in ("load", "store")}
    for kind, k, nflat, sectors in counts["requests"]:
        if kind not in (0, 1):
            continue
        r = req[KINDS[kind]]
        isz = itemsize.get(arrays[k][0], 4) or 4
        r["requests"] += 1
        r["sectors"] += sectors
        r["ideal_sectors"] += max(1, math.ceil(nflat * isz / SECTOR))
    inputs = []
    for k, (name, n, _isz, is_out) in enumerate(arrays):
        if is_out:
            continue
        per = per_load.get(k, [])
        top = max(per, key=lambda kv: kv[1]) if per else None
        inputs.append({"name": name, "size": int(n), "loads": int(sum(c for _, c in per)),
                       "blocks_loading": len({tid // max(1, b[0] * b[1] * b[2]) for tid, _ in per}),
                       "block_elements": int(counts["block_elements"][k]),
                       "max_loads": int(top[1]) if top else 0,
                       "max_loads_by": _who(who_of(top[0], g, b)) if top else None})
    inputs.sort(key=lambda d: -d["size"])
    per_block = b[0] * b[1] * b[2]
    top_shared = counts.get("shared_read_max") or [0, 0]
    return {"grid": g, "block": b, "blocks": math.prod(g), "threads_per_block": math.prod(b),
            "elements": int(elements), "blocks_writing": len({t // per_block for t in writing}),
            "threads_writing": len(writing), "max_stored": int(max_stored),
            "max_stored_by": _who(who_of(max_by, g, b)) if max_by is not None else None,
            "atomics": int(atomics), "atomic_elements": int(sum(counts["atomic_elements"][k] for k in outs)),
            "blocks_atomic": len({t // per_block for t in atomic_threads}), "threads_atomic": len(atomic_threads),
            "shared_accesses": int(counts["shared_accesses"]), "warp_collectives": int(counts["warp_collectives"]),
            "shared_read_max": int(top_shared[1]),
            "shared_read_max_by": _who(who_of(top_shared[0], g, b)) if top_shared[1] else None,
            "async_copies": int(counts["async_copies"]), "async_groups": int(counts["async_groups"]),
            "async_overlap": int(counts["async_overlap"]), "shared_atomics": int(counts.get("shared_atomics", 0)),
            "mma_calls": int(counts.get("mma_calls", 0)), "async_loads": int(counts.get("async_loads", 0)),
            "load": req["load"], "store": req["store"], "inputs": inputs}


def _fmt(v: list) -> str:
    v = list(v)
    while len(v) > 1 and v[-1] == 0:
        v.pop()
    return str(v[0]) if len(v) == 1 else "(" + ", ".join(map(str, v)) + ")"


def _thread(who) -> str:
    return f"thread {_fmt(who[1])} of block {_fmt(who[0])}" if who else "a thread"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def lesson_message(lesson, facts: dict, launch: str | None = None, output: str = "the output") -> str | None:
    """None when ``facts`` (:func:`mapping_facts`) show the mapping that ``lesson`` teaches, else one
    line that starts "right values, but" and names the lesson (judge side).

    lesson: a name of :data:`LESSONS`, a sequence of them, or None (nothing to judge); launch: the
    student's launch function when it chose the grid (None: the checker's grid); output: the name of
    the first output, for the text. Unknown lesson names raise ValueError.
    """
    if not lesson or not facts:
        return None
    for one in ((lesson,) if isinstance(lesson, str) else tuple(lesson)):
        if one not in LESSONS:
            raise ValueError(f"unknown lesson {one!r}; choose from: {', '.join(LESSONS)}")
        msg = _JUDGES[one](facts, launch, output)
        if msg:
            return msg
    return None


def _one_element(f, launch, output):
    elements, tpb = f["elements"], f["threads_per_block"]
    if f["max_stored"] > 1 and elements > 1:
        by = f["max_stored_by"]
        fix = ("launch enough blocks to cover the data (blocks = ceiling of n / threads)" if launch else
               "the checker launches enough threads for every element: use the thread's global index "
               "(cuda.grid) and no loop")
        if f["blocks_writing"] == 1 and f["blocks"] == 1:
            return (f"right values, but one block did all the work: its {_plural(f['threads_writing'], 'thread')} "
                    f"wrote all {elements} elements of {output}, up to {f['max_stored']} each (a loop): this "
                    f"exercise is about giving each thread one element: {fix}")
        if f["blocks_writing"] == 1:
            return (f"right values, but one block did all the work ({_plural(f['blocks'], 'block')} launched): "
                    f"{_thread(by)} wrote {f['max_stored']} elements of {output} (a loop): this exercise is about "
                    f"giving each thread one element: {fix}")
        return (f"right values, but {_thread(by)} wrote {f['max_stored']} elements of {output} (a loop over "
                f"the data): this exercise is about giving each thread one element: {fix}")
    if launch and tpb < WARP and elements >= 2 * WARP:
        swapped = f["blocks"] % WARP == 0 and WARP <= f["blocks"] <= 1024  # the grid looks like a block size
        return (f"right values, but your {launch}() gives blocks of {_plural(tpb, 'thread')} "
                f"(grid {_fmt(f['grid'])}, block {_fmt(f['block'])}): a warp is 32 threads, so "
                f"{WARP - tpb} of every 32 lanes idle: this exercise is about one element per thread in full "
                f"blocks" + ("; does it return (threads, blocks)? it must return (blocks per grid, threads per "
                             "block)" if swapped else "; use blocks of at least 32 threads (128 or 256)"))
    return None


def _block_work(what):
    def judge(f, launch, output):
        launched = f["blocks"] * f["threads_per_block"]
        data_loads = f["inputs"][0]["loads"] if f["inputs"] else 0
        warps = -(-f["threads_per_block"] // WARP)
        # more than one atomic a block and output element, about one a data element, from more threads
        # than lane 0 of each warp (a per-warp combine is a reduction too)
        if (f["atomics"] > max(1, f["blocks_atomic"]) * max(1, f["atomic_elements"])
                and 2 * f["atomics"] >= data_loads
                and f["threads_atomic"] > 2 * warps * max(1, f["blocks_atomic"])):
            per = f["atomics"] / max(1, f["blocks_atomic"])
            return (f"right values, but {f['atomics']} atomic updates of {output} from "
                    f"{_plural(f['blocks_atomic'], 'block')} ({per:.3g} a block for "
                    f"{_plural(f['atomic_elements'], 'element')}: about one per data element): this exercise is "
                    f"about {what}: combine the block's values in shared memory (or with warp shuffles) first, "
                    f"then one atomic per block and output element")
        if f["inputs"]:
            big = f["inputs"][0]
            if (f["blocks"] > 1 and f["blocks_writing"] == 1 and big.get("blocks_loading") == 1
                    and big["size"] > f["threads_per_block"]):
                return (f"right values, but one block did all the work: of {_plural(f['blocks'], 'block')} launched, "
                        f"one loaded all {big['size']} elements of {big['name']} and wrote {output}; the other "
                        f"{f['blocks'] - 1} did nothing: this exercise is about {what}: each block combines its own "
                        f"elements (blockIdx.x * blockDim.x + threadIdx.x), then adds its one result")
            tpb = f["threads_per_block"]
            if tpb >= WARP and f.get("shared_read_max", 0) >= tpb:  # a tree reads about 2 log2(tpb) cells a thread
                return (f"right values, but {_thread(f['shared_read_max_by'])} read shared memory "
                        f"{f['shared_read_max']} times by itself, as many as its block has threads ({tpb}; a tree "
                        f"step reads 2 cells, about {2 * max(1, tpb.bit_length() - 1)} a thread in all): this "
                        f"exercise is about {what}: the block's threads combine the shared values together (a "
                        f"tree: at each step half of them add a cell of the other half, a barrier between steps), "
                        f"not one thread in a loop")
            share = math.ceil(big["size"] / max(1, launched))
            if big["max_loads"] > SERIAL_FACTOR * share + SERIAL_SLACK:
                return (f"right values, but {_thread(big['max_loads_by'])} loaded {big['max_loads']} elements of "
                        f"{big['name']} by itself (its share: about {share}): this exercise is about {what}: "
                        f"each thread loads its own element(s) and the block's threads combine them together "
                        f"(a tree in shared memory or warp shuffles), not one thread in a loop")
        return None
    return judge


SHARED_PER_THREAD = 2  # warp_shuffle: shared-memory accesses a block may make, per thread (a tree makes ~4)


def _warp_shuffle(f, launch, output):
    if f["warp_collectives"] == 0:
        return ("right values, but no warp shuffle ran: this exercise is about reducing a warp's values in "
                "registers with cuda.shfl_down_sync (then one shared slot a warp), not a tree in shared memory")
    per_block = f["shared_accesses"] / max(1, f["blocks"])
    if per_block > SHARED_PER_THREAD * f["threads_per_block"]:  # a shuffle beside a tree does not make it one
        return (f"right values, but each block made about {round(per_block)} shared-memory accesses for its "
                f"{f['threads_per_block']} threads: a tree in shared memory, not warp shuffles (a warp reduces "
                f"in registers with cuda.shfl_down_sync; shared memory holds one slot a warp)")
    return None


def _tensor_core(f, launch, output):
    if f.get("mma_calls", 0) == 0:  # (another warp collective is no mma: a shuffle beside plain FMAs)
        return ("right values, but mma_tf32 never ran: this exercise is about the tensor cores' fragments: "
                "each lane loads its a0..a3 and b0, b1, the warp calls mma_tf32 together, and each lane "
                "stores its c0..c3")
    if f["blocks_writing"] < f["blocks"]:
        idle = f["blocks"] - f["blocks_writing"]
        return (f"right values, but {_plural(idle, 'block')} of {f['blocks']} stored nothing to {output} while "
                f"other blocks computed its tiles: this exercise is about one warp per 16 x 8 tile: block "
                f"(bx, by) computes the tile at rows 16*by.., columns 8*bx.. (r0 and c0 from cuda.blockIdx)")
    return None


def _async_overlap(f, launch, output):
    if not f.get("async_copies", 0):
        return ("right values, but no cp_async4 (or cp_async16) ran: this exercise is about asynchronous "
                "copies: each thread issues its elements of the next tiles of A and B with cp_async4, commits "
                "them, and waits for them with cp_async_wait before the barrier")
    plain = sum(i["loads"] for i in f.get("inputs", ())) - f.get("async_loads", 0)
    if plain > f.get("async_loads", 0):  # a copy beside the tiles' plain loads does not make them travel by it
        return (f"right values, but {plain} of the inputs' loads were plain loads, {f.get('async_loads', 0)} made by "
                f"cp.async copies: this exercise is about the tiles travelling by cp_async4 (each thread issues its "
                f"elements of the next tiles of A and B), not by loads into shared memory")
    if f.get("async_groups", 0) >= 2 and not f.get("async_overlap", 0):
        return ("right values, but no copy was ever in flight while the block multiplied: every copy was "
                "waited for before shared memory was read (one buffer with wait(0), or the next tile issued only "
                "after the products), so nothing overlaps: issue tile t + 1 into the other buffer and commit it "
                "before the products of tile t: then cp_async_wait(1) (tile t + 1 may stay in flight), "
                "syncthreads, multiply tile t")
    return None


def _coalesced(f, launch, output):
    for kind, verb in (("load", "loads"), ("store", "stores")):
        r = f[kind]
        if r["requests"] >= MIN_REQUESTS and r["sectors"] > SECTOR_RATIO * r["ideal_sectors"]:
            spr, ideal = r["sectors"] / r["requests"], r["ideal_sectors"] / r["requests"]
            return (f"right values, but the global {verb} take {spr:.3g} sectors per warp request where their "
                    f"bytes need {ideal:.3g}: this exercise is about coalesced access: consecutive threads "
                    f"(threadIdx.x) should {'read' if kind == 'load' else 'write'} consecutive addresses "
                    f"(the last index of a row-major array)")
    return None


def _shared_reuse(f, launch, output):
    if not f["inputs"]:
        return None
    biggest = f["inputs"][0]["size"]
    for a in f["inputs"]:
        if a["size"] < max(WARP, biggest / 8) or not a["block_elements"]:
            continue
        ratio = a["loads"] / a["block_elements"]
        if ratio > RELOAD_RATIO:
            none = " (no shared memory was used)" if not f["shared_accesses"] else ""
            return (f"right values, but each block loaded the same elements of {a['name']} from global memory "
                    f"{ratio:.3g} times on average ({a['loads']} loads of {a['block_elements']} distinct "
                    f"elements a block){none}: this exercise is about reuse through shared memory: load each "
                    f"element once per block into a shared tile and read the reuse from there")
    return None


_JUDGES = {"one_element_per_thread": _one_element, "block_reduction": _block_work("a block reduction"),
           "block_scan": _block_work("a block scan"), "warp_shuffle": _warp_shuffle, "coalesced": _coalesced,
           "shared_reuse": _shared_reuse, "tensor_core": _tensor_core, "async_overlap": _async_overlap}
