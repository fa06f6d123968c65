"""Benchmark (not a test): the measurements behind matmul's launch model (kernels/gemm/rates.json,
loaded as ``kernels.gemm.model.RATES``).

For each block tile of ``RATES`` (``GEMM_TILES`` builds, read as float64 pairs, as
the wide_loads rung) and each r = 1, 2, 3, 4, 6, 8 blocks an SM, a grid of exactly r x SMs tiles
(:func:`grid_shape`: as square as whole rows allow) at K = 32, 256 and 2048 is timed with the
lab's timer (CUDA events, L2 flushed before each call, medians) after one call (at the shortest K
checked: max |error| against a float64 product, printed). Then the split-K reduction launch at a few
(splits, elements).

    python scripts/gemm_rates.py [--out measured.json] [--rates kernels/gemm/rates.json] [--tiles 128x64x16,32x32x32]

Output: a line a measurement (tile, r, MxNxK, ms, max error) and, with --out, a JSON file whose
"tiles" table is {tile: {r: [[K, ms], ...]}} and "reduce" [[splits, elements, ms], ...]. With
--rates, the launch model's data file itself (kernels/gemm/rates.json's form: "ks", "tiles"
{tile: {r: [ms at each K]}}, "reduce" {"fixed_ms", "bytes_per_ms"} fitted to the reduction's
times, and the device, date and versions), for the measured tiles (all of RATES' for the model).
Runs in about two minutes on an H100 (one compile a tile).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

PER_SM = (1, 2, 3, 4, 6, 8)
KS = (32, 256, 2048)
REDUCE = ((2, 4096), (8, 131072), (16, 65536), (64, 4096), (64, 16384), (32, 65536), (4, 1048576), (16, 1048576))


def grid_shape(tile: str, per_sm: int, sms: int) -> tuple[int, int]:
    """(M, N): exactly per_sm x sms tiles of ``tile``, as close to square a grid as whole rows allow."""
    bm, bn, _ = (int(x) for x in tile.split("x"))
    tiles = per_sm * sms
    rows = max(d for d in range(1, int(tiles ** 0.5) + 1) if tiles % d == 0)
    return bm * rows, bn * (tiles // rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="write the measurements as JSON here")
    ap.add_argument("--rates", default=None, help="write the launch model's data file (kernels/gemm/rates.json's form) here")
    ap.add_argument("--tiles", default=None, help="comma-separated GEMM_TILES names (default: RATES' tiles; '' "
                    "for none: only the reduction)")
    args = ap.parse_args()
    from kernels.gemm import config as GC, model as GM, rungs as GR, split_k as SK
    from kernels import spec as KS
    from kernels.compiler import SIMULATOR, cuda
    from kernels.gemm.model import RATES_INFO
    from lab.core.files import write_atomic
    from lab.core.timing import Timer

    if SIMULATOR:
        sys.exit("gemm_rates.py needs a GPU")
    tiles = list(GM.RATES) if args.tiles is None else [t for t in args.tiles.split(",") if t]
    if set(tiles) - set(GC.GEMM_TILES):
        ap.error(f"--tiles: {', '.join(sorted(set(tiles) - set(GC.GEMM_TILES)))} not in GEMM_TILES "
                 f"({', '.join(GC.GEMM_TILES)})")
    sms = KS.sm_count()
    rng = np.random.default_rng(0)
    out = {"device": cuda.get_current_device().name.decode() if isinstance(cuda.get_current_device().name, bytes)
           else str(cuda.get_current_device().name), "sms": sms, "tiles": {}, "reduce": []}

    def timed(fn) -> float:
        return Timer(fn, "device", sync=cuda.synchronize).measure(repeats=15).median_ms

    for tile in tiles:
        cfg = GC.GEMM_TILES[tile].replace(pairs=True)
        out["tiles"][tile] = {}
        for per_sm in PER_SM:
            m, n = grid_shape(tile, per_sm, sms)
            rows = []
            for k in KS:
                A = rng.standard_normal((m, k)).astype(np.float32)
                B = rng.standard_normal((k, n)).astype(np.float32)
                dA, dB = cuda.to_device(A), cuda.to_device(B)
                dC = cuda.device_array((m, n), np.float32)
                fn = GR.gemm_prepare_config(cfg, (dA, dB), (dC,))
                fn()
                cuda.synchronize()
                err = float(np.abs(dC.copy_to_host() - A.astype(np.float64) @ B).max()) if k == KS[0] else float("nan")
                ms = timed(fn)
                rows.append([k, ms])
                print(f"{tile:>11} r={per_sm} {m}x{n}x{k}: {ms:.4f} ms (max err {err:.1e})", flush=True)
            out["tiles"][tile][str(per_sm)] = rows
    for splits, elems in REDUCE:
        n = min(elems, 4096)
        m = elems // n
        W = cuda.to_device(rng.standard_normal((splits, m * n)).astype(np.float32))
        C = cuda.device_array(m * n, np.float32)
        launch = SK.split_k_reduce_kernel[SK.reduce_launch(splits, m * n)]
        ms = timed(lambda launch=launch, W=W, C=C: launch(W, C))
        out["reduce"].append([splits, m * n, ms])
        print(f"reduce {splits} x {m}x{n}: {ms:.4f} ms", flush=True)
    if args.out:
        write_atomic(args.out, json.dumps(out, indent=1))
    if args.rates:
        write_atomic(args.rates, json.dumps(rates_file(out, RATES_INFO), indent=1) + "\n")


def rates_file(out: dict, old: dict) -> dict:
    """The launch model's data file from this run's measurements ``out``: the tiles' times at KS,
    the reduction's fixed cost and bandwidth fitted (least squares) to its times against the bytes
    it moves ((splits + 1) x elements x 4), and where they come from; ``old`` (the file now) keeps
    its reduction fit when this run timed none."""
    import datetime
    import platform

    import numba

    reduce = dict(old["reduce"])
    if len(out["reduce"]) >= 2:
        nbytes = np.array([(s + 1) * e * 4 for s, e, _ in out["reduce"]], float)
        ms = np.array([m for *_, m in out["reduce"]], float)
        slope, fixed = np.polyfit(nbytes, ms, 1)
        reduce = {"fixed_ms": round(float(fixed), 4), "bytes_per_ms": float(f"{1 / slope:.3g}"),
                  "measured": ", ".join(f"{m * 1e3:.1f} us for {s} x {e} words" for s, e, m in out["reduce"])}
    versions = {"python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__}
    try:
        from importlib.metadata import version

        versions["numba-cuda"] = version("numba-cuda")
    except Exception:  # not installed as a distribution
        pass
    return {**{k: old[k] for k in ("what", "source")}, "device": out["device"], "sms": out["sms"],
            "date": datetime.date.today().isoformat(), "versions": versions, "ks": list(KS),
            "tiles": {t: {r: [ms for _, ms in rows] for r, rows in by_r.items()} for t, by_r in out["tiles"].items()},
            "reduce": reduce}


if __name__ == "__main__":
    main()
