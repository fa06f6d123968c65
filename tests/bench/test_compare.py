"""lab compare: two ``--json`` runs side by side, the speedup and whether it is beyond the noise; real
runs and GPU-shaped ones; bad files are one line with exit code 2."""
import copy
import json

import pytest

from tests.conftest import BACKEND, SIMULATOR
from tests.helpers import fake_gpu_report, one_line_exit_2

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="simulator-sized checks of the commands")


@pytest.fixture(scope="module")
def run_json(tmp_path_factory):
    """A real ``lab run --json`` file (vecadd, 3 timed calls)."""
    from lab.core.runner import Options, run

    rep = run(Options(kernel="vecadd", size="96", threads=32, contenders=["numba", "numpy"],
                      variants=["element_per_thread"], repeats=3), BACKEND)
    path = tmp_path_factory.mktemp("run") / "a.json"
    path.write_text(json.dumps(rep.to_dict(), default=str))
    return path


def test_compare_speedup_and_noise(lab, tmp_path):
    a = fake_gpu_report({("numba", "element_per_thread"): 1.0, ("numba", "four_per_thread"): 1.0,
                         ("torch", "torch.add"): 1.0}, iqr=0.01)
    b = copy.deepcopy(a)
    b["results"][0]["median_ms"] = 0.5    # 2x faster, noise 1% + 2%
    b["results"][1]["median_ms"] = 1.015  # 1.5% slower: inside 1% + 1%
    b["results"][2]["median_ms"] = 1.2    # 20% slower, but B says its noise is 30%
    b["results"][2]["noise"] = 0.30
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a))
    pb.write_text(json.dumps(b))
    code, out, err = lab("compare", str(pa), str(pb), "--json")
    assert code == 0, err
    rows = {r["variant"]: r for r in json.loads(out)["rows"]}
    assert rows["element_per_thread"]["speedup"] == pytest.approx(2.0)
    assert rows["element_per_thread"]["verdict"] == "faster" and rows["element_per_thread"]["beyond_noise"]
    assert rows["four_per_thread"]["verdict"] == "within noise"
    assert rows["torch.add"]["noise_b"] == 0.30 and rows["torch.add"]["verdict"] == "within noise"
    code, out, err = lab("compare", str(pa), str(pb))
    assert code == 0 and "2.00x" in out and "faster" in out and "four_per_thread" in out


def test_compare_real_runs(lab, run_json):
    code, out, err = lab("compare", str(run_json), str(run_json), "--json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert {r["variant"] for r in rows} == {"element_per_thread", "reference (CPU)"}
    assert all(r["speedup"] == 1 and r["verdict"] == "within noise" for r in rows)


@pytest.mark.parametrize("content,needle", [
    (None, "cannot read"), ("{not json", "not JSON"), ("{}", "no run results"),
])
def test_compare_bad_files(lab, tmp_path, run_json, content, needle):
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    one_line_exit_2(*lab("compare", str(run_json), str(bad))[::2], needle)


def test_compare_nothing_in_common(lab, tmp_path, run_json):
    other = tmp_path / "other.json"
    other.write_text(json.dumps(fake_gpu_report({("numba", "naive"): 1.0}, kernel="matmul", size=(64, 64, 64))))
    one_line_exit_2(*lab("compare", str(run_json), str(other))[::2], "share no")
