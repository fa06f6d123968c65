"""What limits a call (lab.inspect.counters.bound) without a GPU: tensor-, memory-, issue-, compute- and
latency-bound from metric dicts, from an ncu CSV log made in the documented format, with a metric
missing, through the ncu engine against a stand-in executable and the CLI's table, and honest in
the simulator (no tensor pipe: "not measured")."""
import json

import pytest

from lab.inspect import counters as K
from lab.inspect.counters import bound as KB
from lab.inspect.counters import cupti as KC
from lab.inspect.counters import metrics as KM
from lab.inspect.counters import ncu as KN
from lab.inspect.counters import row as KR
from lab.inspect.counters.bound import COMPUTE_BOUND_PCT, MEMORY_BOUND_PCT, TENSOR_BOUND_PCT
from lab.inspect.counters.ncu import ncu_row
from tests.conftest import SIMULATOR, run_lab
from tests.inspect.test_hardware import FAKE_NCU, _script, validate

TENSOR = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
WAVES = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
SH_LD, SH_ST = "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum"
CONF_LD, CONF_ST = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")
L1, L2 = "l1tex__throughput.avg.pct_of_peak_sustained_active", "lts__throughput.avg.pct_of_peak_sustained_elapsed"
DRAM, SM = "dram__throughput.avg.pct_of_peak_sustained_elapsed", "sm__throughput.avg.pct_of_peak_sustained_elapsed"
ISSUE = "sm__inst_issued.avg.pct_of_peak_sustained_active"
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
MATMUL = KM.declared(("tensor_pipe_pct", "shared_wavefronts_per_request", "conflicts_per_shared_load", "bound"))
OPTIONAL = [m.name for m in MATMUL if m.optional]

# Nsight Compute on the H100 at 4096^3 (docs/tensor-cores.md): async_copy and tensor_core_tf32, one call each
H100 = {
    "async_copy": {TENSOR: 0.4, SM: 74.9, DRAM: 1.9, SH_LD: 553.6e6, WAVES: 841.3e6, CONF_LD: 270.3e6,
                   STALL.format("not_selected"): 1.89, STALL.format("math_pipe_throttle"): 1.10},
    "tensor_core_tf32": {TENSOR: 15.7, SM: 72.9, DRAM: 5.7, SH_LD: 117.4e6, WAVES: 128.5e6, CONF_LD: 0.29e6,
                         STALL.format("not_selected"): 1.36, STALL.format("wait"): 1.07},
}


def _kernel(metrics: dict, name="tensor_core_tf32_kernel", duration=1e6) -> dict:
    return {"id": "1", "name": name, "grid": "(64, 64, 1)", "metrics": {"gpu__time_duration.sum": duration, **metrics}}


def _row(metrics: dict, **fields):
    """The row ncu_row makes of one kernel with ``metrics`` (both passes), the matmul's optional fields."""
    kernels = {0: [_kernel(metrics)]}
    entry = {"contender": "numba", "variant": "tensor_core_tf32", "status": "ok", "index": 0}
    return ncu_row(entry, {"dram": kernels, "detail": kernels}, 3 * 4 * 2048 * 2048, OPTIONAL).with_(**fields)


def test_the_thresholds_are_nsight_computes_sixty_percent():
    import importlib

    doc = importlib.import_module("lab.inspect.counters.bound").__doc__
    assert TENSOR_BOUND_PCT == MEMORY_BOUND_PCT == COMPUTE_BOUND_PCT == 60.0
    assert "ProfilingGuide" in doc and "60.0% of peak" in doc


