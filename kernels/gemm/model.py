"""Matmul's auto: a launch model (wave quantization over measured tiles) that picks tile and split-K.

Source: the per-tile times in kernels/gemm/rates.json (``python scripts/gemm_rates.py``); the
wave arithmetic of NVIDIA's "Matrix Multiplication Background User's Guide" (wave quantization).
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

from kernels.gemm.config import GEMM_TILES
from kernels.gemm.rungs import tuned_gemm_config
from kernels.gemm.split_k import k_ranges
from kernels.spec import blocks_for, plural, sm_count
from kernels.warp import WARP


# --- auto: a launch model (wave quantization, measured tiles) -------------------------------------------
# cuBLAS picks a kernel per shape from a model of its kernels (the tile, the split-K factor, how many
# waves of blocks the SMs run); a fixed tile for a class of shapes cannot: 1024^3 wants 128 x 64 tiles
# (128 blocks: one an SM), 777 x 1333 x 901 then runs 147 blocks, 15 SMs doing two, and wants 32 x 64.
# So auto estimates each candidate (block tile, K ranges) from what the tiles measured on the H100:
# the times of a grid of exactly r blocks an SM (r x SMs tiles, wide_loads' build, the staged epilogue;
# ``python scripts/gemm_rates.py``).
# A shape's estimate: r = ceil(blocks / SMs) (the busiest SM's blocks), the K range's time
# interpolated between the measured K's (and r's; past r = 8 in proportion), plus the reduction
# launch when K is split. On another GPU the same per-SM times are assumed (only the SM count
# changes): a ranking of the candidates, not a prediction of its ms.
# RATES[tile][r] = (ms at K = 32, 256, 2048) of a grid of exactly r blocks an SM: kernels/gemm/rates.json
# (its device, date and versions with it), loaded once here.
RATES_FILE = Path(__file__).with_name("rates.json")


def load_rates(path=RATES_FILE) -> tuple[dict, tuple, dict]:
    """(RATES, RATE_KS, the whole file) of a rates file written as ``scripts/gemm_rates.py`` measures:
    {"ks": [32, 256, 2048], "tiles": {tile: {r: [ms at each k]}}, "reduce": {"fixed_ms", "bytes_per_ms"},
    "device", "date", "versions"}. ValueError naming the file when a row does not have a time a K."""
    data = json.loads(Path(path).read_text())
    ks = tuple(int(k) for k in data["ks"])
    rates = {tile: {int(r): tuple(float(v) for v in row) for r, row in rows.items()} for tile, rows in data["tiles"].items()}
    bad = [f"{t} r={r}" for t, rows in rates.items() for r, row in rows.items() if len(row) != len(ks)]
    if bad:
        raise ValueError(f"{path}: {', '.join(bad)}: not one time per K of {list(ks)}")
    return rates, ks, data


RATES, RATE_KS, RATES_INFO = load_rates()
MODEL_SPLITS = (1, 2, 4, 8, 16, 32, 64)
REDUCE_MS = RATES_INFO["reduce"]["fixed_ms"]  # the reduction launch: a fixed cost (5 us) ...
REDUCE_BYTES_PER_MS = RATES_INFO["reduce"]["bytes_per_ms"]  # ... and its bytes (splits + 1 arrays) at 1.2 TB/s


def _interp(x, xs, ys) -> float:
    """ys at x, linear between the points xs (increasing), and past the last two in their slope."""
    for i in range(1, len(xs)):
        if x <= xs[i] or i == len(xs) - 1:
            x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return ys[-1]


def wave_ms(tile: str, per_sm: int, k: int) -> float:
    """Estimated ms of a grid of ``tile`` blocks, ``per_sm`` on the busiest SM, each running K = k:
    RATES interpolated in K (at least the K = 32 time) and in r (past the last r, in proportion)."""
    rows = RATES[tile]
    rs = sorted(rows)
    at = {r: max(rows[r][0], _interp(k, RATE_KS, rows[r])) for r in rs}
    if per_sm >= rs[-1]:
        return at[rs[-1]] * per_sm / rs[-1]
    return _interp(per_sm, rs, [at[r] for r in rs])


def reduce_ms(splits: int, elements: int, itemsize: int = 4) -> float:
    """Estimated ms of the reduction launch over ``splits`` partials of ``elements`` words."""
    return REDUCE_MS + (splits + 1) * elements * itemsize / REDUCE_BYTES_PER_MS


def model_ms(size, tile: str, splits: int = 1) -> float | None:
    """Estimated ms of wide_loads with ``tile`` and ``splits`` K ranges at M x N x K (float32), or None
    where :func:`tuned_gemm_config` refuses the pair (a tile twice the output, a split of a grid that
    fills the SMs, K ranges under two slabs)."""
    m, n, k = size
    try:
        cfg, splits = tuned_gemm_config("wide_loads", size, {"tile": tile, "splits": splits})
    except ValueError:
        return None
    kchunk, splits = k_ranges(k, splits, cfg.bk)
    blocks = blocks_for(m, cfg.bm) * blocks_for(n, cfg.bn) * splits
    est = wave_ms(tile, blocks_for(blocks, sm_count()), kchunk)
    return est + (reduce_ms(splits, m * n) if splits > 1 else 0.0)


@functools.lru_cache(maxsize=4096)
def _model_pick(size, sms: int) -> tuple:
    """(estimated ms, tile, splits) of the fastest candidate :func:`model_ms` estimates at ``size`` on
    ``sms`` SMs. Remembered per (size, SMs): the 56 estimates take ~0.5 ms, and a torch op runs
    auto's launch math on every call."""
    return min((est, tile, s) for tile in RATES for s in MODEL_SPLITS if (est := model_ms(size, tile, s)) is not None)


