"""``lab counters`` and ``lab sanitize`` without a GPU: the simulator's sector counts (exact, on toy
kernels and on matvec), the verdict, the Nsight Compute CSV and compute-sanitizer report parsers
(fixtures in tests/fixtures/hardware written from the documented formats), both engines end to end
against stand-in executables, the not-available paths (one line, exit 2) and the JSON schemas."""
import json
import os
import stat
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kernels.compiler import cuda
from lab.core.errors import LabError
from lab.inspect import counters as K
from lab.inspect.counters import metrics as KM
from lab.inspect.counters import ncu as KN
from lab.inspect.counters import row as KR
from lab.core import sanitizer as San
from lab.inspect import sanitize as S
from tests.conftest import SIMULATOR, run_lab

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "hardware"
SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"
sim_only = pytest.mark.skipif(not SIMULATOR, reason="the sector tracer runs in the CUDA simulator")


def validate(doc, name):
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    files = sorted(SCHEMAS.glob("*.json"))
    registry = Registry().with_resources((p.name, Resource.from_contents(json.loads(p.read_text()))) for p in files)
    Draft202012Validator(json.loads((SCHEMAS / name).read_text()), registry=registry).validate(
        json.loads(json.dumps(doc, default=str)))


# --- the sector tracer (simulator) ---------------------------------------------------------------------
@cuda.jit
def copy(a, out):
    i = cuda.grid(1)
    out[i] = a[i]


@cuda.jit
def strided(a, out, stride):
    i = cuda.grid(1)
    out[i] = a[i * stride]


@cuda.jit
def shifted(a, out):
    i = cuda.grid(1)
    out[i] = a[i + 1]  # 32 floats starting 4 bytes into a sector: 5 sectors


@cuda.jit
def broadcast(a, out):
    out[cuda.grid(1)] = a[3]


@cuda.jit
def rows(a, out):  # thread i sums row i of a 32 x 16 matrix stored flat: 16 loads, 64 bytes apart
    i = cuda.grid(1)
    acc = 0.0
    for j in range(16):
        acc += a[i * 16 + j]
    out[i] = acc


@cuda.jit
def count(a, out):
    cuda.atomic.add(out, 0, a[cuda.grid(1)])


def _trace(kernel, n_in, n_out, blocks, threads, dtype=np.float32, *extra):
    from lab.core.trace import SectorTracer

    a = cuda.to_device(np.arange(n_in, dtype=dtype))
    out = cuda.to_device(np.zeros(n_out, dtype=dtype))
    with SectorTracer() as tr:
        kernel[blocks, threads](a, out, *extra)
    return tr.summary()


@sim_only
@pytest.mark.parametrize("dtype, per_request", [(np.float32, 4), (np.float64, 8)])
def test_coalesced_loads_are_128_bytes_a_warp(dtype, per_request):
    s = _trace(copy, 128, 128, 2, 64, dtype)  # 4 warps, each 32 consecutive elements
    assert (s["load"].requests, s["load"].sectors) == (4, 4 * per_request)
    assert s["load"].sectors_per_request == per_request == s["load"].ideal_per_request
    assert s["load"].efficiency_pct == 100 and s["store"].sectors_per_request == per_request
    assert s["bytes_touched"] == 2 * 128 * np.dtype(dtype).itemsize  # a and out, each once


@sim_only
def test_strided_misaligned_and_broadcast_loads():
    s = _trace(strided, 32 * 8, 32, 1, 32, np.float32, 8)  # 32 bytes apart: one sector a lane
    assert (s["load"].requests, s["load"].sectors, s["load"].ideal_sectors) == (1, 32, 4)
    assert s["load"].efficiency_pct == 12.5
    s = _trace(strided, 32 * 4, 32, 1, 32, np.float32, 4)  # 16 bytes apart: two lanes a sector
    assert s["load"].sectors == 16
    s = _trace(shifted, 65, 64, 1, 64)
    assert (s["load"].requests, s["load"].sectors) == (2, 10)
    s = _trace(broadcast, 8, 64, 2, 32)
    assert (s["load"].requests, s["load"].sectors, s["load"].bytes_used) == (2, 2, 8)