@pytest.mark.parametrize("metrics, kind, text", [
    ({TENSOR: 88.0, SM: 90.0, L1: 40.0, L2: 20.0, DRAM: 10.0, ISSUE: 30.0},
     "tensor-bound", "tensor-bound: tensor pipe 88% of peak, 40% of L1/shared peak"),
    ({TENSOR: 20.0, SM: 50.0, L1: 85.0, L2: 30.0, DRAM: 5.0, ISSUE: 40.0},
     "memory-bound", "memory-bound: 85% of L1/shared peak (DRAM 5%, L2 30%, tensor pipe 20%)"),
    ({TENSOR: 2.0, SM: 30.0, L1: 10.0, L2: 15.0, DRAM: 91.0, ISSUE: 10.0},
     "memory-bound", "memory-bound: 91% of DRAM peak (L2 15%, L1/shared 10%, tensor pipe 2%)"),
    ({TENSOR: 15.7, SM: 72.9, L1: 40.0, L2: 10.0, DRAM: 5.7, ISSUE: 71.0, STALL.format("not_selected"): 1.36},
     "issue-bound", "issue-bound: issue slots 71% busy, 73% of SM peak, tensor pipe 16%, mostly stalled on not_selected"),
    ({TENSOR: 15.7, SM: 72.9, L1: 40.0, L2: 10.0, DRAM: 5.7, ISSUE: 35.0},
     "compute-bound", "compute-bound: 73% of SM peak (not the tensor pipe: 16%)"),
    ({TENSOR: 12.0, SM: 25.0, L1: 20.0, L2: 8.0, DRAM: 3.0, ISSUE: 20.0, "sm__warps_active.avg.pct_of_peak_sustained_active": 12.0,
      STALL.format("long_scoreboard"): 9.0, STALL.format("barrier"): 2.0},
     "latency-bound", "latency-bound: tensor pipe 12%, SM 25%, DRAM 3%, L2 8%, L1/shared 20% of peak, 12% achieved "
                      "occupancy, mostly stalled on long_scoreboard"),
])
def test_each_bound_from_an_ncu_kernel(metrics, kind, text):
    row = _row(metrics)
    limit = KB.bound(row, row.dram_bytes_ratio or None)
    assert limit.kind == kind and limit.text.startswith(text)
    assert text in KR.verdict(row) and KR.verdict(row) == KR.verdict(row.as_dict())


def test_the_recorded_h100_numbers_are_not_tensor_bound():
    """docs/tensor-cores.md measured no issue-slot metric: SM at 73-75%, the tensor pipe at 0.4-16%, DRAM 2-6%."""
    for variant, metrics in H100.items():
        row = _row(metrics)
        assert KB.bound(row).kind == "compute-bound", variant
        assert "not the tensor pipe" in KR.verdict(row)
        assert row.l1_throughput_pct is None and row.issue_active_pct is None  # not collected: null, not 0
    a, t = _row(H100["async_copy"]), _row(H100["tensor_core_tf32"])
    assert a.shared_wavefronts_per_request == pytest.approx(841.3 / 553.6)
    assert a.conflicts_per_shared_load == pytest.approx(270.3 / 553.6) and a.bank_ways < 1.5
    assert KR.verdict(a).startswith("0.49 bank conflicts a shared load, 1.52 wavefronts a shared request; ")
    assert t.conflicts_per_shared_load == pytest.approx(0.29 / 117.4) and "bank conflicts" not in KR.verdict(t)
    assert (t.tensor_pipe_pct, t.shared_loads, t.shared_wavefronts) == (15.7, 117.4e6, 128.5e6)


def test_a_missing_metric_is_null_and_the_rest_still_judge():
    """ncu refused the tensor metric (an older ncu, another GPU): null, and the SOL throughputs still say."""
    row = _row({SM: 20.0, L1: 70.0, DRAM: 4.0, ISSUE: 10.0})
    assert row.tensor_pipe_pct is None and KB.bound(row).kind == "memory-bound"
    assert KR.verdict(row).startswith("memory-bound: 70% of L1/shared peak (DRAM 4%)")
    nothing = _row({})
    assert KB.bound(nothing) is None and KR.verdict(nothing) == "no counters"
    assert nothing.shared_wavefronts_per_request is None and nothing.conflicts_per_shared_load is None
    only_tensor = _row({TENSOR: 75.0})  # CUPTI's PM sampling: the tensor pipe and no SOL throughputs
    assert KB.bound(only_tensor).kind == "tensor-bound"
    assert KB.bound(_row({TENSOR: 20.0})) is None  # not latency-bound: nothing else was measured
    kernels_without = KN.aggregate([_kernel({TENSOR: 50.0})], [_kernel({TENSOR: 50.0})])
    assert "tensor_pipe_pct" not in kernels_without  # a kernel that declares none gets no optional fields


