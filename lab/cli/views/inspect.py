"""Views of lab.inspect results: the grid map, occupancy tables and sweeps, the doctor's lines."""
from __future__ import annotations

import numpy as np

from kernels.spec import plural
from lab.cli.views.plot import pyplot, save
from lab.cli.views.table import Col, show, console
from lab.inspect.doctor import FAIL, OK, WARN
from lab.core.occupancy import LIMITERS
from rich.markup import escape
from rich.table import Table
from rich.text import Text


PALETTE = ["red", "green", "yellow", "blue", "magenta", "cyan", "bright_red", "bright_green", "bright_yellow",
           "bright_blue", "bright_magenta", "bright_cyan"]


MAX_COLS = 64


MAX_ROWS = 24


def print_grid(d: dict, console=None) -> None:
    """Summary lines, then the map: one cell an element (or a folded run of elements), coloured by block."""
    console = console or _console()
    size = "x".join(map(str, d["size"]))
    console.print(f"[bold]{escape(d['kernel'])}[/] / {escape(d['variant'])}, size {size}: "
                  f"grid {tuple(d['grid'])} x block {tuple(d['block'])}")
    console.print(f"{plural(d['threads_total'], 'thread')} launched, {d['threads_needed']:,} needed, "
                  f"[yellow]{d['threads_idle']:,} idle[/]; {plural(d['warps_per_block'], 'warp')} a block")
    if d["idle_by_block"]:
        idle = list(d["idle_by_block"].items())
        shown = ", ".join(f"block {b}: {n}" for b, n in idle[:8])
        more = f", and {plural(len(idle) - 8, 'more block')}" if len(idle) > 8 else ""
        console.print(f"threads that wrote nothing: {shown}{more}")
    if d.get("waves") is not None:
        console.print(f"waves: {plural(d['blocks_total'], 'block')} / ({plural(d['sms'], 'SM')} x "
                      f"{d['resident_blocks_per_sm']} resident) = {d['waves']:.2f}")
        console.print(f"[dim]({escape(d['sms_source'])}; {escape(d['waves_note'])})[/]")
    elif d.get("waves_note"):
        console.print(f"[dim]{escape(d['waves_note'])}[/]")
    block_of = np.array(d["map"]["block_of"])
    thread_of = np.array(d["map"]["thread_of"])
    block_of = np.where(np.array(d["map"]["writers"]) > 1, -3, block_of)
    if block_of.ndim == 1:
        block_of, thread_of = block_of[None, :], thread_of[None, :]
        per_row = MAX_COLS
        fold = max(1, -(-block_of.shape[1] // (MAX_COLS * MAX_ROWS)))
        flat_b = _fold(block_of[0], fold)
        rows = [flat_b[i:i + per_row] for i in range(0, len(flat_b), per_row)]
        label = f"1 cell = {plural(fold, 'element')}, {per_row} cells a row"
    else:
        fr = max(1, -(-block_of.shape[0] // MAX_ROWS))
        fc = max(1, -(-block_of.shape[1] // MAX_COLS))
        rows = [_fold(r, fc) for r in block_of[::fr]] if fr > 1 else [_fold(r, fc) for r in block_of]
        label = f"1 cell = {plural(fc, 'element')} of a row" + (f", every {fr} rows one shown" if fr > 1 else "")
    console.print(f"map of the block that wrote each element ({label}):")
    console.print("[dim]digit = block id mod 10,[/] [on grey23] . [/] [dim]never written,[/] [reverse]![/] "
                  "[dim]written by 2+ threads,[/] * [dim]a folded cell mixing blocks[/]")
    for row in rows:
        text = Text()
        for b in row:
            if b == -1:
                text.append(".", style="dim")
            elif b == -2:
                text.append("*", style="bold white")
            elif b == -3:
                text.append("!", style="reverse red")
            else:
                text.append(str(b % 10), style=PALETTE[b % len(PALETTE)])
        console.print(text)
    if d["elements_never_written"] or d["elements_written_twice"]:
        console.print(f"[red]{plural(d['elements_never_written'], 'element')} never written, "
                      f"{d['elements_written_twice']:,} written by more than one thread[/]")
    else:
        console.print("[green]every element written exactly once (by one thread per launch)[/]")


def _fold(row: np.ndarray, k: int) -> list[int]:
    """Fold runs of k elements into one cell: the block if all agree, -1 if none written, -2 if mixed."""
    out = []
    for i in range(0, len(row), k):
        chunk = row[i:i + k]
        u = np.unique(chunk)
        out.append(int(u[0]) if len(u) == 1 else (-3 if (u == -3).any() else -2 if (u >= 0).any() else -1))
    return out


def plot_map(d: dict, path: str, fmt: str = "png", title: str | None = None) -> None:
    """The map as a picture (``fmt``: png or svg): element (x = column / index, y = row) coloured by
    block, idle marked; ``title`` replaces lab grid's (the exercise checker's map of your kernel)."""

    plt = pyplot()
    from matplotlib.colors import ListedColormap  # lazy: optional (matplotlib)

    block_of = np.array(d["map"]["block_of"], dtype=float)
    thread_of = np.array(d["map"]["thread_of"], dtype=float)
    if block_of.ndim == 1:
        block_of, thread_of = block_of[None, :], thread_of[None, :]
    masked = np.ma.masked_less(block_of, 0)
    n_blocks = int(max(block_of.max() + 1, 1))
    cmap = ListedColormap(plt.get_cmap("tab20").colors[:max(2, min(20, n_blocks))])
    cmap = cmap.with_extremes(bad="#cccccc")
    one_d = block_of.shape[0] == 1
    warp = d.get("warp")
    arrays = list(dict.fromkeys(r["array"] for r in warp["requests"])) if warp else []
    height = (3.2 if one_d else 4.8) + 2.0 * len(arrays)
    fig = plt.figure(figsize=(10, height), dpi=120)
    rows = (2 if one_d else 1) + len(arrays)
    grid = fig.add_gridspec(rows, 1 if one_d else 2,
                            height_ratios=[1.6 if one_d else 4.8] * (rows - len(arrays)) + [2.0] * len(arrays))
    axes = [fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[1, 0] if one_d else grid[0, 1])]
    ax_b, ax_t = axes
    aspect = "auto"
    ax_b.imshow(np.ma.masked_less(block_of % 20, 0) if n_blocks > 20 else masked, cmap=cmap, aspect=aspect,
                interpolation="nearest", vmin=0, vmax=cmap.N - 1)
    ax_b.set_title("blockIdx (linear) of the thread that wrote each element; grey = never written", fontsize=9)
    ax_t.imshow(np.ma.masked_less(thread_of, 0), cmap="viridis", aspect=aspect, interpolation="nearest")
    ax_t.set_title("threadIdx (linear) within its block", fontsize=9)
    if one_d:
        for ax in axes:
            ax.set_yticks([])
            ax.set_xlabel("output element")
        row = block_of[0]
        n, total = row.size, d["threads_total"]
        if total > n and d["threads_needed"] == n:  # one element a thread: show the idle tail
            for ax in axes:
                ax.set_xlim(-0.5, total - 0.5)
                ax.axvspan(n - 0.5, total - 0.5, facecolor="white", edgecolor="#999999", hatch="///")
            ax_b.text(n + (total - n) / 2, 0, f"{total - n} idle\nthreads", fontsize=7, ha="center", va="center")
        for b in np.unique(row[row >= 0])[:40]:  # label each block at the first element it wrote
            ax_b.text(int(np.argmax(row == b)) + 2, 0, f"block {int(b)}", fontsize=7, va="center")
    if warp:
        mine = (block_of == warp["block"]) & (thread_of // 32 == warp["warp_in_block"])
        ys, xs = np.nonzero(mine)
        for ax in axes:  # the output elements this warp wrote, on both maps
            ax.scatter(xs, ys, s=6, marker="s", facecolors="none", edgecolors="black", linewidths=0.6,
                       label=f"written by warp {warp['id']}")
        ax_b.legend(loc="upper right", fontsize=7, framealpha=0.8)
        for k, name in enumerate(arrays):
            _plot_warp_array(fig.add_subplot(grid[rows - len(arrays) + k, :]), warp, name)
    warp_title = (f"; warp {warp['id']} = block {warp['block']}, threads {warp['threads'][0]}..{warp['threads'][1]}"
                  if warp else "")
    fig.suptitle(title or f"lab grid {d['kernel']} --variant {d['variant']} --size {'x'.join(map(str, d['size']))} "
                 f"--threads {int(np.prod(d['block']))}: grid {tuple(d['grid'])}, {d['threads_total']:,} threads, "
                 f"{d['threads_idle']:,} idle{warp_title}", fontsize=10)
    fig.tight_layout()
    save(fig, path, fmt)


KIND_COLOURS = {"load": "tab:blue", "store": "tab:orange", "atomic": "tab:red"}
MAX_WARP_ROWS = 40  # requests drawn a panel


def _plot_warp_array(ax, warp: dict, name: str) -> None:
    """One array's requests by one warp: a row a request (in program order), the 32-byte sectors it
    fetched as coloured cells (by kind), the lanes' elements as dots, its sector count at the right."""
    reqs = [r for r in warp["requests"] if r["array"] == name]
    shown = reqs[:MAX_WARP_ROWS]
    itemsize = (warp["arrays"].get(name) or {}).get("itemsize") or 4
    lo = min(min(r["sectors"]) for r in shown)
    hi = max(max(r["sectors"]) for r in shown)
    for y, r in enumerate(shown):
        colour = KIND_COLOURS.get(r["kind"], "grey")
        ax.broken_barh([(sec, 1) for sec in r["sectors"]], (y - 0.4, 0.8), facecolors=colour, alpha=0.35,
                       edgecolor=colour, linewidth=0.5)
        ax.scatter([e * itemsize / 32 + itemsize / 64 for e in r["elements"]], [y] * len(r["elements"]), s=4,
                   color=colour)
        ax.text(hi + 1.3, y, f"{len(r['sectors'])}", fontsize=6, va="center")
    ax.set_xlim(lo - 0.5, hi + 2.5 + 0.04 * (hi - lo))
    ax.set_ylim(len(shown) - 0.5, -0.5)
    from matplotlib.ticker import MaxNLocator  # lazy: optional (matplotlib)

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("request", fontsize=8)
    ax.set_xlabel(f"32-byte sector of {name} ({32 // itemsize} elements a sector); dots: the lanes' elements; "
                  f"right: sectors a request", fontsize=8)
    kinds = ", ".join(f"{k} ({c.removeprefix('tab:')})" for k, c in KIND_COLOURS.items()
                      if any(r["kind"] == k for r in shown))
    more = f", first {len(shown)} of {len(reqs)}" if len(reqs) > len(shown) else ""
    spr = sum(len(r["sectors"]) for r in reqs) / len(reqs)
    ax.set_title(f"warp {warp['id']}: requests to {name}{more}: {kinds}; {spr:.1f} sectors a request "
                 f"({warp['label']})", fontsize=8)
    ax.tick_params(labelsize=7)


def _console():
    """stdout at the terminal's width (COLUMNS, or 80 when piped), as every command's."""
    return console()


# --- Presentation ---------------------------------------------------------------------------------
def occupancy_columns(rows: list[dict]) -> list[Col]:
    """The occupancy table's columns, most important first (each row: one kernel of the variant)."""
    lim = lambda key: lambda x: None if x["limits"][key] is None else str(x["limits"][key])  # noqa: E731
    cols = [Col("kernel", lambda x: x.get("kernel_name", "-"), 100, left=True, wrap=True),
            Col("threads", lambda x: str(x["threads"]), 90),
            Col("regs", lambda x: str(x["registers"]), 85, explain="regs: registers a thread"),
            Col("smem B", lambda x: str(x["shared_bytes"]), 80, explain="smem B: shared memory a block"),
            Col("local B", lambda x: None if x.get("local_bytes") is None else str(x["local_bytes"]), 40,
                explain="local B: local memory a thread"),
            Col("blocks/SM", lambda x: str(x["active_blocks_per_sm"]), 95),
            Col("driver", lambda x: None if x.get("driver_active_blocks_per_sm") is None
                else str(x["driver_active_blocks_per_sm"]), 30,
                explain="driver: blocks/SM by the CUDA occupancy API"),
            Col("warps/SM", lambda x: f"{x['active_warps_per_sm']}/{x['max_warps_per_sm']}", 90),
            Col("occ", lambda x: f"{x['occupancy']:.0%}", 100, explain="occ: occupancy, resident warps / max"),
            Col("limiter", lambda x: x["limiter"], 95, left=True)]
    by = {"warps": 50, "blocks": 46, "registers": 48, "shared_memory": 47}
    for key in LIMITERS:
        short = {"registers": "regs", "shared_memory": "smem"}.get(key, key)
        cols.append(Col(f"by {short}", lim(key), by.get(key, 45),
                        explain="by X: blocks an SM allowed by X alone" if key == LIMITERS[0] else ""))
    return cols


def print_result(r: dict, console=None, wide: bool = False) -> None:
    """``lab occupancy``: the calculation (and each kernel of a variant) as a table that fits."""
    console = console or _console()
    title = f"{r.get('kernel', 'calculator')}{' / ' + r['variant'] if r.get('variant') else ''} on {r['arch']}"
    rows = r.get("kernels") or [r]
    notes = []
    for x in rows:
        name = x.get("kernel_name")
        head = "" if x["occupancy"] >= 1 else f"[bold]{escape(x['limiter'])}[/] limit: "
        notes.append(f"{escape(name) + ': ' if name and len(rows) > 1 else ''}{head}{escape(x['advice'])}")
        if x.get("local_bytes"):
            notes.append(f"[yellow]{escape(str(name))}: {x['local_bytes']} B of local memory a thread (register "
                         "spills or local arrays): slow off-chip traffic[/]")
    if r.get("resources_source") or rows[0].get("resources_source"):
        notes.append(f"[dim]resources: {escape(str(rows[0].get('resources_source')))}; allocation: registers in "
                     f"units of 256 a warp, shared memory + {r.get('reserved_shared_per_block', 0)} B reserved a block[/]")
    if r.get("note"):
        notes.append(f"[dim]{escape(r['note'])}[/]")
    show(occupancy_columns(rows), rows, console, wide, f"occupancy: {title}", notes)


def print_sweep(points: list[dict], current: int, console=None, wide: bool = False) -> None:
    console = console or _console()
    cols = [Col("threads", lambda p: f"{p['threads']}{' ◀ current' if p['threads'] == current else ''}", 100),
            Col("blocks/SM", lambda p: str(p["active_blocks_per_sm"]), 90),
            Col("warps/SM", lambda p: f"{p['active_warps_per_sm']}/{p['max_warps_per_sm']}", 90),
            Col("occupancy", lambda p: f"{p['occupancy']:.0%}", 100),
            Col("limiter", lambda p: p["limiter"], 95, left=True)]
    show(cols, points, console, wide, "sweep: threads per block")


def plot_sweep(points: list[dict], current: int, path: str, title: str) -> None:
    """Occupancy against threads per block (the calculator's first graph), the current choice marked."""
    plt = pyplot()
    xs = [p["threads"] for p in points]
    ys = [100 * p["occupancy"] for p in points]
    fig, ax = plt.subplots(figsize=(8, 3.6), dpi=120)
    ax.plot(xs, ys, "o-", ms=3, color="#3b6ea8", label="theoretical occupancy")
    cur = next((p for p in points if p["threads"] == current), None)
    if cur:
        ax.plot([current], [100 * cur["occupancy"]], "o", ms=10, mfc="none", mec="#d62728", mew=2,
                label=f"current: {current} threads, {cur['occupancy']:.0%} ({cur['limiter']})")
    ax.set_xlabel("threads per block")
    ax.set_ylabel("occupancy (% of warp slots)")
    ax.set_xlim(0, 1056)
    ax.set_ylim(0, 105)
    ax.set_xticks(range(0, 1025, 128))
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    save(fig, path)


def print_results(results: list, console=None) -> None:
    """``lab doctor``: one line (wrapped under its text) a check, and its fix when it is not ok."""
    console = console or _console()
    colour = {OK: "green", WARN: "yellow", FAIL: "red"}
    grid = Table.grid(padding=(0, 1))  # wrapped lines stay under their text, not under the status
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for r in results:
        grid.add_row(f"[{colour[r.status]}]{r.status}[/]", f"{escape(r.name)}: {escape(r.message)}")
        if r.fix and r.status != OK:
            grid.add_row("", f"[dim]fix: {escape(r.fix)}[/]")
    console.print(grid)