def choose(size):
    """(rung, threads, why, params) for M x N x K, like cuBLAS's choice among its kernels:

    * N = 1 or M = 1: vector (a matrix-vector product: matvec's auto, or the column kernel);
    * else wide_loads with the block tile (of RATES) and K ranges (MODEL_SPLITS) that
      :func:`model_ms` estimates fastest: the busiest SM's blocks, the K range's time, the reduction.
    Measured on the H100 (torch.matmul ms / auto ms, TF32 off), the fixed rules this
    replaced: 1024^3 0.70x (small: 64 x 64 tiles, 2 an SM at 12% occupancy; cuBLAS ran 128 x 64 tiles,
    one an SM), 777 x 1333 x 901 0.59x (64 x 64: 273 blocks, 3 on some SMs; cuBLAS 32 x 64, 525
    blocks), 2500 x 17 x 3000 0.43x (64 x 64 split_k: 47 of each tile's 64 columns idle).
    ``lab tune`` measures instead, for each shape class (kernels/tuned/).
    """
    m, n, k = size
    if n == 1:  # the threads are matvec auto's own choice (the launch note names them)
        return "vector", 256, "N = 1: a matrix-vector product, A @ x"
    sms = sm_count()
    if m == 1:  # few column blocks (N < 16 x SMs): 32 warps a block down K keep more loads in flight
        t = 256 if 2 * blocks_for(n, WARP) >= sms else 1024
        return "vector", t, "M = 1: a vector-matrix product, x @ B"
    est, tile, splits = _model_pick(tuple(size), sms)
    cfg = GEMM_TILES[tile]
    blocks = blocks_for(m, cfg.bm) * blocks_for(n, cfg.bn) * splits
    why = (f"launch model: {tile} tiles" + (f", {splits} K ranges" if splits > 1 else "")
           + f", {plural(blocks, 'block')} for {sms} SMs, ~{est * 1e3:.0f} us estimated")
    return "wide_loads", cfg.threads, why, {"tile": tile, "splits": splits}
