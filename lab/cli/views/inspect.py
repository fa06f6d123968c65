"""Views of lab.inspect results: the grid map, occupancy tables and sweeps, the doctor's lines."""
from __future__ import annotations

import numpy as np

from lab.cli.views.plot import pyplot
from lab.inspect.doctor import FAIL, OK, WARN
from lab.core.occupancy import LIMITERS


PALETTE = ["red", "green", "yellow", "blue", "magenta", "cyan", "bright_red", "bright_green", "bright_yellow",
           "bright_blue", "bright_magenta", "bright_cyan"]


MAX_COLS = 64


MAX_ROWS = 24


def print_grid(d: dict, console=None) -> None:
    """Summary lines, then the map: one cell an element (or a folded run of elements), coloured by block."""
    from rich.console import Console
    from rich.text import Text

    console = console or _console()
    console.print(f"[bold]{d['kernel']}[/] / {d['variant']}, size {'x'.join(map(str, d['size']))}: grid "
                  f"{tuple(d['grid'])} x block {tuple(d['block'])} = {d['threads_total']:,} threads launched, "
                  f"{d['threads_needed']:,} needed, [yellow]{d['threads_idle']:,} idle[/]; "
                  f"{d['warps_per_block']} warps a block")
    if d["idle_by_block"]:
        shown = ", ".join(f"block {b}: {n}" for b, n in list(d["idle_by_block"].items())[:8])
        console.print(f"threads that wrote nothing: {shown}{' …' if len(d['idle_by_block']) > 8 else ''}")
    if d.get("waves") is not None:
        console.print(f"waves: {d['blocks_total']} blocks / ({d['sms']} SMs x {d['resident_blocks_per_sm']} "
                      f"resident blocks) = {d['waves']:.2f}  [dim]({d['sms_source']}; {d['waves_note']})[/]")
    elif d.get("waves_note"):
        console.print(f"[dim]{d['waves_note']}[/]")
    block_of = np.array(d["map"]["block_of"])
    thread_of = np.array(d["map"]["thread_of"])
    block_of = np.where(np.array(d["map"]["writers"]) > 1, -3, block_of)
    if block_of.ndim == 1:
        block_of, thread_of = block_of[None, :], thread_of[None, :]
        per_row = MAX_COLS
        fold = max(1, -(-block_of.shape[1] // (MAX_COLS * MAX_ROWS)))
        flat_b = _fold(block_of[0], fold)
        rows = [flat_b[i:i + per_row] for i in range(0, len(flat_b), per_row)]
        label = f"1 cell = {fold} element(s), {per_row} cells a row"
    else:
        fr = max(1, -(-block_of.shape[0] // MAX_ROWS))
        fc = max(1, -(-block_of.shape[1] // MAX_COLS))
        rows = [_fold(r, fc) for r in block_of[::fr]] if fr > 1 else [_fold(r, fc) for r in block_of]
        label = f"1 cell = {fc} element(s) of a row" + (f", every {fr} rows one shown" if fr > 1 else "")
    console.print(f"map of the block that wrote each element ({label}; digit = block id mod 10, "
                  f"[on grey23] . [/] never written, [reverse]![/] written by 2+ threads, * a folded cell mixing blocks):")
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
        console.print(f"[red]{d['elements_never_written']} element(s) never written, {d['elements_written_twice']} "
                      "written by more than one thread[/]")
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


def plot_map(d: dict, path: str) -> None:
    """The map as a picture: element (x = column / index, y = row) coloured by block, idle marked."""

    plt = pyplot()
    from matplotlib.colors import ListedColormap

    block_of = np.array(d["map"]["block_of"], dtype=float)
    thread_of = np.array(d["map"]["thread_of"], dtype=float)
    if block_of.ndim == 1:
        block_of, thread_of = block_of[None, :], thread_of[None, :]
    masked = np.ma.masked_less(block_of, 0)
    n_blocks = int(max(block_of.max() + 1, 1))
    cmap = ListedColormap(plt.get_cmap("tab20").colors[:max(2, min(20, n_blocks))])
    cmap = cmap.with_extremes(bad="#cccccc")
    one_d = block_of.shape[0] == 1
    fig, axes = plt.subplots(2 if one_d else 1, 1 if one_d else 2, figsize=(10, 3.2 if one_d else 4.8), dpi=120)
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
    fig.suptitle(f"lab grid {d['kernel']} --variant {d['variant']} --size {'x'.join(map(str, d['size']))} "
                 f"--threads {int(np.prod(d['block']))}: grid {tuple(d['grid'])}, {d['threads_total']:,} threads, "
                 f"{d['threads_idle']:,} idle", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _console():
    from rich.console import Console

    probe = Console()  # piped output (CI logs, docs) gets a fixed wide layout, as lab run's
    return probe if probe.is_terminal else Console(width=160)


# --- Presentation ---------------------------------------------------------------------------------
def print_result(r: dict, console=None) -> None:
    """``lab occupancy``: the calculation (and each kernel of a variant) as a rich table."""
    from rich.console import Console
    from rich.table import Table

    console = console or _console()
    title = f"{r.get('kernel', 'calculator')}{' / ' + r['variant'] if r.get('variant') else ''} on {r['arch']}"
    rows = r.get("kernels") or [r]
    t = Table(title=f"occupancy: {title}", title_justify="left")
    cols = ["kernel", "threads", "registers", "shared B", "local B", "blocks/SM", "warps/SM", "occupancy",
            "limiter", "by warps", "by blocks", "by regs", "by smem"]
    if any("driver_active_blocks_per_sm" in x for x in rows):
        cols.insert(6, "driver blocks/SM")
    for c in cols:
        t.add_column(c, justify="left" if c in ("kernel", "limiter") else "right")
    for x in rows:
        lim = x["limits"]
        cells = [x.get("kernel_name", "-"), str(x["threads"]), str(x["registers"]), str(x["shared_bytes"]),
                 str(x.get("local_bytes", "-")), str(x["active_blocks_per_sm"]),
                 f"{x['active_warps_per_sm']}/{x['max_warps_per_sm']}", f"{x['occupancy']:.0%}", x["limiter"],
                 *[("-" if lim[k] is None else str(lim[k])) for k in LIMITERS]]
        if "driver blocks/SM" in cols:
            cells.insert(6, str(x.get("driver_active_blocks_per_sm", "-")))
        t.add_row(*cells)
    console.print(t)
    for x in rows:
        name = x.get("kernel_name")
        head = "" if x["occupancy"] >= 1 else f"[bold]{x['limiter']}[/] limit: "
        console.print(f"{name + ': ' if name and len(rows) > 1 else ''}{head}{x['advice']}")
        if x.get("local_bytes"):
            console.print(f"[yellow]{name}: {x['local_bytes']} B of local memory a thread (register spills or "
                          "local arrays): slow off-chip traffic[/]")
    if r.get("resources_source") or rows[0].get("resources_source"):
        console.print(f"[dim]resources: {rows[0].get('resources_source')}; allocation: registers in units of 256 a "
                      f"warp, shared memory + {r.get('reserved_shared_per_block', 0)} B reserved a block[/]")
    if r.get("note"):
        console.print(f"[dim]{r['note']}[/]")


def print_sweep(points: list[dict], current: int, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or _console()
    t = Table(title="sweep: threads per block", title_justify="left")
    for c in ("threads", "blocks/SM", "warps/SM", "occupancy", "limiter"):
        t.add_column(c, justify="left" if c == "limiter" else "right")
    for p in points:
        mark = " ◀ current" if p["threads"] == current else ""
        style = "bold" if mark else None
        t.add_row(f"{p['threads']}{mark}", str(p["active_blocks_per_sm"]),
                  f"{p['active_warps_per_sm']}/{p['max_warps_per_sm']}", f"{p['occupancy']:.0%}", p["limiter"],
                  style=style)
    console.print(t)


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
    fig.savefig(path)
    plt.close(fig)


def print_results(results: list, console=None) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = console or Console()
    colour = {OK: "green", WARN: "yellow", FAIL: "red"}
    for r in results:
        console.print(f"[{colour[r.status]}]{r.status:4}[/] {r.name}: {escape(r.message)}")
        if r.fix and r.status != OK:
            console.print(f"     [dim]fix: {escape(r.fix)}[/]")