def test_rows_without_optional_metrics_read_as_before():
    base = dict.fromkeys(KR.ROW_KEYS)
    assert KB.bound(base) is None
    assert KB.bound(dict(base, sm_throughput_pct=20.0)) is None  # no memory unit measured: no latency claim
    assert KB.bound(dict(base, dram_throughput_pct=20.0)) is None
    assert KB.bound(dict(base, tensor_pipe_pct=10.0, l1_throughput_pct=70.0)).text == (
        "memory-bound: 70% of L1/shared peak (tensor pipe 10%)")
    assert KB.bound(dict(base, dram_throughput_pct=91.0, sm_throughput_pct=20.0)).kind == "memory-bound"
    assert KB.bound(dict(base, dram_throughput_pct=10.0, sm_throughput_pct=70.0)).text == "compute-bound: 70% of SM peak"
    assert KB.bound(dict(base, dram_throughput_pct=12.0, sm_throughput_pct=8.0)).text == (
        "latency-bound: 12% of DRAM peak, 8% of SM peak")


def test_an_ncu_log_with_two_rungs_and_a_timer(tmp_path):
    """The CSV as ncu --page raw --print-units base writes it: a marker per contender, the L2 flush dropped."""
    cols = ["gpu__time_duration.sum", TENSOR, WAVES, SH_LD, SH_ST, CONF_LD, CONF_ST, L1, L2, DRAM, SM, ISSUE,
            STALL.format("not_selected"), STALL.format("long_scoreboard")]
    fixed = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",' \
            '"Device","CC"'
    rows = [("lab_counters_mark", "(1, 1, 1)", [0] * len(cols)),
            ("async_copy_kernel", "(32, 32, 1)", [2e6, 0.4, 841.3e6, 553.6e6, 1e6, 270.3e6, 0, 45, 12, 2, 75, 74, 1.9, 0.01]),
            ("_flush_l2", "(1024, 1, 1)", [9e9] * len(cols)),
            ("lab_counters_mark", "(2, 1, 1)", [0] * len(cols)),
            ("tensor_core_tf32_kernel", "(32, 32, 1)", [1e6, 65.0, 128.5e6, 117.4e6, 1e6, 0.29e6, 0, 30, 9, 6, 73, 40,
                                                        1.4, 0.02])]
    lines = ["==PROF== Connected to process 1", fixed + "," + ",".join(f'"{c}"' for c in cols),
             '"","","","","","","","","","","",' + ",".join('"nsecond"' if c.startswith("gpu__") else '""' for c in cols)]
    lines += [f'"{i}","1","python3","host","{name}(long long)","1","7","(128, 1, 1)","{grid}","0","9.0",'
              + ",".join(f'"{v:,}"' for v in vals) for i, (name, grid, vals) in enumerate(rows)]
    groups = KN.group_by_marker(KN.parse_ncu_csv("\n".join(lines)))
    entries = [{"contender": "numba", "variant": v, "status": "ok", "index": i}
               for i, v in enumerate(["async_copy", "tensor_core_tf32"])]
    a, t = (ncu_row(e, {"dram": groups, "detail": groups}, 1, OPTIONAL) for e in entries)
    assert KB.bound(a).kind == "issue-bound" and KB.bound(t).kind == "tensor-bound"
    assert a.shared_wavefronts_per_request == pytest.approx(841.3e6 / (553.6e6 + 1e6))
    assert "mostly stalled on not_selected" in KR.verdict(a) and KR.verdict(t).startswith("tensor-bound: tensor pipe 65%")


def _fake_ncu(tmp_path, monkeypatch, values):
    fake = FAKE_NCU.replace("lines = [", "value.update(json.loads(os.environ['FAKE_NCU_VALUES']))\nlines = [", 1)
    monkeypatch.setenv("LAB_NCU", _script(tmp_path, "ncu", fake))
    monkeypatch.setenv("FAKE_NCU_VALUES", json.dumps(values))


