"""One backend for the whole session, chosen before anything imports numba.cuda.

On a machine with a CUDA GPU the tests run on it (select the GPU set with ``-m gpu``); elsewhere
(CI) they run in Numba's CUDA simulator, at small sizes. ``LAB_TEST_BACKEND=sim|gpu`` forces one.
"""
import os

import numpy as np
import pytest

from lab.core import compilers
from lab.core.session import select
from lab.core.errors import LabError

BACKEND = select({"sim": "sim", "gpu": "gpu"}.get(os.environ.get("LAB_TEST_BACKEND", ""), "auto"))
SIMULATOR = BACKEND == "simulator"
# The compiler of the kernels under test: LAB_COMPILER (numba-cuda by default; run the gpu tests
# once per installed compiler, e.g. LAB_COMPILER=numba-cuda-mlir pytest -m gpu).
try:
    COMPILER = compilers.select(None, SIMULATOR)
except LabError as e:
    raise pytest.UsageError(f"LAB_COMPILER: {e}") from None


def pytest_report_header(config):
    return f"lab backend: {BACKEND}; compiler: {COMPILER} {compilers.version(COMPILER) or ''}"


def pytest_collection_modifyitems(config, items):
    """On a GPU only tests marked ``gpu`` make sense unselected; in the simulator all run."""
    if SIMULATOR:
        return
    skip = pytest.mark.skip(reason="simulator-only test (a GPU session runs the tests marked gpu)")
    for item in items:
        if "gpu" not in item.keywords and "cpu_ok" not in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng():
    """Fresh random inputs every run; the seed is printed on failure for a replay."""
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"rng seed {seed}")
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def simulator():
    return SIMULATOR
