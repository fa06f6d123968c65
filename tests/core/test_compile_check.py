"""scripts/compile_check.py: each rung's kernels, recorded in the simulator, compiled offline for a
real GPU's arch by numba-cuda (needs NVVM: the occupancy extra)."""
import sys
from pathlib import Path

import pytest

from lab.core.resources import offline_unavailable
from tests.conftest import SIMULATOR

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import compile_check  # noqa: E402  (scripts/ is not a package)

pytestmark = [pytest.mark.skipif(not SIMULATOR, reason="records launches in the simulator"),
              pytest.mark.skipif(offline_unavailable() is not None, reason=f"needs {offline_unavailable()}: "
                                 "pip install '.[occupancy]'")]


def test_every_transpose_rung_compiles_for_sm_90():
    report = compile_check.check(["transpose"], "sm_90")
    assert report["compiled"] == 3 and not report["errors"] and not report["not_recorded"], report


def test_bad_input_is_one_line_and_exit_2(capsys):
    assert compile_check.main(["--arch", "90"]) == 2
    assert compile_check.main(["nosuchkernel"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("--arch 90: expected sm_XY") and err[-1].startswith("unknown kernel 'nosuchkernel'")
