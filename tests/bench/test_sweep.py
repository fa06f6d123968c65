"""lab sweep: one kernel over launch configurations and sizes, each checked then timed (simulator, tiny
sizes); its table and plots; bad input is one line with exit code 2."""
import json
import sys

import pytest

from tests.conftest import SIMULATOR
from tests.helpers import FAST, bad_inputs, fake_gpu_report, one_line_exit_2

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="simulator-sized checks of the commands")


@pytest.mark.slow  # > 5 s in the simulator on a 2-core CPU (deselect locally with -m "not slow")
def test_sweep_checks_and_times_every_configuration(lab, tmp_path):
    png = tmp_path / "sweep.png"
    code, out, err = lab("sweep", "vecadd", "--threads", "32,64", "--sizes", "40,77", *FAST,
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
    code, out, err = lab("sweep", "vecadd", "--threads", "32,48", *FAST, "--variant", "element_per_thread")
    assert code == 0, err
    assert "element_per_thread" in out and "48" in out and "sim ms" in out


@pytest.mark.parametrize("args,needle", bad_inputs("""
sweep vecadd                           | --threads A,B,... and/or --sizes
sweep vecadd --threads 32,abc          | 'abc' is not an integer
sweep vecadd --threads 32,2048         | threads per block must be 1..1024
sweep matvec --sizes 10x10,0x5         | at least 1
sweep matvec --sizes 10                | malformed
sweep matvecc --threads 32             | did you mean matvec
sweep vecadd --threads 32 --metric fps | Invalid value for '--metric'
"""))
def test_sweep_bad_input(lab, args, needle):
    one_line_exit_2(*lab(*args)[::2], needle)


@pytest.mark.parametrize("command", [["sweep", "vecadd", "--threads", "32"], ["roofline"]])
def test_png_without_matplotlib_is_one_line(lab, monkeypatch, tmp_path, command):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    code, out, err = lab(*command, "--png", str(tmp_path / "x.png"))
    one_line_exit_2(code, err, "pip install 'numba-gpu-lab[plot]'")
    assert not (tmp_path / "x.png").exists()


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


def test_sweep_in_the_simulator_checks_without_repeats(lab):
    """Without --repeats the simulator times nothing: every configuration is checked once, its rows
    carry no median (None in the JSON), and the table still renders."""
    code, out, err = lab("sweep", "vecadd", "--threads", "32,64", "--contenders", "numba", "--variant",
                         "element_per_thread", "--json")
    assert code == 0, err
    for rep in json.loads(out)["reports"]:
        (row,) = rep["results"]
        assert row["ok"] and row["median_ms"] is None and row["timed_calls"] == 0 and row["first_call_ms"] > 0
    code, out, err = lab("sweep", "vecadd", "--threads", "32,64", "--contenders", "numba", "--variant",
                         "element_per_thread")
    assert code == 0, err
    assert "element_per_thread" in out and "sim ms" in out and "ok" in out