@sim_only
def test_each_execution_of_a_load_in_a_loop_is_its_own_request():
    s = _trace(rows, 32 * 16, 32, 1, 32)
    assert (s["load"].requests, s["load"].sectors_per_request) == (16, 32)
    (site,) = [i for i in s["instructions"] if i.kind == "load"]
    assert site.array == "a" and site.where.endswith(f":{rows.py_func.__code__.co_firstlineno + 5}")
    assert s["sector_bytes"] == (16 * 32 + 4) * 32 and s["bytes_touched"] == 32 * 16 * 4 + 128


@sim_only
def test_atomics_are_counted_apart():
    s = _trace(count, 32, 1, 1, 32)
    assert s["load"].requests == 1 and s["store"].requests == 0 and s["atomic"].requests > 0


@sim_only
def test_matvec_row_per_thread_fetches_far_more_sectors_than_warp_per_row():
    doc = K.counters("matvec", "simulator", ["row_per_thread", "warp_per_row"], "32x256", 32)
    rows = {r["variant"]: r for r in doc["rows"]}
    row, warp = rows["row_per_thread"], rows["warp_per_row"]
    assert row["sectors_per_request"] == 16.5  # A: 32 sectors (rows 1 KB apart), x: 1 (a broadcast)
    assert warp["sectors_per_request"] == 4.0  # A and x: 32 consecutive floats
    assert row["sectors_per_request"] >= 4 * warp["sectors_per_request"]
    assert row["verdict"].startswith("uncoalesced: 16.5 sectors per request where 2.5 suffice")
    assert "A at kernels/matvec.py" in row["verdict"] and warp["verdict"].startswith("coalesced")
    assert row["dram_read_bytes"] is None and row["l2_hit_pct"] is None and doc["tool"] == "simulator"
    validate(doc, "counters.json")


# --- the verdict -----------------------------------------------------------------------------------------
def test_verdict_in_the_fields_terms():
    base = dict.fromkeys(KR.ROW_KEYS)
    mem = dict(base, dram_read_bytes=2.0e8, dram_write_bytes=1.0e8, min_bytes=3.0e8, dram_throughput_pct=91.2,
               sm_throughput_pct=20, sectors_per_request=4.0, ideal_sectors_per_request=4.0)
    assert KR.verdict(mem) == "memory-bound: 91% of DRAM peak, 1.00x minimum bytes"
    unc = dict(mem, sectors_per_request=8.0, ideal_sectors_per_request=1.0, dram_throughput_pct=20)
    assert KR.verdict(unc).startswith("uncoalesced: 8.0 sectors per request where 1.0 suffice")
    banks = dict(base, bank_ways=4.0, bank_conflicts_load=300, bank_conflicts_store=0, sm_throughput_pct=70,
                 dram_throughput_pct=10)
    assert KR.verdict(banks) == "4.0-way bank conflicts on shared loads; compute-bound: 70% of SM peak"
    extra = dict(base, dram_read_bytes=5e8, dram_write_bytes=0, min_bytes=1e8, dram_throughput_pct=40,
                 sm_throughput_pct=10)
    assert KR.verdict(extra) == "excess traffic: DRAM bytes 5.0x the minimum; latency-bound: 40% of DRAM peak, 10% of SM peak"
    lat = dict(base, dram_throughput_pct=12, sm_throughput_pct=8, achieved_occupancy_pct=12.6,
               top_stalls=[{"reason": "long_scoreboard", "pct": 80}])
    assert KR.verdict(lat) == ("latency-bound: 12% of DRAM peak, 8% of SM peak, 13% achieved occupancy, "
                              "mostly stalled on long_scoreboard")
    sim = dict(base, sectors_per_request=4.0, ideal_sectors_per_request=4.0, sector_bytes=800, bytes_touched=100)
    assert KR.verdict(sim) == ("coalesced: 4.0 sectors per request (the minimum 4.0); fetches 8.0x the bytes it "
                              "touches (re-reads through L1/L2)")
    assert KR.verdict(base) == "no counters"


