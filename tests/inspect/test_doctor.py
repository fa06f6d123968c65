"""lab doctor: a healthy environment (this one: CPU, simulator) and deliberately broken ones
(monkeypatched probes); a crashing check is a failed check."""
import json

import pytest

from lab.inspect import doctor as D
from tests.conftest import SIMULATOR

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="the map is recorded in the simulator")  # (as with lab grid)


def test_doctor_healthy_here(lab):
    """This environment (CPU, simulator): nothing fails; the tiny kernel really compiles and runs."""
    code, out, err = lab("doctor", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["status"] in ("ok", "warn") and not [c for c in d["checks"] if c["status"] == "fail"], d
    status = {c["name"]: c["status"] for c in d["checks"]}
    assert status["tiny kernel"] == "ok" and status["python"] == "ok" and status["packages"] == "ok"


def test_doctor_wrong_numpy(monkeypatch):
    real = D.installed_version
    monkeypatch.setattr(D, "installed_version", lambda d: {"numpy": "2.5.2", "numba-cuda": "0.30.4"}.get(d) or real(d))
    r = D.check_packages()
    assert r.status == "fail" and "numpy < 2.5" in r.fix.replace("'numpy<2.5'", "numpy < 2.5")


def test_doctor_no_driver(monkeypatch):
    monkeypatch.setattr(D, "driver_version", lambda: None)
    monkeypatch.setattr(D, "gpu_count", lambda: (0, "no CUDA driver (libcuda) found"))
    assert D.check_driver().status == "warn" and D.check_gpus().status == "warn"


def test_doctor_cupy_for_the_wrong_cuda_major(monkeypatch, lab):
    monkeypatch.setattr(D, "driver_version", lambda: 12080)
    monkeypatch.setattr(D, "cupy_cuda_major", lambda: 13)
    r = D.check_cupy()
    assert r.status == "fail" and "cuda12" in r.fix
    monkeypatch.setattr(D, "CHECKS", [D.check_python, D.check_cupy])
    code, out, err = lab("doctor")
    assert code == 1
    assert "fail cupy" in out.replace("  ", " ")


def test_doctor_a_crashing_check_is_a_failed_check():
    def check_boom():
        raise RuntimeError("boom")

    (r,) = D.run_checks([check_boom])
    assert r.status == "fail" and "boom" in r.message
