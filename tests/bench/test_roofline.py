"""lab roofline: arithmetic intensities in the simulator, measured rows under the ceilings (from a
GPU-shaped report)."""
import json

import pytest

from tests.conftest import BACKEND, SIMULATOR
from tests.helpers import fake_gpu_report

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="simulator-sized checks of the commands")


def test_roofline_in_the_simulator_places_intensities_only(lab, tmp_path):
    png = tmp_path / "roofline.png"
    code, out, err = lab("roofline", "--json", "--png", str(png))
    assert code == 0, err
    doc = json.loads(out)
    ai = {k["kernel"]: k["intensity"] for k in doc["kernels"]}
    assert ai["vecadd"] == pytest.approx(1 / 12)  # 1 FLOP per 3 float32 (12 bytes) an element
    assert ai["matmul"] == pytest.approx(2 * 4096 / (3 * 4))  # 2N^3 FLOPs over 3 N^2 float32
    assert doc["points"] == [] and "no achieved FLOP/s" in doc["note"]
    assert png.read_bytes()[:4] == b"\x89PNG"
    code, out, err = lab("roofline", "--kernels", "vecadd,matvec")
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