# --- Nsight Compute's CSV --------------------------------------------------------------------------------------
def test_ncu_raw_csv_groups_by_marker_sums_kernels_and_drops_the_timers():
    text = (FIX / "ncu_raw.csv").read_text()
    kernels = KN.parse_ncu_csv(text)
    assert len(kernels) == 6 and kernels[1]["metrics"]["dram__bytes_read.sum"] == 2_150_629_376
    groups = KN.group_by_marker(kernels)
    assert sorted(groups) == [0, 1]
    assert [k["id"] for k in groups[1]] == ["3", "5"]  # the L2 flush (id 4) is the timer's: never counted
    one = KN.aggregate(groups[0], groups[0])
    assert one["sectors_per_request"] == 16.5 and one["load_efficiency_pct"] == 12.5
    assert one["top_stalls"][0]["reason"] == "long_scoreboard" and one["duration_ms"] == 2.26
    two = KN.aggregate(groups[1], groups[1])
    assert two["kernels"] == 2 and two["dram_read_bytes"] == 268_500_000 + 262_144
    assert two["sectors_per_request"] == (4_194_304 + 32_768) / (1_048_576 + 16_384)
    assert two["l2_hit_pct"] == pytest.approx((5.0 * 90_000 + 50.0 * 10_000) / 100_000)  # weighted by duration
    assert two["kernel_names"] == ["cudapy::kernels::matvec::split_k_partial_kernel",
                                   "cudapy::kernels::matvec::split_k_reduce_kernel"]
    assert KN.passes(text) == 9


def test_ncu_details_page_and_units():
    kernels = KN.parse_ncu_csv((FIX / "ncu_details.csv").read_text())
    groups = KN.group_by_marker(kernels)
    row = KN.aggregate(groups[0], groups[0])
    assert row["dram_read_bytes"] == pytest.approx(536.87e6) and row["duration_ms"] == pytest.approx(0.27213)
    assert row["dram_throughput_pct"] == 91.2
    with pytest.raises(ValueError):
        KN.parse_ncu_csv("==ERROR== something went wrong\n")


def test_ncu_failures_are_one_line():
    perm = ("==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to "
            "access NVIDIA GPU Performance Counters on the target device 0.\n")
    why = KN.ncu_failure(perm, 1)
    assert "ERR_NVGPUCTRPERM" in why and "NVreg_RestrictProfilingToAdminUsers=0" in why and "\n" not in why
    assert KN.ncu_failure("==WARNING== No kernels were profiled.\n", 0).startswith("ncu profiled no kernel")
    assert KN.ncu_failure("ok\n", 0) is None
    bad = "==ERROR== Failed to find metric sm__nonsense.sum\n"
    assert KN.unknown_metrics(bad, ["dram__bytes_read.sum", "sm__nonsense.sum"]) == ["sm__nonsense.sum"]
    assert KN.unknown_metrics("==ERROR== Invalid metric regex\n", ["a.sum", KM.STALLS]) == [KM.STALLS]
    cmd = KN.ncu_command("/x/ncu", ["a.sum", "b.pct"], "none", "/t/log.csv", ["python3", "-c", "pass"])
    assert cmd[:3] == ["/x/ncu", "--csv", "--page"] and "--profile-from-start" in cmd
    assert cmd[cmd.index("--metrics") + 1] == "a.sum,b.pct" and cmd[cmd.index("--cache-control") + 1] == "none"


