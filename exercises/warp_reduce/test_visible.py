"""Visible example for warp_reduce: python test_warp_reduce.py (or pytest).

Numba's own CUDA simulator has no warp shuffles, so without a GPU this example runs the kernel
through the lab's simulator (lab.core.simt), which adds them; on a GPU it launches it as usual."""
import numpy as np

from kernels.compiler import SIMULATOR, cuda  # noqa: F401  (picks the simulator when there is no GPU)
from warp_reduce import THREADS, warp_reduce_kernel


def launch(kernel, grid, block, *args):
    if SIMULATOR:
        from lab.core import simt

        simt.run(kernel, grid, block, list(args), np.random.default_rng(0))
    else:
        kernel[grid, block](*args)


def test_example():
    x = np.linspace(-1, 3, 200).astype(np.float32)
    partials = np.full(2, np.nan, np.float32)
    launch(warp_reduce_kernel, 2, THREADS, x, partials)
    np.testing.assert_allclose(partials, [x[:128].sum(), x[128:].sum()], rtol=1e-5)


if __name__ == "__main__":
    test_example()
    print("ok")
