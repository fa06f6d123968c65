"""tiled_matmul: the size ``--bench`` times: 1024 x 1024 x 1024 on a GPU (2 GFLOP), 24 x 16 x 32 in
the simulator; compute-bound, so graded against the FP32 peak (meta PEAK)."""
from exercises import Case, randn


def case(rng, simulator):
    m, n, k = (24, 16, 32) if simulator else (1024, 1024, 1024)
    A, B = randn(rng, (m, k)), randn(rng, (k, n))
    return Case(f"M={m} N={n} K={k}", [A, B], [((m, n), A.dtype)], [None], [None], launch_args=(m, n))


def flops(case):
    """2 M N K: a multiply and an add per term."""
    (m, k), n = case.args[0].shape, case.args[1].shape[1]
    return 2 * m * n * k


def rung_size(case):
    """kernels/matmul.py's size (M, N, K)."""
    (m, k), n = case.args[0].shape, case.args[1].shape[1]
    return (m, n, k)
