"""``lab counters --sim``: Numba's CUDA simulator with :class:`lab.core.trace.SectorTracer`: sectors
per request and bytes touched from the recorded addresses of every warp's loads and stores, at each
kernel's small ``KernelSpec.counter_size``. DRAM, L2, occupancy and stalls are ``null`` there
(nothing measures them)."""
from __future__ import annotations

from lab.core import simulator, resources, device

import numpy as np

from lab.core.trace import SIM_LABEL, SectorTracer
from lab.inspect.counters.row import CounterRow

# the simulator set up for counting: the lab's one set-up (switch interval, shared-array lock), restored after
simulator_threads = simulator.threads


def simulate(spec, shape, threads, dtype, names, seed, progress) -> dict:
    """Trace each rung of ``names`` once at ``shape``; the document's device, tool, engine, rows and notes."""
    min_bytes = int(spec.bytes_moved(shape, np.dtype(dtype)))
    rows, notes = [], [f"{SIM_LABEL}: every warp's global loads and stores in Numba's CUDA simulator, "
                       "32-byte sectors per request; DRAM, L2, occupancy and stalls need a GPU (null)"]
    with simulator_threads():
        for i, v in enumerate(names):
            if progress:
                progress(i, len(names), f"numba {v}")
            why = spec.variants[v].accepts(threads)
            if why:
                rows.append(CounterRow.blank("numba", v, min_bytes, "skipped", f"{v} {why}"))
                continue
            with SectorTracer() as tr:
                try:
                    resources.run_variant(spec, v, shape, threads, dtype, seed)
                except Exception as e:  # a rung that raises is a row, not a crash
                    rows.append(CounterRow.blank("numba", v, min_bytes, "FAIL", f"raised {type(e).__name__}: {e}"))
                    continue
            rows.append(_sim_row(v, tr.summary(), min_bytes))
    if progress:
        progress(len(names), len(names), "done")
    return {"device": device.describe(True), "tool": "simulator", "engine": SIM_LABEL, "rows": rows, "notes": notes}


def _sim_row(variant: str, s: dict, min_bytes: int) -> CounterRow:
    """The row of one traced rung from the tracer's summary ``s``."""
    row = CounterRow.blank("numba", variant, min_bytes)
    ld, st = s["load"], s["store"]
    loads = [i for i in s["instructions"] if i.kind == "load"]
    worst = max(loads, key=lambda i: (i.stats.sectors_per_request or 0, i.stats.requests), default=None)
    return row.with_(sectors_per_request=ld.sectors_per_request, load_efficiency_pct=ld.efficiency_pct,
                     ideal_sectors_per_request=ld.ideal_per_request, store_sectors_per_request=st.sectors_per_request,
                     load_requests=ld.requests, load_sectors=ld.sectors, store_requests=st.requests,
                     store_sectors=st.sectors, atomic_requests=s["atomic"].requests,
                     bytes_touched=s["bytes_touched"], sector_bytes=s["sector_bytes"],
                     worst_load=(f"{worst.array} at {worst.where}, {worst.stats.sectors_per_request:.1f} a request"
                                 if worst and worst.stats.sectors_per_request else None),
                     instructions=[i.as_dict() for i in s["instructions"]], untraced=s["untraced"], top_stalls=None,
                     source=SIM_LABEL)

