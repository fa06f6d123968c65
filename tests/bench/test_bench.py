"""lab bench (and ``python -m lab.bench``): the JSON document, its markdown, the targets; in the
simulator at tiny sizes; bad input is one line with exit code 2. (sweep, roofline, profile and
compare: their own files here.)"""
import json

import pytest

from tests.conftest import SIMULATOR
from tests.helpers import FAST, fake_gpu_report, one_line_exit_2

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="simulator-sized checks of the commands")


def test_bench_markdown_is_rendered_from_the_json_document(lab, tmp_path):
    from lab.bench import suite as bench

    code, out, err = lab("bench", "vecadd", *FAST, "--json")
    assert code == 0, err
    doc = json.loads(out)
    (rep,) = doc["reports"]
    assert rep["kernel"] == "vecadd" and {r["contender"] for r in rep["results"]} == {"numba", "numpy"}
    assert all(r["ok"] for r in rep["results"])
    saved = tmp_path / "bench.json"
    saved.write_text(out)
    md = tmp_path / "bench.md"
    code, _, err = lab("bench", "--from", str(saved), "--out", str(md))
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
    (line,) = [row for row in bench.targets_section(doc) if row.startswith("| vecadd")]
    assert "0.87x: MISSED" in line and "four_per_thread 0.3000 ms" in line
    rep["results"][0]["median_ms"] = 0.25
    (line,) = [row for row in bench.targets_section(doc) if row.startswith("| vecadd")]
    assert "1.04x: met" in line


def test_bench_unknown_kernel(lab):
    one_line_exit_2(*lab("bench", "vecad")[::2], "did you mean vecadd")