FAKE_NCU = '''
import json, os, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2099.1.0.0 (build 1)")
    sys.exit(0)
opt = lambda name: args[args.index(name) + 1]
log, metrics = opt("--log-file"), opt("--metrics").split(",")
req_path, out_path = args[-2], args[-1]
mode = os.environ.get("FAKE_NCU", "ok")
if mode == "perm":
    open(log, "w").write("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
                         "Performance Counters on the target device 0.\\n")
    sys.exit(1)
if mode == "unknown" and any(m.startswith("regex:") for m in metrics):
    open(log, "w").write("==ERROR== Failed to find metric " + [m for m in metrics if m.startswith("regex:")][0] + "\\n")
    sys.exit(1)
req = json.load(open(req_path))
entries = [{"contender": "numba", "variant": v, "status": "ok", "index": i, "theoretical_occupancy_pct": 100.0}
           for i, v in enumerate(req["variants"])]
entries += [{"contender": c, "variant": "-", "status": "skipped", "reason": "not installed"} for c in req["contenders"]]
json.dump({"device": {"name": "Fake H100", "backend": "gpu", "compute_capability": "9.0"}, "entries": entries},
          open(out_path, "w"))
cols = [m for m in metrics if not m.startswith("regex:")]
if len(cols) < len(metrics):
    cols.append("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio")
value = {"dram__bytes_read.sum": 8.0e6, "dram__bytes_write.sum": 4.0e6, "gpu__time_duration.sum": 5000,
         "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 4096, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 1024,
         "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct": 100, "lts__t_sector_hit_rate.pct": 10,
         "dram__throughput.avg.pct_of_peak_sustained_elapsed": 85.0, "sm__throughput.avg.pct_of_peak_sustained_elapsed": 15,
         "sm__warps_active.avg.pct_of_peak_sustained_active": 80.0, "sm__maximum_warps_per_active_cycle_pct": 100,
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 0,
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 0}
lines = ['"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
         '"Device","CC",' + ",".join(f'"{c}"' for c in cols)]
n = 0
for e in entries:
    if e["status"] != "ok":
        continue
    for name, grid in (("lab_counters_mark", e["index"] + 1), (e["variant"] + "_kernel", 4096)):
        vals = [grid if c == "launch__grid_size" else (0 if name == "lab_counters_mark" else value.get(c, 1))
                for c in cols]
        lines.append(f'"{n}","1","python3","host","{name}(long long)","1","7","(1, 1, 1)","({grid}, 1, 1)","0","9.0",'
                     + ",".join(f'"{v:,}"' for v in vals))
        n += 1
open(log, "w").write("==PROF== Connected\\n==PROF== Profiling - 1 pass\\n" + "\\n".join(lines) + "\\n")
'''


def _script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{textwrap.dedent(body)}")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_ncu_engine_end_to_end_with_a_stand_in(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_NCU", _script(tmp_path, "ncu", FAKE_NCU))
    doc = K.counters("vecadd", "gpu", ["element_per_thread", "four_per_thread"], "1048576", 256,
                     contenders=["numba", "torch"])
    validate(doc, "counters.json")
    assert doc["tool"] == "ncu" and doc["engine"].startswith("Nsight Compute 2099.1.0.0")
    ok = [r for r in doc["rows"] if r["status"] == "ok"]
    assert [r["variant"] for r in ok] == ["element_per_thread", "four_per_thread"]
    r = ok[0]
    assert (r["dram_read_bytes"], r["dram_write_bytes"], r["min_bytes"]) == (8e6, 4e6, 3 * 4 * 1048576)
    assert r["sectors_per_request"] == 4.0 and r["theoretical_occupancy_pct"] == 100.0
    assert r["top_stalls"][0]["reason"] == "long_scoreboard"
    assert r["verdict"] == "memory-bound: 85% of DRAM peak, 0.95x minimum bytes"
    assert doc["rows"][-1]["status"] == "skipped" and doc["rows"][-1]["verdict"] == "not installed"
    monkeypatch.setenv("FAKE_NCU", "unknown")  # the stall regex refused: retried without it, reported as null
    doc = K.counters("vecadd", "gpu", ["element_per_thread"], "1024", 256, contenders=["numba"])
    assert doc["rows"][0]["top_stalls"] is None and any("does not know" in n for n in doc["notes"])
    monkeypatch.setenv("FAKE_NCU", "perm")
    with pytest.raises(LabError, match="ERR_NVGPUCTRPERM"):
        K.counters("vecadd", "gpu", ["element_per_thread"], "1024", 256)


