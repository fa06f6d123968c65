import sys, os, json
sys.path.insert(0, os.getcwd())
from lab.inspect import counters as C
V = ["atomic_per_block", "block_partials", "l2_tail_first"]
for label, metrics in (("with-l2hit", C.DRAM_METRICS), ("no-l2hit", [m for m in C.DRAM_METRICS if not m.startswith("lts")])):
    C.PHASES = (("dram", metrics, "none"), C.PHASES[1])
    doc = C.counters("quantize", "gpu", V, "67108864", 256, contenders=["numba"], phases=("dram",))
    print(label, [(r["variant"], r["dram_read_bytes"], r["kernel_names"]) for r in doc["rows"]], doc["notes"][1:])
