"""``lab run --counters`` (issue 21): two more columns, the DRAM-bytes ratio and sectors per load
request. Here in the simulator (the sector tracer on the Numba rows' checked calls), and the GPU
engine's plumbing with stand-ins (the real ncu/CUPTI runs: tests/inspect/test_hardware_gpu.py)."""
import json
import os

import numpy as np
import pytest

from lab.core import rows as rows_mod, runner
from lab.core.errors import LabError
from lab.inspect import counters as K
from lab.inspect.counters import cupti as KC
from lab.inspect.counters import engine as KE
from lab.inspect.counters import metrics as KM
from lab.inspect.counters import row as KR
from tests.cli.test_schemas import validate
from tests.conftest import SIMULATOR, run_lab
from tests.helpers import fits, one_line_exit_2

sim_only = pytest.mark.skipif(not SIMULATOR, reason="the tracer counts sectors in the simulator")


@sim_only
def test_counters_columns_in_the_simulator_row_per_thread_fetches_more_sectors(rng):
    rows_, cols = int(rng.integers(40, 64)), int(rng.integers(40, 90))  # whole warps of rows and a partial one
    seed = int(rng.integers(0, 2**31))
    code, out, err = run_lab("run", "matvec", "--size", f"{rows_}x{cols}", "--threads", "32", "--seed", str(seed),
                             "--variant", "row_per_thread,warp_per_row", "--contenders", "numba,numpy", "--counters",
                             "--json")
    assert code == 0, err
    doc = validate(json.loads(out), "run.json")
    assert doc["counters"]["tool"] == "simulator" and "simulated" in doc["counters"]["engine"]
    got = {r["variant"]: r for r in doc["results"]}
    rpt, wpr = got["row_per_thread"], got["warp_per_row"]
    # a warp of row_per_thread loads its rows' elements a row apart: one sector a lane (A: 32, the last warp's
    # 8..31), beside x's one sector; warp_per_row's lanes read consecutive floats of one row: 4 sectors, 5 where
    # the row is not aligned (A and x alike). Averaged over A's and x's requests: >= 10.5 against <= 5
    assert rpt["sectors_per_request"] > 2 * wpr["sectors_per_request"]
    assert wpr["sectors_per_request"] <= 5.0
    for r in (rpt, wpr):  # every byte of A, x and y is touched once: the minimum, up to partial sectors
        assert 0.99 <= r["dram_ratio"] <= 1 + 3 * 32 / doc["bytes_moved"] + 0.01
    assert got["reference (CPU)"]["dram_ratio"] is None and got["reference (CPU)"]["sectors_per_request"] is None


@sim_only
def test_without_counters_the_keys_are_null_and_the_table_unchanged():
    code, out, err = run_lab("run", "vecadd", "--size", "100", "--threads", "32", "--contenders", "numba",
                             "--variant", "element_per_thread", "--json")
    assert code == 0, err
    doc = validate(json.loads(out), "run.json")
    assert doc["counters"] is None
    assert all(r["dram_ratio"] is None and r["sectors_per_request"] is None for r in doc["results"])
    code, out, err = run_lab("run", "vecadd", "--size", "100", "--threads", "32", "--contenders", "numba")
    assert code == 0 and "DRAM×" not in out and "sec/req" not in out


@sim_only
@pytest.mark.parametrize("args", [
    ["run", "vecadd", "--size", "1000", "--threads", "32", "--contenders", "numba,numpy"],
    ["run", "softmax", "--size", "3x40", "--threads", "32", "--contenders", "numba,numpy"],
])
def test_counters_table_fits_80_columns_and_shows_both_columns(args):
    code, out, err = run_lab(*args, "--counters", "--seed", "3")
    assert code == 0, err
    fits(out)
    head = next(line for line in out.splitlines() if line.startswith("contender"))
    assert "DRAM×" in head and "sec/req" in head
    assert "simulated: from the recorded addresses" in out


def test_counters_with_both_compilers_is_one_line_exit_2():
    code, out, err = run_lab("run", "vecadd", "--size", "100", "--compiler", "both", "--counters")
    if code == 2 and "--counters" in err:
        one_line_exit_2(code, err, "--counters counts one compiler")
    else:  # this machine cannot run both compilers: that error comes first, as one line too
        assert code == 2 and len(err.strip().splitlines()) == 1


def _gpu_report(rows):
    rep = runner.Report("vecadd", "", "gpu", {"name": "Test GPU"}, (1000,), "float32", 7, None, 5, 12000, 1000,
                        threads=256)
    rep.rows = [rows_mod.row(c, v, s) for c, v, s in rows]
    return rep


