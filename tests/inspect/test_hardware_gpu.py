"""The lessons checked against hardware counters and NVIDIA's compute-sanitizer (issue 21, sections
2-4). Marked ``gpu`` and skipped unless a real GPU and the tool are here (never in the simulator:
``-m gpu`` also runs there in CI). Each kernel's counters come from one ``lab counters`` run
(:func:`lab.inspect.counters.counters`, Nsight Compute), shared by the tests of that kernel.

    python -m pytest -m gpu tests/inspect/test_hardware_gpu.py -n 8 --dist loadgroup
"""
import json
import os
import subprocess
import sys

import pytest

from lab.inspect import counters as K
from lab.inspect.counters import bound as KB
from lab.inspect.counters import engine as KE
from lab.inspect import sanitize as S
from tests.conftest import SIMULATOR, run_lab
from tests.helpers import fits, mutated_solution

needs_ncu = pytest.mark.skipif(SIMULATOR or KE.find_ncu() is None,
                               reason="needs a CUDA GPU and Nsight Compute (ncu)")
needs_sanitizer = pytest.mark.skipif(SIMULATOR or S.find_sanitizer() is None,
                                     reason="needs a CUDA GPU and compute-sanitizer")
pytestmark = pytest.mark.gpu


def on_ncu(group):
    """needs_ncu, in the xdist group ``group`` (the tests sharing one kernel's counters run on one worker)."""
    def apply(test):
        return needs_ncu(pytest.mark.xdist_group(group)(test))
    return apply


def _counters(kernel, variants, size, threads=256, phases=("dram", "detail")):
    doc = K.counters(kernel, "gpu", variants, size, threads, contenders=["numba"], phases=phases)
    rows = {r["variant"]: r for r in doc["rows"]}
    for v in variants:
        assert rows[v]["status"] == "ok", f"{kernel} {v}: {rows[v]['verdict']}"
    print(json.dumps({v: {k: rows[v].get(k) for k in ("dram_read_bytes", "dram_write_bytes", "min_bytes",
                                                      "sectors_per_request", "load_requests", "load_sectors",
                                                      "bank_conflicts", "bank_ways", "verdict")}
                      for v in variants}, indent=1, default=str))
    return rows


@pytest.fixture(scope="module")
def vecadd():
    return _counters("vecadd", ["element_per_thread", "four_per_thread"], "67108864", phases=("dram",))


@pytest.fixture(scope="module")
def matvec():
    return _counters("matvec", ["row_per_thread", "warp_per_row", "warp_per_row_shared_x"], "16384x4096",
                     phases=("detail",))


@pytest.fixture(scope="module")
def softmax():
    return _counters("softmax", ["naive", "fused", "online"], "8192x8192", phases=("dram",))


@pytest.fixture(scope="module")
def matmul():
    # 4096^3: A and B (64 MB each) do not fit the H100's 50 MB L2, so DRAM bytes show the tiles' reuse
    # (at 2048^3 every rung read the 34 MB minimum: both operands stayed in L2)
    return _counters("matmul", ["naive", "shared", "register_tiled"], "4096")


@pytest.fixture(scope="module")
def quantize():
    return _counters("quantize", ["atomic_per_block", "block_partials", "l2_tail_first"], "67108864",
                     phases=("dram",))


# --- section 3: the lessons' claims ----------------------------------------------------------------------------
@on_ncu("vecadd")
def test_vecadd_moves_the_minimum_bytes(vecadd):
    """Reads: a and b once each, within 5%. Writes: at most c once; up to the L2's size of them may still
    sit dirty in L2 when the kernel ends (written back later, after the measurement), so not fewer
    than c less 64 MB."""
    n = 67108864
    for v, r in vecadd.items():
        read, write = r["dram_read_bytes"], r["dram_write_bytes"]
        assert abs(read / (2 * 4 * n) - 1) < 0.05, f"{v}: read {read:,.0f} B against {2 * 4 * n:,} B"
        assert 4 * n - 64e6 <= write <= 1.05 * 4 * n, f"{v}: wrote {write:,.0f} B against {4 * n:,} B"


