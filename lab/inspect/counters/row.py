"""One row of ``lab counters``: a contender (a Numba rung or a library op) and what its call did.

:class:`CounterRow` is the one row type of every engine (ncu, CUPTI, the simulator's tracer): a
frozen dataclass whose fields are the ``lab counters --json`` row keys, each optional. A field an
engine never filled is left out of the row's dict (:meth:`CounterRow.as_dict`); one it filled with
"not measured" is ``None`` (JSON null). The DRAM ratio is computed in one place, :func:`dram_ratio`.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from lab.inspect.counters.bound import SHARED_CONFLICTS_NOTE, bound


class _Unset:
    """The value of a field no engine filled: left out of :meth:`CounterRow.as_dict`."""

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()

# The keys every row has (null where the engine does not measure them): docs/schemas/counters.json.
ROW_KEYS = ("contender", "variant", "dram_read_bytes", "dram_write_bytes", "min_bytes", "sectors_per_request",
            "load_efficiency_pct", "l2_hit_pct", "bank_conflicts", "achieved_occupancy_pct",
            "theoretical_occupancy_pct", "top_stalls")


def dram_ratio(read, write, min_bytes) -> float | None:
    """DRAM bytes read and written over the kernel's minimum traffic (``KernelSpec.bytes_moved``): 1.0
    moves the floor, 2.0 twice it. None where nothing was read or there is no minimum."""
    if read is None or read is UNSET or not min_bytes:
        return None
    return (read + (write or 0)) / min_bytes


@dataclasses.dataclass(frozen=True)
class CounterRow:
    """A counters row; see lab.inspect.counters.metrics.METRICS for what each measured field is."""

    contender: str = UNSET
    variant: str = UNSET
    dram_read_bytes: float | None = UNSET
    dram_write_bytes: float | None = UNSET
    min_bytes: int = UNSET
    sectors_per_request: float | None = UNSET
    load_efficiency_pct: float | None = UNSET
    l2_hit_pct: float | None = UNSET
    bank_conflicts: int | None = UNSET
    achieved_occupancy_pct: float | None = UNSET
    theoretical_occupancy_pct: float | None = UNSET
    top_stalls: list | None = UNSET
    status: str = UNSET  # "ok", "skipped" or "FAIL"
    reason: str = UNSET
    # ncu (and some from CUPTI or the simulator)
    store_sectors_per_request: float | None = UNSET
    ideal_sectors_per_request: float | None = UNSET
    load_sectors: float | None = UNSET
    load_requests: float | None = UNSET
    l2_read_bytes: float | None = UNSET
    bank_conflicts_load: float | None = UNSET
    bank_conflicts_store: float | None = UNSET
    shared_instructions: float | None = UNSET
    bank_ways: float | None = UNSET
    dram_throughput_pct: float | None = UNSET
    sm_throughput_pct: float | None = UNSET
    duration_ms: float | None = UNSET
    # ncu, optional (declared by the kernel: KernelSpec.counter_metrics)
    tensor_pipe_pct: float | None = UNSET
    shared_wavefronts: float | None = UNSET
    shared_loads: float | None = UNSET
    shared_wavefronts_per_request: float | None = UNSET
    conflicts_per_shared_load: float | None = UNSET
    l1_throughput_pct: float | None = UNSET
    l2_throughput_pct: float | None = UNSET
    issue_active_pct: float | None = UNSET
    global_load_instructions: float | None = UNSET
    ldgsts_instructions: float | None = UNSET
    ldgsts_requests: float | None = UNSET
    ldgsts_sectors: float | None = UNSET
    ldgsts_sectors_per_request: float | None = UNSET
    ldgsts_efficiency_pct: float | None = UNSET
    kernels: int = UNSET
    kernel_names: list = UNSET
    # CUPTI
    pm_samples: int | None = UNSET
    # the simulator's tracer
    store_requests: int | None = UNSET
    store_sectors: int | None = UNSET
    atomic_requests: int | None = UNSET
    bytes_touched: int | None = UNSET
    sector_bytes: int | None = UNSET
    worst_load: str | None = UNSET
    instructions: list = UNSET
    untraced: Any = UNSET
    source: str = UNSET
    # derived
    theoretical_occupancy_source: str = UNSET
    dram_bytes_ratio: float | None = UNSET
    verdict: str = UNSET
    bound: str | None = UNSET  # lab.inspect.counters.bound.BOUNDS, or None where nothing measured it
    # the order the fields were filled in (the JSON row's key order, as a dict filled the same way would have)
    _order: tuple = dataclasses.field(default=(), repr=False, compare=False)

    def __post_init__(self):
        if self.dram_bytes_ratio is UNSET:  # wherever DRAM bytes were measured
            ratio = dram_ratio(self.dram_read_bytes, self.dram_write_bytes, self.min_bytes)
            if ratio is not None:
                object.__setattr__(self, "dram_bytes_ratio", ratio)

    @classmethod
    def blank(cls, contender: str, variant: str, min_bytes: int, status: str = "ok", reason: str = "") -> CounterRow:
        """A row with every ROW_KEYS field null, before any engine measured it."""
        return cls(**{**dict.fromkeys(ROW_KEYS), "contender": contender, "variant": variant, "min_bytes": min_bytes,
                      "status": status, "reason": reason}, _order=(*ROW_KEYS, "status", "reason"))

    def with_(self, **fields) -> CounterRow:
        """This row with ``fields`` set (the DRAM ratio follows the DRAM bytes)."""
        if ({"dram_read_bytes", "dram_write_bytes", "min_bytes"} & set(fields)) and "dram_bytes_ratio" not in fields:
            fields["dram_bytes_ratio"] = UNSET
        order = self._order + tuple(k for k, v in fields.items() if k not in self._order and v is not UNSET)
        return dataclasses.replace(self, **fields, _order=order)

    def get(self, name: str, default=None):
        """The field ``name``, or ``default`` where no engine filled it (as ``dict.get`` on the JSON row)."""
        value = getattr(self, name, UNSET)
        return default if value is UNSET else value

    def as_dict(self) -> dict:
        """The ``lab counters --json`` row: the fields an engine filled, in the order it filled them (the
        DRAM ratio, where computed here, just before the verdict)."""
        names = [f.name for f in dataclasses.fields(self) if f.name != "_order"]
        order = [n for n in self._order if n in names] + [n for n in names if n not in self._order]
        if "dram_bytes_ratio" not in self._order and "verdict" in order:
            order.remove("dram_bytes_ratio")
            order.insert(order.index("verdict"), "dram_bytes_ratio")
        return {n: getattr(self, n) for n in order if getattr(self, n) is not UNSET}

    @classmethod
    def of(cls, row) -> CounterRow:
        """A row from a JSON row (a dict); a CounterRow as it is."""
        return row if isinstance(row, cls) else cls(**row, _order=tuple(row))


def blank_row(contender, variant, min_bytes, status="ok", reason="") -> dict:
    """The JSON row of a contender before any engine measured it (every ROW_KEYS key null)."""
    return CounterRow.blank(contender, variant, min_bytes, status, reason).as_dict()


def loads_by_cp_async(row) -> bool:
    """Whether the call's global loads were all cp.async copies (LDGSTS), not ld.global: it executed LDGSTS
    and no LDG (where the kernel declares the LDGSTS metrics, lab.inspect.counters.metrics); ``row`` a
    CounterRow or its JSON dict. Its ld.global numbers (load efficiency) say nothing then, and the
    ``ldgsts_*`` fields are its loads' numbers."""
    copies = row.get("ldgsts_instructions")
    if copies is None:  # the instruction counters refused: the requests say it
        copies = row.get("ldgsts_requests")
    return bool(copies) and row.get("global_load_instructions") == 0


