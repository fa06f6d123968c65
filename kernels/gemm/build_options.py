"""Compile options the GEMM builds share: GPU-only, since the simulator's ``cuda.jit`` and
``cuda.shared.array`` reject them.

Source: the numba-cuda documentation, "Supported Python features in CUDA Python" (``cuda.shared.array``'s
``alignment``) and "Device functions" (``forceinline``); CUDA C++ Programming Guide, "Device Memory
Accesses" (a 16-byte aligned address lets 4 words load as one 128-bit instruction, LDS.128).
"""
from __future__ import annotations

from kernels.compiler import SIMULATOR

ALIGN = None if SIMULATOR else 16  # 16-byte aligned shared tiles, so 4 words can load as one LDS.128
FORCEINLINE = {} if SIMULATOR else {"forceinline": True}  # inline the helpers into the kernel (NVVM)
A_PAD = 4  # words of padding per transposed A row: conflict-free transposed stores, rows still 16-byte aligned