def test_the_gpu_engine_fills_the_rows_it_measured_and_a_failure_is_a_warning():
    rep = _gpu_report([("numba", "element_per_thread", "ok"), ("numpy", "reference (CPU)", "ok"),
                       ("torch", "add", "ok"), ("numba", "four_per_thread", "FAIL")])
    seen = []

    def engine(report):
        seen.append(report)
        return {"tool": "ncu", "engine": "Nsight Compute 2099.1", "notes": ["n"],
                "rows": {("numba", "element_per_thread"): {"dram_ratio": 1.01, "sectors_per_request": 4.0},
                         ("torch", "add"): {"dram_ratio": 1.2, "sectors_per_request": None}}}

    runner._counters(rep, runner.Options("vecadd", counters=True, counters_engine=engine), lambda *a, **k: None)
    assert seen == [rep]
    got = {(r.contender, r.variant): (r.dram_ratio, r.sectors_per_request) for r in rep.rows}
    assert got == {("numba", "element_per_thread"): (1.01, 4.0), ("numpy", "reference (CPU)"): (None, None),
                   ("torch", "add"): (1.2, None), ("numba", "four_per_thread"): (None, None)}
    assert rep.counters == {"tool": "ncu", "engine": "Nsight Compute 2099.1", "notes": ["n"]}
    assert rep.to_dict()["results"][0]["dram_ratio"] == 1.01

    def broken(report):
        raise LabError("ncu may not read the GPU performance counters (ERR_NVGPUCTRPERM): fix")

    rep = _gpu_report([("numba", "element_per_thread", "ok")])
    runner._counters(rep, runner.Options("vecadd", counters=True, counters_engine=broken), lambda *a, **k: None)
    assert rep.rows[0].dram_ratio is None and rep.counters["tool"] is None
    assert any("ERR_NVGPUCTRPERM" in w for w in rep.warnings)  # the timed run is kept, the reason shown


def test_for_run_profiles_the_passed_rows_at_the_runs_size(monkeypatch):
    calls = []

    def fake(kernel, backend, variants, size, threads, dtype, contenders, seed, **kw):
        calls.append((kernel, backend, variants, size, threads, dtype, contenders, seed, kw))
        return {"tool": "ncu", "engine": "e", "notes": [], "rows": [
            {"contender": "numba", "variant": "element_per_thread", "status": "ok", "min_bytes": 12000,
             "dram_read_bytes": 8000.0, "dram_write_bytes": 4400.0, "sectors_per_request": 4.0},
            {"contender": "torch", "variant": "add", "status": "ok", "min_bytes": 12000, "dram_bytes_ratio": 1.5,
             "dram_read_bytes": 18000.0, "sectors_per_request": None},
            {"contender": "cupy", "variant": "add", "status": "skipped", "min_bytes": 12000}]}

    monkeypatch.setattr(K, "counters", fake)
    rep = _gpu_report([("numba", "element_per_thread", "ok"), ("numba", "four_per_thread", "FAIL"),
                       ("numpy", "reference (CPU)", "ok"), ("torch", "add", "ok"), ("cupy", "-", "skipped")])
    got = K.for_run(rep)
    (kernel, backend, variants, size, threads, dtype, who, seed, kw), = calls
    assert (kernel, backend, variants, size, threads, dtype, who, seed) == (
        "vecadd", "gpu", ["element_per_thread"], "1000", 256, "float32", ["numba", "torch"], 7)
    assert kw["lean"] is True
    assert got["rows"][("numba", "element_per_thread")] == {"dram_ratio": 12400 / 12000, "sectors_per_request": 4.0}
    assert got["rows"][("torch", "add")]["dram_ratio"] == 1.5 and ("cupy", "add") not in got["rows"]
    assert K.for_run(_gpu_report([("numpy", "reference (CPU)", "ok")]))["rows"] == {}  # nothing to profile


def test_engine_selection_and_one_line_reasons(monkeypatch):
    monkeypatch.setattr(K, "find_ncu", lambda: "/opt/ncu")
    assert K.find_engine("auto") == ("ncu", "/opt/ncu") and K.find_engine("ncu") == ("ncu", "/opt/ncu")
    monkeypatch.setattr(K, "cupti_available", lambda: True)
    assert K.find_engine("cupti") == ("cupti", None)
    monkeypatch.setattr(K, "find_ncu", lambda: None)
    assert K.find_engine("auto") == ("cupti", None)
    with pytest.raises(LabError, match="Nsight Compute"):
        K.find_engine("ncu")
    monkeypatch.setattr(K, "cupti_available", lambda: False)
    with pytest.raises(LabError, match=r"numba-gpu-lab\[counters\]"):
        K.find_engine("cupti")
    with pytest.raises(LabError) as e:
        K.find_engine("auto")
    assert "neither" in str(e.value) and "--sim" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(LabError, match="choose from"):
        K.find_engine("nvprof")


