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
