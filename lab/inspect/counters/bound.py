"""What limits a call: tensor-bound, memory-bound, issue-bound, compute-bound or latency-bound, from a
counters row's Speed Of Light throughputs, its tensor pipe and its top stall. Data only.

The thresholds are those of Nsight Compute's own guidance (Profiling Guide, "Speed Of Light" and the
SOLBottleneck rule of its GPU Speed Of Light Throughput section,
https://docs.nvidia.com/nsight-compute/ProfilingGuide/): each unit's throughput is a percentage of
its theoretical peak; "achieved compute throughput and/or memory bandwidth below 60.0% of peak
typically indicate latency issues", and a unit at or above that is the one to look at first (the
roofline places a kernel under the roof of the unit it is closest to). So:

* **tensor-bound**: the tensor pipe (``sm__pipe_tensor_op_hmma_cycles_active``, % of its peak
  over active cycles) at or above :data:`TENSOR_BOUND_PCT`, and at least as close to its peak as
  any memory unit is to its own;
* **memory-bound**: the busiest memory unit (DRAM, L2, L1/TEX with shared memory) at or above
  :data:`MEMORY_BOUND_PCT` of its peak;
* **issue-bound** / **compute-bound**: SM throughput (``sm__throughput``, the busiest of the SM's
  pipes and its issue slots) at or above :data:`COMPUTE_BOUND_PCT` with the tensor pipe below its
  threshold: issue-bound where the issue slots are that busy (:data:`ISSUE_BOUND_PCT`), the
  instruction stream too long for the work, else compute-bound on some other pipe;
* **latency-bound**: none of them: neither the tensor pipe, the SM nor memory near its peak. The
  warps wait; the top stall reason (``smsp__average_warps_issue_stalled_*``) says on what.
"""
from __future__ import annotations

from typing import NamedTuple

# Nsight Compute's SOL rule: below 60% of peak on compute and memory alike, latency is the limiter.
MEMORY_BOUND_PCT = 60.0
COMPUTE_BOUND_PCT = 60.0
TENSOR_BOUND_PCT = 60.0
ISSUE_BOUND_PCT = 60.0
# shared-memory bank conflicts a load worth a clause of the verdict even below the 1.5-way of bank_ways
SHARED_CONFLICTS_NOTE = 0.25
BOUNDS = ("tensor-bound", "memory-bound", "issue-bound", "compute-bound", "latency-bound")

# the memory units of the SOL breakdown: row field, name in the verdict
MEMORY_UNITS = (("dram_throughput_pct", "DRAM"), ("l2_throughput_pct", "L2"), ("l1_throughput_pct", "L1/shared"))


class Bound(NamedTuple):
    """``kind``: one of BOUNDS; ``text``: the verdict's clause ("tensor-bound: tensor pipe 85% of peak")."""

    kind: str
    text: str


def _stall(row) -> str:
    stall = (row.get("top_stalls") or [{}])[0].get("reason")
    return f", mostly stalled on {stall}" if stall else ""


def bound(row, ratio: float | None = None) -> Bound | None:
    """What limits the call of ``row`` (a CounterRow or its JSON dict), or None where nothing says
    (no throughput and no tensor pipe measured: the simulator, CUPTI's PM sampling). ``ratio``: DRAM
    bytes over the minimum, named where DRAM is the limit. A row without the optional metrics (tensor
    pipe, L1, L2, issue slots) reads as it always did: memory-bound on DRAM, compute-bound on the SM,
    else latency-bound."""
    tensor, sm, issue = row.get("tensor_pipe_pct"), row.get("sm_throughput_pct"), row.get("issue_active_pct")
    memory = [(row.get(key), name) for key, name in MEMORY_UNITS if row.get(key) is not None]
    if sm is None and not memory and (tensor is None or tensor < TENSOR_BOUND_PCT):
        return None  # a tensor pipe below its peak alone says nothing of what else limits the call
    mem_pct, mem_name = max(memory, key=lambda m: m[0]) if memory else (None, "")
    pipe = f", tensor pipe {tensor:.0f}%" if tensor is not None else ""
    if tensor is not None and tensor >= TENSOR_BOUND_PCT and tensor >= (mem_pct or 0):
        return Bound("tensor-bound", f"tensor-bound: tensor pipe {tensor:.0f}% of peak"
                                     + (f", {mem_pct:.0f}% of {mem_name} peak" if mem_pct is not None else ""))
    if mem_pct is not None and mem_pct >= MEMORY_BOUND_PCT:
        times = f", {ratio:.2f}x minimum bytes" if ratio is not None and mem_name == "DRAM" else ""
        others = [f"{name} {pct:.0f}%" for pct, name in memory if name != mem_name] + [pipe.lstrip(", ")] * bool(pipe)
        detail = f" ({', '.join(others)})" if others else ""
        return Bound("memory-bound", f"memory-bound: {mem_pct:.0f}% of {mem_name} peak{times}{detail}")
    if sm is not None and sm >= COMPUTE_BOUND_PCT:
        if issue is not None and issue >= ISSUE_BOUND_PCT:
            return Bound("issue-bound", f"issue-bound: issue slots {issue:.0f}% busy, {sm:.0f}% of SM peak"
                                        f"{pipe}{_stall(row)}")
        return Bound("compute-bound", f"compute-bound: {sm:.0f}% of SM peak" + (
            f" (not the tensor pipe: {tensor:.0f}%)" if tensor is not None else ""))
    if not memory or (sm is None and tensor is None):
        return None  # latency-bound means low on both sides: one side unmeasured says nothing
    occ = row.get("achieved_occupancy_pct")
    low = f", {occ:.0f}% achieved occupancy" if occ is not None and occ < 30 else ""
    if tensor is None and {name for _, name in memory} == {"DRAM"}:  # DRAM and SM: the words of earlier versions
        return Bound("latency-bound", f"latency-bound: {mem_pct:.0f}% of DRAM peak, {sm:.0f}% of SM peak"
                                      f"{low}{_stall(row)}")
    units = ([f"tensor pipe {tensor:.0f}%"] if tensor is not None else []) + (
        [f"SM {sm:.0f}%"] if sm is not None else []) + [f"{name} {pct:.0f}%" for pct, name in memory]
    return Bound("latency-bound", f"latency-bound: {', '.join(units)} of peak{low}{_stall(row)}")