# --- the verdict -------------------------------------------------------------------------------------
def verdict(row) -> str:
    """One line in the field's terms, from whatever the row measured (None values are skipped); ``row`` a
    CounterRow or its JSON dict. What limits the call comes from lab.inspect.counters.bound."""
    parts = []
    spr, ideal = row.get("sectors_per_request"), row.get("ideal_sectors_per_request")
    if spr is not None and ideal and spr > 1.5 * ideal:
        where = f" (worst: {row.get('worst_load')})" if row.get("worst_load") else ""
        parts.append(f"uncoalesced: {spr:.1f} sectors per request where {ideal:.1f} suffice{where}")
    cp_spr, cp_eff = row.get("ldgsts_sectors_per_request"), row.get("ldgsts_efficiency_pct")
    cp_ideal = cp_spr * min(cp_eff, 100.0) / 100 if cp_spr is not None and cp_eff else None
    if loads_by_cp_async(row) and cp_ideal and cp_spr > 1.5 * cp_ideal:
        parts.append(f"uncoalesced cp.async copies: {cp_spr:.1f} sectors per request where {cp_ideal:.1f} suffice")
    ways = row.get("bank_ways")
    if ways is not None and ways >= 1.5:
        ld, st = row.get("bank_conflicts_load") or 0, row.get("bank_conflicts_store") or 0
        which = "loads and stores" if ld and st else ("stores" if st > ld else "loads")
        parts.append(f"{ways:.1f}-way bank conflicts on shared {which}")
    elif (row.get("conflicts_per_shared_load") or 0) >= SHARED_CONFLICTS_NOTE:
        wpr = row.get("shared_wavefronts_per_request")
        parts.append(f"{row.get('conflicts_per_shared_load'):.2f} bank conflicts a shared load"
                     + (f", {wpr:.2f} wavefronts a shared request" if wpr is not None else ""))
    ratio = dram_ratio(row.get("dram_read_bytes"), row.get("dram_write_bytes"), row.get("min_bytes"))
    limit = bound(row, ratio)
    if limit is not None and limit.kind != "latency-bound":
        parts.append(limit.text)
    else:  # latency-bound or not known: excess traffic first (what to fix), then the bound, always named
        if ratio is not None and ratio > 1.5:
            parts.append(f"excess traffic: DRAM bytes {ratio:.1f}x the minimum")
        if limit is not None:
            parts.append(limit.text)
    if not parts and ratio is not None:  # DRAM bytes alone (CUPTI PM sampling measures no throughput)
        parts.append(f"DRAM bytes {ratio:.2f}x the minimum")
    if not parts and spr is not None:
        parts.append(f"coalesced: {spr:.1f} sectors per request (the minimum {ideal:.1f})" if ideal
                     else f"{spr:.1f} sectors per request")
    fetched, touched = row.get("sector_bytes"), row.get("bytes_touched")
    if fetched and touched and fetched > 3 * touched:
        parts.append(f"fetches {fetched / touched:.1f}x the bytes it touches (re-reads through L1/L2)")
    return "; ".join(parts) or "no counters"
