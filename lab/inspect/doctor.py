"""``lab doctor``: is this environment able to run the lab? A list of small checks, each returning
ok / warn / fail, a message and the fix. Add a check by writing a function that returns a
:class:`Check` and adding it to ``CHECKS`` (one line).

Each check reads the environment through a small probe (``_version``, ``driver_version``,
``cupy_cuda_major`` ...) so the tests can simulate broken environments by monkeypatching the probe;
the CUDA driver's probes (``driver_version``, ``gpu_count``, ``device_name``) are kernels.backend's.
Nothing here imports ``numba.cuda``: the tiny kernel runs in a child process, so the doctor works
whatever backend this process would pick, and a crash there is reported, not fatal.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import asdict, dataclass

from kernels.backend import device_name, driver_version, gpu_count, installed_version  # probes: the tests monkeypatch them here
from lab.core.compilers import cache_check, doctor_check
from lab.core.errors import SCHEMA_VERSION
from lab.core.isolation import protections
from lab.core.session import child_env
from lab.core.settings import doctor_lines

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass
class Check:
    name: str
    status: str  # "ok", "warn" or "fail"
    message: str
    fix: str = ""


# --- Probes (monkeypatched by the tests) ---------------------------------------------------------
def find_library(lib: str) -> str | None:
    """Path of an NVIDIA library (nvvm, nvrtc, nvJitLink) as cuda-pathfinder finds it, else None."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib  # lazy: optional (cuda)

        return load_nvidia_dynamic_lib(lib).abs_path
    except Exception:
        return None


def cupy_cuda_major() -> int | None:
    """The CUDA major CuPy was built for, from its wheel's name (cupy-cuda12x / cupy-cuda13x)."""
    for major in (11, 12, 13, 14):
        if installed_version(f"cupy-cuda{major}x"):
            return major
    return None


def torch_info() -> dict | None:
    """{"version", "cuda" (torch.version.cuda or None), "available", "device"} or None if not installed."""
    if installed_version("torch") is None:
        return None
    import torch  # lazy: optional (torch)

    available = torch.cuda.is_available()
    return {"version": torch.__version__, "cuda": torch.version.cuda, "available": available,
            "device": torch.cuda.get_device_name(0) if available else None}


TINY = """
import numpy as np
from kernels.compiler import cuda
from kernels.backend import is_simulator
@cuda.jit
def add(a, b, c):
    i = cuda.grid(1)
    if i < c.shape[0]:
        c[i] = a[i] + b[i]
a = np.random.default_rng().standard_normal(1000).astype(np.float32); b = a[::-1].copy()
c = cuda.device_array_like(a)
add[4, 256](a, b, c)
assert np.array_equal(c.copy_to_host(), a + b), "wrong sum"
print("simulator" if is_simulator() else "gpu")
"""


def run_tiny_kernel() -> tuple[bool, str]:
    env = child_env()
    try:
        p = subprocess.run([sys.executable, "-W", "ignore", "-c", TINY], capture_output=True, text=True,
                           env=env, timeout=300)
    except subprocess.TimeoutExpired:
        return False, "timed out after 300 s"
    if p.returncode:
        lines = [x for x in p.stderr.strip().splitlines() if x.strip()]
        return False, lines[-1] if lines else f"exit code {p.returncode}"
    return True, p.stdout.strip().splitlines()[-1]


# --- Checks ----------------------------------------------------------------------------------------
def check_python() -> Check:
    v = sys.version_info
    if v < (3, 10):
        return Check("python", FAIL, f"Python {v.major}.{v.minor}", "use Python 3.10 or newer")
    return Check("python", OK, f"Python {v.major}.{v.minor}.{v.micro}")


