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


def test_factory_kernels_are_named_where_they_resolve_back():
    """Kernels built at run time are compile-checked when the factory's cache finds them again: a
    module dict keyed by the factory's arguments, or functools.cache with no arguments."""
    from kernels import softmax_rows
    from kernels.gemm import tensor_core_tf32
    from lab.core.resources import _global_name, _resolve

    k = softmax_rows.group_rows_kernel(4, 8)
    assert _global_name(k) == ("kernels.softmax_rows", "group_rows_kernel(4, 8)")
    assert _resolve(softmax_rows, "group_rows_kernel(4, 8)") is k
    assert _global_name(tensor_core_tf32.make_tf32_kernel()) == ("kernels.gemm.tensor_core_tf32", "make_tf32_kernel()")
    assert _global_name(tensor_core_tf32.make_tf32_kernel(rounding="cvt"))[1] is None  # not findable by its name: not checked


def test_mlir_signatures_and_a_missing_interpreter(capsys):
    assert compile_check._signature([("array", "<f4", 2, "C"), ("array", "<f8", 3, "A"), ("scalar", "int64"),
                                     ("scalar", "bool")]) == "(float32[:, ::1], float64[:, :, :], int64, boolean)"
    assert compile_check._signature([("array", "<i4", 1, "C")]) == "(int32[::1],)"
    assert compile_check.main(["transpose", "--compiler", "numba-cuda-mlir", "--python", "/nonexistent/python"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("the offline compile needs") and "/nonexistent/python" in err[0]
