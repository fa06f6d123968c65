"""A tracing executor for student kernels in Numba's CUDA simulator: who wrote what, out-of-bounds
accesses, shared-memory races and barriers that not every thread reaches.

It runs a simulator kernel's Python function (``kernel.py_func``) with Numba's own fake ``cuda``
module (``numba.cuda.simulator.kernelapi.FakeCUDAModule``: ``cuda.grid``, ``threadIdx``,
``shared.array`` …), block after block in a shuffled order, with three changes that make bugs show:

* every array argument is a :class:`Traced` ndarray: an index past the end (or a negative one, which
  NumPy would silently wrap) raises, and each output element remembers the (block, thread) that
  wrote it first;
* ``cuda.shared.array`` is fresh and poisoned (NaN / 0xA5…) in each block and traced: a thread that
  reads a location another thread wrote (or writes one another thread read or wrote) in the same
  *barrier epoch* (between the same two ``cuda.syncthreads()``) is a race, and so is an atomic on a
  location another thread accessed plainly in the same epoch (atomics among themselves are ordered);
* the warp collectives Numba's simulator lacks (``cuda.shfl_sync``, ``shfl_up_sync``,
  ``shfl_down_sync``, ``shfl_xor_sync``, ``syncwarp``, ``all_sync``, ``any_sync``, ``ballot_sync``,
  ``activemask``) are added: the n-th collective of a lane meets the n-th of the other lanes of its
  warp named in the mask; a source lane that did not take part gives a poison (undefined in CUDA),
  and lanes of the mask that return early or wait elsewhere are reported (a hang on a GPU);
* a kernel without ``syncthreads`` or warp collectives runs its threads one after another in a shuffled order (fast; any
  order is a legal schedule for such a kernel); a kernel with barriers gets a greenlet per CUDA
  thread (one OS thread, switched where a thread waits: :class:`_Block`) and a barrier that counts the live threads (threads that returned no longer count,
  as in Numba's simulator). A block whose threads passed different numbers of barriers is flagged:
  on a GPU that is undefined behaviour and can hang.

Limits (see exercises/README.md): races are found only between accesses that actually happen with
these inputs; warp-synchronous code (no barrier, relying on lockstep) is flagged as racy; global
memory is checked only for non-atomic read-modify-writes by several threads.
"""
from __future__ import annotations

import sys
import threading
from collections import deque
from dataclasses import dataclass, field

import numpy as np
from greenlet import getcurrent, greenlet

from lab.core import simulator as simulation
from lab.core.simt_warp import WARP_OPS, install_warp_ops
from lab.core.trace import instruction_offset  # a load or store site: (code, bytecode offset), as the sector tracer's


@dataclass
class Trace:
    """What one launch did, for the diagnostics."""

    oob: list = field(default_factory=list)       # (array name, index, shape, (block, thread), "read"/"write")
    races: list = field(default_factory=list)     # ((block, thread), "read"/"wrote", array, index, other thread, what it did)
    barrier_mismatch: list = field(default_factory=list)  # (block, {barriers passed: thread count})
    global_rmw: list = field(default_factory=list)  # (array name, index, writer a, writer b)
    race_lines: list = field(default_factory=list)  # per race: (line of this access, line of the other's), in the kernel's file
    shared_rmw: list = field(default_factory=list)  # (array, index, thread a, thread b, line): a lost update in shared memory
    uninit: list = field(default_factory=list)  # (array, index, (block, thread), line): shared memory read before any write
    threaded: bool = False
    source: str | None = None  # the kernel's file: race lines are lines of this file (None: not known)
    stats: Stats = None  # what the launch's threads did, counted (:class:`Stats`)

    def __post_init__(self):
        if self.stats is None:
            self.stats = Stats()


