"""Views of ``lab counters`` and ``lab sanitize``: a table that fits the terminal (80 columns and up,
minor columns dropped first), or with ``--wide`` every column at its natural width, however wide (as
``lab run --wide``: the terminal may wrap the lines, the row labels stay); the verdicts and notes under it."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from lab.cli.views.report import si
from lab.cli.views.table import Col, console, explain, fit, print_tables, wide_adds
from lab.inspect.counters.row import loads_by_cp_async

CP = " cp"  # the mark of a cell that counts cp.async copies (LDGSTS), not ld.global requests


def _pct(x) -> str | None:
    return None if x is None else f"{x:.0f}%"


def _f(x, fmt="{:.1f}") -> str | None:
    return None if x is None else fmt.format(x)


def _bytes(x) -> str | None:
    return None if x is None else si(x, "B")


def _ratio(r: dict) -> str | None:
    if r.get("dram_read_bytes") is None or not r.get("min_bytes"):
        return None
    return f"{(r['dram_read_bytes'] + (r.get('dram_write_bytes') or 0)) / r['min_bytes']:.2f}x"


def _name(r: dict) -> str:
    if r["contender"] == "numba":
        return r["variant"]
    return r["contender"] if r["variant"] in ("-", "") else f"{r['contender']} {r['variant']}"


def _occ(r: dict) -> str | None:
    a, t = r.get("achieved_occupancy_pct"), r.get("theoretical_occupancy_pct")
    if a is None and t is None:
        return None
    return f"{'-' if a is None else f'{a:.0f}'}/{'-' if t is None else f'{t:.0f}'}%"


def _stall(r: dict) -> str | None:
    top = r.get("top_stalls")
    return None if not top else ", ".join(f"{s['reason']} {s['pct']:.0f}%" for s in top)


def _sectors_per_request(r: dict) -> str | None:
    """s/req: ld.global's; a rung whose global loads are all cp.async copies, its copies' (marked " cp")."""
    if loads_by_cp_async(r) and r.get("ldgsts_sectors_per_request") is not None:
        return f"{r['ldgsts_sectors_per_request']:.1f}{CP}"
    return _f(r.get("sectors_per_request"))


def _load_efficiency(r: dict) -> str | None:
    """ld eff: ld.global's; a rung whose global loads are all cp.async copies, its copies' (marked " cp"),
    else "-" (never the 0% the ld.global metric reads for them)."""
    if loads_by_cp_async(r):
        eff = r.get("ldgsts_efficiency_pct")
        return None if eff is None else f"{eff:.0f}%{CP}"
    return _pct(r.get("load_efficiency_pct"))


def _legend(rows: list, shown: list[Col]) -> list[str]:
    """The lines under the table that say what a " cp" cell and a "-" load efficiency mean, where shown."""
    headers = {c.header for c in shown}
    cells = [c.cell(r) or "" for c in shown if c.header in ("s/req", "ld eff") for r in rows]
    lines = []
    if any(c.endswith(CP) for c in cells):
        lines.append("cp: the rung's global loads are cp.async copies (LDGSTS), not ld.global requests: "
                     "their own sectors a request and bytes used per sector (ncu's op_ldgsts metrics)")
    if "ld eff" in headers and any(_load_efficiency(r) is None and (r.get("sectors_per_request") is not None
                                                                    or loads_by_cp_async(r)) for r in rows):
        lines.append("ld eff -: no ld.global measured; global loads by cp.async (LDGSTS) are not ld.global requests")
    return [f"[dim]{escape(line)}[/]" for line in lines]


def _optional_columns(declared) -> list[Col]:
    """Columns of the optional metrics (lab.inspect.counters.metrics) a kernel declares, in its order."""
    cols = {
        "bound": Col("bound", lambda r: r.get("bound"), 97, left=True,
                     explain="bound: what limits the call (tensor, memory, issue, compute or latency)"),
        "tensor_pipe_pct": Col("TC%", lambda r: _pct(r.get("tensor_pipe_pct")), 93,
                               explain="TC%: tensor pipe busy, % of peak"),
        "shared_wavefronts_per_request": Col("wf/req", lambda r: _f(r.get("shared_wavefronts_per_request"), "{:.2f}"),
                                             82, explain="wf/req: shared-memory wavefronts a shared request"),
        "conflicts_per_shared_load": Col("cf/ld", lambda r: _f(r.get("conflicts_per_shared_load"), "{:.2f}"), 48,
                                         explain="cf/ld: bank conflicts a shared load"),
    }
    extra = [Col("L1%", lambda r: _pct(r.get("l1_throughput_pct")), 44, explain="L1%: L1/shared throughput, % of peak"),
             Col("L2%", lambda r: _pct(r.get("l2_throughput_pct")), 42, explain="L2%: L2 throughput, % of peak"),
             Col("issue%", lambda r: _pct(r.get("issue_active_pct")), 41, explain="issue%: issue slots busy")]
    return [cols[n] for n in declared if n in cols] + (extra if "bound" in declared else [])


def counters_columns(simulated: bool, declared=()) -> list[Col]:
    """The ``lab counters`` table's columns; ``declared``: the kernel's counter_metrics (its optional
    metrics get columns of their own)."""
    cols = [Col("rung / contender", _name, 100, left=True, wrap=True)]
    if simulated:
        return cols + [
            Col("sect/req", lambda r: _f(r.get("sectors_per_request")), 95,
                explain="sect/req: 32-byte sectors a warp's global load fetches"),
            Col("min", lambda r: _f(r.get("ideal_sectors_per_request")), 90,
                explain="min: sectors its distinct bytes need"),
            Col("ld eff", lambda r: _pct(r.get("load_efficiency_pct")), 80,
                explain="ld eff: bytes used / bytes fetched"),
            Col("st s/req", lambda r: _f(r.get("store_sectors_per_request")), 60, explain="st s/req: the same for stores"),
            Col("touched", lambda r: _bytes(r.get("bytes_touched")), 70,
                explain="touched: distinct sectors x 32 B"),
            Col("fetched", lambda r: _bytes(r.get("sector_bytes")), 65,
                explain="fetched: every request's sectors x 32 B (no cache reuse)"),
            Col("min bytes", lambda r: _bytes(r.get("min_bytes")), 40, explain="min bytes: the lesson's minimum traffic"),
        ]
    return cols + [
        Col("DRAM rd", lambda r: _bytes(r.get("dram_read_bytes")), 85, explain="DRAM rd: bytes read"),
        Col("DRAM wr", lambda r: _bytes(r.get("dram_write_bytes")), 55, explain="DRAM wr: bytes written"),
        Col("xmin", _ratio, 90, explain="xmin: DRAM bytes / the lesson's minimum"),
        Col("s/req", _sectors_per_request, 95, explain="s/req: sectors a global load request fetches"),
        Col("ld eff", _load_efficiency, 60, explain="ld eff: bytes used per sector"),
        Col("L2 hit", lambda r: _pct(r.get("l2_hit_pct")), 45, explain="L2 hit: sector hit rate"),
        Col("bank cf", lambda r: None if r.get("bank_conflicts") is None else f"{r['bank_conflicts']:,.0f}", 50,
            explain="bank cf: shared-memory bank conflicts"),
        Col("occ", _occ, 75, explain="occ: achieved / theoretical occupancy"),
        Col("DRAM%", lambda r: _pct(r.get("dram_throughput_pct")), 80, explain="DRAM%: DRAM throughput, % of peak"),
        Col("SM%", lambda r: _pct(r.get("sm_throughput_pct")), 70, explain="SM%: SM throughput, % of peak"),
        Col("top stalls", _stall, 20, left=True, wrap=True, explain="top stalls: share of warp stall cycles"),
    ] + _optional_columns(declared)


def print_counters(doc: dict, out: Console | None = None, wide: bool = False) -> None:
    """The ``lab counters`` table, then one verdict line a row and the notes."""
    out = out or console()
    simulated = doc["tool"] == "simulator"
    out.print(f"[bold]{doc['kernel']}[/] · size {'x'.join(map(str, doc['size']))} · {doc['dtype']} · "
              f"--threads {doc['threads_per_block']} · {escape(doc['device']['name'])}")
    out.print(f"counters: {escape(doc['engine'])}")
    rows = [r for r in doc["rows"] if r["status"] == "ok"]
    if rows:
        table, shown, dropped = fit(counters_columns(simulated, doc.get("counter_metrics", ())), rows, out, wide,
                                       "simulated counters" if simulated else "hardware counters (one call each)")
        # with --wide at the table's natural width (never squeezed into the terminal: rich would drop
        # whole columns, the row labels first), as every other --wide command
        legend = [] if simulated else _legend(rows, shown)
        print_tables(out, [table, f"[dim]{escape(explain(shown))}[/]", *legend, *wide_adds(dropped)], wide)
    out.print("[bold]verdict[/]")
    for r in doc["rows"]:
        style = {"ok": "", "FAIL": "bold red", "skipped": "dim"}.get(r["status"], "")
        text = f"{_name(r)}: {r['verdict']}"
        out.print(f"[{style}]{escape(text)}[/]" if style else escape(text))
    for n in doc.get("notes", []):
        out.print(f"[dim]{escape(n)}[/]")


def print_sanitize(doc: dict, out: Console | None = None) -> None:
    """``lab sanitize``: one line a rung and tool: clean, or N hazards and the first one."""
    out = out or console()
    out.print(f"[bold]{doc['kernel']}[/] · size {'x'.join(map(str, doc['size']))} · {doc['dtype']} · "
              f"--threads {doc['threads_per_block']} · {escape(doc['sanitizer'])}")
    width = max((len(r["variant"]) for r in doc["rows"]), default=8)
    for r in doc["rows"]:
        head = f"{r['tool']:9} {r['variant']:{width}}  "
        if r["status"] == "clean":
            out.print(f"{escape(head)}[green]clean[/]")
        elif r["status"] == "errors":
            what = "hazards" if r["tool"] == "racecheck" else "errors"
            out.print(f"{escape(head)}[bold red]{r['count']} {what}[/], first: {escape(r['first']['summary'])}")
        else:
            out.print(f"{escape(head)}[dim]{escape(r['status'])}: {escape(r.get('reason') or '')}[/]")
    for u in doc.get("unattributed", []):
        out.print(f"[yellow]not matched to a rung:[/] {escape(u['summary'])}")
    for n in doc.get("notes", []):
        out.print(f"[dim]{escape(n)}[/]")
