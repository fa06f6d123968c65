"""vecadd: every rung against NumPy on fresh random inputs, at awkward sizes; its launch math."""
import pytest

import kernels
from tests.conftest import SIMULATOR
from tests.helpers import run_variant

pytestmark = pytest.mark.gpu

# (size, threads per block): 1 element, sizes that are not multiples of the block, several blocks.
VECADD_CASES = [((1,), 32), ((37,), 32), ((200,), 64), ((97,), 96)] + ([] if SIMULATOR else [
    (((1 << 20) + 3,), 256), ((5_000_001,), 1024)])


@pytest.mark.parametrize("variant", ["element_per_thread", "four_per_thread", "auto"])
@pytest.mark.parametrize("size,threads", VECADD_CASES)
def test_vecadd(variant, size, threads, rng, simulator):
    spec = kernels.load("vecadd")
    ok, err, outs, refs = run_variant(spec, variant, size, threads, rng, simulator=simulator)
    assert ok, f"{variant} at {size}: max abs err {err}"


def test_launch_math():
    cfg = kernels.load("vecadd").variants["element_per_thread"].launch((1,), 128)
    assert cfg.grid == (1,) and cfg.threads_idle == 127