class Stats:
    """Counts of one launch for the mapping lessons (lab.teach.lessons): per global array (by the kernel's name for it)
    the plain loads and stores and the atomics, per thread; which elements each block loaded; the elements each thread
    stored; the warp requests of each load and store site (the n-th execution of a site by a warp's lanes is one
    request, as lab.core.trace counts them); shared-memory accesses, warp collectives, emulated cp.async copies."""

    def __init__(self):
        self.itemsize = {}     # array -> bytes an element
        self.size = {}         # array -> elements
        self.output = {}       # array -> whether it is an output
        self.per_thread = {}   # (array, "load"/"store"/"atomic") -> {(block, thread): count}
        self.block_loads = {}  # array -> set of (block, flat): the elements each block loaded
        self.stored = {}       # array -> {(block, thread): set of flat}: the elements each thread stored
        self.requests = {}     # ("load"/"store", array, block, warp, site, n) -> set of flat
        self._seen = {}        # ("load"/"store", array, block, thread, site) -> executions so far
        self.span = {}         # ("load", array, block, thread, site) -> [lowest, highest] flat index loaded
        self.atomic_elems = {}  # array -> set of flat: the elements updated atomically
        self.shared_accesses = 0
        self.warp_collectives = 0
        self.async_copies = self.async_groups = self.async_overlap = 0  # kernels.gemm.mma's emulated cp.async

    def access(self, tracker, kind, flat, who, site):
        """One access of a global array (called under the trace's lock)."""
        name = tracker.name
        if name not in self.itemsize:
            self.itemsize[name], self.size[name] = tracker.itemsize, int(np.prod(tracker.shape)) if tracker.shape else 1
            self.output[name] = tracker.output
        d = self.per_thread.setdefault((name, kind), {})
        d[who] = d.get(who, 0) + 1
        if kind == "load":
            self.block_loads.setdefault(name, set()).add((who[0], flat))
        elif kind == "store":
            self.stored.setdefault(name, {}).setdefault(who, set()).add(flat)
        else:
            self.atomic_elems.setdefault(name, set()).add(flat)
        if kind == "atomic" or site is None:
            return
        key = (kind, name, who[0], who[1], site)
        n = self._seen.get(key, 0)
        self._seen[key] = n + 1
        if kind == "load":
            span = self.span.get(key)
            if span is None:
                self.span[key] = [flat, flat]
            elif flat < span[0]:
                span[0] = flat
            elif flat > span[1]:
                span[1] = flat
        warp = getattr(threading.current_thread(), "thread_id", 0) // 32
        self.requests.setdefault((kind, name, who[0], warp, site, n), set()).add(flat)


class _Stop(Exception):
    """Raised in the other threads of a block once one thread failed."""


def _who():
    t = threading.current_thread()
    return tuple(t.blockIdx), tuple(t.threadIdx)


def _epoch():
    return getattr(threading.current_thread(), "lab_epoch", 0)


class Traced(np.ndarray):
    """An ndarray that checks scalar indices against its shape and reports accesses to a tracker.

    A slice, a partial index (``A[i]`` of a 2-D array) or a mask taken inside a kernel is a Traced
    view too, each of its elements mapped to its element of the traced array (``_lab_flat``): an
    element read or written through it (``A[i][j] = v``) is traced as one of the array's, and a
    store into a slice (``c[:] = v``) is traced as this thread's store of every element it covers."""

    def _lab_flats(self):
        flat = getattr(self, "_lab_flat", None)
        if flat is None:
            n = int(np.prod(self.shape)) if self.shape else 1
            flat = np.arange(n).reshape(self.shape)
        return flat

    def _lab_element(self, tr, idx, kind):
        """The traced array's flat index of element ``idx`` of this view, or None (not one element)."""
        if getattr(self, "_lab_flat", None) is None:
            return tr.index(self, idx, kind)
        key = idx if isinstance(idx, tuple) else (idx,)
        if len(key) != self.ndim or not all(isinstance(i, (int, np.integer)) for i in key):
            return None
        for i, n in zip(key, self.shape):
            if i < 0 or i >= n:
                who = _who()
                with tr.lock:
                    tr.trace.oob.append((tr.name, tuple(int(j) for j in key), tuple(self.shape), who, kind))
                raise IndexError(f"{kind} of {tr.name}{list(map(int, key))} outside its shape {tuple(self.shape)}")
        return int(self._lab_flat[key])

    def __getitem__(self, idx):
        tr = getattr(self, "_lab_tracker", None)
        if tr is not None:
            flat = self._lab_element(tr, idx, "read")
            if flat is not None:
                tr.read(flat, sys._getframe(1))
            elif hasattr(threading.current_thread(), "blockIdx"):  # a view taken in a kernel: traced too
                out = np.ndarray.__getitem__(self.view(np.ndarray), idx)
                if isinstance(out, np.ndarray):
                    view = out.view(Traced)
                    view._lab_tracker, view._lab_flat = tr, self._lab_flats()[idx]
                    return view
                return out
        return np.ndarray.__getitem__(self.view(np.ndarray), idx)

    def __setitem__(self, idx, val):
        tr = getattr(self, "_lab_tracker", None)
        if tr is not None:
            flat = self._lab_element(tr, idx, "write")
            if flat is not None:
                tr.write(flat, sys._getframe(1))
            elif hasattr(threading.current_thread(), "blockIdx"):  # a slice store: each element it covers
                frame = sys._getframe(1)
                for f in np.asarray(self._lab_flats()[idx]).ravel():
                    tr.write(int(f), frame)
        np.ndarray.__setitem__(self.view(np.ndarray), idx, val)


