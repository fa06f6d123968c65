"""The lab's environment variables, declared once: name, what values it takes, its default and what it
does. Every ``LAB_*`` variable a user may set is here, checked like an option before a command starts
(:func:`validate`: one line naming the variable, its value and what it takes; exit code 2 in the CLI),
listed by ``lab doctor`` (:func:`doctor_lines`) and in docs/settings.md (:func:`markdown_table`, kept
equal to this table by tests/core/test_settings.py). Variables the lab sets for its own child
processes (``INTERNAL``) are not the user's to set and are not checked.

``NUMBA_ENABLE_CUDASIM=0`` (Numba's own variable) insists on a GPU: :func:`lab.core.simulator.choose`
refuses to fall back to the simulator under it. Nothing here prints.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
import difflib

from lab.core.errors import LabError

OFF = ("0", "off", "no", "false")
ON = ("1", "on", "yes", "true")


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str  # "switch", "folder", "program", "choice", "seconds", "count", "text"
    default: str
    help: str
    choices: tuple = ()

    def takes(self) -> str:
        """What values it takes, in words (the error message and the docs table say the same)."""
        return {
            "switch": f"{'/'.join(OFF)} (off) or {'/'.join(ON)} (on)",
            "folder": "a folder (made when missing; its parent must exist)",
            "program": "a path to an executable file, or a program name on PATH" + (
                ", or 0 (off)" if "0" in self.choices else ""),
            "choice": " or ".join(self.choices),
            "seconds": "seconds, a number above 0",
            "count": "a whole number, 1 or more",
            "text": "any text",
        }[self.kind]

    def problem(self, value: str) -> str | None:
        """Why ``value`` is not one this setting takes, or None."""
        v = value.strip()
        if self.kind == "switch":
            return None if v.lower() in OFF + ON else "not a switch"
        if self.kind == "choice":
            return None if v in self.choices else "not one of the choices"
        if self.kind in ("seconds", "count"):
            try:
                n = float(v) if self.kind == "seconds" else int(v)
            except ValueError:
                return "not a number" if self.kind == "seconds" else "not a whole number"
            return None if n > 0 and n == n and n != float("inf") else "out of range"
        if self.kind == "folder":
            if not v:
                return "empty"
            if os.path.exists(v):
                return None if os.path.isdir(v) else "exists and is not a folder"
            parent = os.path.dirname(os.path.abspath(v))
            return None if os.path.isdir(parent) else f"its parent {parent} does not exist"
        if self.kind == "program":
            if v in self.choices:
                return None
            if os.sep in v:
                if not os.path.exists(v):
                    return "no such file"
                return None if os.path.isfile(v) and os.access(v, os.X_OK) else "not an executable file"
            return None if shutil.which(v) else "no such program on PATH"
        return None


SETTINGS = (
    Setting("LAB_COMPILER", "choice", "numba-cuda-mlir on a CUDA 13 GPU where installed, else numba-cuda",
            "compiler of the Numba kernels (as --compiler)", ("numba-cuda", "numba-cuda-mlir")),
    Setting("LAB_KERNEL_CACHE", "switch", "on", "the on-disk cache of compiled kernels (kernels.cache)"),
    Setting("LAB_CACHE_DIR", "folder", "platformdirs' user cache folder",
            "where the tuned table, the kernel cache, the measured copy bandwidth and the checker's GPU-compile verdicts are kept"),
    Setting("LAB_DATA_DIR", "folder", "platformdirs' user data folder",
            "where the key that signs exercise check records is kept"),
    Setting("LAB_TUNED", "switch", "on", "auto uses `lab tune`'s measured winners (off: the heuristic only)"),
    Setting("LAB_BANDWIDTH_CACHE", "switch", "on", "remember the measured copy bandwidth (off: measure every run)"),
    Setting("LAB_EXERCISES_DIR", "folder", "./lab-exercises", "the exercise workspace (as --dir)"),
    Setting("LAB_EXERCISE_TIMEOUT", "seconds", "30", "seconds per hidden test of lab exercise check (as --timeout)"),
    Setting("LAB_SOLUTIONS", "folder", "(none: exercises/NAME/solution.py)",
            "a teacher's folder of reference solutions, DIR/NAME/solution.py, read first (docs/grading.md)"),
    Setting("LAB_GPU_COMPILE", "switch", "on", "the checker's offline GPU compile of a student's kernel"),
    Setting("LAB_SANDBOX_SECCOMP", "switch", "on", "the seccomp filter of the grader's contained children"),
    Setting("LAB_SANDBOX_THREADS", "count", "the lab's thread limit", "threads a contained child may start"),
    Setting("LAB_BWRAP", "program", "bwrap on PATH", "bubblewrap's executable for the grader's sandbox", ("0",)),
    Setting("LAB_NCU", "program", "ncu on PATH, CUDA_HOME, /usr/local/cuda, /opt/nvidia",
            "Nsight Compute's ncu for lab counters"),
    Setting("LAB_COMPUTE_SANITIZER", "program", "compute-sanitizer on PATH, CUDA_HOME, /usr/local/cuda",
            "compute-sanitizer for lab sanitize"),
    Setting("LAB_SOURCE", "text", "numba-gpu-lab", "the clone the generated notebooks install the lab from"),
    Setting("LAB_COMPARE_LOG", "folder", "(none)", "keep each compiler child's stderr there (debugging)"),
    Setting("LAB_DEBUG", "switch", "off", "show the traceback of an internal error"),
    Setting("LAB_KERNEL_CACHE_STATS", "switch", "off", "print the kernel cache's hits and misses at exit"),
    Setting("LAB_CHECK_MAP", "switch", "off", "a failing test's entry carries the map of who wrote what"),
)
BY_NAME = {s.name: s for s in SETTINGS}
# Set by the lab for its own child processes (or the test suite): not the user's to set.
INTERNAL = ("LAB_COMPILE_CHILD", "LAB_TEST_COMPILE_ABORT", "LAB_COMPILER_WHY", "LAB_NUMBA_CACHE_DIR", "LAB_SANDBOX_UID", "LAB_LINEINFO", "LAB_SANITIZER",
            "LAB_REQUIRE_SANDBOX", "LAB_TEST_BACKEND", "LAB_TESTS_WORKSTEAL")


def on(name: str, environ=None) -> bool:
    """A switch's state: its default when unset, off for 0/off/no/false (any case), else on."""
    env = os.environ if environ is None else environ
    value = env.get(name)
    if value is None:
        return BY_NAME[name].default == "on"
    return value.strip().lower() not in OFF


