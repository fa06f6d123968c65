"""A CUDA block's threads on greenlets (``greenlet``: many call stacks switched in one OS thread):
the scheduler of the simulator's blocks, for the lab's tracing executor (:func:`lab.core.simt.run`)
and for numba-cuda's own simulator (:func:`run_numba_block`, installed by
:func:`lab.core.simulator.run_blocks_on_greenlets`).

Each simulated thread runs until it waits -- at ``cuda.syncthreads()``, at a warp collective -- or
returns; then the next runnable one runs. A barrier releases once every live thread waits there (a
thread that returned no longer counts, as in Numba's simulator); the n-th warp collective of a lane
meets the n-th of the other lanes of its warp named in the mask; a block whose live threads all wait
with nothing to release them is a deadlock, said at once (a WarpError raised in a waiting lane). Any
order of the threads between two waits is a legal schedule of a CUDA block.

Why not an OS thread per CUDA thread (numba-cuda 0.30.4's ``BlockManager``, and this lab's executor
before it): handing the interpreter lock among up to 1,024 threads was most of a simulation's
CPU time, most of that in system calls. Measured on a 2-core machine, a 40-block, 256-thread tree
reduction: 13.4 CPU s (9.2 of them system time) on threads in the tracing executor, 1.6 on greenlets;
11.2 and 0.8 in numba-cuda's simulator. The lab's test suite: 1,304 CPU s before, 716 after.

The thread's identity (``blockIdx``, ``threadIdx``, ``thread_id``, its barrier epoch ...) is set on
the OS thread's ``threading.current_thread()`` object while it runs, where Numba's fake ``cuda``
module and the lab's tracers read it. Source: CUDA C++ Programming Guide, "Thread Hierarchy" and
"Synchronization Functions"; greenlet's documentation.
"""
from __future__ import annotations

import contextlib
import threading
from collections import deque

import numpy as np
from greenlet import getcurrent, greenlet


class Stop(Exception):
    """Raised in the other threads of a block once one thread failed."""


class WarpError(Exception):
    """A warp collective (shuffle, ``syncwarp``) that the lanes of its mask cannot complete."""


class Block:
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
                self._resume(t, error=Stop())

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


SWAP = ("blockIdx", "threadIdx", "lab_who", "thread_id", "lab_epoch", "lab_warp_calls", "lab_stats",
         "lab_async_in_flight", "barrier", "syncthreads", "warp_collective")
MUTABLE = ("lab_epoch", "lab_warp_calls", "lab_async_in_flight")  # what the kernel's side changes on ``me``


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


class CudaThread:
    """One simulated CUDA thread of a :class:`Block`: its identity and state, and the greenlet that
    runs the kernel for it."""

    SWAP, MUTABLE = SWAP, MUTABLE

    def __init__(self, fn, args, block_idx, thread_idx, block_dim, block, stats):
        from numba.cuda.simulator.kernelapi import Dim3  # lazy: backend chosen first (numba)

        self.fn, self.args, self.barrier, self.lab_stats = fn, args, block, stats
        self.blockIdx, self.threadIdx = Dim3(*block_idx), Dim3(*thread_idx)
        self.lab_who = (tuple(self.blockIdx), tuple(self.threadIdx))  # the tracer's (block, thread), made once
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

    CAUGHT = BaseException  # what a thread's kernel raises that the block reports (with the thread)

    def said(self, e: BaseException) -> BaseException:
        """The exception the block reports for ``e``, raised by this thread's kernel."""
        return e

    def main(self):
        try:
            self.fn(*self.args)
        except Stop:
            pass
        except self.CAUGHT as e:  # noqa: BLE001 - reported, with the thread that raised
            self.barrier.errors.append((self.said(e), tuple(self.blockIdx), tuple(self.threadIdx)))
        finally:
            self.barrier.leave(self)


class NumbaThread(CudaThread):
    """numba-cuda's simulator thread (``numba.cuda.simulator.kernel.BlockThread``: ``_manager``,
    ``syncthreads_count``/``_and``/``_or``, its error message "tid=[x, y, z] ctaid=[x, y, z]: ...")
    on a greenlet of a :class:`Block`, for :func:`run_numba_block`."""

    SWAP = SWAP + ("_manager", "syncthreads_count", "syncthreads_and", "syncthreads_or")
    MUTABLE = MUTABLE

    def __init__(self, manager, fn, args, block_idx, thread_idx, block):
        super().__init__(fn, args, block_idx, thread_idx, manager._block_dim, block, None)
        self._manager = manager
        self.syncthreads_count, self.syncthreads_and, self.syncthreads_or = self._count, self._and, self._or

    def _vote(self, value):
        self._manager.block_state[tuple(self.threadIdx)] = value
        self._syncthreads()
        return self._manager.block_state

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

    CAUGHT = Exception  # numba-cuda's BlockThread.run: a KeyboardInterrupt goes up to the caller

    def said(self, e: BaseException) -> BaseException:
        """``e`` said with the thread's indices, as numba-cuda's BlockThread.run says it (its traceback kept)."""
        where = f"tid={list(self.threadIdx)} ctaid={list(self.blockIdx)}"
        try:
            return type(e)(where if str(e) == "" else f"{where}: {e}").with_traceback(e.__traceback__)
        except Exception:  # noqa: BLE001 - an exception type that takes other arguments: as raised
            return e


@contextlib.contextmanager
def identity_kept(me, keys):
    """Within: the simulated threads' identity may be set on ``me`` (``keys``, and the emulated cp.async's
    per-thread state, ``_lab_cp_async``); after: ``me``'s own attributes of those names as they were
    (absent ones removed)."""
    saved = {k: getattr(me, k, None) for k in dict.fromkeys((*keys, "_lab_cp_async"))}
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                if hasattr(me, k):
                    delattr(me, k)
            else:
                setattr(me, k, v)


def run_numba_block(manager, grid_point, *args) -> None:
    """``numba.cuda.simulator.kernel.BlockManager.run`` on greenlets (installed by
    :func:`lab.core.simulator.enter`): the block's CUDA threads in one OS thread, switched at
    ``cuda.syncthreads()`` and warp collectives, instead of an OS thread each and a manager thread
    polling them; the first exception a thread raised is raised here, as numba-cuda raises it. A
    block whose threads wait at a warp collective that cannot complete raises a WarpError at once
    (numba-cuda's emulated mma waited 60 s)."""
    me = threading.current_thread()
    fn = manager._f
    if manager._debug:
        def fn(*a, _f=manager._f):
            np.seterr(divide="raise")
            return _f(*a)
    block = Block(int(np.prod(manager._block_dim)), me)
    ts = [NumbaThread(manager, fn, args, grid_point, t, block) for t in np.ndindex(*manager._block_dim)]
    with identity_kept(me, NumbaThread.SWAP):
        block.run(ts)
    if block.errors:
        raise block.errors[0][0]
