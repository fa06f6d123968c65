"""How ``lab exercise`` shows its results (rich tables and lines); the data comes from lab.teach.workspace."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

_out = Console(highlight=False, soft_wrap=True)


def print_list(rows) -> None:
    t = Table(title="Exercises (lab exercise start NAME)")
    for col in ("#", "name", "title", "difficulty", "status"):
        t.add_column(col)
    for k, r in enumerate(rows, 1):
        colour = {"passed": "green", "in progress": "yellow"}.get(r["status"], "dim")
        t.add_row(str(k), r["name"], escape(r["title"]), "*" * r["difficulty"],
                  f"[{colour}]{r['status']}[/{colour}]")
    _out.print(t)


def print_started(path, statement) -> None:
    _out.print(escape(statement))
    _out.print()
    _out.print(f"Edit the file below, then: lab exercise check {path.stem}   (a hint: lab exercise hint {path.stem})")
    print(path)


def print_check(result) -> None:
    where = "the CUDA simulator" if result["backend"] == "simulator" else "the GPU"
    _out.print(f"{result['exercise']}: hidden tests on {where} (seed {result['seed']})")
    for t in result["tests"]:
        mark = "[green]PASS[/green]" if t["passed"] else "[red]FAIL[/red]"
        _out.print(f"  {mark} {escape(t['name'])}: {escape(t['message'])}")
    for note in result.get("notes", []):
        _out.print(f"  [dim]{escape(note)}[/dim]")
    n_ok = sum(t["passed"] for t in result["tests"])
    verdict = "[green]passed[/green]" if result["passed"] else "[red]not yet[/red]"
    _out.print(f"{n_ok}/{len(result['tests'])} tests passed: {verdict}")


def print_hint(name, k, n, text) -> None:
    _out.print(f"Hint {k}/{n} for {name}: {escape(text)}")
