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
