"""The Numba GPU kernel lab: run, check and time Numba CUDA kernels beside NumPy, CuPy and torch."""
__version__ = "0.1.0"
