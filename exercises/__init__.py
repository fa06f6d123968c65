"""The exercises: each ``exercises/<name>/`` holds

* ``scaffold.py``  — what the student edits (kernel signature, docstring, ``TODO`` body);
* ``solution.py``  — the reference solution (printed by ``lab exercise solution NAME --yes``);
* ``test_visible.py`` — a visible example test copied next to the scaffold;
* ``meta.py``      — title, difficulty, prerequisites, the ``kernels/`` module it mirrors, statement, hints;
* ``hidden.py``    — the *hidden* tests (``cases(rng)``), never copied to the student's workspace.

Nothing here imports ``numba.cuda``; the hidden tests are imported by the checker after the backend
is chosen. See exercises/README.md.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent

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
    sector_factor: float = 1.25  # SECTOR_FACTOR: simulator: loads may touch this x the reference's sectors
    rung: str | None = None      # RUNG: "kernel:variant" of kernels/ timed beside it, e.g. "vecadd:element_per_thread"

    @property
    def scaffold(self) -> Path:
        return self.path / "scaffold.py"

    @property
    def solution(self) -> Path:
        return self.path / "solution.py"

    @property
    def visible_test(self) -> Path:
        return self.path / "test_visible.py"

    def hidden(self):
        """The module with ``cases(rng)``: import only after the backend is chosen."""
        return importlib.import_module(f"exercises.{self.name}.hidden")

    def bench(self):
        """The optional module ``bench.py`` with ``case(rng, simulator) -> Case`` (the size to time)
        and optionally ``flops(case)``, ``bytes(case)`` and ``rung_size(case)``; None without one."""
        if not (self.path / "bench.py").is_file():
            return None
        return importlib.import_module(f"exercises.{self.name}.bench")


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
                    float(getattr(m, "SECTOR_FACTOR", 1.25)), getattr(m, "RUNG", None))


def randn(rng, shape, dtype=np.float32, scale=1.0, offset=0.0):
    """Random normals (never constant, never symmetric), as ``dtype``."""
    return (rng.standard_normal(shape) * scale + offset).astype(dtype)


def matvec_case(rng, rows: int, cols: int, **launch) -> Case:
    """A ROWSxCOLS matvec case: y = A @ x from random float32 A and x, checked against the float64
    product within ``kernels.spec.dot_tolerance``; ``launch`` is the Case's grid/block."""
    from kernels.spec import dot_tolerance

    A, x = randn(rng, (rows, cols)), randn(rng, cols)
    return Case(f"{rows}x{cols}", [A, x], [((rows,), np.float32)], [A.astype(np.float64) @ x.astype(np.float64)],
                [dot_tolerance(A, x, np.float32)], **launch)


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