@on_ncu("matvec")
def test_matvec_row_per_thread_loads_at_least_4x_the_sectors_of_warp_per_row(matvec):
    row, warp = matvec["row_per_thread"], matvec["warp_per_row"]
    # row_per_thread: A 32 sectors a request (rows 16 KB apart), x 1 (a broadcast): 16.5; warp_per_row: 4
    assert row["sectors_per_request"] >= 4 * warp["sectors_per_request"]
    assert row["verdict"].startswith("uncoalesced")


@on_ncu("matvec")
def test_matvec_shared_x_reads_x_once_per_block_not_once_per_row(matvec):
    """At the global-load level (L1 sectors): x is 16 KB and lives in L2 either way, so DRAM cannot tell;
    what the rung saves is the global loads of x, once a block (8 rows at 256 threads) not once a row."""
    rows, cols, rows_per_block = 16384, 4096, 256 // 32
    a_sectors = rows * cols * 4 / 32
    x_sectors = cols * 4 / 32
    warp, shared = matvec["warp_per_row"], matvec["warp_per_row_shared_x"]
    assert warp["load_sectors"] >= 0.95 * (a_sectors + x_sectors * rows)  # x once a row
    assert shared["load_sectors"] <= 1.05 * (a_sectors + x_sectors * rows / rows_per_block)  # x once a block


@on_ncu("softmax")
def test_softmax_fused_and_online_read_the_input_once_naive_about_five_times(softmax):
    x_bytes = 8192 * 8192 * 4
    for v in ("fused", "online"):
        assert softmax[v]["dram_read_bytes"] <= 1.1 * x_bytes, v
    ratio = softmax["naive"]["dram_read_bytes"] / x_bytes
    assert 3.5 <= ratio <= 5.5, f"naive read the matrix {ratio:.2f} times (5 reads, L2 keeps each launch's tail)"


@on_ncu("matmul")
def test_matmul_tiles_cut_global_loads_by_their_tile_factor_and_dram_traffic(matmul):
    """The docstrings' claim is per element fetched from global memory: naive 2 loads an FMA, shared
    (16 x 16 tiles) 2 a 16 FMAs, register_tiled 16 a 1024 FMAs (128 x 128 tile, 8 x 8 a thread): load
    requests fall by the tile factor. DRAM bytes fall less between naive and shared: naive's re-reads
    mostly hit L1 and L2 (H100, 2026-11-23, 4096^3: naive 33.0 GB, shared 17.0 GB, register_tiled
    0.58 GB, cuBLAS 0.34 GB; the minimum is 0.20 GB), while shared streams all of B through L2 for
    every row of blocks; register_tiled's 8x larger tile cuts that by more than 8x."""
    naive, shared, tiled = matmul["naive"], matmul["shared"], matmul["register_tiled"]
    assert naive["load_requests"] >= 0.9 * 16 * shared["load_requests"]
    assert naive["load_requests"] >= 0.9 * 128 * tiled["load_requests"]
    assert shared["dram_read_bytes"] <= naive["dram_read_bytes"] / 1.5
    assert tiled["dram_read_bytes"] <= shared["dram_read_bytes"] / 8  # the tile factor, 128 / 16
    assert tiled["dram_read_bytes"] <= naive["dram_read_bytes"] / 16


@on_ncu("matmul")
def test_matmul_register_tiled_transposed_stores_are_conflict_free(matmul):
    """kernels/matmul.py: rows of 132 words (A_PAD = 4) spread the transposed A stores over all 32 banks."""
    r = matmul["register_tiled"]
    assert r["bank_conflicts_store"] is not None
    stores = r["shared_instructions"]  # loads + stores: a generous bound for the stores' conflicts
    assert r["bank_conflicts_store"] <= 0.05 * stores


