"""mma_fragment: metadata, statement and hints."""
TITLE = "Tensor-core fragments: which lane holds which element of an mma.sync tile"
DIFFICULTY = 4
PREREQUISITES = ["warp_reduce", "tiled_matmul"]
MIRRORS = "kernels/matmul.py"  # its rung tensor_core_tf32 (kernels/gemm/tensor_core_tf32.py)
KERNEL = "mma_kernel"
LAUNCH = None
LESSON = "tensor_core"  # the fragments go through mma_tf32 (lab.teach.lessons): right values by plain FMAs fail
STATEMENT = """
mma_fragment: C = A @ B for float32 A[M, K], B[K, N] (M a multiple of 16, N and K multiples of 8)
on the tensor cores, with mma_tf32 (kernels.gemm.mma): one warp computes one 16 x 8 tile of C with
one mma.sync.m16n8k8 per 8 columns of A. The checker launches blocks of 32 threads (one warp),
grid (N // 8, M // 16): block (bx, by) computes C[16*by : 16*by + 16, 8*bx : 8*bx + 8], and only
that tile (one block looping over every tile gets the right values but fails: one warp a tile is
the mapping taught).

The instruction takes each operand spread over the 32 lanes of the warp, the *fragments*. With
g = lane // 4 and q = lane % 4, for the 16 x 8 tile of A at (r0, k0), the 8 x 8 tile of B at
(k0, c0) and the 16 x 8 tile of C at (r0, c0):

    a0 = A[r0 + g][k0 + q]      a1 = A[r0 + g + 8][k0 + q]
    a2 = A[r0 + g][k0 + q + 4]  a3 = A[r0 + g + 8][k0 + q + 4]
    b0 = B[k0 + q][c0 + g]      b1 = B[k0 + q + 4][c0 + g]
    c0, c1 -> C[r0 + g][c0 + 2q], C[r0 + g][c0 + 2q + 1]
    c2, c3 -> C[r0 + g + 8][c0 + 2q], C[r0 + g + 8][c0 + 2q + 1]

d0, d1, d2, d3 = mma_tf32(to_tf32(a0), to_tf32(a1), to_tf32(a2), to_tf32(a3), to_tf32(b0), to_tf32(b1),
c0, c1, c2, c3) returns this lane's four elements of A @ B + C (A and B rounded to TF32, a 10-bit
mantissa; float32 sums). Keep c0..c3 as the running sums over the K // 8 steps, then store them.

Pitfalls: every lane of the warp must call mma_tf32 at every step (it is a warp collective, like a
shuffle); the fragment of B is indexed [k][n] with q along k and g along n (transposed from A's);
the two C values a lane stores side by side are columns 2q and 2q + 1, not q and q + 4; the results
differ from float32 by TF32 rounding (the checker's tolerance is TF32's). In the simulator
mma_tf32 is an emulation with the same fragments (kernels/gemm/mma.py prints them:
python -c "from kernels.gemm.mma import fragment_picture; print(fragment_picture())").
(Sources: PTX ISA, "Matrix fragments for mma.m16n8k8" (.tf32); kernels/gemm/tensor_core_tf32.py;
docs/tensor-cores.md.)
"""
HINTS = [
    "lane = cuda.threadIdx.x; g = lane // 4; q = lane % 4; r0 = 16 * cuda.blockIdx.y; c0 = 8 * cuda.blockIdx.x; start with c0..c3 (name them d0..d3) = float32(0.0).",
    "for k0 in range(0, A.shape[1], 8): a0 = A[r0 + g, k0 + q], a1 = A[r0 + g + 8, k0 + q], a2 = A[r0 + g, k0 + q + 4], a3 = A[r0 + g + 8, k0 + q + 4]; b0 = B[k0 + q, c0 + g], b1 = B[k0 + q + 4, c0 + g]; d0, d1, d2, d3 = mma_tf32(to_tf32(a0), ..., to_tf32(b1), d0, d1, d2, d3).",
    "C[r0 + g, c0 + 2 * q] = d0; C[r0 + g, c0 + 2 * q + 1] = d1; C[r0 + g + 8, c0 + 2 * q] = d2; C[r0 + g + 8, c0 + 2 * q + 1] = d3.",
]
PASS_PCT_OF_REFERENCE = 50
PEAK = "fp32"
ONE_WRITER = True  # each element of C is written by exactly one lane
