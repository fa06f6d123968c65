"""quantize: metadata, statement and hints."""
TITLE = "Affine uint8 quantization (the seed's formula)"
DIFFICULTY = 2
PREREQUISITES = ["vecadd", "minmax"]
MIRRORS = "kernels/quantize.py"
KERNEL = "quantize_kernel"
LAUNCH = None
LESSON = "one_element_per_thread"  # the mapping the checker grades (lab.teach.lessons.LESSONS): right values another way fail
PASS_PCT_OF_REFERENCE = 70  # lab exercise check --bench: at least this % of the reference solution's speed
PEAK = "copy"  # --bench reports % of the copy bandwidth (memory-bound)
ONE_WRITER = True  # each output element is written by exactly one thread (the checker counts writers)
STATEMENT = """
quantize: q[i] = round(clamp(x[i] / scale + zero_point, 0, 255)) as uint8, one thread per element.
scale and zero_point come from min(x) and max(x) (the seed's quantize_tensor, computed for you on the
host with kernels/quantize.py's quantize_params): scale = (max - min) / 255,
zero_point = int(clamp(0 - min / scale, 0, 255)).

x float32[n], scale float (python), zero_point int, q uint8[n]. The checker launches
ceil(n / 64) blocks of 64 threads.

Rounding: to nearest, ties to even, as the seed's torch.round and np.round do: Python's round(v)
(2.5 -> 2, 3.5 -> 4; on a GPU too). math.floor(v + 0.5) and int(v + 0.5) round every tie up and
fail the "ties at .5" test; int(v) truncates (every code whose fraction is >= .5 comes out one too
low). A code may differ from the float64 reference by 1 only where v lies within 0.001 of a .5
boundary without being exactly on it (float32 rounding may land on either side).

Pitfalls: clamp before converting (an all-positive tensor has zero_point 0 and codes above 255
that a uint8 would wrap); guard i < n. (Source: the seed notebook ARENA 2.0, "Quantization from
first principles"; kernels/quantize.py.)
"""
HINTS = [
    "i = cuda.grid(1); if i < q.shape[0]: v = x[i] / scale + zero_point",
    "Clamp: v = min(max(v, 0.0), 255.0). Then round to nearest, ties to even: round(v) (not math.floor(v + 0.5), which rounds 2.5 up to 3).",
    "q[i] = round(min(max(x[i] / scale + zero_point, 0.0), 255.0))",
]
