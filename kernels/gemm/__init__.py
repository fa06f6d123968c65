"""The GEMM library behind matmul's rungs past the lesson: one idea a module (import its modules)."""
