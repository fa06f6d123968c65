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
  thread (one OS thread, switched where a thread waits: :class:`lab.core.blocks.Block`) and a barrier that counts the live
  threads (threads that returned no longer count,
  as in Numba's simulator). A block whose threads passed different numbers of barriers is flagged:
  on a GPU that is undefined behaviour and can hang.

Limits (see exercises/README.md): races are found only between accesses that actually happen with
these inputs; warp-synchronous code (no barrier, relying on lockstep) is flagged as racy; global
memory is checked only for non-atomic read-modify-writes by several threads.
"""
from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
import inspect
import linecache
import re
import unicodedata

import numpy as np

from lab.core import simulator as simulation
from lab.core.blocks import SWAP, Block, CudaThread, identity_kept
from lab.core.simt_warp import WARP_OPS, install_warp_ops
from lab.core.trace import site as _instruction_site  # a load or store site: (id(code), bytecode offset), as the sector tracer's
from lab.core.trace import trim_sites
from kernels.spec import poison_value


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
        trim_sites()  # (a new trace: no site of a running one is forgotten)


class Stats:
    """Counts of one launch for the mapping lessons (lab.teach.lessons): per global array (by the kernel's name for it)
    the plain loads and stores and the atomics, per thread; which elements each block loaded; the elements each thread
    stored; the warp requests of each load and store site (the n-th execution of a site by a warp's lanes is one
    request, as lab.core.trace counts them); shared-memory accesses (and each thread's plain shared reads), warp collectives, emulated cp.async copies."""

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
        self.shared_reads = {}  # (block, thread) -> plain reads of shared memory
        self.shared_atomics = 0  # atomic updates of shared memory (cuda.atomic.* on a shared array)
        self.shared_cells = {}  # shared array -> the flat indices read (plainly) in any block
        self.warp_collectives = 0
        self.mma_calls = 0  # mma_tf32 calls (kernels.gemm.mma's emulation counts them), per thread
        self.async_loads = 0  # global loads made by kernels.gemm.mma's emulated cp.async copies
        self.async_copies = self.async_groups = self.async_overlap = 0  # kernels.gemm.mma's emulated cp.async

    def access(self, tracker, kind, flat, who, site, thread=None):
        """One access of a global array (called under the trace's lock); ``thread``: the simulated
        thread making it (default: the current one)."""
        name = tracker.name
        if kind == "load" and getattr(threading.current_thread(), "lab_async_loading", False):
            self.async_loads += 1
        if name not in self.itemsize:
            self.itemsize[name], self.size[name] = tracker.itemsize, int(np.prod(tracker.shape)) if tracker.shape else 1
            self.output[name] = tracker.output
        d = self.per_thread.get((name, kind))
        if d is None:
            d = self.per_thread[(name, kind)] = {}
        d[who] = d.get(who, 0) + 1
        if kind == "load":
            loads = self.block_loads.get(name)
            if loads is None:
                loads = self.block_loads[name] = set()
            loads.add((who[0], flat))
        elif kind == "store":
            stored = self.stored.get(name)
            if stored is None:
                stored = self.stored[name] = {}
            mine = stored.get(who)
            if mine is None:
                mine = stored[who] = set()
            mine.add(flat)
        else:
            atomic = self.atomic_elems.get(name)
            if atomic is None:
                atomic = self.atomic_elems[name] = set()
            atomic.add(flat)
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
        warp = getattr(thread if thread is not None else threading.current_thread(), "thread_id", 0) // 32
        rkey = (kind, name, who[0], warp, site, n)
        got = self.requests.get(rkey)
        if got is None:
            self.requests[rkey] = {flat}
        else:
            got.add(flat)


_INTEGERS = (int, np.integer)
_GETITEM, _SETITEM = np.ndarray.__getitem__, np.ndarray.__setitem__


def _who_and_thread():
    """((block, thread) of the current simulated thread, the thread): one lookup for an access's bookkeeping."""
    t = threading.current_thread()
    who = getattr(t, "lab_who", None)  # a lab.core.blocks thread's, set with its blockIdx and threadIdx
    return (who if who is not None else (tuple(t.blockIdx), tuple(t.threadIdx))), t


def _who():
    return _who_and_thread()[0]


def _epoch():
    return getattr(threading.current_thread(), "lab_epoch", 0)


class Traced(np.ndarray):
    """An ndarray that checks scalar indices against its shape and reports accesses to a tracker.

    A slice, a partial index (``A[i]`` of a 2-D array) or a mask taken inside a kernel is a Traced
    view too, each of its elements mapped to its element of the traced array (``_lab_flat``): an
    element read or written through it (``A[i][j] = v``) is traced as one of the array's, and a
    store into a slice (``c[:] = v``) is traced as this thread's store of every element it covers."""

    def __array_finalize__(self, obj):
        """A view NumPy made of a traced array (``A.T``, ``np.reshape(A, ...)``, ``np.ravel(A)``,
        ``A.real`` ...): traced as one of the array's own views, each element mapped to its element of
        the traced array by its address (:func:`_view_flats`); a view numpy cannot map so (another
        item size) is refused at its first access. A new array numpy computed from a traced one
        (``A + B``) shares no memory with it: plain data, as before."""
        tr = getattr(obj, "_lab_tracker", None)
        if tr is None or "_lab_tracker" in self.__dict__ or not hasattr(threading.current_thread(), "blockIdx"):
            return  # (outside a kernel's threads: the lab's own views, plain data as before)
        self._lab_tracker, self._lab_flat = tr, _LAZY  # mapped at its first access: numpy sets a view's
        # shape and strides after this call (A.T permutes them in place)

    def _lab_traced(self):
        """This array's tracker, its view's map made first where still to make (None: not traced)."""
        tr = getattr(self, "_lab_tracker", None)
        if tr is not None and self.__dict__.get("_lab_flat") is _LAZY:
            flat = _view_flats(self, tr)
            if flat is None:  # a new array numpy computed from a traced one: plain data
                del self._lab_tracker, self._lab_flat
                return None
            self._lab_flat = flat
        return tr

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
        if self._lab_flat is _UNMAPPED:
            raise TypeError(f"a view of {tr.name} the simulator's tracer cannot follow (another item size "
                            f"or layout): index {tr.name} itself")
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
        tr = self._lab_traced()
        if tr is not None:
            flat = self._lab_element(tr, idx, "read")
            if flat is not None:
                tr.read(flat, sys._getframe(1))
                return _GETITEM(self, idx)  # one element: a scalar, no view needed
            elif hasattr(threading.current_thread(), "blockIdx"):  # a view taken in a kernel: traced too
                out = np.ndarray.__getitem__(self.view(np.ndarray), idx)
                if isinstance(out, np.ndarray):
                    view = out.view(Traced)
                    view._lab_tracker, view._lab_flat = tr, self._lab_flats()[idx]
                    return view
                return out
        return np.ndarray.__getitem__(self.view(np.ndarray), idx)

    def __setitem__(self, idx, val):
        tr = self._lab_traced()
        if tr is not None:
            flat = self._lab_element(tr, idx, "write")
            if flat is not None:
                tr.write(flat, sys._getframe(1))
                _SETITEM(self, idx, val)  # one element
                return
            elif hasattr(threading.current_thread(), "blockIdx"):  # a slice store: each element it covers
                frame = sys._getframe(1)
                for f in np.asarray(self._lab_flats()[idx]).ravel():
                    tr.write(int(f), frame)
        np.ndarray.__setitem__(self.view(np.ndarray), idx, val)


_UNMAPPED = np.zeros(0, dtype=np.int64)  # a view's ``_lab_flat`` when its elements are not the array's items
_LAZY = np.zeros(0, dtype=np.int64)  # a view's ``_lab_flat`` before its first access (Traced.__array_finalize__)


def _view_flats(view, tr):
    """The traced array's flat index of each element of ``view`` (an ndarray that may share the memory
    of the array ``tr`` traces, whose buffer ``tr.buffer`` is (address, item count, item size), C
    order), as an int64 array of ``view``'s shape; None when ``view`` lies outside that buffer (a
    new array); :data:`_UNMAPPED` when it overlaps the buffer but its elements are not the array's
    items (another item size, an address between two items)."""
    buf = getattr(tr, "buffer", None)
    if buf is None:
        return None
    start, count, size = buf
    addr = view.__array_interface__["data"][0]
    if view.size == 0:
        return np.zeros(view.shape, dtype=np.int64)
    lo = addr + sum(min(0, (n - 1) * s) for n, s in zip(view.shape, view.strides))
    hi = addr + sum(max(0, (n - 1) * s) for n, s in zip(view.shape, view.strides)) + view.itemsize
    if hi <= start or lo >= start + count * size:
        return None
    if view.itemsize != size or (addr - start) % size or any(s % size for s in view.strides):
        return _UNMAPPED
    flat = np.full(view.shape, (addr - start) // size, dtype=np.int64)
    for axis, (n, s) in enumerate(zip(view.shape, view.strides)):
        step = np.arange(n, dtype=np.int64) * (s // size)
        flat += step.reshape((n,) + (1,) * (view.ndim - axis - 1))
    if flat.min() < 0 or flat.max() >= count:
        return _UNMAPPED
    return flat


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
        self.buffer = None     # (address, item count, item size) of the traced memory: views map into it

    def index(self, arr, idx, kind):
        shape = self.shape
        if idx.__class__ is int and len(shape) == 1:  # the common case, A[i] of a 1-D array
            if 0 <= idx < shape[0]:
                return idx
            idx = (idx,)
        elif not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) != len(shape):
            return None
        for i in idx:
            if i.__class__ is not int and not isinstance(i, _INTEGERS):
                return None  # slices and the like: not traced
        for i, n in zip(idx, shape):
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
        who, thread = _who_and_thread()
        with self.lock:
            line, site = _site(frame, self.trace)
            if not self.shared:  # global memory: the common case first
                if not _in_atomic():
                    self.trace.stats.access(self, "load", flat, who, site, thread)
                    if self.output:
                        readers = self.readers.get(flat)
                        if readers is None:
                            self.readers[flat] = {who}
                        else:
                            readers.add(who)
                return
            # shared memory: races within a barrier epoch
            atomic = _in_atomic()
            self.trace.stats.shared_accesses += 1
            if not atomic:
                self.trace.stats.shared_reads[who] = self.trace.stats.shared_reads.get(who, 0) + 1
                self.trace.stats.shared_cells.setdefault(self.name, set()).add(flat)
            self.trace.stats.async_overlap |= bool(getattr(thread, "lab_async_in_flight", 0))
            if flat not in self.ever and len(self.trace.uninit) < 3:
                self.trace.uninit.append((self.name, self._idx(flat), who, line))
                self.ever.add(flat)  # reported once
            ep, w, rs, w_atomic = self._this_epoch(flat, thread)
            wline, rlines = self._lines(flat, ep)
            if atomic:  # an atomic's read: a race only with another thread's plain write
                if w is not None and w != who[1] and not w_atomic:
                    self._race(flat, who, "atomically updated", w, "wrote", line, wline)
                return
            if w is not None and w != who[1]:
                self._race(flat, who, "read", w, "atomically updated" if w_atomic else "wrote", line, wline)
            rs.add(who[1])  # (this epoch's own set and dict, or new ones: _this_epoch, _lines)
            rlines[who[1]] = line
            self.last[flat] = (ep, w, rs, w_atomic)
            self.lines[flat] = (wline, rlines)

    def write(self, flat, frame=None):
        who, thread = _who_and_thread()
        with self.lock:
            line, site = _site(frame, self.trace)
            if self.shared:
                self.trace.stats.shared_accesses += 1
                self.ever.add(flat)
                ep, w, rs, w_atomic = self._this_epoch(flat, thread)
                wline, rlines = self._lines(flat, ep)
                atomic = _in_atomic()
                self.trace.stats.shared_atomics += bool(atomic)
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
                atomic = _in_atomic()
                self.trace.stats.access(self, "atomic" if atomic else "store", flat, who, site, thread)
            if self.output:
                if atomic:
                    self.atomics[flat] = self.atomics.get(flat, 0) + 1
                    blocks = self.atomic_blocks.setdefault(flat, set())
                    if len(blocks) < 64:
                        blocks.add(who[0])
                elif flat not in self.plain:
                    self.plain[flat] = (who, line)
                first = self.writer.setdefault(flat, who)
                if line is not None and flat not in self.store_line:
                    self.store_line[flat] = line
                if first != who and not atomic:  # (bounded: a few elements, a few thousand writers)
                    extra = self.others.get(flat)
                    if extra is None and len(self.others) < 256:
                        extra = self.others[flat] = set()
                    if extra is not None and len(extra) < 4096:
                        extra.add(who)
                if first != who and not atomic and (who in self.readers.get(flat, ()) or
                                                          first in self.readers.get(flat, ())):
                    if len(self.trace.global_rmw) < 3:
                        self.trace.global_rmw.append((self.name, self._idx(flat), first, who))

    def _lines(self, flat, ep):
        """(line of the write, {reader: line}) of shared element ``flat`` in epoch ``ep`` (this one)."""
        cur = self.last.get(flat)
        if cur is None or cur[0] != ep:
            return None, {}
        return self.lines.get(flat, (None, {}))

    def _this_epoch(self, flat, thread=None):
        """(epoch, last writer thread or None, plain reader threads, whether that write was an
        atomic) of shared element ``flat`` in the current barrier epoch: what an earlier epoch saw is
        forgotten (a barrier orders it)."""
        last = self.last.get(flat)
        e = getattr(thread, "lab_epoch", 0) if thread is not None else _epoch()
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
        code = f.f_code  # (read once: each read of a frame's f_code is an audit event)
        if source is None or code.co_filename == source:
            return f.f_lineno, _instruction_site(code, f.f_lasti)
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
        from numba.cuda import types  # lazy: backend chosen first (numba)
        from numba.cuda.np import numpy_support  # lazy: backend chosen first (numba)

        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        f = sys._getframe(1)
        key = (f.f_code.co_filename, f.f_lineno)
        with self.lock:
            arr = self.arrays.get(key)
            if arr is None:
                arr = poisoned(shape, dtype).view(Traced)
                arr._lab_tracker = _Tracker(_shared_name(f), arr.shape, self.trace, self.lock, shared=True)
                arr._lab_tracker.buffer = _buffer(arr)
                self.arrays[key] = arr
        return arr


def _shared_name(frame):
    """'cache': the variable a ``cuda.shared.array`` call is assigned to (the race and out-of-bounds
    messages name the lines of the accesses), else 'shared array (line 13)', its declaration's line."""
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
    return np.full(shape, poison_value(dtype, which), dtype)


def traced(arr, name, trace, lock, output=False):
    """``arr`` as a :class:`Traced` view reporting to ``trace`` (writes go to ``arr``)."""
    t = arr.view(Traced)
    t._lab_tracker = _Tracker(name, arr.shape, trace, lock, output=output)
    t._lab_tracker.itemsize = arr.itemsize
    t._lab_tracker.buffer = _buffer(t)
    return t


def _buffer(arr):
    """(address, item count, item size) of a C-contiguous array's memory: what :func:`_view_flats`
    maps a view's elements into."""
    assert arr.flags.c_contiguous, "a traced array is C-contiguous"
    return arr.__array_interface__["data"][0], int(arr.size), int(arr.itemsize)


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
    from numba.cuda.simulator import kernel as simkernel  # lazy: backend chosen first (numba)
    from numba.cuda.simulator.kernelapi import Dim3, FakeCUDAModule, swapped_cuda_module  # lazy: backend chosen first (numba)

    fn = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None) or kernel
    grid3, block3 = _dims(grid), _dims(block)
    trace = trace if trace is not None else Trace()
    lock = lock if lock is not None else threading.RLock()
    if uses_barriers is None:
        try:
            src = inspect.getsource(inspect.getmodule(fn))
        except (OSError, TypeError):  # a module loaded from a file path is not in sys.modules: read its file
            code = getattr(fn, "__code__", None)
            src = "".join(linecache.getlines(code.co_filename)) if code is not None else ""
        src = unicodedata.normalize("NFKC", src)  # the names Python reads (cuda.ｓyncthreads is cuda.syncthreads)
        uses_barriers = not src or any(w in src for w in ("syncthreads",) + WARP_OPS)
    trace.threaded = uses_barriers
    code = getattr(fn, "__code__", None)
    trace.source = code.co_filename if code is not None else None
    blocks = list(np.ndindex(*grid3[::-1]))
    rng.shuffle(blocks)
    me = threading.current_thread()
    switch = simulation.enter()  # the simulator's one set-up: a barrier costs ~0.2 ms, not up to 5
    with identity_kept(me, SWAP):
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
                            me.lab_who = (tuple(b), tuple(t))  # _who()'s (block, thread), as CudaThread makes it
                            me.thread_id = t[0] + block3[0] * (t[1] + block3[1] * t[2])
                            try:
                                fn(*args)
                            except Exception as e:  # noqa: BLE001
                                raise KernelError(e, (b, t)) from None
                        continue
                    block = Block(len(threads), me)
                    ts = [CudaThread(fn, args, b, threads[k], block3, block, trace.stats) for k in order]
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
    return trace
