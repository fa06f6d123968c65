"""Zero-copy sharing between Numba and torch (GPU only: the simulator has no device memory)."""
import numpy as np
import pytest

from tests.conftest import SIMULATOR

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(SIMULATOR or not torch.cuda.is_available(), reason="needs a CUDA GPU and CUDA torch")]


def test_numba_kernel_writes_into_a_torch_tensor(rng):
    from kernels.vecadd import vecadd_kernel
    from torch_bridge.interop import to_numba, to_torch

    a = torch.from_numpy(rng.standard_normal(1000).astype(np.float32)).cuda()
    b = torch.from_numpy(rng.standard_normal(1000).astype(np.float32)).cuda()
    c = torch.full_like(a, float("nan"))
    vecadd_kernel[4, 256](to_numba(a), to_numba(b), to_numba(c))
    torch.cuda.synchronize()
    assert torch.equal(c, a + b)
    view = to_torch(to_numba(c))  # and back: same memory, no copy
    assert view.data_ptr() == c.data_ptr()


def test_to_numba_rejects_cpu_tensors():
    from torch_bridge.interop import to_numba

    with pytest.raises(ValueError, match="not a CUDA device"):
        to_numba(torch.zeros(3))
