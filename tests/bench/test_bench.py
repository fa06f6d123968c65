"""lab bench, sweep, roofline, profile and compare: the library functions and the thin commands over
them, in the simulator at tiny sizes; bad input is one line with exit code 2."""
import copy
import json
import sys

import pytest

from lab.cli import main
from tests.conftest import BACKEND, SIMULATOR

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="simulator-sized checks of the commands")

FAST = ["--contenders", "numba,numpy", "--repeats", "1"]


def lab(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return exc.value.code or 0, out, err


def one_line_exit_2(code, err, needle):
    assert code == 2, err
    assert needle in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.fixture(scope="module")
def run_json(tmp_path_factory):
    """A real ``lab run --json`` file (vecadd, 3 timed calls)."""
    from lab.core.runner import Options, run

    rep = run(Options(kernel="vecadd", size="96", threads=32, contenders=["numba", "numpy"],
                      variants=["element_per_thread"], repeats=3), BACKEND)
    path = tmp_path_factory.mktemp("run") / "a.json"
    path.write_text(json.dumps(rep.to_dict(), default=str))
    return path


def fake_gpu_report(medians: dict, kernel="vecadd", size=(1 << 26,), iqr=0.001, noise=None):
    """A ``lab run --json``-shaped dict as a GPU run would write it (for the presentation logic only)."""
    results = []
    for (contender, variant), ms in medians.items():
        r = {"contender": contender, "variant": variant, "status": "ok", "reason": "", "ok": True, "median_ms": ms,
             "iqr_ms": iqr, "timed_calls": 50, "gflops": size[0] / (ms * 1e-3) / 1e9, "gbps": None}
        if noise is not None:
            r["noise"] = noise
        results.append(r)
    return {"kernel": kernel, "backend": "gpu", "device": {"name": "Test GPU", "peak_fp32_gflops": 60000.0},
            "size": list(size), "threads_per_block": 256, "repeats": 50, "warmup": 5, "dtype": "float32",
            "flops": size[0], "bytes_moved": 12 * size[0], "copy_bandwidth": {"gbps": 3000.0}, "results": results}


# --- bench -------------------------------------------------------------------------------------------
def test_bench_markdown_is_rendered_from_the_json_document(capsys, tmp_path):
    from lab.bench import suite as bench

    code, out, err = lab(capsys, "bench", "vecadd", *FAST, "--json")
    assert code == 0, err
    doc = json.loads(out)
    (rep,) = doc["reports"]
    assert rep["kernel"] == "vecadd" and {r["contender"] for r in rep["results"]} == {"numba", "numpy"}
    assert all(r["ok"] for r in rep["results"])
    saved = tmp_path / "bench.json"
    saved.write_text(out)
    md = tmp_path / "bench.md"
    code, _, err = lab(capsys, "bench", "--from", str(saved), "--out", str(md))
    assert code == 0 and f"wrote {md}" in err
    text = md.read_text()
    assert text.strip() == bench.render_markdown(doc).strip()
    for needle in ("# Benchmarks", "- date: ", "- device: Numba CUDA simulator", "versions: python", "numba ",
                   "## vecadd 1000 (float32, --threads 32)", "| numba | element_per_thread |",
                   "| numba | four_per_thread |", "| numpy | reference (CPU) |", "## Targets",
                   "CUDA simulator: correctness only", "## Compiler resource report"):
        assert needle in text
    # one more section is one more builder
    extra = bench.render_markdown(doc, bench.SECTIONS + [lambda d: ["## shape sweep", ""]])
    assert extra.startswith(text.strip()) and extra.rstrip().endswith("## shape sweep")


def test_python_m_lab_bench_is_an_alias(capsys, tmp_path):
    from lab.bench import suite as bench

    doc = {"date": "2026-01-01", "backend": "simulator", "device": {"name": "Numba CUDA simulator",
           "compute_capability": "5.2"}, "versions": "v", "quick": True, "reports": [], "errors": [], "resources": []}
    path = tmp_path / "b.json"
    path.write_text(json.dumps(doc))
    from lab.cli.scripts import bench_alias

    bench_alias(["--from", str(path)])
    assert capsys.readouterr().out.strip() == bench.render_markdown(doc).strip()


def test_bench_targets_met_and_missed():
    from lab.bench import suite as bench

    rep = fake_gpu_report({("numba", "four_per_thread"): 0.30, ("torch", "torch.add"): 0.26})
    doc = {"backend": "gpu", "reports": [rep]}
    (line,) = [l for l in bench.targets_section(doc) if l.startswith("| vecadd")]
    assert "0.87x: MISSED" in line and "four_per_thread 0.3000 ms" in line
    rep["results"][0]["median_ms"] = 0.25
    (line,) = [l for l in bench.targets_section(doc) if l.startswith("| vecadd")]
    assert "1.04x: met" in line


def test_bench_unknown_kernel(capsys):
    one_line_exit_2(*lab(capsys, "bench", "vecad")[::2], "did you mean vecadd")


# --- sweep -------------------------------------------------------------------------------------------
def test_sweep_checks_and_times_every_configuration(capsys, tmp_path):
    png = tmp_path / "sweep.png"
    code, out, err = lab(capsys, "sweep", "vecadd", "--threads", "32,64", "--sizes", "40,77", *FAST,
                         "--variant", "element_per_thread", "--json", "--png", str(png))
    assert code == 0, err
    doc = json.loads(out)
    got = [(tuple(r["size"]), r["threads_per_block"]) for r in doc["reports"]]
    assert got == [((40,), 32), ((40,), 64), ((77,), 32), ((77,), 64)]
    for rep in doc["reports"]:
        numba = [r for r in rep["results"] if r["contender"] == "numba"]
        assert numba and all(r["ok"] and r["median_ms"] > 0 for r in numba)
        assert rep["launch"]["block"] == [rep["threads_per_block"]]
    assert len({rep["seed"] for rep in doc["reports"]}) == 1
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, out, err = lab(capsys, "sweep", "vecadd", "--threads", "32,48", *FAST, "--variant", "element_per_thread")
    assert code == 0, err
    assert "element_per_thread" in out and "48" in out and "sim ms" in out


@pytest.mark.parametrize("args,needle", [
    (["sweep", "vecadd"], "--threads A,B,... and/or --sizes"),
    (["sweep", "vecadd", "--threads", "32,abc"], "'abc' is not an integer"),
    (["sweep", "vecadd", "--threads", "32,2048"], "threads per block must be 1..1024"),
    (["sweep", "matvec", "--sizes", "10x10,0x5"], "at least 1"),
    (["sweep", "matvec", "--sizes", "10"], "malformed"),
    (["sweep", "matvecc", "--threads", "32"], "did you mean matvec"),
    (["sweep", "vecadd", "--threads", "32", "--metric", "fps"], "Invalid value for '--metric'"),
])
def test_sweep_bad_input(capsys, args, needle):
    one_line_exit_2(*lab(capsys, *args)[::2], needle)


@pytest.mark.parametrize("command", [["sweep", "vecadd", "--threads", "32"], ["roofline"]])
def test_png_without_matplotlib_is_one_line(capsys, monkeypatch, tmp_path, command):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    code, out, err = lab(capsys, *command, "--png", str(tmp_path / "x.png"))
    one_line_exit_2(code, err, "pip install 'numba-gpu-lab[plot]'")
    assert not (tmp_path / "x.png").exists()


# --- roofline ----------------------------------------------------------------------------------------
def test_roofline_in_the_simulator_places_intensities_only(capsys, tmp_path):
    png = tmp_path / "roofline.png"
    code, out, err = lab(capsys, "roofline", "--json", "--png", str(png))
    assert code == 0, err
    doc = json.loads(out)
    ai = {k["kernel"]: k["intensity"] for k in doc["kernels"]}
    assert ai["vecadd"] == pytest.approx(1 / 12)  # 1 FLOP per 3 float32 (12 bytes) an element
    assert ai["matmul"] == pytest.approx(2 * 4096 / (3 * 4))  # 2N^3 FLOPs over 3 N^2 float32
    assert doc["points"] == [] and "no achieved FLOP/s" in doc["note"]
    assert png.read_bytes()[:4] == b"\x89PNG"
    code, out, err = lab(capsys, "roofline", "--kernels", "vecadd,matvec")
    assert code == 0 and "0.0833" in out and "no GPU" in out


def test_roofline_places_measured_rows_under_the_ceilings(tmp_path):
    from lab.bench.roofline import roofline

    rep = fake_gpu_report({("numba", "element_per_thread"): 0.30, ("torch", "torch.add"): 0.26})
    doc = roofline(BACKEND, ["vecadd"], reports=[rep])
    assert doc["ridge_intensity"] == pytest.approx(20.0)  # 60 TFLOP/s over 3 TB/s
    p = {q["name"]: q for q in doc["points"]}
    roof = 3000.0 / 12
    assert p["element_per_thread"]["roof_gflops"] == pytest.approx(roof)
    assert p["element_per_thread"]["pct_of_roof"] == pytest.approx(100 * (2**26 / 0.30e-3 / 1e9) / roof)
    assert p["torch.add"]["bound"] == "memory"
    from lab.cli.views.bench import roofline_plot

    roofline_plot(doc, str(tmp_path / "r.png"))
    assert (tmp_path / "r.png").stat().st_size > 1000


# --- profile -----------------------------------------------------------------------------------------
def test_profile_in_the_simulator_records_cpu_activity(capsys, tmp_path):
    pytest.importorskip("torch")
    trace = tmp_path / "trace.json"
    code, out, err = lab(capsys, "profile", "vecadd", "--size", "64", "--variant", "element_per_thread",
                         "--trace", str(trace))
    assert code == 0, err
    assert "element_per_thread" in out and "cpu_time_total" in out and "CPU activity only" in out
    assert "skipped torch: needs a CUDA GPU" in out
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("name") == "numba element_per_thread" for e in events)


