"""docs/benchmarks.md is what scripts/benchmarks_md.py renders from docs/results/*.json, and every
results file says on what device, when and with which versions it was measured."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import benchmarks_md  # noqa: E402  (scripts/ is not a package)


def test_every_results_file_names_its_device_date_and_versions():
    docs = benchmarks_md.load()
    assert len(docs) >= 10
    for name, doc in docs:
        assert doc["device"] and doc["versions"], name
        assert len(doc["date"]) == 10 and doc["date"][4] == "-", (name, doc["date"])
        assert any("table" in b for b in doc["blocks"]) or any("text" in b for b in doc["blocks"]), name


def test_benchmarks_md_is_rendered_from_the_results():
    want = benchmarks_md.render()
    got = benchmarks_md.OUT.read_text(encoding="utf-8")
    assert got == want, "docs/benchmarks.md is out of date: python scripts/benchmarks_md.py"


def test_a_lab_bench_document_becomes_a_results_file():
    doc = {"date": "2026-01-02", "backend": "gpu", "quick": False, "repeats": None,
           "device": {"name": "NVIDIA H100 80GB HBM3"}, "versions": "python 3.12.3; numba 0.68.0, numba-cuda 0.30.4",
           "reports": [{"kernel": "vecadd", "size": 67108864, "dtype": "float32", "threads_per_block": 256, "results": [
               {"contender": "numba", "variant": "element_per_thread", "status": "ok", "median_ms": 0.2667, "gbps": 3019.5},
               {"contender": "torch", "variant": "torch.add", "status": "ok", "median_ms": 0.2681, "gbps": None}]}]}
    res = benchmarks_md.from_bench(doc, "bench")
    assert res["device"] == "NVIDIA H100 80GB HBM3" and res["versions"]["numba-cuda"] == "0.30.4"
    (table,) = [b["table"] for b in res["blocks"] if "table" in b]
    assert table["columns"] == ["contender", "variant", "check", "median ms", "GB/s"]
    assert table["rows"][0] == ["numba", "element_per_thread", "ok", "0.2667", "3,020"]
    text = benchmarks_md.render_one("bench", res)
    assert "| numba | element_per_thread | ok | 0.2667 | 3,020 |" in text and "vecadd 67108864" in text
