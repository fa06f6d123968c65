"""How ``lab exercise`` shows its results (rich tables and lines); the data comes from lab.teach.workspace."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from kernels.spec import plural
from lab.cli.views.table import Col, console, show, explain, fit, print_tables, wide_adds
from rich.table import Table


def _console() -> Console:
    """stdout at the terminal's width (COLUMNS, or 80 when piped), made when used; long lines wrap."""
    return console()


def status_text(row) -> str:
    """What ``lab exercise list`` says of an exercise: its status, and what the last check found
    when that is not "passed" (it failed, or the file changed since)."""
    last = row.get("last_check")
    if row["status"] == "passed" or not last or not last.get("verified"):  # a record that does not verify: none
        return row["status"]
    if last.get("file_changed"):
        return "changed since check"
    return "failed last check" if not last["passed"] else row["status"]


def print_list(rows) -> None:
    _out = _console()
    colour = {"passed": "green", "in progress": "yellow", "not started": "dim", "failed last check": "red",
              "changed since check": "yellow"}
    cols = [Col("#", lambda r: str(r["k"]), 100),
            Col("name", lambda r: r["name"], 100, left=True),
            Col("title", lambda r: r["title"], 100, left=True, wrap=True),
            Col("difficulty", lambda r: "*" * r["difficulty"], 60, left=True),
            Col("status", status_text, 100, left=True, style=lambda t: colour.get(t, "yellow"))]
    show(cols, [dict(r, k=k) for k, r in enumerate(rows, 1)], _out, title="Exercises (lab exercise start NAME)")


def reflow(text: str) -> str:
    """A statement's paragraphs as single lines, for the console to wrap at its width (the sources are
    wrapped at 100 columns: printed as they are, each line broke again at 80). Indented lines and
    list items keep their own lines."""
    out = []
    for para in text.split("\n\n"):
        lines = para.split("\n")
        keep = any(line.startswith((" ", "\t", "-", "*", "|")) or line[:2].rstrip(".").isdigit() for line in lines[1:])
        out.append(para if keep else " ".join(line.strip() for line in lines))
    return "\n\n".join(out)


def print_started(path, statement, kept: bool = False) -> None:
    _out = _console()
    _out.print(escape(reflow(statement)))
    _out.print()
    if kept:
        _out.print(f"{escape(str(path))} already exists: kept it as it is (your work); delete it to start over")
    name = escape(path.stem)
    _out.print(f"Edit the file below, then: lab exercise check {name}   (a hint: lab exercise hint {name})")
    print(path)


def print_check(result, out: Console | None = None) -> None:
    _out = out or _console()
    where = "the CUDA simulator" if result["backend"] == "simulator" else "the GPU"
    if "simulator" in result.get("verdict_from", []) and result["backend"] == "gpu":
        where = "the GPU and in the CUDA simulator's trace"
    _out.print(f"{result['exercise']}: hidden tests on {where} (seed {result['seed']})")
    grid = Table.grid(padding=(0, 1), pad_edge=True)  # a long message wraps under itself, not under PASS
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for t in result["tests"]:
        mark = "[green]PASS[/green]" if t["passed"] else "[red]FAIL[/red]"
        grid.add_row(mark, f"{escape(t['name'])}: {escape(t['message'])}")
    _out.print(grid)
    for note in result.get("notes", []):
        _out.print(f"  [dim]{escape(note)}[/dim]")
    verdict = "[green]passed[/green]" if result["passed"] else "[red]not yet[/red]"
    if "tests_total" in result:
        from lab.teach.union import hidden_of  # lazy: heavy for lab exercise list's start (lab.teach.union)

        hidden = set(hidden_of(result["tests"]))
        gates = [t["name"] for t in result["tests"] if t["name"] not in hidden and not t["passed"]]
        failed = f" (and it failed: {escape(', '.join(dict.fromkeys(gates)))})" if gates else ""
        _out.print(f"{result['tests_passed']} of {plural(result['tests_total'], 'hidden test')} passed{failed}: "
                   f"{verdict}")
    else:
        n_ok = sum(t["passed"] for t in result["tests"])
        _out.print(f"{n_ok} of {plural(len(result['tests']), 'test')} passed: {verdict}")
    if "bench" in result:
        print_bench(result)