class _Tracker:
    """Per-array bookkeeping; ``shared`` trackers look for races within a barrier epoch."""

    def __init__(self, name, shape, trace: Trace, lock, shared=False, output=False):
        self.name, self.shape, self.trace, self.lock = name, tuple(shape), trace, lock
        self.shared, self.output = shared, output
        self.writer = {}       # flat -> (block, thread) of the first write (outputs)
        self.others = {}       # flat -> set of the other (block, thread)s that wrote it, not atomically (outputs)
        self.readers = {}      # flat -> set of threads that read it (outputs: read-modify-write check)
        self.last = {}         # shared: flat -> (epoch, writer thread or None, set of reader threads)
        self.lines = {}        # shared: flat -> (line of the epoch's write, {reader thread: line of its read})
        self.rmw = {}          # shared: flat -> (epoch, threads that read then wrote it in that epoch)
        self.ever = set()      # shared: the elements some thread of the block wrote (this array is one block's)
        self.plain = {}        # outputs: flat -> ((block, thread), line) of the first plain store
        self.store_line = {}   # outputs: flat -> the kernel file's line of the first write (store or atomic)
        self.atomics = {}      # outputs: flat -> atomic updates
        self.atomic_blocks = {}  # outputs: flat -> the blocks that updated it atomically (at most 64 kept)
        self.itemsize = 0

    def index(self, arr, idx, kind):
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) != len(self.shape) or not all(isinstance(i, (int, np.integer)) for i in idx):
            return None  # slices and the like: not traced
        for i, n in zip(idx, self.shape):
            if i < 0 or i >= n:
                who = _who()
                with self.lock:
                    self.trace.oob.append((self.name, tuple(int(j) for j in idx), self.shape, who, kind))
                raise IndexError(f"{kind} of {self.name}{list(map(int, idx))} outside its shape {self.shape}")
        flat = 0
        for i, n in zip(idx, self.shape):
            flat = flat * n + int(i)
        return flat

    def read(self, flat, frame=None):
        who = _who()
        with self.lock:
            line, site = _site(frame, self.trace)
            if self.shared:
                self.trace.stats.shared_accesses += 1
                self.trace.stats.async_overlap |= bool(getattr(threading.current_thread(), "lab_async_in_flight", 0))
                if flat not in self.ever and len(self.trace.uninit) < 3:
                    self.trace.uninit.append((self.name, self._idx(flat), who, line))
                    self.ever.add(flat)  # reported once
                ep, w, rs, w_atomic = self._this_epoch(flat)
                wline, rlines = self._lines(flat, ep)
                if _in_atomic():  # an atomic's read: a race only with another thread's plain write
                    if w is not None and w != who[1] and not w_atomic:
                        self._race(flat, who, "atomically updated", w, "wrote", line, wline)
                    return
                if w is not None and w != who[1]:
                    self._race(flat, who, "read", w, "atomically updated" if w_atomic else "wrote", line, wline)
                rs = rs | {who[1]}
                self.last[flat] = (ep, w, rs, w_atomic)
                self.lines[flat] = (wline, {**rlines, who[1]: line})
            else:
                if not _in_atomic():
                    self.trace.stats.access(self, "load", flat, who, site)
                if self.output and not _in_atomic():
                    self.readers.setdefault(flat, set()).add(who)

    def write(self, flat, frame=None):
        who = _who()
        with self.lock:
            line, site = _site(frame, self.trace)
            if self.shared:
                self.trace.stats.shared_accesses += 1
                self.ever.add(flat)
                ep, w, rs, w_atomic = self._this_epoch(flat)
                wline, rlines = self._lines(flat, ep)
                atomic = _in_atomic()
                other = w is not None and w != who[1]
                other_r = next((r for r in rs if r != who[1]), None)
                did = "atomically updated" if atomic else "wrote"
                if other and not (atomic and w_atomic):  # atomics among themselves are ordered
                    self._race(flat, who, did, w, "atomically updated" if w_atomic else "also wrote", line, wline)
                elif other_r is not None:
                    self._race(flat, who, did, other_r, "read", line, rlines.get(other_r))
                if not atomic and who[1] in rs:  # this thread read, then wrote it: a read-modify-write
                    rep, rmw = self.rmw.get(flat, (None, set()))
                    rmw = rmw if rep == ep else set()
                    others = rmw - {who[1]}
                    if others and len(self.trace.shared_rmw) < 3:
                        self.trace.shared_rmw.append((self.name, self._idx(flat), who, min(others), line))
                    self.rmw[flat] = (ep, rmw | {who[1]})
                self.last[flat] = (ep, who[1], rs, atomic)
                self.lines[flat] = (line, rlines)
            else:
                self.trace.stats.access(self, "atomic" if _in_atomic() else "store", flat, who, site)
            if self.output:
                if _in_atomic():
                    self.atomics[flat] = self.atomics.get(flat, 0) + 1
                    blocks = self.atomic_blocks.setdefault(flat, set())
                    if len(blocks) < 64:
                        blocks.add(who[0])
                elif flat not in self.plain:
                    self.plain[flat] = (who, line)
                first = self.writer.setdefault(flat, who)
                if line is not None and flat not in self.store_line:
                    self.store_line[flat] = line
                if first != who and not _in_atomic():  # (bounded: a few elements, a few thousand writers)
                    extra = self.others.get(flat)
                    if extra is None and len(self.others) < 256:
                        extra = self.others[flat] = set()
                    if extra is not None and len(extra) < 4096:
                        extra.add(who)
                if first != who and not _in_atomic() and (who in self.readers.get(flat, ()) or
                                                          first in self.readers.get(flat, ())):
                    if len(self.trace.global_rmw) < 3:
                        self.trace.global_rmw.append((self.name, self._idx(flat), first, who))

    def _lines(self, flat, ep):
        """(line of the write, {reader: line}) of shared element ``flat`` in epoch ``ep`` (this one)."""
        cur = self.last.get(flat)
        if cur is None or cur[0] != ep:
            return None, {}
        return self.lines.get(flat, (None, {}))

    def _this_epoch(self, flat):
        """(epoch, last writer thread or None, plain reader threads, whether that write was an
        atomic) of shared element ``flat`` in the current barrier epoch: what an earlier epoch saw is
        forgotten (a barrier orders it)."""
        last = self.last.get(flat)
        e = _epoch()
        return last if last is not None and last[0] == e else (e, None, set(), False)

    def _idx(self, flat):
        return list(map(int, np.unravel_index(flat, self.shape))) if self.shape else []

    def _race(self, flat, who, did, other_thread, other_did, line=None, other_line=None):
        """Record: thread ``who`` (block, thread) ``did`` element ``flat`` (at source line ``line``),
        which ``other_thread`` of the same block ``other_did`` (at ``other_line``) in the same barrier
        epoch."""
        if len(self.trace.races) < 16:  # the first is reported; the others are evidence (lab.teach.diagnose)
            self.trace.races.append((who, did, self.name, self._idx(flat), other_thread, other_did))
            self.trace.race_lines.append((line, other_line))


