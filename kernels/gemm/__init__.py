"""The GEMM library behind matmul's rungs past the lesson (kernels/matmul.py keeps naive, shared and
register_tiled): one idea a module.

  tile.py          rung 4, tile64: a smaller block tile, more blocks
  split_k.py       rung 5, split_k: K ranges over grid z and the reduction launch every split rung uses
  skinny.py        rung 6, skinny_m: M <= 32
  vector.py        the vector rung: M = 1 or N = 1 as matrix-vector products, and the M = 1 column kernels
  config.py        GemmConfig and the configurations of rungs 7-9 (what a tuner varies)
  generator.py     gemm_kernel: the warp-tiled kernel built from a GemmConfig
  rungs.py         rungs 7-9 (warp_tiled, wide_loads, small): their launch math and prepare
  model.py         auto's launch model, from the tiles' measured times in rates.json
  build_options.py GPU-only compile options the builds share
  mma.py           tensor-core fragments, mma.sync and cp.async (inline PTX; emulated in the simulator)
  async_copy.py    FP32 SIMT with a cp.async shared-memory pipeline (numba-cuda-mlir)
  shared_vec.py    128-bit shared loads (ld.shared.v4) that round their words to TF32
  tensor_core_tf32.py  TF32 mma.sync m16n8k8 warp tiles fed by that pipeline (numba-cuda-mlir)
  mma_bf16.py      bfloat16 mma.sync m16n8k16, ldmatrix, 16-byte copies of bf16 (inline PTX; emulated)
  tensor_core_bf16.py  bf16 mma.sync m16n8k16 warp tiles with ldmatrix fragments, the same pipeline

Launch math reads the device from kernels.device_limits (SMs, shared memory a block, threads and
registers an SM). This package imports nothing at import time; import its modules.
"""
