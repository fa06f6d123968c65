"""The exercises: each ``exercises/<name>/`` holds

* ``scaffold.py``  — what the student edits (kernel signature, docstring, ``TODO`` body);
* ``solution.py``  — the reference solution (printed by ``lab exercise solution NAME --yes``); a course
  may ship it to teachers only: ``LAB_SOLUTIONS=DIR`` names a folder laid out like this one
  (``DIR/NAME/solution.py``), read first (:func:`solutions_dir`, docs/grading.md "Who can read the
  solutions");
* ``test_visible.py`` — a visible example test copied next to the scaffold;
* ``meta.py``      — title, difficulty, prerequisites, the ``kernels/`` module it mirrors, statement, hints;
* ``hidden.py``    — the *hidden* tests (``cases(rng)``), never copied to the student's workspace.

Nothing here imports ``numba.cuda``; the hidden tests are imported by the checker after the backend
is chosen. See exercises/README.md.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
SOLUTIONS_ENV = "LAB_SOLUTIONS"  # a teacher's folder of reference solutions: DIR/NAME/solution.py


def solutions_dir() -> Path | None:
    """The folder ``LAB_SOLUTIONS`` names (the teacher's copy of the reference solutions, laid out
    ``DIR/NAME/solution.py``), or None when it is unset or empty."""
    d = os.environ.get(SOLUTIONS_ENV, "").strip()
    return Path(d).expanduser().resolve() if d else None

ORDER = ["map_guard", "vecadd", "matrix_add_2d", "strided_index", "matvec_row", "matvec_coalesced",
         "block_sum", "dot", "minmax", "tiled_matmul", "softmax_fused", "quantize",
         # issue 20's five more
         "transpose_shared", "warp_reduce", "histogram", "prefix_sum", "conv1d"]


@dataclass
class Case:
    """One hidden test: the kernel is called as ``KERNEL[grid, block](*args, *outputs)``.

    args: input arrays (NumPy, never constant) and scalars, in the kernel's order.
    outputs: (shape, dtype) of each output; the checker poisons them before the launch.
    refs, tols: float64 references and absolute tolerances (arrays or floats) per output.
    grid, block: the launch configuration, or None to call the student's ``launch(*launch_args)``.
    diagnose(outs, refs) -> an extra hint or None (e.g. which block's partial sum is missing).
    init: initial values for outputs that the kernel accumulates into (atomics); None: poisoned.
    """

    name: str
    args: list
    outputs: list
    refs: list
    tols: list
    grid: Any = None
    block: Any = None
    launch_args: tuple = ()
    diagnose: Callable | None = None
    out_names: list = field(default_factory=list)
    init: list | None = None  # initial output values (accumulators such as dot's out[0]); else poisoned


@dataclass
class Exercise:
    name: str
    title: str
    difficulty: int
    prerequisites: list
    mirrors: str
    statement: str
    hints: list
    kernel: str          # the kernel's name in the student's file
    launch: str | None   # the student's launch function, if the exercise teaches launch math
    path: Path
    # performance grading (lab exercise check --bench; meta.py, defaults when missing):
    pass_pct: float = 70.0       # PASS_PCT_OF_REFERENCE: at least this % of the reference's speed
    peak: str = "copy"           # PEAK: "copy" (memory-bound: % of copy bandwidth) or "fp32" (% of FP32 peak)
    sector_factor: float = 1.25  # SECTOR_FACTOR: simulator: loads and stores may each move this x the reference's sectors
    rung: str | None = None      # RUNG: "kernel:variant" of kernels/ timed beside it, e.g. "vecadd:element_per_thread"
    one_writer: bool = False     # ONE_WRITER: each output element is written by exactly one thread
    lesson: Any = None           # LESSON: the mapping it teaches, a name or a tuple of names of lab.teach.lessons.LESSONS

    @property
    def scaffold(self) -> Path:
        return self.path / "scaffold.py"

    @property
    def solution(self) -> Path:
        """The reference solution's file: ``LAB_SOLUTIONS/NAME/solution.py`` where that is a file
        (:func:`solutions_dir`), else the shipped ``exercises/NAME/solution.py``, which an install
        for students may leave out (then neither exists: :attr:`has_solution` is False)."""
        d = solutions_dir()
        if d is not None and (d / self.name / "solution.py").is_file():
            return d / self.name / "solution.py"
        return self.path / "solution.py"

    @property
    def has_solution(self) -> bool:
        """Whether the reference solution is installed here (:attr:`solution` is a file)."""
        return self.solution.is_file()

    @property
    def visible_test(self) -> Path:
        return self.path / "test_visible.py"

    def hidden(self):
        """The module with ``cases(rng)``: import only after the backend is chosen. Imported without
        writing ``__pycache__/hidden.*.pyc`` beside it (:func:`import_private`)."""
        return import_private(f"exercises.{self.name}.hidden", self.path / "hidden.py")

    def bench(self):
        """The optional module ``bench.py`` with ``case(rng, simulator) -> Case`` (the size to time)
        and optionally ``flops(case)``, ``bytes(case)`` and ``rung_size(case)``; None without one."""
        if not (self.path / "bench.py").is_file():
            return None
        return importlib.import_module(f"exercises.{self.name}.bench")


_PRIVATE_LOCK = threading.RLock()


class _NoBytecodeLoader(importlib.machinery.SourceFileLoader):
    """A source loader that never writes a ``.pyc``: nothing compiled from a hidden file lands
    where a student could read it (``__pycache__`` beside it)."""

    def set_data(self, path, data, *, _mode=0o666):  # the bytecode cache: not written
        return None


def import_private(module: str, path: Path):
    """Import ``module`` from ``path`` (once; then ``sys.modules``'s) without writing bytecode:
    for the hidden tests and the reference solutions, whose ``__pycache__/*.pyc`` would be as
    readable as the folder (the files themselves are hidden from a submission's process; their
    cache must not tell what they hold)."""
    import importlib.util
    import sys

    with _PRIVATE_LOCK:  # grading threads: one import, never a half-made module
        if module in sys.modules:
            return sys.modules[module]
        parent = module.rpartition(".")[0]
        if parent:
            importlib.import_module(parent)  # relative imports inside it
        loader = _NoBytecodeLoader(module, str(path))
        spec = importlib.util.spec_from_file_location(module, str(path), loader=loader)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[module] = mod
        try:
            loader.exec_module(mod)
        except BaseException:
            sys.modules.pop(module, None)
            raise
        return mod



def names() -> list[str]:
    """Every exercise, in the order of the path (ORDER), then any added ones in name order."""
    extra = sorted(p.name for p in HERE.iterdir()
                   if (p / "meta.py").is_file() and p.name not in ORDER)
    return [n for n in ORDER if (HERE / n / "meta.py").is_file()] + extra


def load(name: str) -> Exercise:
    """The exercise's metadata; KeyError naming the choices for an unknown name."""
    if name not in names():
        raise KeyError(f"unknown exercise {name!r}; choose from: {', '.join(names())}")
    m = importlib.import_module(f"exercises.{name}.meta")
    return Exercise(name, m.TITLE, m.DIFFICULTY, list(m.PREREQUISITES), m.MIRRORS, m.STATEMENT.strip(),
                    [h.strip() for h in m.HINTS], m.KERNEL, getattr(m, "LAUNCH", None), HERE / name,
                    float(getattr(m, "PASS_PCT_OF_REFERENCE", 70.0)), getattr(m, "PEAK", "copy"),
                    float(getattr(m, "SECTOR_FACTOR", 1.25)), getattr(m, "RUNG", None),
                    bool(getattr(m, "ONE_WRITER", False)), getattr(m, "LESSON", None))


def randn(rng, shape, dtype=np.float32, scale=1.0, offset=0.0):
    """Random normals (never constant, never symmetric), as ``dtype``."""
    return (rng.standard_normal(shape) * scale + offset).astype(dtype)


def matvec_case(rng, rows: int, cols: int, **launch) -> Case:
    """A ROWSxCOLS matvec case: y = A @ x from random float32 A and x, checked against the float64
    product within ``kernels.spec.dot_tolerance``; ``launch`` is the Case's grid/block (and ``lanes``:
    the threads that share a row, for :func:`sum_hints`)."""
    from kernels.spec import dot_tolerance

    A, x = randn(rng, (rows, cols)), randn(rng, cols)
    terms = A.astype(np.float64) * x.astype(np.float64)
    lanes = launch.pop("lanes", None)
    return Case(f"{rows}x{cols}", [A, x], [((rows,), np.float32)], [A.astype(np.float64) @ x.astype(np.float64)],
                [dot_tolerance(A, x, np.float32)],
                diagnose=lambda outs, refs: sum_hints(outs[0], refs[0], terms, lanes=lanes, what="row's sum"),
                **launch)


def eps_tol(ref, dtype=np.float32, ulps=4):
    """A few ulps of |ref| (elementwise results computed in ``dtype``)."""
    return ulps * np.finfo(dtype).eps * (1.0 + np.abs(np.asarray(ref, dtype=np.float64)))


def missing_partial(total_out, total_ref, partials):
    """A hint when a reduction's result is off by exactly one block's partial (or more than one)."""
    diff = float(total_ref) - float(total_out)
    for k, p in enumerate(partials):
        if abs(diff - p) <= 1e-4 * (1 + abs(p)) and abs(p) > 1e-6:
            return f"the result is missing exactly the partial of block {k}: is every block's result added?"
    return None


# --- Value-mismatch hints for the hidden tests' ``diagnose`` hooks ------------------------------------
def _close(out, want, scale):
    out, want = np.asarray(out, np.float64), np.asarray(want, np.float64)
    return out.shape == want.shape and bool(np.all(np.abs(out - want) <= 1e-4 * (1.0 + scale)))


OWN_PARTIAL = "threads' partials reached the value stored"  # sum_hints' words for thread 0's partial alone


def sum_hints(out, ref, terms, block=None, lanes=None, what="sum", unit="block"):
    """A hint when each output is its sum of ``terms`` (float64, shape out.shape + (K,)) with a
    recognisable part missing: the last term (an off-by-one range), the first term, one block of
    ``block`` consecutive terms (a ``unit``, e.g. a block or a tile, missing from the reduction), all
    but the first, or the
    partials of lanes ``m..lanes-1`` (term k belongs to lane k % lanes: a tree that starts too low)."""
    T = np.asarray(terms, np.float64).reshape(np.asarray(ref).size, -1)
    ref = np.asarray(ref, np.float64).reshape(-1)
    out = np.asarray(out, np.float64).reshape(-1)
    if not np.all(np.isfinite(out)):
        return None
    scale = np.abs(T).sum(axis=1)
    K = T.shape[1]
    if not np.any((T != 0).sum(axis=1) >= 2):  # one term a sum at most: "misses its first (last) term" is "is 0"
        K = 1
    if K > 1 and _close(out, ref - T[:, -1], scale):
        return f"each {what} misses its last term (index {K - 1}): off by one in the loop's range?"
    if K > 1 and _close(out, ref - T[:, 0], scale):
        return f"each {what} misses its first term (index 0): does the loop start at 0?"
    if K > 1 and _close(out, T[:, -1], scale):
        return (f"each {what} is its last term only (index {K - 1}): the accumulator is reset inside the loop (set "
                f"to 0 at every step, so each step's term replaces the ones before): set it to 0 once, before the "
                f"loop, and only add inside it")
    if lanes and K > lanes and _close(out, sum(T[:, j::lanes][:, -1] for j in range(lanes)), scale):
        return (f"each {what} holds only the last term of each of the {lanes} threads (the terms of the last "
                f"{lanes} columns): each thread's accumulator is reset inside its loop: set it to 0 once, before "
                f"the loop, and only add inside it")
    if block and K % block and _close(out, T[:, :K - K % block].sum(axis=1), scale):
        span = f"{K - K % block}..{K - 1}" if K % block > 1 else f"term {K - 1}"
        return (f"the {what} misses exactly the partial of {unit} {K // block}, the last, partial {unit} ({span}; K = {K} is no "
                f"multiple of {block}): the number of {unit}s was rounded down: count them rounding up, "
                f"(K + {block} - 1) // {block}, and let the guards zero the cells past K")
    if block and K > block:
        starts = range(0, K, block)
        for b, s in enumerate(starts):
            if _close(out, ref - T[:, s:s + block].sum(axis=1), scale):
                return (f"the {what} misses exactly the partial of {unit} {b} (terms {s}..{min(s + block, K) - 1}): "
                        f"is every {unit}'s part added?")
        for b, s in enumerate(starts):
            if _close(out, T[:, s:s + block].sum(axis=1), scale):
                return (f"the {what} holds only the partial of {unit} {b}: the {unit}s overwrite each other "
                        f"(add with cuda.atomic.add) or only one {unit} is added")
    if lanes and K > 1:
        by_lane = np.stack([T[:, j::lanes].sum(axis=1) for j in range(min(lanes, K))], axis=1)
        if _close(out, by_lane[:, 0], scale):  # no other thread's partial reached the stored value
            return (f"the {what} is thread 0's own partial alone (terms {', '.join(map(str, range(0, min(K, 2 * lanes), lanes)))}"
                    f"{', ...' if K > 2 * lanes else ''}): none of the other {lanes - 1} threads' partials reached "
                    f"the value stored")  # the checker says why, from the store's line (OWN_PARTIAL)
        if by_lane.shape[1] > 2 and _close(out, by_lane[:, ::2].sum(axis=1), scale):
            return (f"the {what} holds the partials of the even threads only (0, 2, 4, ... of {lanes}): the tree's "
                    f"last step (s = 1, thread t adding cache[t + 1]) never runs: the loop stops one step early: "
                    f"run it while s > 0 (s = {lanes // 2}, ..., 2, 1)")
        for m in range(2, by_lane.shape[1]):
            if _close(out, by_lane[:, :m].sum(axis=1), scale):
                return (f"the {what} holds only the partials of threads 0..{m - 1} of {lanes}: does the tree start "
                        f"at half the block ({lanes // 2}) and halve each step?")
    return None


def and_drawn(fixed, draw, key=None):
    """The hidden tests' sizes: the ``fixed`` ones (public: this file ships with the lab), then one that
    ``draw()`` picks from the seed's generator, called after the fixed cases drew their inputs (those stay
    what they were for a seed). A kernel right only at the public sizes (it tests ``n`` against them)
    fails the drawn one: a grade's seed is fresh and unknown to the submission. The drawn size is none of
    the fixed ones, and its ``key`` (default: its first integer, the length a kernel would test) none of
    theirs where 64 draws find one."""
    def first_int(v):
        return next((x for x in v if isinstance(x, int)), None) if isinstance(v, tuple) else v

    key = key or first_int
    yield from fixed
    taken = {key(f) for f in fixed}
    drawn = None
    for _ in range(64):
        d = draw()
        if d not in fixed:  # (never a fixed case again, whatever its key)
            drawn = d
            if key(d) not in taken:
                break
    yield drawn if drawn is not None else d


class Hedge(str):
    """A ``diagnose`` hint that can only ask (the values fit several causes): the checker puts what the
    student's trace and the reference solution's run decide in its place where they decide
    (lab.teach.reference.hedge_fact)."""

    hedge = True


# the values alone: the last element missing from the result (the checker adds whether it was loaded at all)
LAST_LEFT_OUT = "the last element is left out: off by one in the guard (`i < n`, not `i < n - 1`)?"


def dropped_block_hint(out, x, block):
    """minmax: a hint when ``out`` = [min, max] of ``x`` with one block of ``block`` elements (or
    the last element) left out."""
    out = np.asarray(out, np.float64)
    x = np.asarray(x, np.float64)
    if out[0] == x.min() and out[1] == x.max():
        return None
    if x.size > 1 and out[0] == x[:-1].min() and out[1] == x[:-1].max() and (x[-1] < out[0] or x[-1] > out[1]):
        return LAST_LEFT_OUT
    for b, s in enumerate(range(0, x.size, block)):
        rest = np.concatenate([x[:s], x[s + block:]])
        if rest.size and out[0] == rest.min() and out[1] == rest.max():
            return f"the result is that of every block but block {b}: is every block's result folded in?"
    return None


def clamp_hint(out, ref, lo, hi):
    """A hint when the wrong elements of an integer ``out`` were clamped at the wrong bound (or not
    clamped at all) instead of to ``lo..hi``."""
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    bad = out != ref
    if not bad.any():
        return None
    vals = np.unique(out[bad])
    if len(vals) == 1 and np.all(ref[bad] > vals[0]) and vals[0] != hi:
        return f"values above {vals[0]:g} come out as {vals[0]:g}: clamp to {hi:g}, the largest code"
    if len(vals) == 1 and np.all(ref[bad] < vals[0]) and vals[0] != lo:
        return f"values below {vals[0]:g} come out as {vals[0]:g}: clamp to {lo:g}, the smallest code"
    if np.all((ref[bad] == hi) | (ref[bad] == lo)):
        return f"only values beyond {lo:g}..{hi:g} are wrong: clamp before converting (they wrap around)"
    if np.all(np.abs(out[bad] - ref[bad]) == 1):
        return "off by one code: round half to even (round(), as np.round) after the clamp, not int() or +0.5"
    return None


def swapped_tile_product(case, tile, which):
    """C when the tile product reads the B tile as sB[tx, k] (``which`` "B") or the A tile as sA[k, ty]
    ("A") instead of sB[k, tx] and sA[ty, k], with ``tile`` x ``tile`` tiles zero-padded past A and B."""
    A, B = (np.asarray(a, np.float64) for a in case.args[:2])
    (m, k), n = A.shape, B.shape[1]
    up = lambda v: -(-v // tile) * tile  # noqa: E731
    Ap, Bp = np.zeros((up(m), up(k))), np.zeros((up(k), up(n)))
    Ap[:m, :k], Bp[:k, :n] = A, B
    C = np.zeros((m, n))
    for t in range(up(k) // tile):
        ks = slice(t * tile, (t + 1) * tile)
        for c in range(n):
            tx, c0 = c % tile, c - c % tile
            for r in range(m):
                ty, r0 = r % tile, r - r % tile
                if which == "B":
                    C[r, c] += Ap[r, ks] @ Bp[t * tile + tx, c0:c0 + tile]
                else:
                    C[r, c] += Ap[r0:r0 + tile, t * tile + ty] @ Bp[ks, c]
    return [C]
