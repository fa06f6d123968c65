"""The ``lab counters`` table keeps its row labels at any width, ``--wide`` or not, and shows the cp.async
rungs' global loads as their copies' numbers, never the 0% that ncu's ld.global efficiency reads for them.

``--wide`` prints the table at its natural width, as ``lab run --wide`` does (squeezed into an 80-column
terminal, rich dropped the rung / contender column and the rows were numbers without a name). Two sources:
a row set as the H100 recorded it (matmul's tensor-core rungs at 2048^3, ncu 2025.3) rendered by the view,
and the command itself against the stand-in ncu of tests/inspect/test_hardware.py."""
import contextlib
import io
import os

import pytest

from tests.cli.test_columns import fits
from tests.conftest import run_lab
from tests.inspect.test_counters_bound import _fake_ncu
from tests.inspect.test_hardware import validate

TENSOR = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
DECLARED = ["sectors_per_request", "bank_conflicts", "achieved_occupancy_pct", "tensor_pipe_pct",
            "shared_wavefronts_per_request", "conflicts_per_shared_load", "ldgsts_sectors_per_request", "bound"]


def _h100_row(variant, dram_rd, dram_wr, spr, l2, bank, occ, dram, sm, tc, cp_spr, stall):
    """One row as ncu measured it on the H100 (counters-tc: matmul 2048^3, --contenders numba), with the
    LDGSTS fields the declared metrics add (no ld.global: the SASS ld efficiency read 0%)."""
    return {"contender": "numba", "variant": variant, "status": "ok", "dram_read_bytes": dram_rd,
            "dram_write_bytes": dram_wr, "min_bytes": 3 * 4 * 2048 * 2048, "sectors_per_request": spr,
            "load_efficiency_pct": None, "l2_hit_pct": l2, "bank_conflicts": bank, "achieved_occupancy_pct": occ[0],
            "theoretical_occupancy_pct": occ[1], "dram_throughput_pct": dram, "sm_throughput_pct": sm,
            "top_stalls": [{"reason": stall, "cycles_per_instruction": 2.0, "pct": 40.0}],
            "tensor_pipe_pct": tc, "shared_wavefronts_per_request": 1.1, "conflicts_per_shared_load": 0.0,
            "l1_throughput_pct": 34.0, "l2_throughput_pct": 44.0, "issue_active_pct": 20.0, "bound": "latency-bound",
            "global_load_instructions": 0.0, "ldgsts_instructions": 2.1e6, "ldgsts_requests": 2.1e6,
            "ldgsts_sectors": cp_spr * 2.1e6, "ldgsts_sectors_per_request": cp_spr, "ldgsts_efficiency_pct": 100.0,
            "verdict": "latency-bound: ..."}


RECORDED = {
    "schema_version": 1, "kernel": "matmul", "size": [2048, 2048, 2048], "dtype": "float32", "threads_per_block": 256,
    "device": {"name": "NVIDIA H100 80GB HBM3", "backend": "gpu"}, "tool": "ncu",
    "engine": "Nsight Compute 2025.3.1.0 (/usr/local/cuda/bin/ncu)", "counter_metrics": DECLARED, "notes": [],
    "rows": [_h100_row("tensor_core_tf32", 35.2e6, 13.9e6, 16.0, 90.0, 0, (12, 12), 7, 35, 32, 16.0, "long_scoreboard"),
             _h100_row("tensor_core_bf16", 16.9e6, 333e3, 19.0, 93.0, 314, (22, 25), 4, 57, 22, 19.0, "wait")],
}


def _render(doc, columns, wide):
    from lab.cli.views.hardware import print_counters

    out, old = io.StringIO(), os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(columns)
    try:
        with contextlib.redirect_stdout(out):
            print_counters(doc, wide=wide)
    finally:
        os.environ.pop("COLUMNS") if old is None else os.environ.__setitem__("COLUMNS", old)
    return out.getvalue()


