"""Benchmark (not a test) of ``lab exercise grade`` in the CUDA simulator: a made-up class of
STUDENTS students x the twelve exercises, each file a reference solution, an untouched scaffold or a
mutant of the solution (tests/teach/test_exercises.py's MUTANTS), graded with ``--jobs JOBS``.
Prints the wall time and the gradebook's summary; record it in docs/benchmarks.md.

    python scripts/grade_bench.py                      # 100 students x 12 exercises, every CPU
    python scripts/grade_bench.py --students 100 --jobs 16
    python scripts/grade_bench.py --students 4 --jobs 2

Also prints the CPU seconds of the grader and the children it reaped, per submission: under
bubblewrap the children's CPU time does not reach the grader's accounts (they are reaped inside
their pid namespace), so that line counts the grader only; ``LAB_BWRAP=0`` (the other layers stay)
counts every child.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def make_class(folder: Path, students: int, seed: int, n_exercises: int = 12) -> dict:
    """Write folder/studentNNN/NAME.py; returns ({"solution": n, "scaffold": n, "mutant": n},
    {(student, exercise): kind})."""
    import exercises
    from tests.teach.test_exercises import MUTANTS

    rnd = random.Random(seed)
    counts = {"solution": 0, "scaffold": 0, "mutant": 0}
    kinds = {}
    for s in range(students):
        d = folder / f"student{s:03d}"
        d.mkdir(parents=True)
        for name in exercises.ORDER[:n_exercises]:
            ex = exercises.load(name)
            kind = rnd.choices(["solution", "scaffold", "mutant"], [0.5, 0.2, 0.3])[0]
            src = ex.solution.read_text()
            if kind == "scaffold":
                src = ex.scaffold.read_text()
            elif kind == "mutant":
                subs = rnd.choice([m[2] for m in MUTANTS if m[0] == name])
                for old, new in subs:
                    src = src.replace(old, new)
            counts[kind] += 1
            kinds[(d.name, name)] = kind
            (d / f"{name}.py").write_text(src)
    return counts, kinds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=None, help="default: every CPU this process may use")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per hidden test (lab's default: 10)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--exercises", type=int, default=12, help="the first N of the path (exercises.ORDER)")
    args = ap.parse_args()
    jobs = args.jobs or len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix="lab-grade-bench-") as tmp:
        folder = Path(tmp) / "class"
        counts, kinds = make_class(folder, args.students, args.seed, args.exercises)
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        cmd = [sys.executable, "-m", "lab", "exercise", "grade", str(folder), "--sim", "--json", "--jobs", str(jobs),
               "--seed", str(args.seed)] + (["--timeout", str(args.timeout)] if args.timeout else [])
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
        wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"lab exercise grade failed ({p.returncode}): {p.stderr.strip()[-500:]}")
    doc = json.loads(p.stdout)
    rows = doc["rows"]
    wrong = [r for r in rows if r["status"] != "passed" and "timed out" in r["reason"]]
    print(f"{args.students} students x {args.exercises} exercises = {len(rows)} submissions "
          f"({counts['solution']} solutions, {counts['scaffold']} scaffolds, {counts['mutant']} mutants), "
          f"--jobs {jobs} on {os.cpu_count()} CPUs: {wall:.1f} s wall ({wall / len(rows) * jobs:.2f} s a submission "
          f"per job); passed {doc['summary']['passed']}, failed {doc['summary']['failed']}; "
          f"{len(wrong)} timed out")
    wrongly = [r for r in rows if (r["status"] == "passed") != (kinds[(r["student"], r["exercise"])] == "solution")]
    print(f"graded against expectation: {len(rows) - len(wrongly)} of {len(rows)} right (a solution passes, a "
          f"scaffold or mutant fails)" + "".join(f"\n  {r['student']}/{r['exercise']}: {r['status']} {r['reason'][:90]}"
                                                 for r in wrongly[:5]))
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = use.ru_utime + use.ru_stime
    from lab.core.isolation import bwrap_problem

    counted = "the grader only (bubblewrap's children are not counted)" if bwrap_problem() is None else \
        "the grader and every child"
    print(f"CPU seconds: {cpu:.1f} ({counted}), {cpu / len(rows):.3f} a submission; 100 x 12 at --jobs {jobs} "
          f"would take about {wall / len(rows) * 1200:.0f} s at this rate")
    secs = sorted(r["seconds"] for r in rows)
    print(f"seconds a submission: median {secs[len(secs) // 2]:.2f}, mean {sum(secs) / len(secs):.2f}, "
          f"max {secs[-1]:.1f}")
    slow = sorted(rows, key=lambda r: -r["seconds"])[:3]
    print("slowest: " + ", ".join(f"{r['student']}/{r['exercise']} {r['seconds']:.1f} s" for r in slow))


if __name__ == "__main__":
    main()