# --- compute-sanitizer's reports ----------------------------------------------------------------------------------
def test_memcheck_report_names_file_line_thread_block():
    reps = San.parse_report((FIX / "memcheck.txt").read_text(), "memcheck")
    assert len(reps) == 2
    r = reps[0]
    assert (r.kind, r.file, r.line, r.thread, r.block) == (
        "Invalid __global__ write of size 4 bytes", "/home/student/lab-work/vecadd.py", 14, [40, 0, 0], [3, 0, 0])
    assert r.kernel.startswith("cudapy::exercises::vecadd::solution::vecadd_kernel")
    assert r.one_line() == ("Invalid __global__ write of size 4 bytes at /home/student/lab-work/vecadd.py:14 "
                            "(thread (40, 0, 0), block (3, 0, 0))")
    (old,) = San.parse_report((FIX / "memcheck_old.txt").read_text(), "memcheck", root="/lab")
    assert (old.where, old.thread, old.kernel) == ("kernels/matvec.py:34", [7, 0, 0],
                                                   "cudapy::kernels::matvec::row_per_thread_kernel(Array<float, 2, C, mutable, aligned>)")
    assert San.summary_counts((FIX / "memcheck.txt").read_text()) == {"errors": 2}


def test_racecheck_reports_both_sides_and_the_hazard_count():
    (r,) = San.parse_report((FIX / "racecheck.txt").read_text(), "racecheck")
    assert (r.kind, r.line, r.others, r.count) == ("Race (Write / Read)", 21, ["/home/student/lab-work/block_sum.py:25"],
                                                   1024)
    assert r.one_line() == "Race (Write / Read) at /home/student/lab-work/block_sum.py:21 and /home/student/lab-work/block_sum.py:25"
    split, old = San.parse_report((FIX / "racecheck_split.txt").read_text(), "racecheck")
    assert (split.where, split.kernel, split.count) == ("18_debug_demo.cu:28", "race_condition(float *)", 1024)
    assert (old.kind, old.where, old.count, old.kernel) == ("Race (Read / Write)", "race.cu:4", 8, "test(int*, int*)")
    assert San.summary_counts((FIX / "racecheck_split.txt").read_text())["race_warnings"] == 1


def test_synccheck_initcheck_and_a_clean_run():
    (sync,) = San.parse_report((FIX / "synccheck.txt").read_text(), "synccheck", root="/lab")
    assert sync.kind.startswith("Barrier error detected") and sync.where == "kernels/softmax.py:201"
    (init,) = San.parse_report((FIX / "initcheck.txt").read_text(), "initcheck", root="/lab")
    assert init.kind == "Uninitialized __global__ memory read of size 4 bytes" and init.block == [0, 0, 0]
    assert San.parse_report((FIX / "clean.txt").read_text(), "memcheck") == []


def test_reports_go_to_the_rungs_that_launched_their_kernel():
    (init,) = San.parse_report((FIX / "initcheck.txt").read_text(), "initcheck")
    launched = {"split_k": ["/lab/kernels/matvec.py#split_k_partial_kernel|230|264|split_k_partial_kernel",
                            "/lab/kernels/matvec.py#split_k_reduce_kernel|268|280|split_k_reduce_kernel"],
                "warp_per_row": ["/lab/kernels/matvec.py#warp_per_row_kernel|48|89|warp_per_row_kernel"]}
    by, lost = S.attribute([init], launched)
    assert by == {"split_k": [init], "warp_per_row": []} and lost == []
    assert S.attribute([init], {"warp_per_row": launched["warp_per_row"]})[1] == [init]


