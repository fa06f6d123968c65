"""lab.inspect.counters as a package: one metric table that the ncu passes and the CUPTI groups come
from, one typed row whose JSON keys are those of earlier versions, the DRAM ratio computed in one place."""
import pathlib

import pytest

import kernels
from lab.inspect import counters as K
from lab.inspect.counters import cupti as KC
from lab.inspect.counters import metrics as KM
from lab.inspect.counters import ncu as KN
from lab.inspect.counters import row as KR
from lab.inspect.counters.metrics import BY_NAME, METRICS
from lab.inspect.counters.row import UNSET, CounterRow

PACKAGE = pathlib.Path(K.__file__).parent


def test_every_module_is_small():
    sizes = {p.name: len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py")}
    assert sizes and max(sizes.values()) <= 400, sizes


def test_the_ncu_passes_are_the_tables():
    """Each ncu metric of the table is collected in its pass, and nothing else is (the literal lists of
    earlier versions, order included)."""
    detail = ["gpu__time_duration.sum",
              "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
              "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
              "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
              "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
              "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
              "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
              "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sector_hit_rate.pct",
              "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__maximum_warps_per_active_cycle_pct",
              "dram__throughput.avg.pct_of_peak_sustained_elapsed", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
              KM.STALLS]
    assert KM.DETAIL_METRICS == detail
    assert KM.DRAM_METRICS == ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"]
    assert KM.RUN_PHASES[1][1] == detail[:3]
    collected = set(KM.DRAM_METRICS) | set(KM.DETAIL_METRICS)
    assert {n for m in METRICS if not m.optional for n in m.ncu} == collected
    # the optional metrics: only for a kernel that declares them (or what needs them), after the rest
    assert KM.phases_for(("dram_bytes_ratio", "sectors_per_request")) == KM.PHASES
    optional = [m.name for m in METRICS if m.optional]
    every = KM.phases_for(optional)[1][1]
    assert every[:len(detail)] == detail and {n for m in METRICS for n in m.ncu} == set(KM.DRAM_METRICS) | set(every)
    bound = KM.phases_for(("bound",))[1][1]
    assert bound[len(detail):] == ["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                                   "l1tex__throughput.avg.pct_of_peak_sustained_active",
                                   "lts__throughput.avg.pct_of_peak_sustained_elapsed",
                                   "sm__inst_issued.avg.pct_of_peak_sustained_active"]
    assert [m.name for m in KM.declared(("shared_wavefronts_per_request",))] == [
        "shared_wavefronts", "shared_loads", "shared_wavefronts_per_request"]


def test_the_cupti_groups_are_the_tables():
    groups = [*KM.CUPTI_GROUPS, *KM.CUPTI_OPTIONAL_GROUPS.values()]
    in_groups = {n for _, names in groups for n in names}
    assert in_groups == {n for m in METRICS for n in m.cupti}
    for ratio, weight in KM.CUPTI_WEIGHT.items():  # a weight sits in its ratio's group
        assert any(ratio in names and weight in names for _, names in groups)
    for name, (_, names) in KM.CUPTI_OPTIONAL_GROUPS.items():  # an optional group is an optional metric's
        assert KM.METRICS[[m.name for m in METRICS].index(name)].optional and set(names) == set(
            KM.METRICS[[m.name for m in METRICS].index(name)].cupti)
    fits = lambda metrics: "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active" not in metrics  # noqa: E731
    kept, missing = KC.choose_cupti_groups(fits, ("tensor_pipe_pct",))
    assert [g for g, _ in kept] == [g for g, _ in KM.CUPTI_GROUPS] and missing == ["tensor pipe"]
    kept, missing = KC.choose_cupti_groups(lambda m: True, ("tensor_pipe_pct",))
    assert kept[-1][0] == "tensor pipe" and missing == []
    assert KC.choose_cupti_groups(lambda m: True)[0] == [(g, list(ms)) for g, ms in KM.CUPTI_GROUPS]


def test_every_metric_is_a_row_field_and_every_spec_names_metrics():
    fields = set(CounterRow.__dataclass_fields__)
    assert {m.name for m in METRICS} <= fields and set(KR.ROW_KEYS) <= fields
    for m in METRICS:
        assert m.unit and m.derive, m.name
    for name in kernels.NAMES:
        spec = kernels.load(name)
        assert spec.counter_metrics and all(n in BY_NAME for n in spec.counter_metrics), name
        assert [m.name for m in KM.metrics_of_interest(spec)] == list(spec.counter_metrics)


def test_the_row_keeps_the_keys_its_engine_filled():
    row = CounterRow.blank("numba", "naive", 1000)
    assert list(row.as_dict()) == [*KR.ROW_KEYS[:2], "dram_read_bytes", "dram_write_bytes", "min_bytes",
                                   *KR.ROW_KEYS[5:], "status", "reason"]
    assert row.as_dict() == KR.blank_row("numba", "naive", 1000)
    assert set(row.as_dict()) == {*KR.ROW_KEYS, "status", "reason"} and row.pm_samples is UNSET
    assert "dram_bytes_ratio" not in row.as_dict()  # no DRAM bytes, no ratio (the simulator's rows)
    measured = row.with_(dram_read_bytes=1500.0, dram_write_bytes=500.0, pm_samples=3)
    d = measured.as_dict()
    assert d["dram_bytes_ratio"] == 2.0 and d["pm_samples"] == 3 and "bank_ways" not in d
    assert row.as_dict()["dram_read_bytes"] is None  # frozen: with_ made a new row
    with pytest.raises(AttributeError):
        row.status = "FAIL"
    assert CounterRow.of(d) == measured and CounterRow.of(measured) is measured
    assert KR.verdict(measured) == KR.verdict(d) == "excess traffic: DRAM bytes 2.0x the minimum"


def test_the_dram_ratio_is_one_function():
    assert KR.dram_ratio(1500.0, 500.0, 1000) == 2.0
    assert KR.dram_ratio(1500.0, None, 1000) == 1.5
    assert KR.dram_ratio(None, 500.0, 1000) is None and KR.dram_ratio(1.0, 1.0, 0) is None
    row = KC.cupti_row({"metrics": {"dram__bytes_read.sum": 3000.0, "dram__bytes_write.sum": 1000.0}}, 2000)
    assert row["dram_bytes_ratio"] == KR.dram_ratio(3000.0, 1000.0, 2000) == 2.0
    sources = "\n".join(p.read_text() for p in PACKAGE.glob("*.py"))
    assert sources.count("/ min_bytes\n") == 1  # computed in row.dram_ratio only (code, not prose)


def test_an_ncu_row_from_a_log():
    """ncu_row: a contender's kernels summed (the fixture's log), the keys in the order they were filled
    (those of every row first, the DRAM ratio just before the verdict), lab's occupancy preferred."""
    from lab.inspect.counters.ncu import ncu_row

    fixture = pathlib.Path(__file__).parents[1] / "fixtures" / "hardware" / "ncu_raw.csv"
    groups = KN.group_by_marker(KN.parse_ncu_csv(fixture.read_text()))
    entry = {"contender": "numba", "variant": "split_k", "status": "ok", "index": 1, "theoretical_occupancy_pct": 50.0}
    row = ncu_row(entry, {"dram": groups, "detail": groups}, 268_762_144)
    d = row.with_(verdict=KR.verdict(row)).as_dict()
    assert list(d)[:14] == [*KR.ROW_KEYS, "status", "reason"] and list(d)[-2:] == ["dram_bytes_ratio", "verdict"]
    assert d["dram_bytes_ratio"] == (d["dram_read_bytes"] + d["dram_write_bytes"]) / 268_762_144
    assert d["kernels"] == 2 and d["theoretical_occupancy_pct"] == 50.0
    assert d["theoretical_occupancy_source"].startswith("lab occupancy")
    gone = ncu_row(dict(entry, index=7), {"dram": groups, "detail": groups}, 1)
    assert gone.status == "skipped" and "dram_bytes_ratio" not in gone.as_dict()
