"""Coalescing without a GPU: the global loads and stores of simulated kernels, per warp request.

On a GPU a warp's load instruction becomes one *request* to the L1/texture unit, which fetches
every distinct 32-byte *sector* that the warp's 32 addresses fall in (CUDA C++ Best Practices
Guide, "Coalesced Access to Global Memory"; Nsight Compute counts them as
``l1tex__t_requests_pipe_lsu_mem_global_op_ld`` and ``l1tex__t_sectors_pipe_lsu_mem_global_op_ld``).
32 consecutive 4-byte floats are 4 sectors a request; 32 floats a row apart are 32.

:class:`SectorTracer` records the same thing in Numba's CUDA simulator. While it is active, every
scalar index into a kernel's array argument (the simulator's ``FakeCUDAArray``: global memory;
shared and local arrays are plain ndarrays and are not traced) is recorded with

* the simulated thread (linear block id, linear thread id; warp = thread id // 32), and
* the instruction: the kernel's (or device function's) code object and bytecode offset.

The n-th time a thread executes an instruction is matched with the n-th time its warp's other
lanes execute it: those accesses form one request (what a warp in lockstep issues together).
Addresses are byte offsets within each array's allocation, the allocation placed at a 4 GiB
boundary (GPU allocations are at least 256-byte aligned), so sectors fall where they would on the
device. Atomics (``cuda.atomic.*``) are counted apart (their requests, and ``atomic_ops``: every
atomic operation on a global array, one per thread); slices (``A[i]`` of a 2-D array) are not
traced (``untraced``). Kernels run by Numba's simulator or by the lab's tracing executor
(:func:`lab.core.simt.run`, given the arrays as the simulator's fake device arrays) are traced alike.
Nothing here prints; the simulator must be the active backend.
"""
from __future__ import annotations

import math
import os
import sys
import threading
from dataclasses import dataclass, field
import bisect
import dis
import linecache

import numpy as np

SIM_LABEL = "simulated: from the recorded addresses"  # how every number from this tracer is labelled
SECTOR = 32  # bytes a sector (every NVIDIA GPU since Maxwell)
WARP = 32
KINDS = ("load", "store", "atomic")