def test_lab_run_counters_without_an_engine_is_one_line_before_the_run(monkeypatch):
    import lab.cli.options as O

    monkeypatch.setattr(K, "find_ncu", lambda: None)
    monkeypatch.setattr(K, "cupti_available", lambda: False)
    real = O.session

    def gpu_session(sim, compiler_=None, allow_both=False):  # as on a GPU machine with neither tool
        import dataclasses

        return dataclasses.replace(real(True, compiler_, allow_both), backend="gpu")

    monkeypatch.setattr(O, "session", gpu_session)
    code, out, err = run_lab("run", "vecadd", "--size", "100", "--counters")
    one_line_exit_2(code, err, "neither was found")
    assert out == ""


SPR = "l1tex__average_t_sector_pipe_lsu_mem_global_op_ld.ratio"
L2 = "lts__average_t_sector_hit_rate_realtime.pct"
LG = "sm__inst_executed_pipe_lsu_mem_lg_cmd_read.sum"


def test_cupti_samples_reduce_counters_by_sum_and_ratios_by_their_weight():
    rng = np.random.default_rng()
    n = int(rng.integers(3, 40))
    reads, l1, spr = rng.uniform(0, 1e6, n), rng.uniform(0, 1e4, n), rng.uniform(1, 32, n)
    l1[0], spr[1] = 0.0, np.nan  # an idle sample, and one whose ratio CUPTI could not evaluate
    metrics = ["dram__bytes_read.sum", SPR, "l1tex__t_sectors.sum"]
    got = KC.reduce_samples(metrics, [[a, b, c] for a, b, c in zip(reads, spr, l1)])
    keep = np.isfinite(spr) & (l1 > 0)
    assert got["dram__bytes_read.sum"] == pytest.approx(reads.sum(), rel=1e-12)
    assert got[SPR] == pytest.approx((spr[keep] * l1[keep]).sum() / l1[keep].sum(), rel=1e-12)
    assert got["l1tex__t_sectors.sum"] == pytest.approx(l1.sum(), rel=1e-12)
    assert KC.reduce_samples(metrics, [[1.0, 4.0, 0.0]])[SPR] is None  # nothing weighs: null, not 0


def test_cupti_rows_take_every_group_and_null_what_the_chip_lacks():
    m = {"dram__bytes_read.sum": 8000.0, "dram__bytes_write.sum": 4000.0, SPR: 0.5, "l1tex__t_sectors.sum": 800.0,
         LG: 25.0, L2: 37.5, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 96.0,
         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 32.0,
         "sm__warps_active.sum": 48.0 * 1000, "sm__cycles_active.sum": 1000.0}
    row = KC.cupti_row({"samples": 3, "max_warps_per_sm": 64, "metrics": m}, 12000)
    assert row["dram_bytes_ratio"] == 1.0 and row["pm_samples"] == 3
    assert row["load_sectors"] == 400.0 and row["load_requests"] == 25.0 and row["sectors_per_request"] == 16.0
    assert row["l2_hit_pct"] == 37.5 and row["bank_conflicts"] == 128 and row["achieved_occupancy_pct"] == 75.0
    row = KC.cupti_row({"metrics": {"dram__bytes_read.sum": 6000.0, "dram__bytes_write.sum": 0.0}}, 12000)
    assert row["dram_bytes_ratio"] == 0.5
    assert row["sectors_per_request"] is row["l2_hit_pct"] is row["bank_conflicts"] is None
    assert row["achieved_occupancy_pct"] is None


def one_pass(unknown=(), per_pass=99):
    """fits(metrics) of a chip whose PM sampling lacks ``unknown`` and takes ``per_pass`` metrics a pass."""
    return lambda metrics: not set(unknown) & set(metrics) and len(metrics) <= per_pass


def test_cupti_collects_each_group_the_chip_takes_in_a_pass_of_its_own():
    names = [g for g, _ in KM.CUPTI_GROUPS]
    groups, missing = KC.choose_cupti_groups(one_pass())
    assert [g for g, _ in groups] == names and missing == []
    groups, missing = KC.choose_cupti_groups(one_pass(unknown={L2}))
    assert missing == ["L2 hit rate"] and all(L2 not in ms for _, ms in groups) and len(groups) == len(names) - 1
    with pytest.raises(LabError):  # DRAM bytes (two metrics) do not fit in one pass: no engine
        KC.choose_cupti_groups(one_pass(per_pass=1))
    groups, missing = KC.choose_cupti_groups(one_pass(unknown={LG}))
    assert missing == ["load requests"] and groups[0] == ("DRAM bytes", list(dict(KM.CUPTI_GROUPS)["DRAM bytes"]))
    with pytest.raises(LabError) as e:  # DRAM bytes are required
        KC.choose_cupti_groups(one_pass(unknown={"dram__bytes_read.sum"}))
    assert "Nsight Compute" in str(e.value) and "\n" not in str(e.value)