_atomic_flag = threading.local()


def _site(frame, trace):
    """(line, site) of an access made from ``frame``: the first frame in the kernel's file
    (``trace.source``; an atomic's access is made inside Numba's simulator, a few frames down), its
    line and its instruction (code object, bytecode offset); (None, None) when no frame is in that
    file (a line of another file is never reported)."""
    f, hops = frame, 0
    source = trace.source
    while f is not None and hops < 12:
        if source is None or f.f_code.co_filename == source:
            return f.f_lineno, (f.f_code, instruction_offset(f.f_code, f.f_lasti))
        f, hops = f.f_back, hops + 1
    return None, None


def _in_atomic():
    return getattr(_atomic_flag, "on", False)


class _Atomic:
    """Numba's simulated atomics, with the tracker told that these accesses are atomic."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        fn = getattr(self._inner, name)

        def op(*args, **kwargs):
            _atomic_flag.on = True
            try:
                return fn(*args, **kwargs)
            finally:
                _atomic_flag.on = False
        return op


class _Shared:
    """``cuda.shared.array``: one fresh, poisoned, traced array per call site per block."""

    def __init__(self, trace, lock):
        self.trace, self.lock, self.arrays = trace, lock, {}

    def array(self, shape, dtype, alignment=None):
        import sys
        from numba.cuda import types
        from numba.cuda.np import numpy_support

        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        f = sys._getframe(1)
        key = (f.f_code.co_filename, f.f_lineno)
        with self.lock:
            arr = self.arrays.get(key)
            if arr is None:
                arr = poisoned(shape, dtype).view(Traced)
                arr._lab_tracker = _Tracker(_shared_name(f), arr.shape, self.trace, self.lock, shared=True)
                self.arrays[key] = arr
        return arr


def _shared_name(frame):
    """'cache': the variable a ``cuda.shared.array`` call is assigned to (the race and out-of-bounds
    messages name the lines of the accesses), else 'shared array (line 13)', its declaration's line."""
    import linecache
    import re

    src = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    m = re.match(r"\s*([A-Za-z_]\w*)\s*=\s*cuda\.shared\.array", src)
    return m.group(1) if m else f"shared array (line {frame.f_lineno})"