@dataclass
class AccessStats:
    """Requests of one kind (``load``, ``store`` or ``atomic``), of one instruction or all of them."""

    requests: int = 0
    sectors: int = 0  # summed over requests: the sectors each request fetched
    bytes_used: int = 0  # summed over requests: distinct bytes the request's lanes asked for
    ideal_sectors: int = 0  # summed over requests: ceil(bytes used / 32), at least 1

    @property
    def sectors_per_request(self) -> float | None:
        return self.sectors / self.requests if self.requests else None

    @property
    def ideal_per_request(self) -> float | None:
        """Sectors a request needs at least: its distinct bytes, packed into whole sectors."""
        return self.ideal_sectors / self.requests if self.requests else None

    @property
    def efficiency_pct(self) -> float | None:
        """Bytes used per byte fetched, in percent (ncu's smsp__sass_average_data_bytes_per_sector_*)."""
        return 100.0 * self.bytes_used / (self.sectors * SECTOR) if self.sectors else None

    def add(self, sectors: int, bytes_used: int) -> None:
        self.requests += 1
        self.sectors += sectors
        self.bytes_used += bytes_used
        self.ideal_sectors += max(1, -(-bytes_used // SECTOR))

    def as_dict(self) -> dict:
        return {"requests": self.requests, "sectors": self.sectors, "bytes_used": self.bytes_used,
                "sectors_per_request": self.sectors_per_request, "ideal_sectors_per_request": self.ideal_per_request,
                "efficiency_pct": self.efficiency_pct}


@dataclass
class Instruction:
    """One traced load or store site: where it is and what its requests fetched."""

    kind: str
    where: str  # "file.py:LINE"
    source: str  # the line's text, stripped
    array: str  # the kernel's name for the array ("?" when it has none there)
    stats: AccessStats = field(default_factory=AccessStats)

    def as_dict(self) -> dict:
        return {"kind": self.kind, "where": self.where, "array": self.array, "source": self.source,
                **self.stats.as_dict()}


def _sim_dir() -> str:
    import numba.cuda.simulator as sim  # lazy: backend chosen first (numba)

    return os.path.dirname(os.path.abspath(sim.__file__))


def _executor_files() -> tuple:
    """The files whose frames are the executor's, not the kernel's: the simulator's folder, the
    lab's tracing executor (lab.core.simt: its atomics and shuffles call into the simulator) and this
    file (the atomics' counting wrappers)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return _sim_dir(), os.path.join(here, "simt.py"), os.path.abspath(__file__)


class SectorTracer:
    """``with SectorTracer() as tr: <launch simulated kernels>``; then :meth:`summary`.

    Patches ``FakeCUDAArray.__getitem__``/``__setitem__`` for the duration of the block (the
    simulator must be loaded: ``NUMBA_ENABLE_CUDASIM=1``). Thread-safe: the simulator runs a
    block's threads as Python threads.

    ``registers=True``: a load of an address that the same thread already loaded in the same
    straight-line stretch of code (no store of its own since, no jump back in that function: not
    another loop iteration) is not a new request: the compiler keeps the value in a register
    (common-subexpression elimination: ``A[i] + B[i] + B[i]`` is two loads). Such loads are counted
    in ``repeat_loads`` (and per line in :meth:`repeats`) instead.
    """

    def __init__(self, registers: bool = False):
        trim_sites()
        self._lock = threading.Lock()
        self._requests: dict = {}  # (kind, block, warp, instr, n) -> {address: size}
        self._seen: dict = {}  # (block, thread, instr) -> executions so far
        self._code: dict = {}  # instr -> (kind hint, filename, line)
        self._order: dict = {}  # request key -> its number, in the order requests began
        self._bases: dict = {}  # id(fake array) -> (fake array, virtual address of its element 0)
        self._roots: dict = {}  # id(root ndarray) -> (root, virtual base)
        self.untraced = 0  # accesses that were not scalar (slices, row views)
        self.atomic_ops = 0  # atomic operations on global (fake device) arrays, one per calling thread
        self._sim = _executor_files()
        self._registers = registers
        self._recent: dict = {}  # (block, thread) -> ({code: last offset}, addresses loaded since)
        self.repeat_loads = 0  # registers=True: loads of an address the thread had just loaded (not requests)
        self._repeat_sites: dict = {}  # instr -> such loads

    # --- recording ------------------------------------------------------------------------------
    def __enter__(self):
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray  # lazy: backend chosen first (numba)

        self._cls = FakeCUDAArray
        self._orig = (FakeCUDAArray.__getitem__, FakeCUDAArray.__setitem__)
        get, put = self._orig
        tracer = self

        def getitem(fake, idx):
            tracer._record(fake, idx, "load")
            return get(fake, idx)

        def setitem(fake, idx, val):
            tracer._record(fake, idx, "store")
            return put(fake, idx, val)

        FakeCUDAArray.__getitem__, FakeCUDAArray.__setitem__ = getitem, setitem
        self._patch_atomics()
        return self

    def __exit__(self, *exc):
        self._cls.__getitem__, self._cls.__setitem__ = self._orig
        for name, fn in self._atomics.items():
            setattr(self._atomic_cls, name, fn)
        return False

    def _patch_atomics(self) -> None:
        """Count every ``cuda.atomic.*`` call on a global array (a fake device array; shared
        memory is a plain ndarray) in ``atomic_ops``."""
        from numba.cuda.simulator.cudadrv.devicearray import FakeWithinKernelCUDAArray  # lazy: backend chosen first (numba)
        from numba.cuda.simulator.kernelapi import FakeCUDAAtomic  # lazy: backend chosen first (numba)

        self._atomic_cls = FakeCUDAAtomic
        self._atomics = {n: getattr(FakeCUDAAtomic, n) for n in sorted(_ATOMIC_NAMES) if hasattr(FakeCUDAAtomic, n)}
        tracer, fakes = self, (self._cls, FakeWithinKernelCUDAArray)

        def counted(fn):
            def op(atomic, array, *args, **kwargs):
                if isinstance(array, fakes):
                    with tracer._lock:
                        tracer.atomic_ops += 1
                return fn(atomic, array, *args, **kwargs)
            return op

        for name, fn in self._atomics.items():
            setattr(FakeCUDAAtomic, name, counted(fn))

    def _base(self, fake) -> int:
        hit = self._bases.get(id(fake))
        if hit is not None and hit[0] is fake:
            return hit[1]
        ary = fake._ary
        root = ary
        while isinstance(root.base, np.ndarray):
            root = root.base
        r = self._roots.get(id(root))
        if r is None or r[0] is not root:
            r = self._roots[id(root)] = (root, (len(self._roots) + 1) << 32)
        ptr = ary.__array_interface__["data"][0]
        base = r[1] + ptr - root.__array_interface__["data"][0]
        self._bases[id(fake)] = (fake, base)
        return base

    def _record(self, fake, idx, kind: str) -> None:
        me = threading.current_thread()
        bidx, tidx = getattr(me, "blockIdx", None), getattr(me, "threadIdx", None)
        if bidx is None or tidx is None:
            return  # host code, not a simulated thread
        ary = fake._ary
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) != ary.ndim or not all(isinstance(i, (int, np.integer)) for i in idx):
            self.untraced += 1
            return
        offset = 0
        for i, n, s in zip(idx, ary.shape, ary.strides):
            i = int(i)
            if i < 0:
                i += n
            if not 0 <= i < n:
                return  # out of bounds: the access itself raises
            offset += i * s
        addr = self._base(fake) + offset
        size = ary.itemsize
        # the instruction: the first frame outside the simulator (the kernel or a device function)
        f = sys._getframe(2)
        atomic = False
        code = f.f_code if f is not None else None  # (each read of a frame's f_code is an audit event)
        while f is not None and code.co_filename.startswith(self._sim):  # (a tuple of prefixes)
            atomic = atomic or code.co_name in _ATOMIC_NAMES
            f = f.f_back
            code = f.f_code if f is not None else None
        if f is None:
            return
        instr = site(code, f.f_lasti)
        if atomic:
            kind = "atomic"
        from numba.cuda.simulator import kernel as simkernel  # lazy: backend chosen first (numba)

        ctx = simkernel._kernel_context
        gd, bd = (ctx.gridDim, ctx.blockDim) if ctx is not None else ((1, 1, 1), (WARP, 1, 1))
        gx, gy = (gd.x, gd.y) if hasattr(gd, "x") else gd[:2]
        bx, by = (bd.x, bd.y) if hasattr(bd, "x") else bd[:2]
        block = bidx.x + gx * (bidx.y + gy * bidx.z)
        thread = tidx.x + bx * (tidx.y + by * tidx.z)
        with self._lock:
            if self._registers and self._repeated(block, thread, instr, kind, addr, f):
                return
            key = (block, thread, instr, kind)
            n = self._seen.get(key, 0)
            self._seen[key] = n + 1
            req = self._requests.get((kind, block, thread // WARP, instr, n))
            if req is None:  # a new request: numbered in the order its first lane reached it
                req = self._requests[(kind, block, thread // WARP, instr, n)] = {}
                self._order[(kind, block, thread // WARP, instr, n)] = len(self._order)
            req[addr] = size
            if instr not in self._code:
                self._code[instr] = (f.f_code.co_filename, f.f_lineno, _name_of(fake, f.f_locals))

    def _repeated(self, block, thread, instr, kind, addr, frame) -> bool:
        """Whether this load repeats a load of the same thread's current straight-line stretch (see
        the class); keeps that stretch's state. Called under the lock."""
        code, off = instr
        state = self._recent.get((block, thread))
        if state is None or kind != "load":
            state = self._recent[(block, thread)] = ({}, set())
            if kind != "load":
                return False
        offsets, seen = state
        if off <= offsets.get(code, -1):  # a jump back in this function: another iteration
            offsets.clear()
            seen.clear()
        offsets[code] = off
        if addr in seen:
            self.repeat_loads += 1
            self._repeat_sites[instr] = self._repeat_sites.get(instr, 0) + 1
            if instr not in self._code:
                self._code[instr] = (frame.f_code.co_filename, frame.f_lineno, "?")
            return True
        seen.add(addr)
        return False

    def repeats(self) -> list:
        """[{"file", "line", "loads"}], most loads first: the loads not counted as requests
        (``registers=True``), per source line."""
        out: dict = {}
        for instr, c in self._repeat_sites.items():
            fname, line, _ = self._code[instr]
            r = out.setdefault((fname, line), {"file": fname, "line": int(line), "loads": 0})
            r["loads"] += c
        return sorted(out.values(), key=lambda r: -r["loads"])

    # --- results --------------------------------------------------------------------------------
    def instructions(self) -> list[Instruction]:
        """Every traced site, in source order, with its requests' statistics."""
        sites: dict = {}
        for (kind, _b, _w, instr, _n), addrs in self._requests.items():
            site = sites.get((kind, instr))
            if site is None:
                fname, line, name = self._code[instr]
                site = sites[(kind, instr)] = Instruction(
                    kind, f"{_short(fname)}:{line}", linecache.getline(fname, line).strip(), name)
            site.stats.add(*_sectors_and_bytes(addrs))
        return sorted(sites.values(), key=lambda s: (s.where, s.kind))

    def warp_requests(self, block: int, warp: int, limit: int = 256) -> dict:
        """One warp's traced requests, for a picture of what each touched (``lab grid --warp``).

        block: the linear block id; warp: the warp within the block (thread id // 32). Returns
        {"requests": [{"kind", "where", "array", "source", "n" (the lanes' n-th execution of the
        instruction), "lanes", "elements" (element offsets in the array's allocation, sorted),
        "sectors" (32-byte sector numbers in the allocation), "bytes"}] (at most ``limit``, in the
        order the warp's first lane began them: program order), "requests_total", "arrays": {name: {"itemsize", "elements"}}}.
        """
        mine = [(k, v) for k, v in self._requests.items() if k[1] == block and k[2] == warp]
        mine.sort(key=lambda kv: self._order[kv[0]])
        roots = {base: root for root, base in self._roots.values()}
        out, arrays = [], {}
        for (kind, _b, _w, instr, n), addrs in mine[:limit]:
            fname, line, name = self._code[instr]
            first = min(addrs)
            root = roots.get(first >> 32 << 32)
            itemsize = root.itemsize if root is not None else max(addrs.values())
            if root is not None:
                arrays.setdefault(name, {"itemsize": int(root.itemsize), "elements": int(root.size)})
            offs = sorted(a - (a >> 32 << 32) for a in addrs)
            sectors = sorted({o // SECTOR for o in offs})
            out.append({"kind": kind, "where": f"{_short(fname)}:{line}", "array": name, "n": n,
                        "source": linecache.getline(fname, line).strip(), "lanes": len(addrs),
                        "elements": [o // itemsize for o in offs], "sectors": sectors,
                        "bytes": int(sum(addrs.values()))})
        return {"requests": out, "requests_total": len(mine), "arrays": arrays}

    def summary(self, skip_idle: bool = False) -> dict:
        """{kind: AccessStats over all sites} plus ``bytes_touched`` (distinct sectors x 32: the
        footprint, what DRAM would move with a perfect cache), ``sector_bytes`` (every request's
        sectors x 32, loads and stores: the traffic between the SMs and L2 without L1 reuse),
        ``touched`` ({kind: distinct sectors of that kind's requests}: a sector fetched twice counts
        once), ``atomic_ops`` (atomic operations on global arrays, one per thread), ``instructions``
        and ``untraced``; ``idle_blocks`` and ``idle_load_sectors``: the blocks that loaded from
        global memory but stored nothing there (no store, no atomic: a spare block of a rounded-up
        grid), and their loads' sectors; ``repeat_loads`` (``registers=True``). ``skip_idle``: those
        blocks' loads are left out of the totals (when some block stored at all)."""
        totals = {k: AccessStats() for k in KINDS}
        touched: set = set()
        by_kind: dict = {k: set() for k in KINDS}
        writing = {b for (kind, b, *_) in self._requests if kind != "load"}
        idle: set = set()
        idle_sectors = 0
        for (kind, block, *_), addrs in self._requests.items():
            if kind == "load" and writing and block not in writing:
                idle.add(block)
                idle_sectors += _sectors_and_bytes(addrs)[0]
                if skip_idle:
                    continue
            totals[kind].add(*_sectors_and_bytes(addrs))
            for a, size in addrs.items():
                sectors = range(a // SECTOR, (a + size - 1) // SECTOR + 1)
                touched.update(sectors)
                by_kind[kind].update(sectors)
        return {**totals, "bytes_touched": len(touched) * SECTOR,
                "sector_bytes": (totals["load"].sectors + totals["store"].sectors) * SECTOR,
                "touched": {k: len(v) for k, v in by_kind.items()}, "atomic_ops": self.atomic_ops,
                "instructions": self.instructions(), "untraced": self.untraced, "idle_blocks": len(idle),
                "idle_load_sectors": idle_sectors, "repeat_loads": self.repeat_loads}


def _name_of(fake, names: dict) -> str:
    """The local name under which the kernel sees ``fake`` (the simulator wraps each array argument
    in a FakeWithinKernelCUDAArray whose ``_item`` is the FakeCUDAArray)."""
    for k, v in names.items():
        if v is fake or getattr(v, "__dict__", {}).get("_item") is fake:
            return k
    return "?"


def _short(fname: str) -> str:
    """``fname`` relative to the working folder when it is inside it, else as it is."""
    if fname.startswith("<"):
        return fname
    rel = os.path.relpath(fname)
    return fname if rel.startswith("..") else rel


# A site is the plain tuple (id(code), bytecode offset) of an access's instruction: two ints, hashed by C
# (a code object's own hash reads its bytecode, names and constants every time, and a Python __hash__ or an
# id() call per lookup costs an audit event under the checker's sandbox: most of a traced access's
# bookkeeping was hashing sites). The code objects are kept in _CODES, so their ids are not reused while a
# site names them.
_SITES: dict = {}  # (id(code), lasti) -> site
_CODES: dict = {}  # id(code) -> code, for every site made
_LAST = [None, 0]  # the last code object asked and its id: a kernel's accesses come from one code object in a row


def site(code, lasti: int) -> tuple:
    """The site ``(id(code), offset)`` of the instruction that ``lasti`` of ``code`` is in
    (:func:`instruction_offset`); :func:`site_line` gives its line."""
    if code is _LAST[0]:
        cid = _LAST[1]
    else:
        cid = id(code)
        _LAST[0], _LAST[1] = code, cid
    got = _SITES.get((cid, lasti))
    if got is None:
        got = _SITES[(cid, lasti)] = (cid, instruction_offset(code, lasti))
        _CODES[cid] = code
    return got


def trim_sites(most: int = 200_000) -> None:
    """Forget every site when more than ``most`` are kept (a long-lived process checking many files):
    called where a trace starts, never during one, so no site of a running trace loses its code."""
    if len(_SITES) > most:
        _SITES.clear()
        _CODES.clear()
        _LINES.clear()
        _LAST[0], _LAST[1] = None, 0


_OFFSETS: dict = {}


def instruction_offset(code, lasti: int) -> int:
    """The offset of the bytecode instruction that ``lasti`` is in. CPython 3.11+ reports a
    specialized subscript (BINARY_SUBSCR_GETITEM) at the end of its inline cache, not at its
    start, so the same load would otherwise look like two instructions."""
    offs = _OFFSETS.get(code)
    if offs is None:
        offs = _OFFSETS[code] = [i.offset for i in dis.get_instructions(code)]
    k = bisect.bisect_right(offs, lasti) - 1
    return offs[k] if k >= 0 else lasti


_LINES: dict = {}


def site_line(s: tuple) -> int:
    """The source line of the bytecode instruction of site ``s`` (:func:`site`), 0 when it has none."""
    cid, offset = s
    code = _CODES.get(cid)
    if code is None:  # (forgotten by trim_sites between two traces)
        return 0
    got = _LINES.get(cid)  # by identity: a code object's own hash reads all of it
    if got is None or got[0] is not code:
        got = _LINES[cid] = (code, [(a, b, ln) for a, b, ln in code.co_lines() if ln is not None], {})
    line = got[2].get(offset)  # each offset's line once: the counts ask it for every traced access
    if line is None:
        line = got[2][offset] = next((int(ln) for a, b, ln in got[1] if a <= offset < b), 0)
    return line


_ATOMIC_NAMES = {"add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max", "min", "nanmax", "nanmin",
                 "compare_and_swap", "cas"}


def _sectors_and_bytes(addrs: dict) -> tuple[int, int]:
    """(distinct sectors, distinct bytes) of one request's {address: size}."""
    sectors: set = set()
    used = 0
    for a, size in addrs.items():
        sectors.update(range(a // SECTOR, (a + size - 1) // SECTOR + 1))
        used += size
    return len(sectors), used


def ideal_sectors(lanes: int, itemsize: int) -> int:
    """Sectors a request of ``lanes`` consecutive ``itemsize``-byte elements needs (aligned)."""
    return max(1, math.ceil(lanes * itemsize / SECTOR))
