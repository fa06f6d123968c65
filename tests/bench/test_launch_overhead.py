"""Launch overhead (python -m torch_bridge.bench_launch; lab.bench.launch_overhead, torch_bridge.overhead):
its rows come from a kernel's spec (no kernel named), every row is timed by lab.core.timing's host
clock with a structured stop reason, its results document keeps the keys it was published with, and
the command keeps its options. In the simulator at a tiny size (seconds); marked gpu: the GPU's rows."""
import json

import pytest

pytest.importorskip("torch")

from lab.core.errors import LabError  # noqa: E402
from tests.conftest import SIMULATOR  # noqa: E402

PUBLISHED_KEYS = {"device", "compiler", "n", "date", "cupy", "torch", "op_launch", "rows"}  # docs/results/launch-overhead.json


@pytest.mark.gpu
def test_every_row_is_timed_by_the_host_clock_with_a_stop_reason():
    from lab.bench import launch_overhead as LO
    from lab.core.timing import HOST_CALLS_CLOCK, SIMULATOR_CLOCK

    kernel = LO.default_kernel()
    calls, rounds = (2, 3) if SIMULATOR else (200, 5)
    doc = LO.measure(None, "8" if SIMULATOR else "1024", calls=calls, rounds=rounds)
    assert PUBLISHED_KEYS <= set(doc) and doc["kernel"] == kernel
    json.dumps(doc)  # a JSON document as it is
    labels = [row[0] for row in doc["rows"]]
    assert labels[0].startswith("Numba direct, device arrays")
    assert any(label.startswith(f"bridge: torch.ops.lab.{kernel}(") for label in labels)
    assert doc["baseline"] in labels and "torch's floor" in " ".join(labels)
    assert doc["method"] == (SIMULATOR_CLOCK if SIMULATOR else HOST_CALLS_CLOCK.format(calls=calls))
    for row, r in zip(doc["rows"], doc["results"]):
        assert row == [r["call"], r["median_us"], r["min_us"]] and 0 < r["min_us"] <= r["median_us"]
        assert r["samples"] == rounds and r["stop"]["criterion"] == "fixed_count" and r["stop"]["threshold"] == rounds
    if not SIMULATOR:  # the GPU's rows: the lesson's path, the op's cached launcher, CuPy
        assert any(label.startswith("fast launch path, the lesson") for label in labels)
        assert any(label.startswith("Numba direct, torch tensors") for label in labels)
        assert doc["op_launch"] not in ("Variant.prepare each call", "not yet called")
    text = LO.render(doc)
    assert text.count("\n| ") == len(labels) + 1 and "Stopped by: fixed_count." in text


def test_the_rows_come_from_any_kernels_spec():
    """A second kernel with a torch op (a rung of several launches): its own op, inputs and contenders,
    checked against its reference before anything is timed."""
    from lab.bench.launch_overhead import _check
    from torch_bridge import lab_ops, overhead

    import kernels

    other = next(k for k in lab_ops.OPS[1:] if kernels.load(k).size_dims == 2 and kernels.load(k).torch_op.schema)
    made = overhead.calls(other, (4, 8) if SIMULATOR else (64, 64))
    labels = [c.label for c in made.rows]
    assert f"bridge: torch.ops.lab.{other}(" in " ".join(labels) and made.baseline in labels
    assert {"Numba direct", "bridge"} <= set(made.outputs)
    _check(kernels.load(other), made)  # raises LabError on a wrong result


def test_bad_kernels_and_sizes_are_one_line_errors():
    from lab.bench.launch_overhead import measure

    with pytest.raises(LabError, match="--kernel: unknown kernel 'nosuch'; choose from: "):
        measure("nosuch")
    with pytest.raises(LabError, match="--size: "):
        measure(None, "0x")


def test_the_command_refuses_an_unwritable_json_before_the_work(tmp_path, capsys):
    from lab.cli import scripts

    (tmp_path / "folder").mkdir()
    for path in (tmp_path / "missing" / "x.json", tmp_path / "folder"):
        assert scripts.launch_overhead(["--json", str(path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: "), err
        assert "simulator" not in err[0]  # the path is checked first


def test_the_command_keeps_its_options_and_refuses_the_simulator(capsys):
    from lab.cli import scripts

    assert scripts.launch_overhead(["--help"]) == 0
    shown = capsys.readouterr().out
    for option in ("--n", "--calls", "--rounds", "--json PATH", "--profile N", "--kernel", "--size"):
        assert option in shown
    assert scripts.launch_overhead(["--calls", "0"]) == 2
    assert capsys.readouterr().err.strip().startswith("error:")
    if SIMULATOR:
        assert scripts.launch_overhead(["--calls", "2"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == ["error: the simulator is active: launch overhead needs a GPU"]