FLOAT_SENTINEL = -1.2345678e30  # floats' second poison (``which=2``): finite, so a written NaN stands out


def poisoned(shape, dtype, which=0):
    """An array of ``shape`` filled with a poison: NaN for floats (``which=2``: a finite sentinel,
    :data:`FLOAT_SENTINEL`, to tell an element written with NaN from one never written); for ints
    one of two values."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, FLOAT_SENTINEL if which == 2 else np.nan, dtype)
    if dtype.kind == "b":
        return np.zeros(shape, dtype)
    from kernels.spec import poison_value  # the lab's poisons (0xAB-like, then a second value)

    return np.full(shape, poison_value(dtype, which), dtype)


def traced(arr, name, trace, lock, output=False):
    """``arr`` as a :class:`Traced` view reporting to ``trace`` (writes go to ``arr``)."""
    t = arr.view(Traced)
    t._lab_tracker = _Tracker(name, arr.shape, trace, lock, output=output)
    t._lab_tracker.itemsize = arr.itemsize
    return t


class WarpError(Exception):
    """A warp collective (shuffle, ``syncwarp``) that the lanes of its mask cannot complete."""


class _Block:
    """One block's simulated threads as greenlets (``greenlet``: switching between them in one OS
    thread, at the points the kernel waits), scheduled by :meth:`run`: each thread runs until it
    waits at ``cuda.syncthreads()``, at a warp collective, or returns. ``cuda.syncthreads()`` waits
    for every *live* thread of the block (threads that returned no longer count, as in Numba's
    simulator); the n-th warp collective of a lane (``cuda.shfl_*_sync``, ``cuda.syncwarp``) meets
    the n-th of the other lanes of its warp named in the mask. A block whose live threads all wait
    with nothing to release them is a deadlock: a lane of the mask returned early or waits elsewhere
    (on a GPU undefined behaviour, often a hang).

    The thread's identity (``blockIdx``, ``threadIdx``, ``thread_id``, its barrier epoch ...) is set
    on the OS thread's ``threading.current_thread()`` object while it runs, where Numba's fake
    ``cuda`` module and the tracers read it, as on the threadless path of :func:`run`. One OS thread
    per CUDA thread, as before, spent most of a check's CPU time handing the interpreter lock around."""

    def __init__(self, n, me):
        self.n, self.me = n, me
        self.live = n
        self.at_barrier = []   # threads waiting at cuda.syncthreads(), in arrival order
        self.calls = {}        # (warp, call number) -> {lane: value}, the lanes that arrived
        self.wanted = {}       # (warp, call number) of an incomplete call -> [lanes needed, [threads waiting]]
        self.exited = set()    # thread ids that returned
        self.runnable = deque()  # (thread, value to resume it with)
        self.errors = []       # (exception, blockIdx, threadIdx), in the order they were raised
        self.scheduler = None

    # --- in a simulated thread (its greenlet; the scheduler set its identity on ``me``) -------------
    def wait(self, t):
        """``cuda.syncthreads()`` of thread ``t``."""
        self.at_barrier.append(t)
        self.scheduler.switch()

    def collective(self, t, call, mask, value):
        """{lane: value} of the lanes of the calling warp that arrived at this call, once every lane
        of ``mask`` (that exists in the block) did."""
        warp, lane = divmod(t.thread_id, 32)
        mask = int(mask) & 0xFFFFFFFF
        if not (mask >> lane) & 1:
            raise WarpError(f"lane {lane} of warp {warp} called a warp shuffle with mask {mask:#010x}, which "
                            f"leaves out the calling lane itself: use a mask such as 0xFFFFFFFF")
        need = {k for k in range(32) if (mask >> k) & 1 and warp * 32 + k < self.n}
        key = (warp, call)
        got = self.calls.setdefault(key, {})
        got[lane] = value
        wanted = self.wanted.setdefault(key, [set(), []])  # [lanes waited for, threads waiting]
        wanted[0] |= need
        if wanted[0] <= set(got):  # complete: the waiting lanes go on, with the same values
            del self.wanted[key]
            self.runnable.extend((w, got) for w in wanted[1])
            return got
        wanted[1].append(t)
        return self.scheduler.switch()

    # --- the scheduler ---------------------------------------------------------------------------
    def _enter(self, t):
        me = self.me
        for k in t.SWAP:
            setattr(me, k, getattr(t, k))

    def _leave(self, t):
        me = self.me
        for k in t.MUTABLE:
            setattr(t, k, getattr(me, k))

    def _resume(self, t, value=None, error=None):
        self._enter(t)
        try:
            if error is not None:
                t.greenlet.throw(error)
            else:
                t.greenlet.switch(*(() if value is None else (value,)))
        finally:
            self._leave(t)

    def run(self, ts):
        """Run threads ``ts`` (in this order first) until every one returned, one raised (the
        others are stopped) or the block deadlocks (a WarpError raised in a lane that waits)."""
        self.scheduler = getcurrent()
        for t in ts:
            t.greenlet = greenlet(t.main, parent=self.scheduler)
        self.runnable.extend((t, None) for t in ts)
        while not self.errors:
            while self.runnable and not self.errors:
                t, value = self.runnable.popleft()
                self._resume(t, value)
            if self.errors or not self.live:
                break
            if len(self.at_barrier) >= self.live:  # every live thread reached the barrier: release them
                self.runnable.extend((w, None) for w in self.at_barrier)
                self.at_barrier = []
                continue
            self._resume(*self._deadlock())
        for t in ts:  # stop the rest (after an error): each unwinds from where it waits
            if t.greenlet and not t.greenlet.dead:
                self._resume(t, error=_Stop())

    def _deadlock(self):
        """(a waiting lane, the WarpError to raise in it) when every live thread waits and none can
        release another (only a warp collective can wait so: a barrier with every live thread
        waiting is released)."""
        why = ("every thread of the block waits (at a cuda.syncthreads() or a warp shuffle) and none can go on")
        for (warp, call), (need, _) in sorted(self.wanted.items()):
            lanes = sorted(need - set(self.calls[(warp, call)]))
            if not lanes:
                continue
            gone = all(warp * 32 + m in self.exited for m in lanes)
            where = ("returned before it" if gone else
                     "wait elsewhere (at a cuda.syncthreads() or another shuffle)")
            why = (f"lane{'s' if len(lanes) > 1 else ''} {ranges_text(lanes)} of warp {warp} never "
                   f"reached the warp shuffle "
                   f"(call {call + 1} of the warp) that the other lanes of its mask wait at; they "
                   f"{where}: every lane named in the mask must make the same shuffle calls "
                   f"(threads past the end of the data should shuffle 0 rather than return)")
            if self.at_barrier and not gone:  # the others wait at a barrier the shuffling lanes never reach
                n = len(self.at_barrier)
                why += (f"; meanwhile {n} thread{'s' if n > 1 else ''} wait at a "
                        f"cuda.syncthreads(): not every thread of the block reached the same "
                        f"cuda.syncthreads() calls (a barrier or a shuffle inside a branch hangs on a GPU)")
            break
        waiting = [w for _, (_, ws) in sorted(self.wanted.items()) for w in ws]
        if not waiting:  # (cannot be: a live thread that is not at the barrier waits at a collective)
            raise RuntimeError(f"the simulated block stopped with {self.live} live threads and none waiting")
        return waiting[0], None, WarpError(why)

    def leave(self, t):
        self.live -= 1
        self.exited.add(t.thread_id)


