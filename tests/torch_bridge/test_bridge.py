"""Zero-copy sharing between Numba, torch and CuPy, launches on torch's stream, the fast launch path.

GPU only (the simulator has no device memory), except the registry and the host-array checks.
"""
import numpy as np
import pytest

from tests.conftest import SIMULATOR

torch = pytest.importorskip("torch")
GPU = not SIMULATOR and torch.cuda.is_available()


def cuda_rand(rng, *shape):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).cuda()


def test_host_arrays_are_rejected_not_copied():
    from torch_bridge.interop import to_numba, to_torch

    with pytest.raises(ValueError, match="host ndarray, a device array is required"):
        to_torch(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="not a CUDA device"):
        to_numba(torch.zeros(3))
    with pytest.raises(ValueError, match="not a CUDA device"):
        to_torch(torch.zeros(3))


def test_every_kernel_declares_its_contenders():
    """The registry covers every kernel, with unique labels, and the bridge row where there is an op."""
    import kernels
    from lab.core import registry

    for name in kernels.NAMES:
        if registry.no_contenders(name):  # said, with the reason, not forgotten
            assert not registry.labels("cupy", name)
            continue
        for library in ("torch", "cupy"):
            labels = registry.labels(library, name)
            assert labels and len(labels) == len(set(labels)), (name, library)
        if name in registry.lab_ops():
            assert registry.lab_op_label(name) in registry.labels("torch", name)
    assert callable(registry.function("cupy", "vecadd", "cupy.add"))


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU and CUDA torch")
def test_numba_kernel_writes_into_a_torch_tensor(rng):
    from kernels.vecadd import vecadd_kernel
    from torch_bridge.interop import shares_memory, to_numba, to_torch

    a, b = cuda_rand(rng, 1000), cuda_rand(rng, 1000)
    c = torch.full_like(a, float("nan"))
    vecadd_kernel[4, 256](to_numba(a), to_numba(b), to_numba(c))
    torch.cuda.synchronize()
    assert torch.equal(c, a + b)
    view = to_numba(c)
    back = to_torch(view)  # and back: same memory, no copy
    assert back.data_ptr() == c.data_ptr() and shares_memory(c, view) and shares_memory(back, c)
    strided = cuda_rand(rng, 6, 8).t()  # a non-contiguous view keeps its strides
    assert to_numba(strided).strides == tuple(s * 4 for s in strided.stride())
    with pytest.raises(Exception):  # noqa: B017 (the type varies by version)  numba-cuda DeviceNDArray has no __dlpack__ (numba-cuda issue 531)
        torch.from_dlpack(view)
    with pytest.raises(ValueError, match="requires grad"):
        to_numba(a.clone().requires_grad_())



@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU and CUDA torch")
def test_cupy_shares_both_ways(rng):
    cp = pytest.importorskip("cupy")
    from numba import cuda

    from torch_bridge.interop import shares_memory, to_cupy, to_numba, to_torch

    t = cuda_rand(rng, 257)
    c = to_cupy(t)  # DLPack
    assert isinstance(c, cp.ndarray) and shares_memory(t, c)
    assert shares_memory(to_torch(c), t)  # DLPack back
    n = to_numba(t)
    assert shares_memory(to_cupy(n), n)  # CAI
    assert shares_memory(cuda.as_cuda_array(c), c)


# --- streams --------------------------------------------------------------------------------------------
SLEEP_CYCLES = 200_000_000  # ~0.1 s of GPU clock: the side stream is still busy when the host launches


def side_stream_update(rng, shape):
    """old, new, x: x holds ``old``; on a fresh side stream the GPU sleeps, then writes ``new`` into x."""
    old, new = cuda_rand(rng, *shape), cuda_rand(rng, *shape)
    x = old.clone()
    torch.cuda.synchronize()
    return old, new, x


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU and CUDA torch")
def test_naive_numba_launch_on_a_side_stream_reads_stale_data(rng):
    """A plain Numba launch inside ``with torch.cuda.stream(s)`` goes to the legacy default stream,
    which does not wait for the non-blocking stream s: it runs before s's copy and reads the old x."""
    from kernels.vecadd import vecadd_kernel
    from torch_bridge.interop import to_numba

    n = 1 << 16
    old, new, x = side_stream_update(rng, (n,))
    b = cuda_rand(rng, n)
    c = torch.full_like(b, float("nan"))
    vecadd_kernel[n // 256, 256](to_numba(b), to_numba(b), to_numba(c))  # compiled and loaded first: a
    torch.cuda.synchronize()  # compile inside the race would outlast the side stream's sleep (test order)
    c.fill_(float("nan"))
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(SLEEP_CYCLES)
        x.copy_(new)
        vecadd_kernel[n // 256, 256](to_numba(x), to_numba(b), to_numba(c))  # the naive launch
    torch.cuda.synchronize()
    assert not torch.equal(c, new + b)
    assert torch.equal(c, old + b)  # it read x before the side stream wrote it


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU and CUDA torch")
def test_bridge_launches_are_ordered_on_torchs_stream(rng):
    """The same sequence through the ops: every launch (the fast path of vecadd, the Variant.prepare
    path of softmax and matmul, the direct launch of dequantize) sees the side stream's write."""
    ops = pytest.importorskip("torch_bridge.lab_ops") and torch.ops.lab
    n = 1 << 16
    old, new, x = side_stream_update(rng, (n,))
    b = cuda_rand(rng, n)
    old2, new2, X = side_stream_update(rng, (64, 300))
    W = cuda_rand(rng, 300, 40)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(SLEEP_CYCLES)
        x.copy_(new)
        X.copy_(new2)
        c = ops.vecadd(x, b)
        y = ops.softmax(X)
        m = ops.matmul(X, W)
        q, scale, zp = ops.quantize(X)
        back = ops.dequantize(q, scale, zp)
    torch.cuda.synchronize()
    assert torch.equal(c, new + b)
    torch.testing.assert_close(y, torch.softmax(new2, 1))
    torch.testing.assert_close(m, (new2.double() @ W.double()).float(), rtol=1e-5, atol=1e-4)  # K = 300 sums
    assert (back - new2).abs().max().item() <= scale.item()  # quantized the new values


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU and CUDA torch")
def test_fast_launch_path_reuses_its_cache_with_new_pointers(rng):
    """The lesson (torch_bridge.launch.vecadd): both rungs kernels.vecadd's auto picks, ragged ends, the
    cached parameter block given new pointers, torch's current stream; it refuses what it cannot take."""
    from torch_bridge.launch import vecadd

    for n in (1, 255, 1024, 1000003, (1 << 20) + 5):  # element and four-per-thread rungs, ragged ends
        for _ in range(3):  # same shape, new tensors: the cached parameter block gets new pointers
            a, b = cuda_rand(rng, n), cuda_rand(rng, n)
            assert torch.equal(vecadd(a, b), a + b)
            out = torch.empty_like(a)
            assert vecadd(a, b, out) is out and torch.equal(out, a + b)
    with pytest.raises(ValueError, match="contiguous CUDA tensors"):
        vecadd(a[::2], b[::2])
    with pytest.raises(ValueError, match="contiguous CUDA tensors"):
        vecadd(a, b.double())
