"""``lab run --counters`` (issue 21): two more columns, the DRAM-bytes ratio and sectors per load
request. Here in the simulator (the sector tracer on the Numba rows' checked calls), and the GPU
engine's plumbing with stand-ins (the real ncu/CUPTI runs: tests/inspect/test_hardware_gpu.py)."""
import json

import pytest

from lab.core import runner
from lab.core.errors import LabError
from lab.inspect import counters as K
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
    rep.rows = [runner.Row(c, v, s) for c, v, s in rows]
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


def test_cupti_rows_sum_the_samples_and_a_missing_package_is_one_line():
    row = K.cupti_row({"samples": 3, "metrics": {"dram__bytes_read.sum": 8000.0, "dram__bytes_write.sum": 4000.0,
                                                "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 400.0,
                                                "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 100.0}}, 12000)
    assert row["dram_bytes_ratio"] == 1.0 and row["sectors_per_request"] == 4.0 and row["pm_samples"] == 3
    row = K.cupti_row({"metrics": {"dram__bytes_read.sum": 6000.0, "dram__bytes_write.sum": 0.0}}, 12000)
    assert row["dram_bytes_ratio"] == 0.5 and row["sectors_per_request"] is None


@pytest.mark.skipif(K.cupti_available(), reason="cupti-python is installed here")
def test_the_cupti_child_without_cupti_python_says_how_to_get_it():
    import kernels

    spec = kernels.load("vecadd")
    with pytest.raises(LabError) as e:
        K._profile_cupti(spec, (1000,), 256, "float32", ["element_per_thread"], ["numba"], 0, None)
    assert "cupti-python cannot be imported" in str(e.value) and "numba-gpu-lab[counters]" in str(e.value)


def test_dram_ratio_from_the_tracer_summary():
    from lab.core.trace import AccessStats

    row = runner.Row("numba", "v", "ok")
    load = AccessStats()
    load.add(4, 128)
    load.add(8, 128)
    runner._traced(row, {"load": load, "bytes_touched": 1536}, 1024)
    assert row.sectors_per_request == 6.0 and row.dram_ratio == 1.5
    runner._traced(row, {"load": AccessStats(), "bytes_touched": 0}, 1024)
    assert row.sectors_per_request is None and row.dram_ratio is None


def test_a_cupti_document_validates_and_prints_at_80_columns(capsys):
    from lab.cli.views.hardware import print_counters
    from lab.core.device import describe
    from lab.core.errors import SCHEMA_VERSION

    rows = []
    for v, read, spr in (("element_per_thread", 8.1e8, (400.0, 100.0)), ("four_per_thread", 8.0e8, None)):
        row = K._blank_row("numba", v, 805306368)
        m = {"dram__bytes_read.sum": read, "dram__bytes_write.sum": 2.7e8}
        if spr:
            m.update({"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": spr[0],
                      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": spr[1]})
        row.update(K.cupti_row({"samples": 12, "metrics": m}, 805306368))
        row["verdict"] = K.verdict(row)
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
