set -x
python3 probe/p21.py 2>&1 | tail -40
# quantize range replay: the counters child directly under ncu
python3 - <<'PY'
import json, os, subprocess, sys, tempfile
sys.path.insert(0, os.getcwd())
from lab.inspect import counters as C
from lab.core.session import child_env
req = {"kernel": "quantize", "size": [67108864], "dtype": "float32", "threads": 256, "seed": 0,
       "variants": ["atomic_per_block", "block_partials", "l2_tail_first"], "contenders": [], "warmup": 2}
tmp = tempfile.mkdtemp(); rp, op = os.path.join(tmp, "r.json"), os.path.join(tmp, "o.json")
json.dump(req, open(rp, "w"))
child = [sys.executable, "-c", "import sys; from lab.inspect.counters import _child_main; _child_main(sys.argv[1], sys.argv[2])", rp, op]
env = child_env(NUMBA_ENABLE_CUDASIM="0", PYTHONUNBUFFERED="1")
for mode in ("range", "kernel", "app-range"):
    log = os.path.join(os.environ["OUT"], f"quantize-{mode}.csv")
    cmd = ["/usr/local/cuda/bin/ncu", "--csv", "--page", "raw", "--profile-from-start", "off", "--target-processes", "all",
           "--cache-control", "none", "--replay-mode", mode, "--metrics", "dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum",
           "--log-file", log, *child]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=500)
    print(mode, p.returncode, p.stderr[-800:])
    print(open(log).read()[-3000:] if os.path.exists(log) else "no log")
PY
# matmul past L2
timeout 400 python3 -m lab counters matmul --size 4096x4096x4096 --variant naive,shared,register_tiled --json > $OUT/matmul4096.json 2> $OUT/matmul4096.err; echo rc=$?
python3 -c "
import json; d=json.load(open('$OUT/matmul4096.json'))
for r in d['rows']: print(r['variant'], r['dram_read_bytes'], r.get('sectors_per_request'), r.get('bank_conflicts'))
" 2>&1 | tail
