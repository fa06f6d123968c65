"""cp.async (LDGSTS) loads under ncu without a GPU, from metric dicts: the SASS-level ld.global efficiency reads
0% for a kernel whose global loads are all copies (it executed no LDG), which is null, not 0%; a kernel
that declares ``ldgsts_sectors_per_request`` gets its copies' own sectors a request and efficiency."""
from lab.inspect.counters import metrics as KM
from lab.inspect.counters import row as KR
from lab.inspect.counters.metrics import (LD_REQUESTS, LD_SECTORS, LDG_INSTRUCTIONS, LDGSTS_EFFICIENCY,
                                          LDGSTS_INSTRUCTIONS, LDGSTS_REQUESTS, LDGSTS_SECTORS)
from lab.inspect.counters.ncu import ncu_row, unknown_metrics

LD_EFF = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"
OPTIONAL = [m.name for m in KM.declared(("ldgsts_sectors_per_request",))]
# matmul's tensor_core_tf32 at 2048^3 as the H100 read it (s/req 16.0, ld eff 0%: its PTX has no ld.global,
# 34 cp.async.cg + 4 cp.async.ca), with the LDGSTS counters a declaring kernel adds
TF32 = {LD_SECTORS: 16 * 2.1e6, LD_REQUESTS: 2.1e6, LD_EFF: 0.0, LDG_INSTRUCTIONS: 0.0, LDGSTS_INSTRUCTIONS: 2.1e6,
        LDGSTS_SECTORS: 16 * 2.1e6, LDGSTS_REQUESTS: 2.1e6, LDGSTS_EFFICIENCY: 100.0}


def _kernel(metrics, name="k", duration=1e6):
    return {"id": "1", "name": name, "grid": "(1, 1, 1)", "metrics": {"gpu__time_duration.sum": duration, **metrics}}


def _row(*kernels, optional=OPTIONAL):
    entry = {"contender": "numba", "variant": "tensor_core_tf32", "status": "ok", "index": 0}
    by = {0: list(kernels)}
    return ncu_row(entry, {"dram": by, "detail": by}, 3 * 4 * 2048 * 2048, optional)


def test_the_ldgsts_metrics_are_optional_and_declared_by_matmul():
    from lab.core import catalog

    assert "ldgsts_sectors_per_request" in catalog.load("matmul").counter_metrics
    assert set(OPTIONAL) == {"ldgsts_sectors_per_request", "ldgsts_requests", "ldgsts_sectors", "ldgsts_efficiency_pct",
                             "global_load_instructions", "ldgsts_instructions"}
    assert all(m.optional for m in KM.METRICS if m.name in OPTIONAL)
    assert not {LDGSTS_SECTORS, LDGSTS_REQUESTS, LDG_INSTRUCTIONS} & set(KM.DETAIL_METRICS)  # only where declared


def test_a_kernel_of_copies_reads_null_ld_efficiency_and_its_copies_numbers():
    row = _row(_kernel(TF32))
    assert row.load_efficiency_pct is None and row.ideal_sectors_per_request is None  # never 0%
    assert row.sectors_per_request == 16.0  # ncu's ld.global sectors a request, as measured (the key kept)
    assert (row.ldgsts_sectors_per_request, row.ldgsts_efficiency_pct, row.ldgsts_requests) == (16.0, 100.0, 2.1e6)
    assert KR.loads_by_cp_async(row) and KR.loads_by_cp_async(row.as_dict())
    assert "uncoalesced" not in KR.verdict(row)
    strided = _row(_kernel({**TF32, LDGSTS_SECTORS: 32 * 2.1e6, LDGSTS_EFFICIENCY: 25.0}))
    assert KR.verdict(strided).startswith("uncoalesced cp.async copies: 32.0 sectors per request where 8.0 suffice")


def test_without_the_declaration_the_zero_is_still_null():
    row = _row(_kernel(TF32), optional=())
    assert row.load_efficiency_pct is None and row.get("ldgsts_sectors_per_request", "unset") == "unset"
    assert not KR.loads_by_cp_async(row)  # nothing says so: the view shows "-" and its note


def test_ld_efficiency_is_weighted_over_the_kernels_that_ran_ld_global():
    ldg = _kernel({LD_SECTORS: 4e6, LD_REQUESTS: 1e6, LD_EFF: 50.0, LDG_INSTRUCTIONS: 1e6, LDGSTS_INSTRUCTIONS: 0.0})
    row = _row(ldg, _kernel(TF32, name="copies"))
    assert row.load_efficiency_pct == 50.0 and not KR.loads_by_cp_async(row)  # LDG ran: not all copies
    assert _row(ldg).load_efficiency_pct == 50.0 and _row(ldg).ldgsts_sectors_per_request is None
    assert KR.loads_by_cp_async({"global_load_instructions": 0, "ldgsts_instructions": None, "ldgsts_requests": 8})
    assert not KR.loads_by_cp_async({"global_load_instructions": None, "ldgsts_instructions": 8})


def test_an_unknown_ldgsts_metric_does_not_take_the_ld_one_with_it():
    metrics = [LD_SECTORS, LD_REQUESTS, LDGSTS_SECTORS, LDGSTS_REQUESTS]
    log = f"==ERROR== Failed to find metric regex:^{LDGSTS_SECTORS.split('.')[0]}\\.(sum|avg)$"
    assert unknown_metrics(log, metrics) == [LDGSTS_SECTORS]
    assert unknown_metrics(f"==ERROR== Failed to find metric {LD_SECTORS}", metrics) == [LD_SECTORS]