def test_lab_counters_matmul_on_a_stand_in_ncu_table_and_json(tmp_path, monkeypatch):
    import lab.inspect.commands as IC

    _fake_ncu(tmp_path, monkeypatch, {TENSOR: 81.0, DRAM: 7.0, SM: 85.0, L1: 40.0, L2: 12.0, ISSUE: 30.0,
                                      WAVES: 2048, SH_LD: 1024, SH_ST: 0, CONF_LD: 0})
    doc = K.counters("matmul", "gpu", ["tensor_core_tf32"], "256", 256, contenders=["numba"])
    validate(doc, "counters.json")
    (row,) = doc["rows"]
    assert row["bound"] == "tensor-bound" and row["tensor_pipe_pct"] == 81.0
    assert row["shared_wavefronts_per_request"] == 2.0 and row["conflicts_per_shared_load"] == 0.0
    assert row["verdict"].startswith("tensor-bound: tensor pipe 81% of peak")
    assert doc["counter_metrics"][-1] == "bound" and "notes" in doc
    monkeypatch.setattr(IC, "_backend", lambda sim: "gpu")
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run_lab("counters", "matmul", "--variant", "tensor_core_tf32", "--size", "256")
    assert code == 0, err
    head = next(line for line in out.splitlines() if line.startswith("rung / contender"))
    assert "bound" in head and "TC%" in head and max(map(len, out.splitlines())) <= 80
    table = out.split("verdict")[0]
    assert "tensor-bound" in table and "2.00" in table and "TC%: tensor pipe busy" in " ".join(out.split())
    code, out, err = run_lab("counters", "matmul", "--variant", "tensor_core_tf32", "--size", "256", "--json")
    assert code == 0 and json.loads(out)["rows"][0]["bound"] == "tensor-bound"


def test_a_kernel_without_tensor_metrics_collects_and_shows_none(tmp_path, monkeypatch):
    _fake_ncu(tmp_path, monkeypatch, {})
    doc = K.counters("vecadd", "gpu", ["element_per_thread"], "1024", 256, contenders=["numba"])
    (row,) = doc["rows"]
    assert "tensor_pipe_pct" not in row and row["bound"] == "memory-bound"  # DRAM 85% (the stand-in's)
    from lab.cli.views.hardware import counters_columns

    assert "TC%" not in [c.header for c in counters_columns(False, doc["counter_metrics"])]


@pytest.mark.skipif(not SIMULATOR, reason="the simulator's counters")
def test_the_simulator_says_not_measured():
    doc = K.counters("matmul", "simulator", ["tensor_core_tf32"], "32x32x32", 32)
    validate(doc, "counters.json")
    (row,) = doc["rows"]
    assert row["tensor_pipe_pct"] is None and row["bound"] is None and row["shared_wavefronts_per_request"] is None
    assert row["verdict"].endswith("tensor pipe and bound: not measured (simulator)")
    assert any(n.startswith("not measured (simulator") and "tensor_pipe_pct" in n for n in doc["notes"])


def test_cupti_rows_take_the_tensor_pipe_where_sampled():
    row = KC.cupti_row({"metrics": {"dram__bytes_read.sum": 1.0, TENSOR: 42.0}}, 1, ("tensor_pipe_pct",))
    assert row["tensor_pipe_pct"] == 42.0
    assert "tensor_pipe_pct" not in KC.cupti_row({"metrics": {TENSOR: 42.0}}, 1)
    samples = [[50.0, 100.0], [10.0, 300.0], [float("nan"), 50.0]]  # weighted by active SM cycles
    assert KC.reduce_samples([TENSOR, "sm__cycles_active.sum"], samples)[TENSOR] == pytest.approx(20.0)


def test_a_cupti_row_names_no_bound_it_cannot_measure():
    from lab.inspect.counters import _judged
    from lab.inspect.counters.row import CounterRow

    measured = KC.cupti_row({"metrics": {"dram__bytes_read.sum": 3e6, "dram__bytes_write.sum": 1e6, TENSOR: 20.0}},
                           4_000_000, ("tensor_pipe_pct",))
    row = _judged(CounterRow.blank("numba", "tensor_core_tf32", 4_000_000).with_(**measured), OPTIONAL, "cupti")
    d = row.as_dict()
    assert d["tensor_pipe_pct"] == 20.0 and d["bound"] is None and d["l1_throughput_pct"] is None
    assert d["verdict"] == "DRAM bytes 1.00x the minimum; bound: not measured (cupti)"