def table_rows(text: str) -> list[str]:
    """The lines of the counters table's body: after its header rule, up to the first line under it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("─")) + 1
    end = next(i for i in range(start, len(lines)) if ":" in lines[i])  # the column explanations
    return lines[start:end]


def labelled(text: str, labels: list[str], columns: int, wide: bool):
    """Every row of the table starts with its label, in order; without --wide it fits ``columns``."""
    rows = table_rows(text)
    assert [r.split()[0] for r in rows] == labels, text
    head = text.splitlines()[text.splitlines().index(rows[0]) - 2]
    assert head.startswith("rung / contender"), text
    if not wide:
        fits(text, columns)
    return rows


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("columns", [80, 120])
def test_recorded_h100_rows_keep_their_labels(columns, wide):
    text = _render(RECORDED, columns, wide)
    rows = labelled(text, ["tensor_core_tf32", "tensor_core_bf16"], columns, wide)
    body = "\n".join(rows)
    assert "16.0 cp" in body and "19.0 cp" in body and " 0%" not in body
    if wide or "ld eff" in text.split("\n─")[0]:
        assert "100% cp" in body
    assert "cp: the rung's global loads are cp.async copies (LDGSTS), not ld.global requests" in " ".join(text.split())
    if wide:  # every column, none listed as dropped, the table's lines as wide as it is
        assert "--wide adds" not in text and "top stalls" in text and "issue%" in text
        assert max(len(r) for r in rows) > 80
    else:  # what does not fit is named
        assert "--wide adds" in text or "issue%" in text


def test_a_row_without_ld_global_reads_dash_never_zero():
    """A kernel that does not declare the LDGSTS metrics: its ld efficiency is null (ncu's 0%: no ld.global),
    "-" beside a library's that loads through ld.global."""
    rows = [{k: v for k, v in r.items() if not k.startswith(("ldgsts", "global_load"))} for r in RECORDED["rows"]]
    cublas = dict(rows[0], contender="cupy", variant="cupy.matmul", sectors_per_request=4.0, load_efficiency_pct=50.0)
    doc = dict(RECORDED, counter_metrics=DECLARED[:-2] + ["bound"], rows=[*rows, cublas])
    text = _render(doc, 80, True)
    rows = labelled(text, ["tensor_core_tf32", "tensor_core_bf16", "cupy"], 80, True)
    assert "16.0" in rows[0] and " cp" not in "\n".join(rows) and "50%" in rows[2]
    assert not any(cell == "0%" for r in rows for cell in r.split())
    assert "ld eff -: no ld.global measured; global loads by cp.async (LDGSTS) are not ld.global requests" in (
        " ".join(text.split()))


# --- the command, against the stand-in ncu ---------------------------------------------------------------------
CP_ONLY = {TENSOR: 32.0, "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct": 0,
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 16384, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 1024,
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum": 16384,
           "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum": 1024,
           "smsp__sass_average_data_bytes_per_sector_mem_global_op_ldgsts.pct": 100,
           "smsp__inst_executed_op_global_ld.sum": 0, "smsp__inst_executed_op_ldgsts.sum": 1024}
RUNGS = ["async_copy", "tensor_core_tf32", "tensor_core_bf16"]


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("columns", [80, 120])
def test_lab_counters_matmul_keeps_its_labels(tmp_path, monkeypatch, columns, wide):
    import lab.inspect.commands as IC

    _fake_ncu(tmp_path, monkeypatch, CP_ONLY)
    monkeypatch.setattr(IC, "_backend", lambda sim: "gpu")
    code, out, err = run_lab("counters", "matmul", "--variant", ",".join(RUNGS), "--size", "256", "--contenders",
                             "numba", *(["--wide"] if wide else []), columns=columns)
    assert code == 0, err
    rows = labelled(out, RUNGS, columns, wide)
    assert all("16.0 cp" in r for r in rows), out
    verdicts = out.split("\nverdict\n")[1]
    assert all(f"{v}: " in verdicts for v in RUNGS)


def test_the_json_keeps_its_keys_and_adds_the_copies(tmp_path, monkeypatch):
    from lab.inspect import counters as K
    from lab.inspect.counters import metrics as KM
    from lab.inspect.counters import row as KR

    _fake_ncu(tmp_path, monkeypatch, CP_ONLY)
    doc = K.counters("matmul", "gpu", ["tensor_core_tf32"], "256", 256, contenders=["numba"])
    validate(doc, "counters.json")
    (row,) = doc["rows"]
    assert set(KR.ROW_KEYS) <= set(row) and row["sectors_per_request"] == 16.0
    assert row["load_efficiency_pct"] is None  # ncu's 0%: no ld.global
    assert (row["ldgsts_sectors_per_request"], row["ldgsts_efficiency_pct"]) == (16.0, 100.0)
    assert (row["global_load_instructions"], row["ldgsts_instructions"], row["ldgsts_requests"]) == (0, 1024, 1024)
    assert KR.loads_by_cp_async(row)
    detail = next(m for phase, m, _ in KM.phases_for(doc["counter_metrics"]) if phase == "detail")
    assert {"l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum",
            "smsp__inst_executed_op_global_ld.sum", "smsp__inst_executed_op_ldgsts.sum"} <= set(detail)
    plain = K.counters("vecadd", "gpu", ["element_per_thread"], "1024", 256, contenders=["numba"])
    assert not any(k.startswith("ldgsts") for k in plain["rows"][0])  # only where declared
    assert "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum" not in KM.DETAIL_METRICS
