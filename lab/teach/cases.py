"""The hidden tests as the judge makes them (:mod:`lab.teach.checker`): drawn from the exercise's
``hidden.py`` with the seed, each with a distinct name; the poisons of their launches; the argument
types the offline GPU compile uses, and that test's entry. Made in the judge's process only (a
child never reads ``hidden.py``). Nothing here prints.
"""
from __future__ import annotations

import json
import threading
import warnings

import numpy as np
from kernels.backend import SimulatorFallback
from lab.teach.contained import gpu_compile


COMPILE_TEST = "compiles for a GPU"


def unique_names(cases):
    """Give every case a distinct label ('n=1', then 'n=1 (2)'): results are keyed by name."""
    seen = {}
    for c in cases:
        k = seen.get(c.name, 0)
        seen[c.name] = k + 1
        if k:
            c.name = f"{c.name} ({k + 1})"
    return cases


_QUIET = threading.Lock()


def hidden_cases(ex, rng):
    """The hidden tests of exercise ``ex`` drawn from ``rng`` (``np.random.default_rng(seed)``), each
    with a distinct name. (The judge's process makes them: an exercise's hidden.py may import the
    lab's kernels, whose backend note is no news here.)"""
    with _QUIET, warnings.catch_warnings():  # (catch_warnings is process-wide: one grader thread at a time)
        warnings.simplefilter("ignore", SimulatorFallback)
        return unique_names(ex.hidden().cases(rng))


def runs_of(case) -> list:
    """The poisons of one case's launches: integer outputs twice (two poisons: an element that
    changes with the poison was never written), else once."""
    int_out = any(np.dtype(dt).kind in "iub" for _, dt in case.outputs)
    return [0, 1] if int_out and case.init is None else [0]


def compile_sigs(cases) -> list:
    """The argument types the GPU-compile test compiles the kernel for: each hidden case's
    (:func:`lab.teach.contained.gpu_compile.arg_types`), each once. The contained compile child
    (:mod:`lab.teach.contained.compile_sandbox`) uses these too."""
    return [json.loads(t) for t in dict.fromkeys(json.dumps(gpu_compile.arg_types(c)) for c in cases)]


def compile_entry(r: dict, backend: str):
    """The GPU-compile test's entry from the executor's raw result (:func:`lab.teach.contained.executor.compile_raw`),
    or a note (str) when it was skipped."""
    if not isinstance(r, dict):
        raise ValueError("not a compile result")
    if "skipped" in r:
        if r.get("broken"):
            return f"the GPU compile check could not run ({str(r['skipped'])[:200]})"
        return (f"the GPU compile check was skipped ({str(r['skipped'])[:200]}): the simulator runs any Python, "
                f"so code that a GPU cannot compile (np.dot, generators, ...) may pass here; enable it with "
                f"{gpu_compile.ENABLE_HINT}")
    cc = tuple(int(v) for v in r.get("cc") or gpu_compile.CC)[:2]
    if r.get("ok") is True:
        return {"name": COMPILE_TEST, "passed": True,
                "message": f"ok (compiled offline for sm_{cc[0]}{cc[1]})" if backend == "simulator" else "ok"}
    line = r.get("line")
    return {"name": COMPILE_TEST, "passed": False,
            "message": gpu_compile.message({"message": str(r.get("message"))[:300],
                                            "line": int(line) if isinstance(line, int) else None}, cc)}