_SWAP = ("blockIdx", "threadIdx", "thread_id", "lab_epoch", "lab_warp_calls", "lab_stats",
         "lab_async_in_flight", "barrier", "syncthreads", "warp_collective")
_MUTABLE = ("lab_epoch", "lab_warp_calls", "lab_async_in_flight")  # what the kernel's side changes on ``me``


def ranges_text(values, most=None) -> str:
    """'0..5, 9, 12..31' for sorted integers ``values``: runs of consecutive ones; at most ``most``
    runs, then ", …" (all when None)."""
    runs, start, prev = [], None, None
    for v in map(int, values):
        if start is None:
            start = prev = v
        elif v == prev + 1:
            prev = v
        else:
            runs.append((start, prev))
            start = prev = v
    if start is not None:
        runs.append((start, prev))
    shown = runs if most is None else runs[:most]
    text = ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in shown)
    return text + (", …" if len(shown) < len(runs) else "")


class _CudaThread:
    """One simulated CUDA thread of a :class:`_Block`: its identity and state, and the greenlet that
    runs the kernel for it."""

    SWAP, MUTABLE = _SWAP, _MUTABLE

    def __init__(self, fn, args, block_idx, thread_idx, block_dim, block, stats):
        from numba.cuda.simulator.kernelapi import Dim3

        self.fn, self.args, self.barrier, self.lab_stats = fn, args, block, stats
        self.blockIdx, self.threadIdx = Dim3(*block_idx), Dim3(*thread_idx)
        self.thread_id = thread_idx[0] + block_dim[0] * (thread_idx[1] + block_dim[1] * thread_idx[2])
        self.lab_epoch = 0
        self.lab_warp_calls = 0
        self.lab_async_in_flight = 0
        self.greenlet = None
        self.syncthreads = self._syncthreads
        self.warp_collective = self._warp_collective

    def _syncthreads(self):
        self.barrier.wait(self)
        self.barrier.me.lab_epoch += 1

    def _warp_collective(self, mask, value):
        """{lane: value} of this warp's lanes at this thread's next warp collective."""
        me = self.barrier.me
        if me.lab_stats is not None:
            me.lab_stats.warp_collectives += 1
        call = me.lab_warp_calls
        me.lab_warp_calls += 1
        return self.barrier.collective(self, call, mask, value)

    def main(self):
        block = self.barrier
        try:
            self.fn(*self.args)
        except _Stop:
            pass
        except BaseException as e:  # noqa: BLE001 - reported, with the thread that raised
            block.errors.append((e, tuple(self.blockIdx), tuple(self.threadIdx)))
        finally:
            block.leave(self)


