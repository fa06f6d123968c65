"""On a GPU: the calculator agrees with the driver (cuOccupancyMaxActiveBlocksPerMultiprocessor via
cuda.core) over block sizes x dynamic shared-memory sizes for every lab kernel, and the offline
register count (numba-cuda LTO-IR + nvJitLink, as numba-cuda links on a GPU) agrees with the loaded kernel's at the GPU's arch."""

import pytest

import kernels
from lab.core import archs
from lab.core import resources
from lab.core.occupancy import calculate
from kernels.compiler import COMPILER
from tests.conftest import SIMULATOR, skip_unavailable

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(SIMULATOR, reason="needs a CUDA GPU and its driver")]

VARIANTS = [(k, v) for k in kernels.NAMES for v in kernels.load(k).variants]


_RECORDS = {}


def _records(kernel, variant):
    """The kernels one small run of the variant launches at 256 threads (cached per session); skips a rung
    that does not run here."""
    skip_unavailable(kernel, variant)
    if (kernel, variant) not in _RECORDS:
        spec = kernels.load(kernel)
        _RECORDS[kernel, variant] = resources.record_launches(spec, variant, spec.default_size(True), 256)
    return _RECORDS[kernel, variant]


def _unavailable(kernel, variant) -> bool:
    v = kernels.load(kernel).variants[variant]
    return bool(getattr(v, "unavailable", None) and v.unavailable("float32"))


def _arch():
    from kernels.compiler import cuda

    a = archs.for_cc(tuple(cuda.get_current_device().compute_capability))
    if a is None:
        pytest.skip("this GPU's compute capability is not in lab.core.archs")
    return a


@pytest.mark.parametrize("kernel,variant", VARIANTS)
def test_calculator_agrees_with_the_driver(kernel, variant):
    arch = _arch()
    disagreements = []
    for rec in _records(kernel, variant):
        use = resources.device_resources(rec)
        max_threads = resources._overload(rec).max_threads_per_block  # launch_bounds caps some kernels
        for threads in (32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024):
            if threads > max_threads:
                continue
            for dyn in (0, 1024, 4096, 12 * 1024, 40 * 1024):
                if use["shared_bytes"] + dyn > arch.shared_per_block_static:
                    continue  # over the default 48 KB a block without opt-in: the driver says 0
                try:
                    ours = calculate(arch, threads, use["registers"], use["shared_bytes"] + dyn)["active_blocks_per_sm"]
                except Exception:
                    ours = 0
                theirs = resources.driver_blocks_per_sm(rec, threads, dyn)
                if ours != theirs:
                    disagreements.append((rec.label, threads, dyn, use, ours, theirs))
    assert not disagreements, disagreements[:5]


def test_offline_registers_match_the_device():
    """Every lab kernel: numba-cuda LTO-IR + nvJitLink for this GPU's arch (one child process for all)
    against the driver's attributes of the kernel Numba loaded."""
    arch = _arch()
    if resources.offline_unavailable():
        pytest.skip(f"offline compile needs {resources.offline_unavailable()}")
    if COMPILER != "numba-cuda":  # the offline path is numba-cuda's: nothing to compare MLIR's kernels with
        pytest.skip(f"offline registers are numba-cuda's compile; this process loaded {COMPILER}'s kernels")
    recs = [r for k, v in VARIANTS if not _unavailable(k, v) for r in _records(k, v)]
    factory = [f"{r.module}.{r.label}" for r in recs if not r.name]  # built by a function: no global to compile
    print("not compiled offline (kernels made by a factory function):", factory)
    recs = [r for r in recs if r.name]
    assert len(recs) >= 20
    offline = resources.offline_resources(recs, arch.name)
    mismatches = []
    for rec, off in zip(recs, offline):
        dev = resources.device_resources(rec)
        got = (off.get("registers"), off.get("shared_bytes"), off.get("local_bytes"))
        want = (dev["registers"], dev["shared_bytes"], dev["local_bytes"])
        print(f"{rec.module}.{rec.label}: offline {got} device {want}")
        if got != want:
            mismatches.append((rec.label, off, dev))
    assert not mismatches, mismatches