FAKE_SANITIZER = '''
import json, sys
args = sys.argv[1:]
tool = args[args.index("--tool") + 1]
req = json.load(open(args[-2]))
print("========= COMPUTE-SANITIZER")
launched = {}
for v in req["variants"]:
    launched[v] = [f"/lab/kernels/softmax.py#{v}_kernel|10|40|{v}_kernel"]
    if v == "fused" and tool == "racecheck":
        print("========= Error: Race reported between Write access at cudapy::kernels::softmax::fused_kernel[abi:v1]"
              "(Array<float, 2, C, mutable, aligned>)+0xb0 in /lab/kernels/softmax.py:21")
        print("=========     and Read access at cudapy::kernels::softmax::fused_kernel[abi:v1]"
              "(Array<float, 2, C, mutable, aligned>)+0xc0 in /lab/kernels/softmax.py:25 [96 hazards]")
json.dump({"launched": launched, "skipped": {}, "broken": None}, open(args[-1], "w"))
print("========= ERROR SUMMARY: 0 errors")
'''


def test_sanitize_end_to_end_with_a_stand_in(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_COMPUTE_SANITIZER", _script(tmp_path, "compute-sanitizer", FAKE_SANITIZER))
    doc = S.sanitize("softmax", "gpu", ["naive", "fused"], ["memcheck", "racecheck"])
    validate(doc, "sanitize.json")
    status = {(r["tool"], r["variant"]): (r["status"], r["count"]) for r in doc["rows"]}
    assert status == {("memcheck", "naive"): ("clean", 0), ("memcheck", "fused"): ("clean", 0),
                      ("racecheck", "naive"): ("clean", 0), ("racecheck", "fused"): ("errors", 96)}
    first = next(r for r in doc["rows"] if r["status"] == "errors")["first"]
    assert first["summary"].startswith("Race (Write / Read) at /lab/kernels/softmax.py:21")
    with pytest.raises(LabError, match="unknown --tool"):
        S.sanitize("softmax", "gpu", tools=["leakcheck"])
    with pytest.raises(LabError, match="simulator"):
        S.sanitize("softmax", "simulator")


def test_lineinfo_is_asked_for_before_the_first_compile():
    class D:
        targetoptions = {}
        overloads = {}

    d = D()
    San.lineinfo_on(d)
    assert d.targetoptions == {"lineinfo": True}
    compiled = D()
    compiled.targetoptions, compiled.overloads = {}, {"sig": object()}
    San.lineinfo_on(compiled)
    assert compiled.targetoptions == {}  # too late: recompiling would change what was checked


# --- not available: one line, exit 2 ---------------------------------------------------------------------------------
def test_sanitize_without_compute_sanitizer_is_one_line_and_exit_2(monkeypatch):
    monkeypatch.setattr(San, "find_sanitizer", lambda: None)
    code, out, err = run_lab("sanitize", "vecadd")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "compute-sanitizer was not found" in err and "nvidia-cuda-sanitizer-api-cu12" in err


def test_counters_without_ncu_is_one_line_and_exit_2(monkeypatch):
    import lab.inspect.commands as IC

    monkeypatch.setattr(K, "find_ncu", lambda: None)
    monkeypatch.setattr(IC, "_backend", lambda sim: "gpu")  # as on a GPU machine without Nsight Compute
    code, out, err = run_lab("counters", "matvec")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "Nsight Compute (ncu)" in err and "--sim" in err


def test_find_sanitizer_looks_in_the_wheel(tmp_path, monkeypatch):
    exe = tmp_path / "site" / "nvidia" / "cuda_sanitizer_api" / "bin" / "compute-sanitizer"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    for var in ("LAB_COMPUTE_SANITIZER", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site")])
    found = San.find_sanitizer()
    assert found == str(exe) or (found and os.path.exists("/usr/local/cuda/bin/compute-sanitizer"))


@sim_only
def test_counters_sim_cli_json_validates():
    code, out, err = run_lab("counters", "vecadd", "--sim", "--size", "256", "--variant", "element_per_thread",
                             "--json")
    assert code == 0
    doc = json.loads(out)
    validate(doc, "counters.json")
    assert doc["rows"][0]["sectors_per_request"] == 4.0 and doc["schema_version"] == 1
    code, out, err = run_lab("counters", "vecadd", "--sim", "--size", "256", "--variant", "element_per_thread")
    assert code == 0 and "simulated: from the recorded addresses" in out and "element_per_thread: coalesced" in out


# --- exercises under compute-sanitizer (lab exercise check --gpu) ------------------------------------------------
def test_sanitizer_reports_read_like_the_simulators_diagnoses():
    from lab.teach.messages import sanitizer_message

    (race,) = San.parse_report((FIX / "racecheck.txt").read_text(), "racecheck")
    assert sanitizer_message(race) == (
        "race (compute-sanitizer racecheck on the GPU; 1024 hazards): a write at line 21 of your file and a read at "
        "line 25 by another thread of the same block, with no cuda.syncthreads() between the two accesses; add one "
        "between writing shared memory and reading what other threads wrote (and before overwriting what they still "
        "read)")
    oob = San.parse_report((FIX / "memcheck.txt").read_text(), "memcheck")[0]
    assert sanitizer_message(oob) == (
        "out of bounds (compute-sanitizer memcheck on the GPU): thread 40 of block 3 wrote outside an array at line 14 "
        "of your file (Invalid __global__ write of size 4 bytes); guard it, e.g. `if i < n:`")
    (sync,) = San.parse_report((FIX / "synccheck.txt").read_text(), "synccheck")
    assert sanitizer_message(sync).startswith("barrier (compute-sanitizer synccheck on the GPU): Barrier error")


FAKE_CHECKER_SANITIZER = '''
import sys
args = sys.argv[1:]
tool, log = args[args.index("--tool") + 1], args[args.index("--log-file") + 1]
student = args[args.index("lab.teach.contained.executor") + 2]
lines = ["========= COMPUTE-SANITIZER"]
if tool == "racecheck":
    lines += ["========= Error: Race reported between Write access at cudapy::student_block_sum::block_sum_kernel+0xb0"
              f" in {student}:21",
              f"=========     and Read access at cudapy::student_block_sum::block_sum_kernel+0xc0 in {student}:25 [64 hazards]"]
if tool == "memcheck":  # a report in someone else's file is not the student's
    lines += ["========= Invalid __global__ read of size 4 bytes",
              "=========     at cudapy::numba::other+0x10 in /elsewhere/lib.py:3",
              "=========     by thread (0,0,0) in block (0,0,0)"]
open(log, "w").write("\\n".join(lines + ["========= ERROR SUMMARY: 0 errors"]) + "\\n")
'''


def test_exercise_gpu_diagnoses_with_a_stand_in(tmp_path, monkeypatch):
    import exercises
    from lab.core import sanitizer as san
    from lab.teach import workspace as W

    path = tmp_path / "block_sum.py"
    path.write_text(exercises.load("block_sum").solution.read_text())
    monkeypatch.setenv("LAB_COMPUTE_SANITIZER", _script(tmp_path, "compute-sanitizer", FAKE_CHECKER_SANITIZER))
    tests, notes = W._gpu_diagnoses("block_sum", path, 1, 5)
    assert [(t["name"], t["passed"]) for t in tests] == [("GPU racecheck", False), ("GPU memcheck", True),
                                                         ("GPU synccheck", True)]
    assert tests[0]["message"].startswith("race (compute-sanitizer racecheck on the GPU; 64 hazards): a write at line 21")
    assert notes == []
    monkeypatch.setattr(san, "find_sanitizer", lambda: None)
    tests, notes = W._gpu_diagnoses("block_sum", path, 1, 5)
    assert tests == [] and len(notes) == 1 and "races (racecheck)" in notes[0] and "[sanitize]" in notes[0]


def test_host_api_errors_are_not_kernel_hazards():
    """Numba's driver probes return errors on purpose; memcheck reported them on the H100 (2026-11-23)."""
    from lab.core.sanitizer import command, parse_report

    text = ("========= COMPUTE-SANITIZER\n"
            "========= Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to \"invalid argument\" on CUDA API call "
            "to cuGetProcAddress_v2.\n"
            "=========\n"
            "========= ERROR SUMMARY: 1 error\n")
    assert parse_report(text, "memcheck") == []
    assert command("cs", "memcheck")[:2] == ["cs", "--tool"] and "--report-api-errors" in command("cs", "racecheck")