def validate(environ=None) -> None:
    """LabError (one line) for the first set variable whose value its setting does not take, or for a
    ``LAB_*`` name the lab does not know (a misspelling would otherwise be ignored)."""
    env = os.environ if environ is None else environ
    for name in sorted(k for k in env if k.startswith("LAB_")):
        setting = BY_NAME.get(name)
        if setting is None:
            if name in INTERNAL:
                continue
            close = difflib.get_close_matches(name, BY_NAME, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise LabError(f"{name}: not a setting of the lab{hint}; docs/settings.md lists them")
        why = setting.problem(env[name])
        if why:
            raise LabError(f"{name}={env[name]!r}: {why}; it takes {setting.takes()}")


def doctor_lines(environ=None) -> list[tuple[str, bool, str]]:
    """(name, ok, one line) for every setting that is set, for ``lab doctor``."""
    env = os.environ if environ is None else environ
    out = []
    for s in SETTINGS:
        if s.name in env:
            why = s.problem(env[s.name])
            out.append((s.name, why is None, f"{s.name}={env[s.name]}" + (f": {why}; it takes {s.takes()}" if why else "")))
    return out


def markdown_table() -> str:
    """docs/settings.md's table: every setting, what it takes, its default and what it does."""
    rows = ["| variable | takes | default | what it does |", "|---|---|---|---|"]
    rows += [f"| `{s.name}` | {s.takes()} | {s.default} | {s.help} |" for s in SETTINGS]
    return "\n".join(rows)
