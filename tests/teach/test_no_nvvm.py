"""The README's main-job install has no ``occupancy`` extra: no NVVM, so the "compiles for a GPU"
test is skipped. The reference solution then passes ``lab exercise check`` with one note saying the
GPU compile check was skipped and how to enable it; ``lab exercise grade`` refuses to start (one
line) unless ``--no-gpu-compile`` says to grade without it, and then passes it, saying so (it once failed
with "compiles for a GPU: not run (an earlier test was stopped)": the test was planned, then
skipped). NVVM's absence is simulated for the whole process tree: ``cuda.pathfinder`` (numba-cuda's
library loader) is shadowed by one that finds every library but NVVM, the compile cache is fresh."""
import json
import os
import subprocess
import sys
from pathlib import Path

import exercises
from lab.teach.cases import COMPILE_TEST

ROOT = Path(__file__).resolve().parents[2]
NO_NVVM = '''\
# The real cuda.pathfinder, except that NVVM is not found (the lab without its occupancy extra).
import importlib.machinery, importlib.util, os, sys
import cuda
_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.machinery.PathFinder.find_spec(
    "cuda.pathfinder", [p for p in cuda.__path__ if os.path.abspath(p) != _here])
_real = importlib.util.module_from_spec(_spec)
sys.modules[__name__] = _real
_spec.loader.exec_module(_real)
_load = _real.load_nvidia_dynamic_lib
def load_nvidia_dynamic_lib(name, *a, **k):
    if name == "nvvm":
        raise _real.DynamicLibNotFoundError("simulated: no NVVM (no occupancy extra)")
    return _load(name, *a, **k)
_real.load_nvidia_dynamic_lib = load_nvidia_dynamic_lib
'''


def without_nvvm(tmp_path, *args):
    """``python ARGS`` in a child whose process tree finds no NVVM; (exit code, stdout, stderr)."""
    shim = tmp_path / "no-nvvm" / "cuda" / "pathfinder"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "__init__.py").write_text(NO_NVVM)
    env = {**os.environ, "COLUMNS": "80", "XDG_CACHE_HOME": str(tmp_path / "cache"), "LAB_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "no-nvvm"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("LAB_GPU_COMPILE", None)
    p = subprocess.run([sys.executable, *map(str, args)], env=env, cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def test_solution_passes_without_nvvm_with_a_note(tmp_path):
    code, out, err = without_nvvm(tmp_path, "-c", "from lab.core.resources import offline_unavailable as o; print(o())")
    assert code == 0 and "nvvm" in out, out + err  # the simulation holds: NVVM is missing

    solution = exercises.load("map_guard").solution
    code, out, err = without_nvvm(tmp_path, "-m", "lab", "exercise", "check", "map_guard", "--sim", "--json",
                                  "--file", solution, "--dir", tmp_path / "ws")
    doc = json.loads(out)
    assert code == 0 and doc["passed"], out + err
    assert COMPILE_TEST not in [t["name"] for t in doc["tests"]] and doc["tests"]
    assert not any("not run" in t["message"] for t in doc["tests"])
    compile_notes = [n for n in doc["notes"] if "GPU compile" in n]  # (beside the sandbox's notes, where it lacks a layer)
    assert len(compile_notes) == 1 and "GPU compile check was skipped" in compile_notes[0], doc["notes"]
    assert "nvvm" in compile_notes[0] and "pip install 'numba-gpu-lab[occupancy]'" in compile_notes[0]

    # a teacher's grade requires the compile (it proves each kernel holds only device code before it runs):
    # one line and exit 2 without NVVM, unless --no-gpu-compile says to grade without it (issue 39)
    (tmp_path / "class" / "ada").mkdir(parents=True)
    (tmp_path / "class" / "ada" / "map_guard.py").write_text(solution.read_text())
    code, out, err = without_nvvm(tmp_path, "-m", "lab", "exercise", "grade", tmp_path / "class", "--sim",
                                  "--jobs", "1", "--json")
    assert code == 2 and not out and len(err.strip().splitlines()) == 1, out + err
    assert "needs the offline GPU compile" in err and "nvvm" in err and "--no-gpu-compile" in err, err
    code, out, err = without_nvvm(tmp_path, "-m", "lab", "exercise", "grade", tmp_path / "class", "--sim",
                                  "--jobs", "1", "--json", "--no-gpu-compile")
    grade = json.loads(out)
    row = grade["rows"][0]
    assert code == 0 and row["status"] == "passed" and row["tests_passed"] == row["tests_total"], out + err
    assert any("not compiled for a GPU (--no-gpu-compile" in n for n in grade.get("notes", [])), out