@on_ncu("quantize")
def test_quantize_two_passes_read_x_twice_and_l2_tail_first_less(quantize):
    x_bytes = 67108864 * 4
    for v in ("atomic_per_block", "block_partials"):
        ratio = quantize[v]["dram_read_bytes"] / x_bytes
        assert 1.8 <= ratio <= 2.1, f"{v} read x {ratio:.2f} times"
    # l2_tail_first's second pass starts on the tail the first pass left in L2: a shared L2, so another test's
    # kernels running on the GPU meanwhile (pytest -n) can evict it. Measured again, alone in its ncu run, up to
    # twice: on the H100, 512 MB against 537 alone; 537 once, beside the -n 14 suite.
    tail, two = quantize["l2_tail_first"]["dram_read_bytes"], quantize["block_partials"]["dram_read_bytes"]
    for _ in range(2):
        if tail < 0.97 * two:
            break
        tail = _counters("quantize", ["l2_tail_first"], "67108864", phases=("dram",))["l2_tail_first"]["dram_read_bytes"]
    assert tail < 0.97 * two, f"l2_tail_first read {tail / 1e6:.0f} MB, the two-pass rung {two / 1e6:.0f} MB"


# --- the tensor-core rungs: tensor pipe, shared wavefronts, what bounds them ------------------------------------
@pytest.fixture(scope="module")
def pipeline():
    """matmul's rungs outside auto's ladder (async_copy, the tensor-core rungs) at 2048^3, under
    numba-cuda-mlir (LAB_COMPILER=numba-cuda-mlir; elsewhere they are skipped with one line)."""
    import kernels
    from kernels.compiler import COMPILER, MLIR
    from kernels.matmul import RUNGS

    if COMPILER != MLIR:  # numba-cuda has no inline PTX: the rungs run no kernel, so ncu profiles none
        pytest.skip(f"the tensor-core rungs run on a GPU under {MLIR} only (this run: {COMPILER})")
    variants = [v for v in kernels.load("matmul").variants if v not in RUNGS and v != "auto"]
    doc = K.counters("matmul", "gpu", variants, "2048", 256, contenders=["numba"])
    rows = {r["variant"]: r for r in doc["rows"]}
    if all(r["status"] == "skipped" for r in rows.values()):
        pytest.skip(rows[variants[0]]["verdict"])
    print(json.dumps({v: {k: r.get(k) for k in ("tensor_pipe_pct", "shared_wavefronts_per_request",
                                                 "conflicts_per_shared_load", "l1_throughput_pct", "l2_throughput_pct",
                                                 "issue_active_pct", "sm_throughput_pct", "dram_throughput_pct",
                                                 "top_stalls", "bound", "verdict")}
                      for v, r in rows.items()}, indent=1, default=str))
    return rows


@on_ncu("matmul-pipeline")
def test_tensor_core_rungs_show_the_tensor_pipe_shared_wavefronts_and_their_bound(pipeline):
    """docs/tensor-cores.md: async_copy's tensor pipe idle (FP32 FMAs), tensor_core_tf32's busy; both rungs'
    shared loads conflict-free: the tf32 fragments by the swizzle, async_copy's 128-bit loads (A's padded rows,
    B's chunks read by adjacent lanes or broadcast; the first build's 32-bit B loads were 2-way conflicted)."""
    for v, r in pipeline.items():
        if r["status"] == "skipped" and v not in ("async_copy", "tensor_core_tf32"):
            continue  # a rung for another dtype, say
        assert r["status"] == "ok", f"{v}: {r['verdict']}"
        assert r["bound"] in KB.BOUNDS and r["bound"] in r["verdict"], v
        for key in ("tensor_pipe_pct", "sm_throughput_pct"):
            assert r[key] is not None, (v, key)
        # a wgmma rung reads its operands from shared memory through matrix descriptors, not ld.shared: with no
        # shared load request there is no wavefronts-per-request or conflicts-per-load to show (None, not 0)
        if v in ("async_copy", "tensor_core_tf32") or r.get("shared_instructions"):
            assert r["shared_wavefronts_per_request"] is not None, v
        if v in ("async_copy", "tensor_core_tf32"):
            assert r["conflicts_per_shared_load"] is not None, v
    a, t = pipeline["async_copy"], pipeline["tensor_core_tf32"]
    assert a["tensor_pipe_pct"] < 2 < t["tensor_pipe_pct"]
    assert t["conflicts_per_shared_load"] < 0.05 and a["conflicts_per_shared_load"] < 0.05


