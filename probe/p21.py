"""Issue 21 GPU probes: raw racecheck/memcheck logs for exercise mutants; quantize DRAM bytes under range replay."""
import json, os, subprocess, sys, tempfile, pathlib
OUT = pathlib.Path(os.environ["OUT"])
sys.path.insert(0, os.getcwd())
from tests.helpers import mutated_solution
from lab.core import sanitizer as san
from lab.teach.workspace import _run_child

BUGS = [
    ("block_sum", [("        cuda.syncthreads()  # this level", "        pass  # this level")], "racecheck"),
    ("tiled_matmul", [("        cuda.syncthreads()  # the tiles", "        pass  # the tiles")], "racecheck"),
    ("softmax_fused", [("    cuda.syncthreads()  # everyone has read the max", "    pass  # everyone has read the max")], "racecheck"),
    ("vecadd", [("    if i < c.shape[0]:\n        c[i]", "    c[i]")], "memcheck"),
]
exe = san.find_sanitizer()
print("sanitizer", exe)
for name, subs, tool in BUGS:
    d = pathlib.Path(tempfile.mkdtemp())
    path = mutated_solution(d, name, subs)
    log = OUT / f"{name}-{tool}.txt"
    tests = _run_child(name, path, "gpu", 1, 300, wrap=san.command(exe, tool, str(log)), env={"LAB_LINEINFO": "1"})
    text = log.read_text(errors="replace")
    reps = san.parse_report(text, tool)
    print(name, tool, "tests:", [(t["name"], t["passed"]) for t in tests][:6])
    print("  path", path, "reports", len(reps), [(r.file, r.line) for r in reps[:3]])
    print("  log head:", text[:600].replace("\n", " | "))
