"""Tables that fit the terminal, for every command: a :class:`Col` per column (header, cell text,
how readily it is dropped), :func:`fit` builds a rich Table no wider than the console by dropping
columns empty for every row, then the least important ones, and says which (``--wide adds: ...``);
``--wide`` keeps every column at its natural width. Numbers are never wrapped or cut: a column is
at least as wide as its widest cell; only columns marked ``wrap`` (names, reasons) break, at spaces.

The console is stdout at the terminal's width: ``COLUMNS``, else the terminal's, else 80 (piped).
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text


@dataclass
class Col:
    """A table column: header, cell text per item (None = empty), and how readily it is dropped to
    fit the terminal (higher priority stays longer; 100 is never dropped; --wide keeps every column)."""

    header: str
    cell: Callable[[object], str | None]
    priority: int = 50
    left: bool = False
    wrap: bool = False  # text that may wrap onto more lines (never numbers)
    explain: str = ""  # one line under the table, when the column is shown
    style: Callable[[str], str | None] | None = None  # cell text -> rich style


CHECK_STYLE = {"ok": "green", "FAIL": "bold red", "skipped": "dim", "PASS": "green"}


def console() -> Console:
    """stdout, at the terminal's width (COLUMNS, or 80 when piped)."""
    return Console(highlight=False)


def fit(cols: list[Col], items: list, out: Console, wide: bool, title: str | None):
    """A rich Table of ``items`` narrow enough for ``out`` (unless ``wide``): columns empty for
    every item go, then the lowest-priority ones until it fits. Returns (table, shown, dropped)."""
    cells = [[c.cell(it) for it in items] for c in cols]
    keep = [i for i, col in enumerate(cells) if any(v is not None for v in col)] or list(range(len(cols)))

    full = {i: max(len(v or "-") for v in cells[i] + [cols[i].header]) for i in keep}
    widths = dict(full)
    for i in keep:
        if cols[i].wrap:  # may wrap at spaces, never inside a word
            widths[i] = max(len(w) for v in cells[i] + [cols[i].header] if v for w in v.split())

    def build(idx, fixed=None):
        t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  show_edge=False, title_style="bold")
        for i in idx:
            c = cols[i]
            t.add_column(c.header, justify="left" if c.left else "right", no_wrap=not c.wrap,
                         overflow="fold", min_width=widths[i], width=(fixed or {}).get(i))
        for r in range(len(items)):
            t.add_row(*[Text("-") if cells[i][r] is None else
                        Text(cells[i][r], style=(cols[i].style and cols[i].style(cells[i][r])) or "")
                        for i in idx])
        return t

    dropped = []
    # the narrowest this table renders without cutting: the widest number or word per column, plus
    # a separator and one space of padding each side between columns
    narrowest = lambda idx, w: sum(w[i] for i in idx) + 3 * (len(idx) - 1)  # noqa: E731
    # first drop minor columns (priority < 50) so that names need not wrap, then any below 100
    for w, limit in ((full, 50), (widths, 100)):
        while not wide and len(keep) > 1 and narrowest(keep, w) > out.width:
            worst = min(keep, key=lambda i: (cols[i].priority, -i))
            if cols[worst].priority >= limit:
                break
            keep.remove(worst)
            dropped.append(cols[worst].header)
    fixed = None
    if not wide and narrowest(keep, full) > out.width >= narrowest(keep, widths):
        # some text must wrap: rich's own shrinking can cut a number column, so the widths are set
        # here, every column at its narrowest and the room left given to the wrapping ones in turn
        fixed, spare = dict(widths), out.width - narrowest(keep, widths)
        for i in keep:
            if cols[i].wrap and spare > 0:
                fixed[i] += min(spare, full[i] - widths[i])
                spare -= fixed[i] - widths[i]
    table = build(keep, fixed)
    return table, [cols[i] for i in keep], dropped


def explain(cols: list[Col]) -> str:
    """The shown columns' explanations, one line (it wraps) for under the table."""
    return " · ".join(c.explain for c in cols if c.explain)


def wide_adds(dropped: list[str]) -> list[str]:
    """The line that says which columns --wide would add (none when nothing was dropped)."""
    return [f"[dim]--wide adds: {escape(', '.join(dropped))}[/]"] if dropped else []


def print_tables(out: Console, renderables: list, wide: bool = False) -> None:
    """Print ``renderables`` (tables, markup lines); with ``wide`` the tables at their natural width
    (the terminal may wrap the lines), else at most ``out``'s width."""
    target = out
    tables = [r for r in renderables if not isinstance(r, str)]
    if wide and tables:
        natural = out.options.update_width(10_000)
        width = max([out.width] + [Measurement.get(out, natural, t).maximum for t in tables])
        target = Console(file=out.file, width=width, highlight=False, force_terminal=out.is_terminal,
                         color_system=out.color_system, no_color=out.no_color)
    for r in renderables:
        (out if isinstance(r, str) else target).print(r)


def show(cols: list[Col], items: list, out: Console | None = None, wide: bool = False,
         title: str | None = None, notes: list[str] | None = None) -> None:
    """Fit and print one table, then its column explanations, ``notes`` and the --wide line."""
    out = out or console()
    table, shown, dropped = fit(cols, items, out, wide, title)
    under = [f"[dim]{escape(explain(shown))}[/]"] if explain(shown) else []
    print_tables(out, [table, *under, *(notes or []), *wide_adds(dropped)], wide)
