"""``lab exercise new NAME``: a new exercise's files for an instructor to fill in (meta, hidden
tests, scaffold, solution, visible test). Nothing here prints.
"""
from __future__ import annotations

from pathlib import Path

import exercises
from lab.core.errors import LabError


_META = '''"""{name}: metadata, statement and hints (shown to students)."""
TITLE = "{title}"
DIFFICULTY = 1  # 1 (first steps) .. 5
PREREQUISITES = ["vecadd"]
MIRRORS = "kernels/vecadd.py"  # the kernels/ module this exercise mirrors, or "-"
KERNEL = "{name}_kernel"        # the kernel's name in the student's file
LAUNCH = None                   # or "launch" when the student writes the launch math too
LESSON = "one_element_per_thread"  # the mapping graded (lab.teach.lessons.LESSONS; a tuple for several, None: values only)
PASS_PCT_OF_REFERENCE = 70      # lab exercise check --bench: at least this % of the reference's speed
PEAK = "copy"                   # or "fp32" for a compute-bound kernel (then give bench.py a flops(case))
STATEMENT = """
TODO: what to compute (shapes, dtypes), the launch configuration, the pitfalls.
"""
HINTS = [
    "TODO: a first nudge",
    "TODO: a stronger one",
    "TODO: almost the answer",
]
'''

_HIDDEN = '''"""{name}: the hidden tests (never copied to the student's workspace)."""
import numpy as np

from exercises import Case, randn

THREADS = 32


def cases(rng):
    """Fresh random inputs; sizes that are not multiples of the block, one element, several blocks."""
    out = []
    for n in (1, 45, 3 * THREADS + 7):
        x = randn(rng, n)
        ref = 2.0 * x.astype(np.float64)  # TODO: the float64 reference
        out.append(Case(f"n={{n}}", [x], [((n,), np.float32)], [ref], [1e-6 * (1 + np.abs(ref))],
                        grid=(n + THREADS - 1) // THREADS, block=THREADS))
    return out
'''


_KERNEL = '''"""{name}: TODO one line saying what the kernel computes."""
from numba import cuda


@cuda.jit
def {name}_kernel(x, out):
    """out[i] = 2 * x[i]; thread i = cuda.grid(1) computes element i. TODO: describe yours."""
    i = cuda.grid(1)
    {body}
'''


def new(name: str, title: str = "TODO title") -> Path:
    """Scaffold a new exercise exercises/NAME/ (meta, hidden tests, scaffold, solution, visible test)
    to be filled in by an instructor; LabError if the name is taken or not an identifier."""
    if not name.isidentifier() or name.startswith("_"):
        raise LabError(f"exercise name {name!r} must be a Python identifier (letters, digits, _)")
    d = exercises.HERE / name
    if d.exists():
        raise LabError(f"exercise {name!r} already exists at {d}")
    try:
        _write_new(d, name, title)
    except OSError as e:
        raise LabError(f"cannot create exercise {name!r} at {d}: {e.strerror or e}") from None
    return d


def _write_new(d: Path, name: str, title: str) -> None:
    d.mkdir()
    (d / "__init__.py").write_text("")
    (d / "meta.py").write_text(_META.format(name=name, title=title))
    (d / "hidden.py").write_text(_HIDDEN.format(name=name))
    (d / "solution.py").write_text(_KERNEL.format(name=name, body="if i < out.shape[0]:\n        out[i] = 2 * x[i]"))
    (d / "scaffold.py").write_text(_KERNEL.format(name=name, body="# TODO: roughly 2 lines"))
    (d / "test_visible.py").write_text(
        f'"""Visible example for {name}: python test_{name}.py"""\n'
        "import numpy as np\n\n"
        "from kernels.compiler import cuda  # noqa: F401  (picks the simulator when there is no GPU)\n"
        f"from {name} import {name}_kernel\n\n\n"
        "def test_example():\n"
        "    x = np.arange(1, 6, dtype=np.float32)\n"
        "    out = np.zeros_like(x)\n"
        f"    {name}_kernel[1, 32](x, out)\n"
        "    np.testing.assert_allclose(out, 2 * x)\n\n\n"
        'if __name__ == "__main__":\n    test_example()\n    print("ok")\n')