def _tuple(v: str) -> tuple:
    out = []
    for p in v.split(".")[:3]:
        digits = "".join(ch for ch in p if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def check_packages() -> Check:
    vers = {d: installed_version(d) for d in ("numba", "numba-cuda", "llvmlite", "numpy")}
    text = ", ".join(f"{d} {v or 'missing'}" for d, v in vers.items())
    missing = [d for d, v in vers.items() if v is None]
    if missing:
        return Check("packages", FAIL, text, f"pip install {' '.join(missing)}")
    if _tuple(vers["numpy"]) >= (2, 5) and _tuple(vers["numba-cuda"])[:2] <= (0, 30):
        return Check("packages", FAIL, f"{text}: numpy >= 2.5 removed np.row_stack, which numba-cuda "
                     f"{vers['numba-cuda']} uses: the first kernel compile fails", "pip install 'numpy<2.5'")
    return Check("packages", OK, text)


def check_driver() -> Check:
    v = driver_version()
    if v is None:
        return Check("cuda driver", WARN, "no CUDA driver (libcuda) found: kernels run in the CUDA simulator only",
                     "on a GPU machine install the NVIDIA driver; without one, lab runs in the simulator")
    return Check("cuda driver", OK, f"CUDA driver supports CUDA {v // 1000}.{v % 1000 // 10}")


def check_libraries() -> list[Check]:
    have_driver = driver_version() is not None
    out = []
    for lib, why, extra in (("nvvm", "compiles kernels to PTX", "cuda13"), ("nvrtc", "finds the target arch", "cuda13"),
                            ("nvJitLink", "reads registers offline (lab occupancy --arch)", "occupancy")):
        path = find_library(lib)
        if path:
            out.append(Check(lib, OK, f"{lib} found: {path}"))
        else:
            needed = have_driver and lib != "nvJitLink"
            out.append(Check(lib, FAIL if needed else WARN, f"{lib} not found ({why})",
                             f"pip install 'numba-gpu-lab[{extra}]' (or a CUDA toolkit)"))
    return out


def check_gpus() -> Check:
    n, why = gpu_count()
    if n == 0:
        return Check("gpus", WARN, f"no GPU visible ({why}): the simulator runs the kernels",
                     "check nvidia-smi and CUDA_VISIBLE_DEVICES on a GPU machine")
    return Check("gpus", OK, f"{n} GPU(s) visible: {device_name(0) or '?'}")


def check_cupy() -> Check:
    major = cupy_cuda_major()
    drv = driver_version()
    if major is None:
        return Check("cupy", WARN, "CuPy not installed (the cupy contender is skipped)",
                     f"pip install 'numba-gpu-lab[cuda{drv // 1000 if drv else 13}]'")
    if drv is None:
        return Check("cupy", WARN, f"CuPy for CUDA {major} installed, but no CUDA driver to run it")
    if major > drv // 1000:
        return Check("cupy", FAIL, f"CuPy is built for CUDA {major}, the driver supports CUDA {drv // 1000} only",
                     f"pip uninstall cupy-cuda{major}x && pip install 'numba-gpu-lab[cuda{drv // 1000}]'")
    if major < drv // 1000:
        return Check("cupy", WARN, f"CuPy is built for CUDA {major}, the driver is CUDA {drv // 1000} (works, older)",
                     f"pip install 'numba-gpu-lab[cuda{drv // 1000}]' for the matching build")
    return Check("cupy", OK, f"CuPy built for CUDA {major}, matching the driver")


CPU_TORCH = "2.13.0"  # the README's pin for a machine without a GPU (a local CPU build)


def check_torch() -> Check:
    info = torch_info()
    gpu = gpu_count()[0] > 0
    if info is None:  # without a GPU the README's CPU build: an unpinned torch pulls GBs of CUDA wheels
        return Check("torch", WARN, "torch not installed (torch contender and interop skipped)",
                     "pip install 'numba-gpu-lab[torch]'" if gpu else
                     f"pip install torch=={CPU_TORCH} (the CPU build, as the README says: an unpinned torch "
                     "pulls several GB of CUDA wheels this machine cannot use)")
    if not info["cuda"]:
        return Check("torch", WARN if gpu else OK,
                     f"torch {info['version']} is a CPU build" + ("" if gpu else " (right for this machine: no GPU)"),
                     "install a CUDA build of torch: pip install 'numba-gpu-lab[torch]'" if gpu else "")
    if not info["available"]:
        return Check("torch", WARN, f"torch {info['version']} (CUDA {info['cuda']}) sees no GPU")
    name = device_name(0)
    if name and info["device"] != name:
        return Check("torch", FAIL, f"torch sees {info['device']}, the driver's GPU 0 is {name}",
                     "set CUDA_VISIBLE_DEVICES the same for both")
    return Check("torch", OK, f"torch {info['version']} (CUDA {info['cuda']}) sees {info['device']}")


def check_simulator() -> Check:
    sim = os.environ.get("NUMBA_ENABLE_CUDASIM", "")
    if sim not in ("", "0"):
        return Check("simulator", WARN, "NUMBA_ENABLE_CUDASIM=1: kernels run in the simulator even on a GPU",
                     "unset NUMBA_ENABLE_CUDASIM to use the GPU")
    return Check("simulator", OK, "simulator not forced (lab picks a usable GPU, else the simulator)")


def check_tiny_kernel() -> Check:
    ok, text = run_tiny_kernel()
    if not ok:
        return Check("tiny kernel", FAIL, f"compile + run of a 1000-element add failed: {text}",
                     "fix the failures above (versions, NVVM) and run lab doctor again")
    return Check("tiny kernel", OK, f"a 1000-element add compiled, ran and matched NumPy ({text})")


def check_compilers() -> list[Check]:
    """Which compiler kernels use by default and why (numba-cuda-mlir on a CUDA 13 GPU where it is
    installed, else numba-cuda), which of the two can compile here and why not; and the
    compiled-kernel cache (where, how big, how to turn it off)."""
    ok, text = doctor_check()
    return [Check("compilers", OK if ok else FAIL, text,
                  "" if ok else "pip install -e . (numba-cuda, with numpy<2.5); numba-cuda-mlir: pip install -e '.[cuda13]'"),
            Check("kernel cache", OK, cache_check())]


def check_sandbox() -> list[Check]:
    """Which of the OS's protections a student's submission gets here under ``lab exercise check``
    and ``grade`` (:mod:`lab.core.isolation`): bubblewrap's namespaces, seccomp, Landlock, the
    per-submission thread limit; each ok, or warn with the fix."""
    return [Check(p["name"], OK if p["status"] == "ok" else WARN, p["message"], p["fix"]) for p in protections()]


def check_settings() -> Check:
    """The lab's environment variables that are set (lab.core.settings), each with its value; fail
    when one holds a value it does not take (every command then refuses to start)."""
    lines = doctor_lines()
    if not lines:
        return Check("settings", OK, "no LAB_* variable set: every default (docs/settings.md)")
    bad = [text for _, ok, text in lines if not ok]
    return Check("settings", FAIL if bad else OK, "; ".join(text for _, _, text in lines),
                 "fix or unset: " + ", ".join(name for name, ok, _ in lines if not ok) if bad else "")


# The checks, in order. A check returns a Check or a list of them.
CHECKS = [
    check_python,
    check_packages,
    check_driver,
    check_libraries,
    check_gpus,
    check_cupy,
    check_torch,
    check_simulator,
    check_compilers,
    check_tiny_kernel,
    check_sandbox,
    check_settings,
]


def run_checks(checks=None) -> list[Check]:
    out = []
    for fn in checks or CHECKS:
        try:
            r = fn()
        except Exception as e:  # a check that crashes is a failed check, not a crashed doctor
            r = Check(fn.__name__.removeprefix("check_"), FAIL, f"check raised {type(e).__name__}: {e}")
        out.extend(r if isinstance(r, list) else [r])
    return out


def to_dict(results: list[Check]) -> dict:
    status = FAIL if any(r.status == FAIL for r in results) else WARN if any(r.status == WARN for r in results) else OK
    return {"schema_version": SCHEMA_VERSION, "status": status, "checks": [asdict(r) for r in results]}


