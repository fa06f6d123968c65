"""Does every rung compile for a real GPU? Checked without one, before spending GPU time.

The CUDA simulator runs a kernel as Python, so code that a GPU's compiler refuses passes there: a
shared array whose shape is an expression (``cuda.shared.array((TILE, TILE + 1), ...)``: numba-cuda's
typer folds only bare global constants, not ``TILE + 1`` nor ``module.TILE``), ``np.dot`` inside a
kernel, a call to an undecorated helper. This records the kernels each rung launches in the simulator
at a small size, with their argument types (:func:`lab.core.resources.record_launches`), and compiles
them offline with numba-cuda for ``--arch`` (NVVM and nvJitLink, the ``occupancy`` extra), as ``lab
occupancy --arch`` does:

    python scripts/compile_check.py                    # every kernel and rung, for sm_90
    python scripts/compile_check.py transpose matmul --arch sm_75

Prints one line a kernel that did not compile (and the rungs that could not be recorded); exit 0 when
every recorded kernel compiled, 1 otherwise, 2 on bad input. Kernels that a factory builds at run time
(not module-level globals) cannot be compiled offline and are named as not checked. About 2 minutes
for every kernel on a 2-core CPU, most of it the simulated runs (the emulated tensor-core rung's).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def check(names: list[str], arch: str, progress=None) -> dict:
    """{"compiled": n, "errors": [(kernel, rung, module.name, message)], "not_recorded": [(kernel, rung,
    why)], "not_checked": [(kernel, rung, module)]} for the rungs of ``names`` (every kernel when empty)."""
    from lab.core.session import select

    select("sim")
    import kernels
    from lab.core import resources

    unknown = [n for n in names if n not in kernels.NAMES]
    if unknown:
        raise SystemExit(f"unknown kernel {unknown[0]!r}; choose from: {', '.join(kernels.NAMES)}")
    why = resources.offline_unavailable()
    if why:
        raise SystemExit(f"the offline compile needs {why}: pip install -e '.[occupancy]'")
    recs, seen, report = [], set(), {"compiled": 0, "errors": [], "not_recorded": [], "not_checked": []}
    for name in names or kernels.NAMES:
        spec = kernels.load(name)
        size = spec.counter_size or spec.default_size(False)
        for rung, variant in spec.variants.items():
            if rung == "auto":  # auto launches one of the other rungs
                continue
            threads = 256 if variant.accepts(256) is None else 64  # e.g. a rung of at most 64 threads
            if progress:
                progress(f"{name} {rung}")
            try:
                launched = resources.record_launches(spec, rung, size, threads)
            except Exception as e:  # noqa: BLE001 - a rung that cannot run here is a line, not a crash
                report["not_recorded"].append((name, rung, f"{type(e).__name__}: {e}"[:160]))
                continue
            for r in launched:
                if not r.name:
                    report["not_checked"].append((name, rung, r.module))
                    continue
                key = (r.module, r.name, repr(r.argtypes))
                if key not in seen:
                    seen.add(key)
                    recs.append((name, rung, r))
    for (name, rung, r), out in zip(recs, resources.offline_resources([r for *_, r in recs], arch)):
        if "error" in out:
            report["errors"].append((name, rung, f"{r.module}.{r.name}", out["error"]))
        else:
            report["compiled"] += 1
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernels", nargs="*", help="kernel names (default: every kernel)")
    ap.add_argument("--arch", default="sm_90", help="target, e.g. sm_75 (a T4), sm_90 (an H100)")
    args = ap.parse_args(argv)
    if not (args.arch.startswith("sm_") and args.arch[3:].isdigit() and len(args.arch) in (5, 6)):
        print(f"--arch {args.arch}: expected sm_XY, e.g. sm_90", file=sys.stderr)
        return 2
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    try:
        report = check(args.kernels, args.arch, progress=lambda s: print(f"  recording {s}", file=sys.stderr))
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    for name, rung, kernel, message in report["errors"]:
        print(f"does not compile for {args.arch}: {name} {rung}: {kernel}: {message}")
    for name, rung, why in report["not_recorded"]:
        print(f"not recorded: {name} {rung}: {why}")
    for name, rung, module in sorted(set(report["not_checked"])):
        print(f"not checked: {name} {rung}: a kernel of {module} built at run time (not a module global)")
    print(f"{report['compiled']} kernels compiled for {args.arch}, {len(report['errors'])} did not")
    return 1 if report["errors"] or report["not_recorded"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