# --- section 2: the simulator's sector counts against the hardware's --------------------------------------------
@on_ncu("sim-vs-hw")
@pytest.mark.parametrize("kernel, variants, size", [
    ("matvec", ["row_per_thread", "warp_per_row"], "32x256"),
    ("vecadd", ["element_per_thread"], "4096"),
])
def test_simulated_sectors_per_request_match_the_hardware(kernel, variants, size):
    from lab.core.session import child_env

    proc = subprocess.run([sys.executable, "-m", "lab", "counters", kernel, "--sim", "--size", size, "--threads", "32",
                           "--variant", ",".join(variants), "--json"], capture_output=True, text=True,
                          env=child_env(NUMBA_ENABLE_CUDASIM="1"), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    sim = {r["variant"]: r for r in json.loads(proc.stdout)["rows"]}
    hw = _counters(kernel, variants, size, threads=32, phases=("detail",))
    for v in variants:
        s, h = sim[v]["sectors_per_request"], hw[v]["sectors_per_request"]
        assert abs(s - h) <= 0.1 * h, f"{kernel} {v}: simulated {s:.2f}, hardware {h:.2f} sectors per request"


# --- lab run --counters: the two columns on the GPU (ncu, else CUPTI) ---------------------------------------------
needs_engine = pytest.mark.skipif(SIMULATOR or (KE.find_ncu() is None and not KE.cupti_available()),
                                  reason="needs a CUDA GPU and Nsight Compute or cupti-python")


def _run_counters(*args):

    code, out, err = run_lab("run", *args, "--counters", "--repeats", "3", "--json")
    assert code == 0, err[-3000:]
    doc = json.loads(out)
    print(json.dumps({"counters": doc["counters"], "rows": [(r["contender"], r["variant"], r["dram_ratio"],
                                                             r["sectors_per_request"]) for r in doc["results"]]}))
    return doc, {(r["contender"], r["variant"]): r for r in doc["results"]}


@needs_engine
@pytest.mark.xdist_group("run-counters")
def test_lab_run_counters_vecadd_moves_the_minimum_and_loads_4_sectors_a_request():
    doc, rows = _run_counters("vecadd", "--size", "67108865", "--variant", "element_per_thread",
                              "--contenders", "numba,numpy,torch")
    assert doc["counters"]["tool"] in ("ncu", "cupti") and doc["counters"]["engine"]
    r = rows[("numba", "element_per_thread")]
    assert abs(r["dram_ratio"] - 1) <= 0.05, r  # the lesson's claim (section 3), through lab run
    if doc["counters"]["tool"] == "ncu" or r["sectors_per_request"] is not None:
        assert 3.9 <= r["sectors_per_request"] <= 4.1, r  # 32 lanes x 4 bytes: 4 sectors a request
    assert rows[("numpy", "reference (CPU)")]["dram_ratio"] is None
    torch_rows = [v for (c, _), v in rows.items() if c == "torch" and v["status"] == "ok"]
    assert all(v["dram_ratio"] is not None for v in torch_rows)  # contenders measured too


@needs_engine
@pytest.mark.xdist_group("run-counters")
def test_lab_run_counters_matvec_columns_fit_80_and_show_uncoalesced_loads():

    doc, rows = _run_counters("matvec", "--size", "16384x4096", "--variant", "row_per_thread,warp_per_row",
                              "--contenders", "numba")
    rpt, wpr = rows[("numba", "row_per_thread")], rows[("numba", "warp_per_row")]
    if doc["counters"]["tool"] == "ncu" or rpt["sectors_per_request"] is not None:
        assert rpt["sectors_per_request"] >= 4 * wpr["sectors_per_request"]
    assert 0.9 <= wpr["dram_ratio"] <= 1.2, wpr
    code, out, err = run_lab("run", "matvec", "--size", "4096x1024", "--variant", "row_per_thread,warp_per_row",
                             "--contenders", "numba,torch", "--repeats", "3", "--counters")
    assert code == 0, err[-3000:]
    fits(out)
    head = next(line for line in out.splitlines() if line.startswith("contender"))
    assert "DRAM×" in head and "sec/req" in head


# --- CUPTI (cupti-python PM sampling), the engine where ncu is absent ---------------------------------------------
needs_cupti = pytest.mark.skipif(SIMULATOR or not KE.cupti_available(), reason="needs a CUDA GPU and cupti-python "
                                 "(pip install 'numba-gpu-lab[counters]', or its wheels carried to the machine)")


def _cupti(kernel, variants, size, contenders=("numba",)):
    doc = K.counters(kernel, "gpu", variants, size, 256, contenders=list(contenders), tool="cupti")
    print(json.dumps({k: doc[k] for k in ("tool", "engine", "notes")}, indent=1))
    keys = ("contender", "variant", "status", "dram_read_bytes", "dram_write_bytes", "dram_bytes_ratio",
            "sectors_per_request", "load_sectors", "load_requests", "l2_hit_pct", "bank_conflicts",
            "achieved_occupancy_pct", "pm_samples", "verdict")
    print(json.dumps([{k: r.get(k) for k in keys} for r in doc["rows"]], indent=1, default=str))
    assert doc["tool"] == "cupti" and doc["engine"].startswith("CUPTI PM sampling")
    return doc, {r["variant"]: r for r in doc["rows"]}


@needs_cupti
@pytest.mark.xdist_group("cupti")
def test_cupti_engine_counts_vecadds_dram_bytes_and_coalesced_loads():
    doc, rows = _cupti("vecadd", ["element_per_thread"], "67108864", contenders=("numba", "torch"))
    row = rows["element_per_thread"]
    assert row["status"] == "ok" and row["pm_samples"] >= 1, row
    assert abs(row["dram_bytes_ratio"] - 1) <= 0.10, row  # the GPU's counters over the call: the minimum, +-10%
    assert 3.6 <= row["sectors_per_request"] <= 4.4, row  # a warp's 32 floats: 4 sectors a request
    assert row["l2_hit_pct"] is None or 0 <= row["l2_hit_pct"] <= 100, row  # null where one pass cannot
    assert row["achieved_occupancy_pct"] is None or 0 < row["achieved_occupancy_pct"] <= 100, row
    assert row["load_efficiency_pct"] is None and row["top_stalls"] is None  # what PM sampling does not measure
    torch_rows = [r for r in doc["rows"] if r["contender"] == "torch"]
    assert torch_rows and all(abs(r["dram_bytes_ratio"] - 1) <= 0.10 for r in torch_rows), torch_rows


@needs_cupti
@pytest.mark.xdist_group("cupti")
def test_cupti_sees_matvec_row_per_thread_uncoalesced():
    _, rows = _cupti("matvec", ["row_per_thread", "warp_per_row"], "16384x4096")
    row, warp = rows["row_per_thread"]["sectors_per_request"], rows["warp_per_row"]["sectors_per_request"]
    assert row >= 4 * warp, (row, warp)


@needs_cupti
@pytest.mark.xdist_group("cupti")
@pytest.mark.skipif(KE.find_ncu() is None, reason="needs Nsight Compute too, to compare")
def test_cupti_and_ncu_agree_on_softmax_dram_reads():
    _, a = _cupti("softmax", ["naive", "online"], "8192x8192")
    b = _counters("softmax", ["naive", "online"], "8192x8192", phases=("dram",))
    for v in ("naive", "online"):
        c, n = a[v]["dram_read_bytes"], b[v]["dram_read_bytes"]
        assert abs(c - n) <= 0.15 * n, f"softmax {v}: CUPTI {c:.3g} B, ncu {n:.3g} B"


@needs_cupti
@pytest.mark.xdist_group("cupti")
def test_lab_counters_tool_cupti_prints_at_80_columns():
    code, out, err = run_lab("counters", "matvec", "--size", "4096x1024", "--tool", "cupti",
                             "--variant", "row_per_thread,warp_per_row")
    print(out, err)
    assert code == 0, err
    fits(out)
    assert "CUPTI PM sampling" in out and "row_per_thread" in out


# --- section 4: every rung clean under racecheck and memcheck -----------------------------------------------------
SMALL_ODD = {"vecadd": "1001", "matvec": "77x129", "matmul": "33x65x17", "softmax": "13x257", "quantize": "1001",
             "dequantize": "13x71", "quantize_per_channel": "13x71"}


@needs_sanitizer
@pytest.mark.parametrize("tool", ["racecheck", "memcheck"])
@pytest.mark.parametrize("kernel", sorted(SMALL_ODD))
def test_every_rung_is_clean_under_compute_sanitizer(kernel, tool):
    doc = S.sanitize(kernel, "gpu", tools=[tool], size=SMALL_ODD[kernel], threads=128)
    bad = [f"{r['variant']}: {r['status']} {r['count']} {(r['first'] or {}).get('summary', r.get('reason'))}"
           for r in doc["rows"] if r["status"] not in ("clean", "skipped")]
    assert not bad and not doc["unattributed"], "\n".join(bad + [u["summary"] for u in doc["unattributed"]])
    assert any(r["status"] == "clean" for r in doc["rows"])


@needs_sanitizer
@pytest.mark.parametrize("tool, name, markers", [
    ("racecheck", "race", ("RACE_WRITE", "RACE_READ")),
    ("memcheck", "out_of_bounds", ("OOB",)),
])
def test_a_known_bug_is_reported_at_its_python_line(tool, name, markers):
    """Not vacuous: a missing syncthreads and a missing guard are found, and named by file and line."""
    from tests.inspect import sanitizer_targets as T

    exe = S.find_sanitizer()
    result = S.run_tool(exe, tool, "test", [name], (1,), 64, "float32", 0,
                        target=[sys.executable, "-m", "tests.inspect.sanitizer_targets"])
    reps = result["reports"]
    assert reps, result["output"][-3000:]
    lines = {T.line_of(m) for m in markers}
    assert any(os.path.basename(r.file or "") == "sanitizer_targets.py" and r.line in lines for r in reps), \
        "\n".join(r.one_line() for r in reps)
    by, lost = S.attribute(reps, result["launched"])
    assert by[name] and not lost


# --- section 5: exercises checked under compute-sanitizer (lab exercise check NAME --gpu) -----------------------
EXERCISE_BUGS = [  # (exercise, substitutions in the solution, the diagnosis's start, the tool)
    ("block_sum", [("        cuda.syncthreads()  # this level", "        pass  # this level")], "race (", "racecheck"),
    ("tiled_matmul", [("        cuda.syncthreads()  # the tiles", "        pass  # the tiles")], "race (", "racecheck"),
    ("softmax_fused", [("    cuda.syncthreads()  # everyone has read the max", "    pass  # everyone has read the max")],
     "race (", "racecheck"),
    # vecadd's missing guard: its stores go past c; under compute-sanitizer the checker's outputs are exact-size
    # (lab.teach.contained.executor.guard_elements), so they leave the allocation, where memcheck sees them
    ("vecadd", [("    if i < c.shape[0]:\n        c[i]", "    c[i]")], "out of bounds (", "memcheck"),
]


@needs_sanitizer
@pytest.mark.parametrize("name, subs, start, tool", EXERCISE_BUGS, ids=[b[0] for b in EXERCISE_BUGS])
def test_exercise_bug_found_by_compute_sanitizer_at_its_line(tmp_path, name, subs, start, tool):
    import re

    from lab.teach.workspace import check

    path = mutated_solution(tmp_path, name, subs)
    result = check(name, file=str(path), directory=str(tmp_path / "ws"), backend="gpu")
    entry = next(t for t in result["tests"] if t["name"] == f"GPU {tool}")
    # the check says which backend saw it (lab.teach.union.sanitizer_entry), then the sanitizer's diagnosis
    assert not entry["passed"] and entry["message"].startswith(f"seen by compute-sanitizer on the GPU: {start}"), \
        result["tests"]
    assert result["verdict_from"] == ["gpu", "simulator"]  # the simulator's trace ran too
    line = int(re.search(r"line (\d+) of your file", entry["message"]).group(1))
    source = path.read_text().splitlines()[line - 1]
    assert "[" in source, f"line {line} is {source!r}: not an array access"  # the access itself, in the student's file


@needs_sanitizer
def test_exercise_solution_is_clean_under_compute_sanitizer(tmp_path):
    import exercises
    from lab.teach.workspace import check

    result = check("block_sum", file=str(exercises.load("block_sum").solution), directory=str(tmp_path / "ws"),
                   backend="gpu")
    gpu = [t for t in result["tests"] if t["name"].startswith("GPU ")]
    assert [t["name"] for t in gpu] == ["GPU racecheck", "GPU memcheck", "GPU synccheck"]
    assert result["passed"], result["tests"]