def test_cupti_preload_refuses_an_nvidia_cuda_cupti_older_than_cupti_python_needs(monkeypatch, tmp_path):
    from importlib import metadata

    class Dist:
        version, files = "13.0.85", []

        def locate_file(self, f):
            return "/site/nvidia/cu13/lib"

    monkeypatch.setattr(metadata, "distribution", lambda name: Dist())
    monkeypatch.setattr(metadata, "requires", lambda name: ["nvidia-cuda-cupti~=13.4", "numpy>=1.23"])
    monkeypatch.setattr(metadata, "version", lambda name: "13.4.0")
    with pytest.raises(LabError) as e:
        KC.cupti_preload()
    assert str(e.value).count("\n") == 0 and "nvidia-cuda-cupti 13.0.85" in str(e.value)
    assert "pip install 'nvidia-cuda-cupti~=13.4'" in str(e.value)
    Dist.version = "13.5.25"
    assert KC.cupti_preload() == []  # the right version, no libraries listed: cupti-python searches
    for name in ("libcupti.so.13", "libnvperf_host.so", "libnvperf_target.so", "libpcsamplingutil.so"):
        (tmp_path / name).write_bytes(b"")
    Dist.files = ["nvidia/cu13/lib/" + n for n in ("libcupti.so.13", "libnvperf_host.so", "libnvperf_target.so",
                                                   "libpcsamplingutil.so", "libmissing.so")]
    Dist.locate_file = lambda self, f: str(tmp_path / os.path.basename(str(f)))
    assert KC.cupti_preload() == [str(tmp_path / n) for n in ("libnvperf_target.so", "libnvperf_host.so",
                                                              "libcupti.so.13")]


@pytest.mark.skipif(KE.cupti_available(), reason="cupti-python is installed here")
def test_the_cupti_child_without_cupti_python_says_how_to_get_it():
    import kernels

    spec = kernels.load("vecadd")
    with pytest.raises(LabError) as e:
        KC.profile_cupti(spec, (1000,), 256, "float32", ["element_per_thread"], ["numba"], 0, None)
    assert "cupti-python cannot be imported" in str(e.value) and "numba-gpu-lab[counters]" in str(e.value)


def test_dram_ratio_from_the_tracer_summary():
    from lab.core.trace import AccessStats

    load = AccessStats()
    load.add(4, 128)
    load.add(8, 128)
    got = runner._traced({"load": load, "bytes_touched": 1536}, 1024)
    assert got["sectors_per_request"] == 6.0 and got["dram_ratio"] == 1.5
    got = runner._traced({"load": AccessStats(), "bytes_touched": 0}, 1024)
    assert got["sectors_per_request"] is None and got["dram_ratio"] is None


def test_a_cupti_document_validates_and_prints_at_80_columns(capsys):
    from lab.cli.views.hardware import print_counters
    from lab.core.device import describe
    from lab.core.errors import SCHEMA_VERSION

    rows = []
    for v, read, spr in (("element_per_thread", 8.1e8, (400.0, 100.0)), ("four_per_thread", 8.0e8, None)):
        row = KR.blank_row("numba", v, 805306368)
        m = {"dram__bytes_read.sum": read, "dram__bytes_write.sum": 2.7e8}
        if spr:
            m.update({SPR: 0.5, "l1tex__t_sectors.sum": 2 * spr[0], LG: spr[1], L2: 12.5,
                      "sm__warps_active.sum": 5e6, "sm__cycles_active.sum": 1e5})
        row.update(KC.cupti_row({"samples": 12, "max_warps_per_sm": 64, "metrics": m}, 805306368))
        row["verdict"] = KR.verdict(row)
        rows.append(row)
    doc = {"schema_version": SCHEMA_VERSION, "kernel": "vecadd", "size": [67108864], "dtype": "float32",
           "threads_per_block": 256, "seed": 0, "device": describe(True), "tool": "cupti",
           "engine": "CUPTI PM sampling (cupti-python 13.4.0)", "rows": rows, "notes": ["n"]}
    validate(json.loads(json.dumps(doc)), "counters.json")
    assert rows[0]["verdict"] == "DRAM bytes 1.34x the minimum" and rows[1]["verdict"] == "DRAM bytes 1.33x the minimum"
    assert abs(rows[0]["dram_bytes_ratio"] - 1.08e9 / 805306368) < 1e-12
    print_counters(doc)
    out = capsys.readouterr().out
    fits(out)
    assert "CUPTI PM sampling" in out and "four_per_thread" in out
