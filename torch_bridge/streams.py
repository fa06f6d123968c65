"""Launching Numba kernels on torch's current stream.

Numba launches go to the legacy default stream unless told otherwise; torch's side streams are
created non-blocking (``cudaStreamNonBlocking``), so inside ``with torch.cuda.stream(s):`` a plain
Numba launch is *unordered* with torch's work on ``s``: it can read an input before torch has written
it (tests/torch_bridge/test_ops.py shows it). The bridge launches on torch's current stream instead:

* :func:`numba_stream` wraps it, ``numba.cuda.external_stream(torch.cuda.current_stream().cuda_stream)``
  (cached per handle), for launches the bridge configures itself (``kernel[grid, block, stream]``);
* :func:`on_torch_stream`, a context manager, for a kernel module's ``Variant.prepare`` closures,
  which configure their launches without a stream: inside it, every Numba launch configured for the
  default stream goes to torch's current stream. Numba has no "current stream" context, so the bridge
  adds one by wrapping ``CUDADispatcher.call`` (installed once; outside the context nothing changes).
  numba-cuda-mlir's launch path has no such seam, so there the block is fenced with events instead:
  the legacy default stream waits for torch's stream on entry, and torch's stream waits for it on
  exit (``torch.cuda.Stream.wait_stream``): the same order, with the launches on stream 0.

Source: CUDA C++ Programming Guide, "Streams" (default stream, non-blocking streams); PyTorch docs,
"CUDA semantics: CUDA streams"; numba-cuda docs, ``cuda.external_stream``.
"""
from __future__ import annotations

import contextlib
import threading

import torch
from kernels.backend import is_simulator

_tls = threading.local()
_numba_streams: dict[int, object] = {}


def current_stream_handle(device=None) -> int:
    """The raw ``cudaStream_t`` of torch's current stream (0 for the legacy default stream)."""
    return torch.cuda.current_stream(device).cuda_stream


def numba_stream(device=None):
    """torch's current stream as a Numba stream (``cuda.external_stream``), cached by handle;
    the legacy default stream is Numba's 0."""
    from kernels.compiler import cuda  # lazy: backend chosen first (numba)

    handle = current_stream_handle(device)
    if handle == 0:
        return 0
    s = _numba_streams.get(handle)
    if s is None:
        s = _numba_streams[handle] = cuda.external_stream(handle)
    return s


def _install() -> None:
    from numba.cuda.cudadrv import driver  # lazy: backend chosen first (numba)
    from numba.cuda.dispatcher import CUDADispatcher  # lazy: backend chosen first (numba)

    original = CUDADispatcher.call
    if getattr(original, "_lab_stream_aware", False):
        return

    def call(self, args, launch_config):
        stream = getattr(_tls, "stream", None)
        if stream is None or int(launch_config.stream.handle or 0) != 0:
            return original(self, args, launch_config)
        saved = launch_config.stream
        launch_config.stream = driver._to_core_stream(stream)
        try:
            return original(self, args, launch_config)
        finally:
            launch_config.stream = saved

    call._lab_stream_aware = True
    CUDADispatcher.call = call


@contextlib.contextmanager
def on_torch_stream(device=None):
    """Inside the block, Numba launches configured for the default stream go to torch's current
    stream (a no-op when that is the legacy default stream, or in the simulator)."""
    if is_simulator() or current_stream_handle(device) == 0:
        yield
        return
    from kernels.compiler import COMPILER, MLIR  # lazy: backend chosen first (numba)

    if COMPILER == MLIR:
        mine, legacy = torch.cuda.current_stream(device), torch.cuda.default_stream(device)
        legacy.wait_stream(mine)  # the launches below start after torch's queued work ...
        try:
            yield
        finally:
            mine.wait_stream(legacy)  # ... and torch's later work starts after them
        return
    _install()
    saved = getattr(_tls, "stream", None)
    _tls.stream = numba_stream(device)
    try:
        yield
    finally:
        _tls.stream = saved
