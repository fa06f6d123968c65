"""Record the ``--json`` documents that the layout tests render (tests/cli/test_layout_recorded.py), so
that the tests check the tables' fit at 80 columns without simulating the kernels each time.

    python -m tests.cli.record_reports        # in the simulator; rewrites tests/fixtures/reports/*.json

Each document is validated against docs/schemas by the tests, so a recording that no longer matches the
``--json`` contract fails there: record again.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "reports"

# name -> (schema, lab arguments); the sizes of tests/cli/test_columns.py
REPORTS = {
    "grid-vecadd": ("grid.json", ["grid", "vecadd", "--size", "5000", "--threads", "64"]),
    "grid-matmul-shared": ("grid.json", ["grid", "matmul", "--variant", "shared", "--size", "40x30x8"]),
    "grid-softmax-group_rows": ("grid.json", ["grid", "softmax", "--variant", "group_rows", "--size", "7x40", "--threads", "64"]),
    "counters-vecadd": ("counters.json", ["counters", "vecadd", "--size", "4096", "--sim"]),
    "counters-matvec": ("counters.json", ["counters", "matvec", "--size", "32x256", "--sim", "--variant",
                                          "row_per_thread,warp_per_row"]),
}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(ROOT)}
    for name, (_, args) in REPORTS.items():
        proc = subprocess.run([sys.executable, "-m", "lab", *args, "--json", "--seed", "3"] if args[0] == "counters"
                              else [sys.executable, "-m", "lab", *args, "--json"],
                              cwd=ROOT, env=env, capture_output=True, text=True, check=True)
        doc = json.loads(proc.stdout)
        (OUT / f"{name}.json").write_text(json.dumps(doc, separators=(",", ":")) + "\n")
        print(f"recorded {name}: lab {' '.join(args)} --json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