def test_profile_without_torch_is_one_line(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    one_line_exit_2(*lab(capsys, "profile", "vecadd")[::2], "lab profile needs torch")


@pytest.mark.parametrize("args,needle", [
    (["profile", "vecad"], "did you mean vecadd"),
    (["profile", "vecadd", "--variant", "fast"], "unknown variant"),
    (["profile", "vecadd", "--contenders", "cupy"], "choose from: numba, torch"),
    (["profile", "vecadd", "--contenders", "torch"], "nothing to profile"),
    (["profile", "vecadd", "--size", "0"], "at least 1"),
])
def test_profile_bad_input(capsys, args, needle):
    pytest.importorskip("torch")
    one_line_exit_2(*lab(capsys, *args)[::2], needle)


# --- compare -----------------------------------------------------------------------------------------
def test_compare_speedup_and_noise(capsys, tmp_path):
    a = fake_gpu_report({("numba", "element_per_thread"): 1.0, ("numba", "four_per_thread"): 1.0,
                         ("torch", "torch.add"): 1.0}, iqr=0.01)
    b = copy.deepcopy(a)
    b["results"][0]["median_ms"] = 0.5    # 2x faster, noise 1% + 2%
    b["results"][1]["median_ms"] = 1.015  # 1.5% slower: inside 1% + 1%
    b["results"][2]["median_ms"] = 1.2    # 20% slower, but B says its noise is 30%
    b["results"][2]["noise"] = 0.30
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a))
    pb.write_text(json.dumps(b))
    code, out, err = lab(capsys, "compare", str(pa), str(pb), "--json")
    assert code == 0, err
    rows = {r["variant"]: r for r in json.loads(out)["rows"]}
    assert rows["element_per_thread"]["speedup"] == pytest.approx(2.0)
    assert rows["element_per_thread"]["verdict"] == "faster" and rows["element_per_thread"]["beyond_noise"]
    assert rows["four_per_thread"]["verdict"] == "within noise"
    assert rows["torch.add"]["noise_b"] == 0.30 and rows["torch.add"]["verdict"] == "within noise"
    code, out, err = lab(capsys, "compare", str(pa), str(pb))
    assert code == 0 and "2.00x" in out and "faster" in out and "four_per_thread" in out