class _NumbaThread(_CudaThread):
    """numba-cuda's simulator thread (``numba.cuda.simulator.kernel.BlockThread``: ``_manager``,
    ``syncthreads_count``/``_and``/``_or``, its error message "tid=[x, y, z] ctaid=[x, y, z]: ...")
    on a greenlet of a :class:`_Block`, for :func:`run_numba_block`."""

    SWAP = _SWAP + ("_manager", "syncthreads_count", "syncthreads_and", "syncthreads_or")
    MUTABLE = _MUTABLE

    def __init__(self, manager, fn, args, block_idx, thread_idx, block):
        super().__init__(fn, args, block_idx, thread_idx, manager._block_dim, block, None)
        self._manager = manager
        self.syncthreads_count, self.syncthreads_and, self.syncthreads_or = self._count, self._and, self._or

    def _vote(self, value):
        idx = tuple(self.threadIdx)
        self._manager.block_state[idx] = value
        self._syncthreads()
        state = self._manager.block_state
        return state

    def _count(self, value):
        n = int(np.count_nonzero(self._vote(value)))
        self._syncthreads()
        return n

    def _and(self, value):
        r = 1 if np.all(self._vote(value)) else 0
        self._syncthreads()
        return r

    def _or(self, value):
        r = 1 if np.any(self._vote(value)) else 0
        self._syncthreads()
        return r

    def main(self):
        block = self.barrier
        try:
            self.fn(*self.args)
        except _Stop:
            pass
        except Exception as e:  # noqa: BLE001 - numba-cuda's BlockThread.run: said with the thread's indices
            where = f"tid={list(self.threadIdx)} ctaid={list(self.blockIdx)}"
            msg = where if str(e) == "" else f"{where}: {e}"
            try:
                said = type(e)(msg)
            except Exception:  # noqa: BLE001 - an exception type that takes other arguments: as raised
                said = e
            block.errors.append((said, e.__traceback__))
        finally:
            block.leave(self)


def run_numba_block(manager, grid_point, *args) -> None:
    """``numba.cuda.simulator.kernel.BlockManager.run`` on greenlets (installed by
    :func:`lab.core.simulator.enter`): the block's CUDA threads in one OS thread, switched at
    ``cuda.syncthreads()`` and warp collectives, instead of an OS thread each and a manager thread
    polling them; the first exception a thread raised is raised here, as numba-cuda raises it. A
    block whose threads wait at a warp collective that cannot complete raises a WarpError at once
    (numba-cuda's emulated mma waited 60 s)."""
    me = threading.current_thread()
    saved = {k: getattr(me, k, None) for k in _NumbaThread.SWAP + ("_lab_cp_async",)}
    fn = manager._f
    if manager._debug:
        def fn(*a, _f=manager._f):
            np.seterr(divide="raise")
            return _f(*a)
    block = _Block(int(np.prod(manager._block_dim)), me)
    ts = [_NumbaThread(manager, fn, args, grid_point, t, block) for t in np.ndindex(*manager._block_dim)]
    try:
        block.run(ts)
    finally:
        for k, v in saved.items():
            if v is None:
                if hasattr(me, k):
                    delattr(me, k)
            else:
                setattr(me, k, v)
    if block.errors:
        e, tb = block.errors[0][:2]
        raise e.with_traceback(tb)


