"""Settings (issue "Safe by default", item 6): every LAB_* variable is declared once and checked like an
option; docs/settings.md's table is the declarations'."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lab.core import settings
from lab.core.errors import LabError

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_table_is_the_declarations():
    text = (ROOT / "docs" / "settings.md").read_text()
    table = text.split("<!-- settings:table -->\n", 1)[1].split("<!-- /settings:table -->", 1)[0].strip()
    assert table == settings.markdown_table()


def test_every_lab_variable_the_code_reads_is_declared():
    names = set()
    for folder in ("lab", "kernels", "torch_bridge", "exercises"):
        for path in (ROOT / folder).rglob("*.py"):
            names |= set(re.findall(r"[\"'](LAB_[A-Z0-9_]+)[\"']", path.read_text()))
    names -= {"LAB_OPS"}  # a registry table's name, not a variable
    missing = sorted(n for n in names if n not in settings.BY_NAME and n not in settings.INTERNAL)
    assert not missing, f"declare these in lab/core/settings.py: {missing}"


@pytest.mark.parametrize("name,value", [
    ("LAB_KERNEL_CACHE", "banana"), ("LAB_TUNED", "2"), ("LAB_GPU_COMPILE", "maybe"), ("LAB_SANDBOX_SECCOMP", ""),
    ("LAB_SANDBOX_THREADS", "-3"), ("LAB_SANDBOX_THREADS", "1.5"), ("LAB_EXERCISE_TIMEOUT", "0"),
    ("LAB_EXERCISE_TIMEOUT", "nan"), ("LAB_CACHE_DIR", "/dev/null"), ("LAB_DATA_DIR", "/nonexistent/x"),
    ("LAB_CACHE_DIR", ""), ("LAB_BWRAP", "/nonexistent"), ("LAB_BWRAP", "no-such-program-here"),
    ("LAB_COMPILER", "gcc"), ("LAB_KERNL_CACHE", "0"),
])
def test_a_bad_value_is_one_line_naming_the_variable(name, value):
    with pytest.raises(LabError) as e:
        settings.validate({name: value})
    assert name in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("name,value", [
    ("LAB_KERNEL_CACHE", "0"), ("LAB_KERNEL_CACHE", "Off"), ("LAB_TUNED", "yes"), ("LAB_SANDBOX_THREADS", "64"),
    ("LAB_EXERCISE_TIMEOUT", "2.5"), ("LAB_CACHE_DIR", "/tmp/lab-settings-test"), ("LAB_BWRAP", "0"),
    ("LAB_BWRAP", sys.executable), ("LAB_COMPILER", "numba-cuda"), ("LAB_COMPILER_WHY", "anything"),
])
def test_good_values_pass(name, value):
    settings.validate({name: value})


def test_switches_read_as_validated():
    assert settings.on("LAB_DEBUG", {}) is False and settings.on("LAB_KERNEL_CACHE", {}) is True
    assert settings.on("LAB_KERNEL_CACHE", {"LAB_KERNEL_CACHE": " FALSE "}) is False
    assert settings.on("LAB_DEBUG", {"LAB_DEBUG": "0"}) is False  # was: any value showed the traceback


def _lab(*args, **env):
    import os

    return subprocess.run([sys.executable, "-m", "lab", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env}, timeout=120)


def test_the_cli_refuses_a_bad_setting_and_doctor_lists_it():
    p = _lab("list", LAB_TUNED="banana")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "LAB_TUNED='banana'" in p.stderr
    p = _lab("doctor", "--json", LAB_TUNED="banana")
    assert "LAB_TUNED=banana: not a switch" in p.stdout


def test_numba_enable_cudasim_0_insists_on_a_gpu(monkeypatch):
    from lab.core import simulator

    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")
    monkeypatch.setattr(simulator, "gpu_count", lambda: (0, "no CUDA driver (libcuda) found"))
    with pytest.raises(LabError, match="NUMBA_ENABLE_CUDASIM=0 insists on a CUDA GPU"):
        simulator.choose("auto")
    assert simulator.choose("sim") == "simulator"  # --sim still chooses the simulator
