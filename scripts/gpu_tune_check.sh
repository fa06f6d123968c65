#!/usr/bin/env bash
# GPU check of issue 18 sections 1, 2 (H100, ~4 minutes): tune matmul on the public shapes, write
# the shipped H100 table, then show auto (tuned and routed) against torch.matmul at vector shapes.
#
#   bash scripts/gpu_tune_check.sh [BUDGET_SECONDS]      # default 120; from the repository root
#
# Writes kernels/tuned/h100.json (commit it) and prints ratios torch ms / auto ms (>= 0.9 wanted at
# M = 1 and N = 1; 1x8192x8192 is a class the public shapes do not tune: the heuristic), then the
# torch-op launch overhead table. The user's tuned cache goes to a temporary folder.
set -euo pipefail
BUDGET=${1:-120}
PY=${PYTHON:-python}
export LAB_CACHE_DIR=${LAB_CACHE_DIR:-$(mktemp -d)}
echo "== lab tune matmul --budget $BUDGET (cache in $LAB_CACHE_DIR)"
$PY -m lab tune matmul --gpu --budget "$BUDGET" --out kernels/tuned/h100.json --match H100 --wide
echo
echo "== auto against torch.matmul (TF32 off) at vector and public shapes"
for size in 1x4096x4096 4096x1x4096 1x8192x8192 8192x1x8192 1x1000x3000 1x64x65536 4096 1024 64x64x65536; do
  $PY -m lab run matmul --gpu --size "$size" --variant auto --contenders numba,torch --json > /tmp/run_$$.json || true
  $PY - "$size" /tmp/run_$$.json <<'PYEOF'
import json, sys
size, path = sys.argv[1], sys.argv[2]
doc = json.load(open(path))
rows = {r["contender"]: r for r in doc["results"] if r["median_ms"]}
a, t = rows.get("numba"), rows.get("torch")
note = (doc["launches"].get("auto") or {}).get("note", "")
if a and t:
    print(f"{size:>14}  auto {a['median_ms']:.4f} ms  torch {t['median_ms']:.4f} ms  "
          f"torch/auto {t['median_ms'] / a['median_ms']:.2f}x  | {note[:110]}")
else:
    print(f"{size:>14}  no timing: {[(r['contender'], r['status'], r['reason'][:80]) for r in doc['results']]}")
PYEOF
done
rm -f /tmp/run_$$.json
echo
echo "== the shipped table"
$PY -c "import json; d=json.load(open('kernels/tuned/h100.json')); [print(e['shape_class'], e['rung'], e['threads'], e['params'], e['ms']) for e in d['entries']]"
echo
echo "== launch overhead of torch.ops.lab.vecadd (issue 18 section 4: target <= 2x cupy.add)"
$PY -m torch_bridge.bench_launch --calls 2000 --rounds 7
