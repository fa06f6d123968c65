"""lab.bench.shapes: the sweep runs through the runner (simulator, tiny shapes) and the renderer's
ratios, geometric means and target verdicts follow from the rows."""
import math

import pytest

from lab.bench import shapes as S
from tests.conftest import BACKEND, SIMULATOR


@pytest.mark.slow  # > 5 s in the simulator on a 2-core CPU (deselect locally with -m "not slow")
@pytest.mark.skipif(not SIMULATOR, reason="tiny shapes: a simulator check of the plumbing")
def test_sweep_runs_and_renders():
    rows = S.sweep(BACKEND, shapes={"vecadd": ["37"], "softmax": ["3x33"]}, repeats=1, warmup=0)
    assert [(r.kernel, r.size) for r in rows] == [("vecadd", "37"), ("softmax", "3x33")]
    for r in rows:
        assert not r.failed and not r.error
        assert r.auto_rung in r.rungs and "auto" in r.rungs and r.best is not None
        assert r.torch_ms is None  # no torch in the simulator: no ratio, never a made-up one
    text = S.render(rows)
    assert "### vecadd" in text and "### softmax" in text and "group_rows at 128 threads" in text


def test_ratios_geomean_and_verdicts():
    rows = [S.SweepRow("vecadd", "1", rungs={"a": 2.0, "auto": 1.0}, auto_ms=1.0, torch_ms=2.0),
            S.SweepRow("matvec", "2x3", rungs={"b": 1.0, "auto": 4.0}, auto_ms=4.0, torch_ms=2.0),
            S.SweepRow("matmul", "4096", flops=2 * 4096**3, rungs={"auto": 1.0}, auto_ms=1.0, torch_ms=0.9)]
    assert rows[0].auto_ratio == 2.0 and rows[1].auto_ratio == 0.5 and rows[1].best == ("b", 1.0)
    assert math.isclose(S.geomean([2.0, 0.5]), 1.0)
    verdicts = {name: met for name, _, met in S.targets(rows)}
    assert verdicts["no memory-bound shape below 0.8x torch (auto)"] is False
    assert verdicts["geometric mean >= 1.0x torch over vecadd, matvec, softmax, quantize (auto)"] is True
    assert verdicts["matmul >= 0.85x cuBLAS at 4096^3 (auto)"] is True
    assert "MISSED" in S.render(rows) and "| 2x3 | b |" in S.render(rows)


@pytest.fixture
def sweep_cli(monkeypatch):
    """``python -m lab.shape_sweep`` over two tiny vecadd shapes, run in the simulator as if on a GPU (it
    refuses the simulator); ``cut``: sizes whose run raises, as a time limit stops a run mid-shape."""
    import lab.core.device as device
    import lab.core.runner as runner
    import lab.core.simulator as simulator
    from lab.cli import scripts

    real_run, cut = runner.run, set()

    def run(opts, backend):
        if opts.size in cut:
            raise RuntimeError(f"cut at {opts.size}")
        return real_run(opts, "simulator")

    monkeypatch.setattr(S, "sweep_shapes", lambda: {"vecadd": ["37", "41"]})
    monkeypatch.setattr(simulator, "select", lambda *_: "gpu")
    monkeypatch.setattr(device, "describe", lambda *_: {"name": "a test GPU"})
    monkeypatch.setattr(runner, "run", run)
    return scripts.shape_sweep, cut


@pytest.mark.skipif(not SIMULATOR, reason="tiny shapes: a simulator check of the plumbing")
def test_a_cut_sweep_keeps_its_finished_rows(tmp_path, sweep_cli):
    shape_sweep, cut = sweep_cli
    cut.add("41")
    out = tmp_path / "sweep.md"
    with pytest.raises(RuntimeError, match="cut at 41"):
        shape_sweep(["--kernels", "vecadd", "--repeats", "1", "--out", str(out)])
    text = out.read_text()
    assert "partial: 1 of 2 shapes done" in text and "| 37 |" in text and "| 41 |" not in text
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.md"]  # written atomically: no temporary left


@pytest.mark.skipif(not SIMULATOR, reason="tiny shapes: a simulator check of the plumbing")
def test_a_whole_sweep_writes_the_table_it_prints(tmp_path, sweep_cli, capsys):
    shape_sweep, _ = sweep_cli
    out = tmp_path / "sweep.md"
    assert shape_sweep(["--kernels", "vecadd", "--repeats", "1", "--out", str(out)]) == 0
    text = out.read_text()
    assert text + "\n" == capsys.readouterr().out and "partial" not in text
    assert text.startswith("- device: a test GPU; backend: gpu\n\n## Shape sweep") and "| 41 |" in text