class KernelError(Exception):
    """The student's kernel raised; ``who`` is (block, thread)."""

    def __init__(self, error, who):
        super().__init__(str(error))
        self.error, self.who = error, who


def _dims(d):
    d = (d,) if isinstance(d, (int, np.integer)) else tuple(d)
    if not d or len(d) > 3 or not all(isinstance(v, (int, np.integer)) and v >= 1 for v in d):
        raise ValueError(f"a grid or block must be 1-3 positive ints, got {d!r}")
    return tuple(int(v) for v in d) + (1,) * (3 - len(d))


def run(kernel, grid, block, args, rng, uses_barriers=None, trace=None, lock=None):
    """Run a simulator kernel ``kernel[grid, block](*args)`` with tracing; returns a :class:`Trace`.

    args: NumPy arrays (already :func:`traced` by the caller, reporting to ``trace``) and scalars. Raises KernelError when a
    thread raised (an out-of-bounds access included: see ``Trace.oob``), ValueError on a bad
    launch configuration.
    """
    from numba.cuda.simulator import kernel as simkernel
    from numba.cuda.simulator.kernelapi import Dim3, FakeCUDAModule, swapped_cuda_module

    fn = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None) or kernel
    grid3, block3 = _dims(grid), _dims(block)
    trace = trace if trace is not None else Trace()
    lock = lock if lock is not None else threading.RLock()
    if uses_barriers is None:
        import inspect
        import linecache
        try:
            src = inspect.getsource(inspect.getmodule(fn))
        except (OSError, TypeError):  # a module loaded from a file path is not in sys.modules: read its file
            code = getattr(fn, "__code__", None)
            src = "".join(linecache.getlines(code.co_filename)) if code is not None else ""
        uses_barriers = not src or any(w in src for w in ("syncthreads",) + WARP_OPS)
    trace.threaded = uses_barriers
    code = getattr(fn, "__code__", None)
    trace.source = code.co_filename if code is not None else None
    blocks = list(np.ndindex(*grid3[::-1]))
    rng.shuffle(blocks)
    me = threading.current_thread()
    keep = tuple(dict.fromkeys(_SWAP + ("_lab_cp_async",)))
    saved = {k: getattr(me, k, None) for k in keep}
    switch = simulation.enter()  # the simulator's one set-up: a barrier costs ~0.2 ms, not up to 5
    try:
        for b in blocks:
            b = b[::-1]
            mod = FakeCUDAModule(grid3, block3, 0)
            mod._shared = _Shared(trace, lock)
            mod._atomic = _Atomic(mod._atomic)
            install_warp_ops(mod, int(np.prod(block3)))
            simkernel._kernel_context = mod
            threads = [t[::-1] for t in np.ndindex(*block3[::-1])]
            order = rng.permutation(len(threads))
            with swapped_cuda_module(fn, mod):
                if not uses_barriers:
                    me.blockIdx, me.lab_epoch, me.lab_stats = Dim3(*b), 0, trace.stats
                    for k in order:
                        t = threads[k]
                        me.threadIdx = Dim3(*t)
                        me.thread_id = t[0] + block3[0] * (t[1] + block3[1] * t[2])
                        try:
                            fn(*args)
                        except Exception as e:  # noqa: BLE001
                            raise KernelError(e, (b, t)) from None
                    continue
                block = _Block(len(threads), me)
                ts = [_CudaThread(fn, args, b, threads[k], block3, block, trace.stats) for k in order]
                block.run(ts)
                if block.errors:
                    e, bi, ti = block.errors[0]
                    raise KernelError(e, (bi, ti))
                counts = {}
                for t in ts:
                    counts[t.lab_epoch] = counts.get(t.lab_epoch, 0) + 1
                if len(counts) > 1 and len(trace.barrier_mismatch) < 2:
                    trace.barrier_mismatch.append((b, counts))
    finally:
        sys.setswitchinterval(switch)
        simkernel._kernel_context = None
        for k, v in saved.items():
            if v is None:
                if hasattr(me, k):
                    delattr(me, k)
            else:
                setattr(me, k, v)
    return trace