def print_hint(name, k, n, text, new: bool = True, out: Console | None = None) -> None:
    _out = out or _console()
    if new:
        _out.print(f"Hint {k}/{n} for {name}: {escape(text)}")
        return
    _out.print(f"No more hints for {name}: you have seen all {plural(n, 'hint')}. The last one again: {escape(text)}")
    _out.print(f"[dim]The reference solution: lab exercise solution {name}[/]")


def _bench_line(b) -> str:
    """One line for a bench document (lab.teach.bench)."""
    if b is None:
        return "not benchmarked: a hidden test failed (every test must pass first)"
    verdict = "PASS" if b["passed"] else "FAIL"
    extra = ""
    if b.get("rung_ms") is not None:
        extra = f"; kernels/ rung {b['rung']}: {b['rung_ms']:.4g} ms"
    return f"{verdict} {b.get('message') or ''}{extra}"


def print_bench(result) -> None:
    _out = _console()
    b = result.get("bench")
    what = "performance on the GPU" if result["backend"] == "gpu" else "memory traffic in the simulator"
    _out.print(f"Bench ({what}): {escape(_bench_line(b))}")
    if b and b.get("pass_line"):
        _out.print(f"  [dim]pass line: {escape(b['pass_line'])}[/dim]")
    for note in (b or {}).get("notes") or []:
        _out.print(f"  [dim]{escape(note)}[/dim]")


def print_grade(doc, csv_path=None, wide: bool = False) -> None:
    """The gradebook: one row per (student, exercise), the reason wrapped; when the reason does not
    fit the terminal, each failed row's reason under the table (student/exercise: reason); then
    the summary. ``wide``: every column at its natural width."""
    _out = _console()
    mark = {"passed": "green", "failed": "red", "missing": "dim"}
    cols = [Col("student", lambda r: r["student"], 100, left=True, wrap=True),
            Col("exercise", lambda r: r["exercise"], 100, left=True, wrap=True),
            Col("tests", lambda r: f"{r['tests_passed']}/{r['tests_total']}", 90),
            Col("grade", lambda r: r["status"], 100, left=True, style=mark.get),
            Col("bench", lambda r: None if not doc["bench"] or r["bench"] is None else
                ("pass" if r["bench"]["passed"] else "fail"), 60, left=True),
            Col("reason", lambda r: r["reason"] or "-", 80, left=True, wrap=True)]
    where = "the CUDA simulator" if doc["backend"] == "simulator" else "the GPU (and the simulator's trace)"
    title = f"Gradebook: {escape(doc['folder'])} on {where} (seed {doc['seed']})"
    table, shown, dropped = fit(cols, doc["rows"], _out, wide, title)
    under = [f"[dim]{escape(explain(shown))}[/]"] if explain(shown) else []
    if "reason" in dropped:  # the reason is what a teacher reads: under the table, one row each
        why = [r for r in doc["rows"] if r["status"] != "passed" and r["reason"]]
        if why:
            under.append("Why (student/exercise: reason):")
            under += [f"  {escape(r['student'])}/{escape(r['exercise'])}: {escape(r['reason'])}" for r in why]
    print_tables(_out, [table, *under, *wide_adds(dropped)], wide)
    s = doc["summary"]
    left = f", {s['not_graded']} not graded (interrupted)" if s.get("not_graded") else ""
    _out.print(f"{plural(s['students'], 'student')} x {plural(s['exercises'], 'exercise')}: {s['passed']} passed, "
               f"{s['failed']} failed, {s['missing']} missing{left}; {doc['seconds']:.1f} s with {doc['jobs']} jobs")
    _out.print("  [dim]tests: hidden tests passed / hidden tests; 0 when a file is missing or broken[/dim]")
    for note in doc["notes"]:
        _out.print(f"  [dim]{escape(note)}[/dim]")
    _out.print(f"  [dim]contained: {escape('; '.join(doc['isolation']))} (lab doctor; the README's "
               f"\"What the isolation does\")[/dim]")
    if csv_path:
        _out.print(f"wrote {escape(str(csv_path))}")