def test_compare_real_runs(capsys, run_json):
    code, out, err = lab(capsys, "compare", str(run_json), str(run_json), "--json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert {r["variant"] for r in rows} == {"element_per_thread", "reference (CPU)"}
    assert all(r["speedup"] == 1 and r["verdict"] == "within noise" for r in rows)


@pytest.mark.parametrize("content,needle", [
    (None, "cannot read"), ("{not json", "not JSON"), ("{}", "no run results"),
])
def test_compare_bad_files(capsys, tmp_path, run_json, content, needle):
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    one_line_exit_2(*lab(capsys, "compare", str(run_json), str(bad))[::2], needle)


def test_compare_nothing_in_common(capsys, tmp_path, run_json):
    other = tmp_path / "other.json"
    other.write_text(json.dumps(fake_gpu_report({("numba", "naive"): 1.0}, kernel="matmul", size=(64, 64, 64))))
    one_line_exit_2(*lab(capsys, "compare", str(run_json), str(other))[::2], "share no")


def test_sweep_plot_against_size(tmp_path):
    from lab.bench import sweep as S

    reps = [fake_gpu_report({("numba", "four_per_thread"): ms, ("torch", "torch.add"): ms * 1.1}, size=(n,))
            for n, ms in [(1 << 20, 0.01), (1 << 24, 0.08)]]
    for r in reps:
        for x in r["results"]:
            x["gbps"] = r["bytes_moved"] / (x["median_ms"] * 1e-3) / 1e9
    doc = {"kernel": "vecadd", "backend": "gpu", "threads": [256], "sizes": ["1048576", "16777216"], "reports": reps}
    from lab.cli.views.bench import sweep_plot

    assert sweep_plot(doc, str(tmp_path / "s.png")) == "gbps"
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    assert [r["name"] for r in S.rows(doc)][:2] == ["four_per_thread", "torch.add"]
