"""Kernels from Python on a laptop: importing a kernel module picks the simulator when no GPU is
usable, with one note."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SIMULATOR

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="front-door checks run in the simulator")


def test_kernel_import_picks_the_simulator_with_one_note():
    from kernels.backend import gpu_count

    if gpu_count()[0]:
        pytest.skip("this machine has a GPU: the import picks it")
    code = ("import numpy as np\n"
            "from kernels.vecadd import vecadd_kernel\n"
            "from kernels import matvec\n"  # a second kernel module: still one note
            "from numba import cuda\n"
            "a = np.random.default_rng().standard_normal(100).astype(np.float32)\n"
            "b = np.random.default_rng().standard_normal(100).astype(np.float32)\n"
            "c = cuda.device_array_like(a)\n"
            "vecadd_kernel[4, 32](cuda.to_device(a), cuda.to_device(b), c)\n"
            "assert np.allclose(c.copy_to_host(), a + b)\n"
            "print('ok')\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert proc.stderr.count("CUDA simulator") == 1, proc.stderr
