"""Every command's ``--json`` output validates against its JSON Schema in docs/schemas/ and carries
``schema_version`` (in each item for the list outputs); tiny sizes in the simulator."""
import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from lab.core.errors import SCHEMA_VERSION
from lab.core.resources import offline_unavailable
from tests.conftest import SIMULATOR, run_lab

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="simulator-sized runs of every --json command")

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"
FILES = sorted(SCHEMAS.glob("*.json"))
REGISTRY = Registry().with_resources(
    (p.name, Resource.from_contents(json.loads(p.read_text()))) for p in FILES)
FAST = ["--contenders", "numba,numpy", "--repeats", "1"]


def validate(doc, name: str):
    """Validate ``doc`` against docs/schemas/``name`` (its $refs through the registry); check the version."""
    schema = json.loads((SCHEMAS / name).read_text())
    Draft202012Validator(schema, registry=REGISTRY).validate(doc)
    for item in doc if isinstance(doc, list) else [doc]:
        assert item["schema_version"] == SCHEMA_VERSION == 1
    return doc


def validated(schema: str, *args, codes=(0,)):
    code, out, err = run_lab(*args)
    assert code in codes, err
    return validate(json.loads(out), schema)


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    """A saved ``lab run --json`` (vecadd; cupy and torch rows are skipped here: nulls in the results)."""
    from lab.core.runner import Options, run

    rep = run(Options(kernel="vecadd", size="96", threads=32, repeats=2), "simulator").to_dict()
    path = tmp_path_factory.mktemp("schemas") / "run.json"
    path.write_text(json.dumps(rep, default=str))
    return path


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_schema_is_valid_2020_12_and_its_refs_resolve(path):
    schema = json.loads(path.read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema" and schema["$id"] == path.name
    Draft202012Validator.check_schema(schema)
    resolver = REGISTRY.resolver(base_uri=path.name)

    def refs(node):
        if isinstance(node, dict):
            if "$ref" in node:
                yield node["$ref"]
            for v in node.values():
                yield from refs(v)
        elif isinstance(node, list):
            for v in node:
                yield from refs(v)

    for ref in refs(schema):
        resolver.lookup(ref)  # raises when a $ref points nowhere
    assert (SCHEMAS / "README.md").read_text().count(f"({path.name})") == 1


@pytest.mark.parametrize("args", [
    ["vecadd", "--size", "300", "--threads", "32", "--repeats", "1"],  # every contender: skipped rows too
    ["matvec", "--size", "9x50", "--threads", "32", "--variant", "row_per_thread,auto", *FAST],
], ids=["vecadd", "matvec"])
def test_run(args):
    doc = validated("run.json", "run", *args, "--json", "--sim")
    assert doc["results"] and doc["launch"] is not None


def test_run_compiler_both():
    doc = validated("run-both.json", "run", "vecadd", "--size", "100", "--threads", "32",
                  "--variant", "element_per_thread", *FAST, "--compiler", "both", "--json", "--sim")
    validate(doc, "run.json")  # the merged document is a run document too
    assert doc["compiler"] == "both" and {r["compiler"] for r in doc["results"] if r["contender"] == "numba"} == {
        "numba-cuda", "numba-cuda-mlir"}


def test_list_and_device():
    kernels = validated("list.json", "list", "--json", "--sim")
    assert {k["name"] for k in kernels} >= {"vecadd", "matvec"}
    validated("device.json", "device", "--json", "--sim")
    validated("device.json", "device", "--measure", "--json", "--sim")


def test_bench_and_bench_from(tmp_path):
    doc = validated("bench.json", "bench", "vecadd", *FAST, "--json", "--sim")
    assert len(doc["reports"]) == 1
    saved = tmp_path / "bench.json"
    saved.write_text(json.dumps(doc))
    assert validated("bench.json", "bench", "--from", str(saved), "--json") == doc
    old = dict(doc, reports=[{k: v for k, v in r.items() if k != "schema_version"} for r in doc["reports"]])
    del old["schema_version"]  # saved before versioning: read as version 1
    saved.write_text(json.dumps(old))
    assert validated("bench.json", "bench", "--from", str(saved), "--json") == doc


def test_sweep():
    doc = validated("sweep.json", "sweep", "vecadd", "--threads", "32,64", "--sizes", "40",
                  "--variant", "element_per_thread", *FAST, "--json", "--sim")
    assert [r["threads_per_block"] for r in doc["reports"]] == [32, 64]


def test_roofline_and_compare(run_file):
    doc = validated("roofline.json", "roofline", "--kernels", "vecadd,matvec", "--json", "--sim")
    assert doc["points"] == [] and doc["note"]
    doc = validated("roofline.json", "roofline", "--kernels", "vecadd", "--from", str(run_file), "--json", "--sim")
    assert doc["points"]  # the numpy row is timed on the host
    doc = validated("compare.json", "compare", str(run_file), str(run_file), "--json")
    assert {r["verdict"] for r in doc["rows"]} >= {"within noise", "not timed (skipped)"}


def test_grid():
    doc = validated("grid.json", "grid", "vecadd", "--size", "300", "--threads", "32", "--no-waves", "--json")
    assert doc["waves"] is None and doc["threads_idle"] == 20
    validated("grid.json", "grid", "matmul", "--variant", "naive", "--size", "5x6x4", "--threads", "32",
            "--no-waves", "--json")  # a 2-D map: nested lists


def test_occupancy_calculator():
    doc = validated("occupancy.json", "occupancy", "--arch", "sm_90", "--threads", "256", "--registers", "32",
                  "--shared", "1024", "--sweep", "--json")
    assert "kernel" not in doc and doc["sweep"]


@pytest.mark.skipif(offline_unavailable() is not None, reason="nvJitLink/NVVM/NVRTC missing: pip install '.[occupancy]'")
def test_occupancy_of_a_kernel_offline():
    doc = validated("occupancy.json", "occupancy", "matmul", "--variant", "shared", "--arch", "sm_90",
                  "--json", "--sim")
    assert doc["resources_from"] == "offline" and len(doc["kernels"]) == 1


def test_doctor():
    doc = validated("doctor.json", "doctor", "--json", codes=(0, 1))
    assert doc["checks"]


def test_exercise_list_and_check(tmp_path):
    import exercises

    ws = str(tmp_path / "ws")
    (tmp_path / "ws").mkdir()  # an explicit --dir must exist (only lab exercise start makes one)
    rows = validated("exercise-list.json", "exercise", "list", "--json", "--dir", ws)
    assert "vecadd" in [r["name"] for r in rows]
    solution = exercises.load("vecadd").solution
    doc = validated("exercise-check.json", "exercise", "check", "vecadd", "--file", str(solution), "--json",
                  "--sim", "--dir", ws, "--bench")
    assert doc["passed"] is True and doc["bench"]["passed"] and doc["bench"]["sectors"]["student"] > 0
    sub = tmp_path / "class" / "alice"
    sub.mkdir(parents=True)
    (sub / "vecadd.py").write_text(solution.read_text())
    doc = validated("exercise-grade.json", "exercise", "grade", str(sub.parent), "--json", "--sim", "--jobs", "1")
    assert doc["rows"][0]["status"] == "passed"


def test_a_document_that_breaks_the_contract_is_caught(run_file):
    """The schemas are not vacuous: a missing contract key or a wrong type fails validation."""
    from jsonschema import ValidationError

    doc = json.loads(run_file.read_text())
    validate(doc, "run.json")
    for broken in ({k: v for k, v in doc.items() if k != "launch"},
                   dict(doc, schema_version=2),
                   dict(doc, results=[dict(doc["results"][0], median_ms="fast")]),
                   dict(doc, results=[{k: v for k, v in doc["results"][0].items() if k != "max_abs_err"}])):
        with pytest.raises(ValidationError):
            Draft202012Validator(json.loads((SCHEMAS / "run.json").read_text()), registry=REGISTRY).validate(broken)
