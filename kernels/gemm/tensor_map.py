"""The tensor map a TMA copy reads: ``cuTensorMapEncodeTiled`` from the CUDA driver, 128 bytes for the GPU.

Hopper's Tensor Memory Accelerator (TMA) copies a *box* of a 2-D (up to 5-D) array between global and
shared memory in one instruction (``cp.async.bulk.tensor``), issued by one thread. What to copy is not in
the instruction: it names a 128-byte, 64-byte-aligned *tensor map* (``CUtensorMap``) that the host encodes
once with the driver -- the array's address, element type, sizes and row stride (a multiple of 16 bytes),
the box (each side at most 256 elements; with a swizzle the inner side at most the swizzle's width, 128
bytes for SWIZZLE_128B), the shared-memory swizzle the copy writes (:data:`SWIZZLE_128B`: 16-byte chunk c of
box row r lands at chunk c ^ (r % 8), the layout the wgmma descriptors' 128-byte swizzle mode reads), and
what to write for elements past the array's edges (zeros: ``CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE``).

This is the lab's one wrapper of a driver call. It uses NVIDIA's ``cuda.bindings`` (cuda-python, which
numba-cuda-mlir itself requires) and returns the map's bytes; the kernels copy them to a device buffer and
pass its address (PTX ISA: the tensor-map operand of ``cp.async.bulk.tensor`` may be in the .param, .const or
.global state space; a map written before the launch needs no proxy fence).

Sources: CUDA Driver API, "Tensor Map Object Management" (cuTensorMapEncodeTiled, CUtensorMap,
CUtensorMapSwizzle); CUDA C++ Programming Guide, "Asynchronous Data Copies using the Tensor Memory
Accelerator (TMA)"; PTX ISA 8.x, "cp.async.bulk.tensor", "Tensor-map".
"""
from __future__ import annotations

import numpy as np

SWIZZLE_NONE, SWIZZLE_32B, SWIZZLE_64B, SWIZZLE_128B = 0, 1, 2, 3  # CUtensorMapSwizzle
SWIZZLE_BYTES = {SWIZZLE_NONE: 0, SWIZZLE_32B: 32, SWIZZLE_64B: 64, SWIZZLE_128B: 128}
MAP_BYTES, MAP_ALIGN = 128, 64
BOX_MAX = 256


def check_2d(rows: int, cols: int, row_bytes: int, itemsize: int, box_rows: int, box_cols: int,
             swizzle: int = SWIZZLE_128B) -> None:
    """ValueError (one line, naming the limit) unless cuTensorMapEncodeTiled's rules hold for a rows x cols
    array of ``itemsize``-byte elements, rows ``row_bytes`` apart, and a box_rows x box_cols box: row stride a
    multiple of 16 bytes and at least a row; box sides 1 .. 256; the box's row at most the swizzle's width."""
    if rows < 1 or cols < 1:
        raise ValueError(f"tensor map: a {rows} x {cols} array (each side at least 1)")
    if row_bytes % 16 or row_bytes < cols * itemsize:
        raise ValueError(f"tensor map: rows {row_bytes} bytes apart (a multiple of 16, at least {cols * itemsize})")
    if not (1 <= box_rows <= BOX_MAX and 1 <= box_cols <= BOX_MAX):
        raise ValueError(f"tensor map: box {box_rows} x {box_cols} (each side 1 .. {BOX_MAX})")
    width = SWIZZLE_BYTES[swizzle]
    if width and box_cols * itemsize > width:
        raise ValueError(f"tensor map: a box row of {box_cols * itemsize} bytes (at most {width} with this swizzle)")


def encode_2d(address: int, itemsize: int, rows: int, cols: int, row_bytes: int, box_rows: int, box_cols: int,
              swizzle: int = SWIZZLE_128B) -> bytes:
    """The 128 bytes of the CUtensorMap for the row-major rows x cols array at device ``address`` (elements of
    ``itemsize`` 2 or 4 bytes, copied as raw bits: UINT16 or UINT32), rows ``row_bytes`` apart, boxes of
    box_rows x box_cols (the copy's coordinates are {column, row}, in elements), written to shared memory
    with ``swizzle``, zeros past the edges, L2 promotion of 256 bytes. ValueError if :func:`check_2d` refuses
    or itemsize is not 2 or 4; RuntimeError naming the CUresult if the driver refuses."""
    from cuda.bindings import driver as D  # lazy: optional (cuda)

    check_2d(rows, cols, row_bytes, itemsize, box_rows, box_cols, swizzle)
    types = {2: D.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT16,
             4: D.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT32}
    if itemsize not in types:
        raise ValueError(f"tensor map: {itemsize}-byte elements (2 or 4)")
    err, tmap = D.cuTensorMapEncodeTiled(
        types[itemsize], 2, address, [D.cuuint64_t(cols), D.cuuint64_t(rows)], [D.cuuint64_t(row_bytes)],
        [D.cuuint32_t(box_cols), D.cuuint32_t(box_rows)], [D.cuuint32_t(1), D.cuuint32_t(1)],
        D.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, D.CUtensorMapSwizzle(swizzle),
        D.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        D.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != D.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled: {err}")
    return np.array([int(w) for w in tmap.opaque], np.uint64).tobytes()  # the 16 64-bit words of the opaque map, little-endian


def swizzled_offset(r, c, itemsize: int):
    """Byte offset in shared memory where a TMA copy with :data:`SWIZZLE_128B` puts element (r, c) of its box
    (rows of 128 bytes; the destination 1,024-byte aligned): row r at 128 r, its 16-byte chunk j at chunk
    j ^ (r % 8) (CUDA C++ Programming Guide, TMA swizzle patterns). Arrays or ints (numpy); the simulator's
    tests compare it with the layouts the wgmma descriptors read (kernels.gemm.wgmma_bf16)."""
    r, c = np.asarray(r), np.asarray(c)
    byte = c * itemsize
    return r * 128 + (((byte // 16) ^ (r % 8)) * 16) + byte % 16
