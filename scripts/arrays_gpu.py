"""Every kernel with Numba's, torch's and CuPy's device arrays, under both compilers (``lab run --arrays``).

    python scripts/arrays_gpu.py [--jobs 8] [--compilers numba-cuda,numba-cuda-mlir] [--timeout 300]

For each compiler (a child process with ``LAB_COMPILER`` set) and each kernel, at its small ragged
simulator size (matmul also at 96x100x4100, where the K-split rungs allocate workspaces, and its
TF32/bf16/async_copy rungs at 1030x1030x2050, where TF32 pads A and B into scratch), runs

    python -m lab run KERNEL --gpu --size SIZE --contenders numba --repeats 1 --warmup 0 --seed S --json --arrays A

for A in numba, torch, cupy (numba first, so the compiled-kernel cache is warm for the other two;
``--jobs`` children at a time). Prints one line per (compiler, kernel, size, variant) with the row's
status under each A, then the rows lost. Exit 1 when a row that passes with numba arrays does not
pass with torch or CuPy arrays (or a run gave no report), 0 otherwise, 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARRAYS = ("numba", "torch", "cupy")
COMPILERS = ("numba-cuda", "numba-cuda-mlir")
EXTRA = {"matmul": [("96x100x4100", None),
                    ("1030x1030x2050", "tensor_core_tf32,tensor_core_bf16,tensor_core_wgmma,async_copy")]}


def _env(**extra) -> dict:
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def small_sizes() -> dict:
    """kernel -> its simulator size ("7x11"), read in a simulator child (nothing touches the GPU)."""
    code = ("import json, kernels; print(json.dumps({n: 'x'.join(map(str, kernels.load(n).default_size(True)))"
            " for n in kernels.NAMES}))")
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, check=True,
                         env=_env(NUMBA_ENABLE_CUDASIM="1", LAB_COMPILER="numba-cuda"), cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_one(compiler, kernel, size, variants, arrays, seed, timeout, backend="gpu"):
    """(key, arrays, {variant: (status, reason)} or None, why)."""
    args = [sys.executable, "-m", "lab", "run", kernel, f"--{backend}", "--size", size, "--contenders", "numba",
            "--repeats", "1", "--warmup", "0", "--seed", str(seed), "--json", "--arrays", arrays]
    if variants:
        args += ["--variant", variants]
    key = (compiler, kernel, size)
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                           env=_env(LAB_COMPILER=compiler))
    except subprocess.TimeoutExpired:
        return key, arrays, None, f"timed out after {timeout} s"
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        last = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return key, arrays, None, f"exit {p.returncode}: {last}"
    if doc.get("arrays", "numba") != arrays or doc.get("compiler") not in ("", None, compiler):
        return key, arrays, None, f"the report says arrays={doc.get('arrays')}, compiler={doc.get('compiler')}"
    return key, arrays, {r["variant"]: (r["status"], r["reason"] or "") for r in doc["results"]}, ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--compilers", default=",".join(COMPILERS))
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--backend", choices=("gpu", "sim"), default="gpu",
                    help="sim: the script's own plumbing on a CPU (torch/CuPy runs then fail as they should)")
    a = ap.parse_args()
    compilers = [c for c in a.compilers.split(",") if c]
    if not compilers or any(c not in COMPILERS for c in compilers) or a.jobs < 1:
        print(f"--compilers: from {', '.join(COMPILERS)}; --jobs >= 1", file=sys.stderr)
        return 2
    t0 = time.time()
    sizes = small_sizes()
    problems = [(c, k, s, None) for c in compilers for k in sizes for s in [sizes[k]]]
    problems += [(c, k, s, v) for c in compilers for k, extra in EXTRA.items() if k in sizes for s, v in extra]
    print(f"seed {a.seed}; {len(problems)} problems x {len(ARRAYS)} arrays; {a.jobs} jobs", flush=True)
    results, why = {}, {}
    with ThreadPoolExecutor(a.jobs) as pool:
        for phase in (("numba",), ARRAYS[1:]):  # numba first: the kernel cache is warm for the others
            jobs = [pool.submit(run_one, c, k, s, v, arr, a.seed, a.timeout, a.backend) for c, k, s, v in problems for arr in phase]
            for f in jobs:
                key, arr, rows, reason = f.result()
                results[key, arr] = rows
                if rows is None:
                    why[key, arr] = reason
    lost, missing = [], []
    print(f"\n{'compiler':16} {'kernel':21} {'size':15} {'variant':22} " + " ".join(f"{x:8}" for x in ARRAYS))
    for c, k, s, _ in problems:
        key = (c, k, s)
        base = results.get((key, "numba"))
        for arr in ARRAYS:
            if results.get((key, arr)) is None:
                missing.append(f"{c} {k} {s} --arrays {arr}: no report ({why.get((key, arr))})")
        for v, (status, _reason) in (base or {}).items():
            cells = [(results.get((key, arr)) or {}).get(v, ("-", ""))[0] for arr in ARRAYS]
            print(f"{c:16} {k:21} {s:15} {v:22} " + " ".join(f"{x:8}" for x in cells))
            for arr, cell in zip(ARRAYS[1:], cells[1:]):
                if status == "ok" and cell != "ok" and results.get((key, arr)) is not None:  # else: in missing
                    reason = (results.get((key, arr)) or {}).get(v, ("", why.get((key, arr), "")))[1]
                    lost.append(f"{c} {k} {s} {v} --arrays {arr}: {cell}: {reason}")
    print(f"\n{len(lost)} rows lost, {len(missing)} runs without a report; {time.time() - t0:.0f} s")
    for line in missing + lost:
        print("  " + line)
    return 1 if lost or missing else 0


if __name__ == "__main__":
    sys.exit(main())
