"""lab profile: the torch profiler around each contender (CPU activity in the simulator); bad input
and a missing torch are one line with exit code 2."""
import json
import sys

import pytest

from tests.conftest import SIMULATOR
from tests.helpers import bad_inputs, one_line_exit_2

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="simulator-sized checks of the commands")


def test_profile_in_the_simulator_records_cpu_activity(lab, tmp_path):
    pytest.importorskip("torch")
    trace = tmp_path / "trace.json"
    code, out, err = lab("profile", "vecadd", "--size", "64", "--variant", "element_per_thread",
                         "--trace", str(trace))
    assert code == 0, err
    assert "element_per_thread" in out and "cpu_time_total" in out and "CPU activity only" in out
    assert "skipped torch: needs a CUDA GPU" in out
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("name") == "numba element_per_thread" for e in events)


def test_profile_without_torch_is_one_line(lab, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    one_line_exit_2(*lab("profile", "vecadd")[::2], "lab profile needs torch")


@pytest.mark.parametrize("args,needle", bad_inputs("""
profile vecad                     | did you mean vecadd
profile vecadd --variant fast     | unknown variant
profile vecadd --contenders cupy  | choose from: numba, torch
profile vecadd --contenders torch | nothing to profile
profile vecadd --size 0           | at least 1
"""))
def test_profile_bad_input(lab, args, needle):
    pytest.importorskip("torch")
    one_line_exit_2(*lab(*args)[::2], needle)
