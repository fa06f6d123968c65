"""Issue 28's catalogue (tests/teach/catalogue.py) through ``lab exercise check`` on a backend: every
wrong kernel must fail, every correct variant pass; the hint each wrong kernel gets is scored as in
tests/teach/test_catalogue.py (every ``want`` phrase, no ``avoid`` phrase, in one failing message).

    python scripts/catalogue_gpu.py [--backend gpu|sim] [--jobs 8] [--json catalogue.json]
                                    [--exercise vecadd,dot] [--timeout 60]

Each entry is one ``lab.teach.workspace.check(name, file=..., backend=...)`` (its own child process;
with ``gpu``, also compute-sanitizer), ``--jobs`` of them at a time (threads waiting on children: on a
16-core H100 host, 8 jobs). Prints a line a wrong kernel that passed or a correct one that failed,
then per exercise: wrong kernels, failed as expected, hint accuracy, correct variants passed; with
``--json`` writes {"backend", "device", "exercises": {name: counts}, "totals", "misses": [...],
"entries": [...]} atomically (the path is checked before the run). Exit 1 when a wrong kernel
passed or a correct one failed, 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def _one(entry, kind, backend, timeout, workdir, k):
    from lab.teach import workspace
    from tests.teach import catalogue as C

    d = os.path.join(workdir, f"{k:03d}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{entry.exercise}.py")
    with open(path, "w") as f:
        f.write(C.source(entry))
    t0 = time.time()
    try:
        res = workspace.check(entry.exercise, file=path, directory=d, backend=backend, timeout=timeout)
        tests = res["tests"]
        error = None
    except Exception as e:  # noqa: BLE001 - reported as the entry's outcome, the run goes on
        tests, error = [], f"{type(e).__name__}: {e}"
    failed = [t for t in tests if not t["passed"]]
    want, avoid = (entry.want, entry.avoid) if kind == "wrong" else ([], [])
    hint_ok = any(all(w in t["message"] for w in want) and not any(a in t["message"] for a in avoid) for t in failed)
    # which backend saw a failure (the union's "seen_by"): the GPU leg alone is "gpu" or "compute-sanitizer"
    seen = sorted({b for t in failed for b in t.get("seen_by", ["simulator"] if backend == "sim" else ["gpu"])})
    return {"kind": kind, "exercise": entry.exercise, "label": entry.label, "class": getattr(entry, "cls", ""),
            "seen_by": seen,
            "pending": getattr(entry, "pending", ""), "failed": bool(failed) or error is not None,
            "hint_ok": hint_ok, "error": error, "seconds": round(time.time() - t0, 1),
            "messages": [f"{t['name']}: {t['message']}" for t in failed][:3]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=("gpu", "sim"), default="gpu")
    ap.add_argument("--jobs", type=int, default=8, help="checks at a time (default 8)")
    ap.add_argument("--json", default=None, help="write the summary here")
    ap.add_argument("--exercise", default="", help="comma-separated exercises (default: all)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds a hidden test (default 60)")
    args = ap.parse_args()
    import exercises
    from lab.core.files import check_writable
    from tests.teach import catalogue as C

    if args.jobs < 1 or args.jobs > 64:
        ap.error("--jobs: 1..64")
    chosen = [n for n in args.exercise.split(",") if n]
    unknown = set(chosen) - set(exercises.names())
    if unknown:
        ap.error(f"--exercise: unknown {', '.join(sorted(unknown))}; choose from {', '.join(exercises.names())}")
    if args.json:
        check_writable(args.json)
    work = [("wrong", e) for e in C.WRONG] + [("right", e) for e in C.RIGHT]
    work = [(k, e) for k, e in work if not chosen or e.exercise in chosen]
    device = None
    if args.backend == "gpu":
        try:
            from lab.core.device import describe

            device = describe(False).get("name")
        except Exception as e:  # noqa: BLE001
            device = f"unknown ({type(e).__name__})"
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="lab-catalogue-") as workdir, ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(_one, e, kind, args.backend, args.timeout, workdir, k) for k, (kind, e) in enumerate(work)]
        results = []
        for f in as_completed(futures):
            r = f.result()
            results.append(r)
            print(f"[{len(results)}/{len(work)}] {r['kind']} {r['exercise']} / {r['label']}: "
                  f"{'failed' if r['failed'] else 'passed'}{' (' + ', '.join(r['seen_by']) + ')' if r['seen_by'] else ''}"
                  f" {r['seconds']} s", flush=True)
            bad = (r["kind"] == "wrong" and not r["failed"] and not r["pending"]) or (r["kind"] == "right" and r["failed"])
            if bad or (r["kind"] == "wrong" and r["failed"] and not r["hint_ok"]):
                what = ("PASSED (wrong kernel)" if r["kind"] == "wrong" and not r["failed"] else
                        "FAILED (correct kernel)" if r["kind"] == "right" else "hint missed")
                print(f"{what}: {r['exercise']} / {r['label']}: {(r['messages'] or [r['error'] or ''])[0][:300]}",
                      flush=True)
    per = {}
    for r in results:
        row = per.setdefault(r["exercise"], {"wrong": 0, "failed": 0, "gpu_leg": 0, "hint": 0, "pending": 0,
                                             "pending_failed": 0, "right": 0, "right_passed": 0})
        if r["kind"] == "right":
            row["right"] += 1
            row["right_passed"] += not r["failed"]
        elif r["pending"]:
            row["pending"] += 1
            row["pending_failed"] += r["failed"]
        else:
            row["wrong"] += 1
            row["failed"] += r["failed"]
            row["gpu_leg"] += bool({"gpu", "compute-sanitizer"} & set(r.get("seen_by", [])))
            row["hint"] += r["failed"] and r["hint_ok"]
    totals = {k: sum(row[k] for row in per.values()) for k in next(iter(per.values()), {})}
    print(f"\n{args.backend} ({device or 'simulator'}), {len(results)} checks in {time.time() - t0:.0f} s")
    print(f"{'exercise':17s} {'wrong':>5s} {'failed':>6s} {'gpu leg':>7s} {'hint':>5s} {'right':>9s}")
    for name in sorted(per, key=lambda n: exercises.names().index(n)):
        row = per[name]
        print(f"{name:17s} {row['wrong']:5d} {row['failed']:6d} {row['gpu_leg']:7d} {row['hint']:5d} "
              f"{row['right_passed']:4d}/{row['right']:<4d}"
              + (f" pending {row['pending_failed']}/{row['pending']} failed" if row["pending"] else ""))
    if totals:
        share = totals["hint"] / max(1, totals["wrong"])
        print(f"{'total':17s} {totals['wrong']:5d} {totals['failed']:6d} {totals['gpu_leg']:7d} {totals['hint']:5d} "
              f"{totals['right_passed']:4d}/{totals['right']:<4d} hint accuracy {share:.1%}")
        print("(gpu leg: wrong kernels whose failure the GPU itself or compute-sanitizer saw; the rest only the "
              "simulator's trace)")
    if args.json:
        from lab.core.files import write_atomic

        misses = [r for r in results if (r["kind"] == "wrong" and (not r["failed"] or not r["hint_ok"])) or
                  (r["kind"] == "right" and r["failed"])]
        write_atomic(args.json, json.dumps({"backend": args.backend, "device": device, "exercises": per,
                                            "totals": totals, "misses": misses, "entries": results}, indent=1))
    broken = totals.get("wrong", 0) - totals.get("failed", 0) + totals.get("right", 0) - totals.get("right_passed", 0)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
