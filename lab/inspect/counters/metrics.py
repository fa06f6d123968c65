"""The counters ``lab counters`` reports: one table, :data:`METRICS`, of what each row field is, which
Nsight Compute and CUPTI metrics it is made of, its unit and how it is derived; the ncu passes and
the CUPTI groups are built from (or checked against) it.

Nsight Compute metrics: Nsight Compute "Profiling Guide", metrics reference. CUPTI PM sampling
metrics: listed with ``cupti.profiler_host`` on the H100 (GH100, libcupti 13.5).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

STALL_PREFIX, STALL_SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
STALLS = f"regex:^{STALL_PREFIX}[a-z_]+{re.escape(STALL_SUFFIX)}$"
DURATION = "gpu__time_duration.sum"  # each kernel's duration: the weight of ncu's averages over kernels


@dataclass(frozen=True)
class Metric:
    """One field of a counters row.

    name: the row's key (``lab counters --json``); ncu, cupti: the metrics it is made of (empty: that
    engine does not measure it); unit; derive: how the field is computed from them over a call's
    kernels (ncu) or samples (CUPTI); phase: the ncu pass that collects it ("dram": the call as
    ``lab run`` times it, L2 shared between its kernels; "detail": ncu's per-kernel replay, caches
    flushed; "": derived, not collected); run: ``lab run --counters`` shows it. optional: collected
    only for a kernel that declares it (``KernelSpec.counter_metrics``), itself or through ``needs``
    (the metrics it is computed from): the tensor pipe and the SOL breakdown cost replay passes that
    a kernel without tensor cores has no use for.
    """

    name: str
    ncu: tuple[str, ...]
    cupti: tuple[str, ...]
    unit: str
    derive: str
    phase: str = "detail"
    run: bool = False
    optional: bool = False
    needs: tuple[str, ...] = ()


LD_SECTORS, LD_REQUESTS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
ST_SECTORS, ST_REQUESTS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
BANK = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")
SHARED = ("smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum")
CUPTI_LOAD_SHARE, CUPTI_L1_SECTORS = "l1tex__average_t_sector_pipe_lsu_mem_global_op_ld.ratio", "l1tex__t_sectors.sum"
CUPTI_LOAD_REQUESTS = "sm__inst_executed_pipe_lsu_mem_lg_cmd_read.sum"
CUPTI_L2_HIT, CUPTI_L2_SECTORS = "lts__average_t_sector_hit_rate_realtime.pct", "lts__t_sectors.sum"
CUPTI_WARPS, CUPTI_CYCLES = "sm__warps_active.sum", "sm__cycles_active.sum"
# the tensor pipe (mma.sync runs on its HMMA sub-pipe on the H100; measured there, docs/tensor-cores.md),
# shared-memory wavefronts (loads and stores: a conflict-free 32-bit warp access is one), the SOL breakdown
TENSOR = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
L1_THROUGHPUT, L2_THROUGHPUT = "l1tex__throughput.avg.pct_of_peak_sustained_active", "lts__throughput.avg.pct_of_peak_sustained_elapsed"
ISSUE = "sm__inst_issued.avg.pct_of_peak_sustained_active"
# cp.async (SASS LDGSTS: global to shared memory without registers) is not an ld.global (LDG): the SASS-level
# load efficiency (..._mem_global_op_ld.pct) sees none of its bytes, so a kernel whose global loads are all
# cp.async reads 0% there. Nsight Compute counts the copies under op "ldgsts" (Profiling Guide, Metrics
# Decoder and Memory Tables: L1/TEX "Global Load To Shared Store", access and bypass); the LDG and LDGSTS
# warp instructions tell whether a kernel's global loads are all copies.
LDGSTS_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum"
LDGSTS_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum"
LDGSTS_EFFICIENCY = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ldgsts.pct"
LDG_INSTRUCTIONS, LDGSTS_INSTRUCTIONS = "smsp__inst_executed_op_global_ld.sum", "smsp__inst_executed_op_ldgsts.sum"

METRICS: tuple[Metric, ...] = (
    Metric("dram_read_bytes", ("dram__bytes_read.sum",), ("dram__bytes_read.sum",), "bytes",
           "sum over the call's kernels", phase="dram", run=True),
    Metric("dram_write_bytes", ("dram__bytes_write.sum",), ("dram__bytes_write.sum",), "bytes",
           "sum over the call's kernels", phase="dram", run=True),
    Metric("dram_bytes_ratio", (), (), "x", "(DRAM bytes read + written) / min_bytes, the kernel's minimum "
           "traffic (KernelSpec.bytes_moved)", phase="", run=True),
    Metric("duration_ms", (DURATION,), (), "ms", "sum of the kernels' durations (the DRAM pass's, else the "
           "detail pass's)", phase="dram"),
    Metric("sectors_per_request", (LD_SECTORS, LD_REQUESTS), (CUPTI_LOAD_SHARE, CUPTI_L1_SECTORS, CUPTI_LOAD_REQUESTS),
           "sectors", "global load sectors / global load requests (CUPTI: the global loads' share of L1 sectors "
           "x L1 sectors / the LSU's local and global read instructions)", run=True),
    Metric("store_sectors_per_request", (ST_SECTORS, ST_REQUESTS), (), "sectors",
           "global store sectors / global store requests"),
    Metric("load_efficiency_pct", ("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",), (), "%",
           "bytes used per sector fetched by global loads (ld.global), averaged weighted by load sectors; null "
           "where a kernel read 0%: it executed no ld.global (cp.async copies are not ld.global: "
           "ldgsts_efficiency_pct)"),
    Metric("ideal_sectors_per_request", (), (), "sectors", "sectors_per_request x load efficiency: what the "
           "bytes used would need", phase=""),
    Metric("bank_conflicts", BANK, BANK, "conflicts", "shared-memory bank conflicts of loads + stores"),
    Metric("bank_ways", SHARED, (), "ways", "1 + bank conflicts / shared instructions (loads + stores)"),
    Metric("l2_read_bytes", ("lts__t_sectors_srcunit_tex_op_read.sum",), (), "bytes", "32 x L2 sectors read for L1"),
    Metric("l2_hit_pct", ("lts__t_sector_hit_rate.pct",), (CUPTI_L2_HIT, CUPTI_L2_SECTORS), "%",
           "averaged weighted by duration (CUPTI: by L2 sectors)"),
    Metric("achieved_occupancy_pct", ("sm__warps_active.avg.pct_of_peak_sustained_active",), (CUPTI_WARPS, CUPTI_CYCLES),
           "%", "averaged weighted by duration (CUPTI: active warps per active SM cycle / the SM's maximum warps)"),
    Metric("theoretical_occupancy_pct", ("sm__maximum_warps_per_active_cycle_pct",), (), "%",
           "for a Numba rung lab's occupancy calculator (lab occupancy), else ncu's, weighted by duration"),
    Metric("dram_throughput_pct", ("dram__throughput.avg.pct_of_peak_sustained_elapsed",), (), "%",
           "averaged weighted by duration"),
    Metric("sm_throughput_pct", ("sm__throughput.avg.pct_of_peak_sustained_elapsed",), (), "%",
           "averaged weighted by duration"),
    Metric("top_stalls", (STALLS,), (), "cycles per instruction", "the three largest stall reasons, each "
           "averaged weighted by duration, with their share of all stalls"),
    # optional: collected for the kernels that declare them (matmul's tensor-core rungs)
    Metric("tensor_pipe_pct", (TENSOR,), (TENSOR, CUPTI_CYCLES), "%", "cycles the tensor pipe's HMMA sub-pipe "
           "(mma.sync) was busy, % of its peak over active cycles, averaged weighted by duration (CUPTI: by "
           "active SM cycles, where the chip's PM sampling takes it)", optional=True),
    Metric("shared_wavefronts", (WAVEFRONTS,), (), "wavefronts", "shared-memory wavefronts (loads and stores; "
           "a wavefront is one pass of the 32 banks), sum over the call's kernels", optional=True),
    Metric("shared_loads", (SHARED[0],), (), "instructions", "warp-level shared load instructions, summed",
           optional=True),
    Metric("shared_wavefronts_per_request", (WAVEFRONTS, *SHARED), (), "wavefronts",
           "shared wavefronts / shared instructions (loads + stores): 1 for conflict-free 32-bit accesses, "
           "more for conflicts or for 64/128-bit accesses (2/4)", optional=True,
           needs=("shared_wavefronts", "shared_loads")),
    Metric("conflicts_per_shared_load", (BANK[0], SHARED[0]), (), "conflicts", "shared load bank conflicts / "
           "shared load instructions: 0 conflict-free, 1 a 2-way conflict on every load", optional=True),
    Metric("l1_throughput_pct", (L1_THROUGHPUT,), (), "%", "L1/TEX (and shared memory) throughput, % of peak "
           "(ncu's Speed Of Light), averaged weighted by duration", optional=True),
    Metric("l2_throughput_pct", (L2_THROUGHPUT,), (), "%", "L2 throughput, % of peak (Speed Of Light), averaged "
           "weighted by duration", optional=True),
    Metric("issue_active_pct", (ISSUE,), (), "%", "issue slots busy: instructions issued, % of the SM's peak over "
           "active cycles, averaged weighted by duration", optional=True),
    Metric("global_load_instructions", (LDG_INSTRUCTIONS,), (), "instructions", "warp-level ld.global (LDG) "
           "instructions, summed", optional=True),
    Metric("ldgsts_instructions", (LDGSTS_INSTRUCTIONS,), (), "instructions", "warp-level cp.async (LDGSTS) "
           "instructions, summed", optional=True),
    Metric("ldgsts_requests", (LDGSTS_REQUESTS,), (), "requests", "cp.async (LDGSTS) requests to L1/TEX, summed",
           optional=True),
    Metric("ldgsts_sectors", (LDGSTS_SECTORS,), (), "sectors", "sectors cp.async (LDGSTS) requests fetched, summed",
           optional=True),
    Metric("ldgsts_sectors_per_request", (LDGSTS_SECTORS, LDGSTS_REQUESTS), (), "sectors", "cp.async (LDGSTS) "
           "sectors / requests: the sectors a request of a kernel whose global loads are copies (16 for coalesced "
           "16-byte copies)", optional=True,
           needs=("ldgsts_requests", "ldgsts_sectors", "ldgsts_efficiency_pct", "global_load_instructions",
                  "ldgsts_instructions")),
    Metric("ldgsts_efficiency_pct", (LDGSTS_EFFICIENCY,), (), "%", "bytes used per sector fetched by cp.async "
           "(LDGSTS), averaged weighted by LDGSTS sectors", optional=True),
    Metric("bound", (), (), "label", "tensor-bound, memory-bound, issue-bound, compute-bound or latency-bound: what "
           "limits the call, from the SOL throughputs and the tensor pipe (lab.inspect.counters.bound)", phase="",
           optional=True, needs=("tensor_pipe_pct", "l1_throughput_pct", "l2_throughput_pct", "issue_active_pct")),
)
BY_NAME = {m.name: m for m in METRICS}


def declared(names) -> list[Metric]:
    """The metrics ``names`` (a kernel's ``counter_metrics``) and those they need, each once, in METRICS' order."""
    want, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name not in want:
            want.add(name)
            todo += BY_NAME[name].needs
    return [m for m in METRICS if m.name in want]


def _ncu(phase: str, run_only: bool = False, extra: tuple[str, ...] = ()) -> list[str]:
    """The ncu metrics of pass ``phase`` (each once, in METRICS' order), the kernels' duration first; the
    optional ones only where named in ``extra`` (with what they need)."""
    names = [DURATION] if phase == "detail" else []
    chosen = {m.name for m in declared(extra)}
    for m in METRICS:
        if m.phase == phase and (m.run or not run_only) and (not m.optional or m.name in chosen):
            names += [n for n in m.ncu if n not in names]
    return names + ([DURATION] if phase == "dram" and DURATION not in names else [])


# phase 1: the call as lab run times it (L2 flushed before the call, kept between its kernels)
DRAM_METRICS = _ncu("dram")
# phase 2: per-kernel replay, caches flushed before each kernel (ncu's default)
DETAIL_METRICS = _ncu("detail")
PHASES = (("dram", DRAM_METRICS, "none"), ("detail", DETAIL_METRICS, "all"))
# lab run --counters: its two columns only (DRAM bytes ratio, sectors per load request), fewer replays
RUN_PHASES = (("dram", DRAM_METRICS, "none"), ("detail", _ncu("detail", run_only=True), "all"))


def phases_for(counter_metrics) -> tuple:
    """PHASES with the optional metrics a kernel declares (``KernelSpec.counter_metrics``) added to its
    detail pass: PHASES itself for a kernel that declares none."""
    return (PHASES[0], ("detail", _ncu("detail", extra=tuple(counter_metrics)), "all"))

# CUPTI PM sampling: what the chip's PM sampling offers of METRICS' cupti metrics, each group in a pass of its
# own (the call repeated, as ncu replays). On the H100 (GH100, libcupti 13.5): no global-load sector or
# request counters, but the proportion of L1 sectors that are global loads (times all L1 sectors: the load
# sectors) and the LSU's local/global read instructions (the load requests). A counter (.sum) adds up over
# the samples of one call; a ratio (.ratio, .pct) is averaged over them weighted by the counter CUPTI_WEIGHT
# names (in the same group). DRAM bytes are required; a group the chip cannot take in one pass is null (on
# the H100 every group below fits; sectors and requests together did not).
CUPTI_GROUPS = (
    ("DRAM bytes", ("dram__bytes_read.sum", "dram__bytes_write.sum")),
    ("load sectors", (CUPTI_LOAD_SHARE, CUPTI_L1_SECTORS)),
    ("load requests", (CUPTI_LOAD_REQUESTS,)),  # not in one pass with the sectors
    ("L2 hit rate", (CUPTI_L2_HIT, CUPTI_L2_SECTORS)),
    ("bank conflicts", BANK),
    ("achieved occupancy", (CUPTI_WARPS, CUPTI_CYCLES)),
)
# Groups sampled only for a kernel that declares their metric (KernelSpec.counter_metrics). Whether the chip's
# PM sampling takes them is asked of CUPTI at run time (choose_cupti_groups): a group it refuses is null, noted.
CUPTI_OPTIONAL_GROUPS = {"tensor_pipe_pct": ("tensor pipe", (TENSOR, CUPTI_CYCLES))}
CUPTI_WEIGHT = {CUPTI_LOAD_SHARE: CUPTI_L1_SECTORS, CUPTI_L2_HIT: CUPTI_L2_SECTORS, TENSOR: CUPTI_CYCLES}

TIME_UNITS = {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9}  # to ns
PREFIXES = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def unit_scale(unit: str) -> float:
    """The factor from ``unit`` to the base unit (bytes, sectors, ..., ns): "Mbyte" 1e6, "Ksector" 1e3,
    "usecond" 1e3, "KiB" 1024, "%" 1. ``--print-units base`` makes all of them 1; this reads logs
    made without it."""
    u = unit.strip().lower()
    if u in TIME_UNITS:
        return TIME_UNITS[u]
    if len(u) == 3 and u[1:] == "ib" and u[0] in PREFIXES:
        return 1024.0 ** (" kmgt".index(u[0]))
    if len(u) > 1 and u[0] in PREFIXES and u[1:] in ("byte", "sector", "request", "inst", "warp", "cycle", "thread",
                                                       "block", "wavefront"):
        return PREFIXES[u[0]]
    return 1.0


def metrics_of_interest(spec) -> list[Metric]:
    """The metrics a kernel's lesson is about (its ``KernelSpec.counter_metrics``), from the table."""
    return [BY_NAME[name] for name in spec.counter_metrics]
