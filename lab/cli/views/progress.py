"""A progress bar on stderr for commands that run many configurations (bench, sweep, roofline).

Library functions take an optional ``progress(done, total, label)`` callback and never print; the
CLI passes :func:`bar`'s callback. On a terminal it is a rich progress bar (transient: it disappears
when done, leaving stdout clean); piped (CI logs) it is one plain line a step on stderr.
"""
from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING
from collections.abc import Iterator
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, TimeElapsedColumn
from rich.text import Text

if TYPE_CHECKING:  # lab.core.runner imports numba.cuda: a bar may start before the backend is chosen
    from lab.core.runner import Steps


@contextlib.contextmanager
def bar(description: str, finished: bool = False) -> Iterator[Steps]:
    """Yield a ``progress(done, total, label)`` callback that draws on stderr. ``label`` names the
    step about to run (``done`` finished before it), or with ``finished`` the step just finished
    (``done`` counting it: 1 .. total), e.g. a graded submission."""
    console = Console(stderr=True)
    if not console.is_terminal:
        def line(done, total, label):
            if finished:
                print(f"[{description} {done}/{total}] {label}", file=sys.stderr, flush=True)
            elif done < total:
                print(f"[{description} {done + 1}/{total}] {label}", file=sys.stderr, flush=True)
        yield line
        return
    with RichProgress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), TextColumn("{task.fields[label]}"), console=console,
                      transient=True) as p:
        task = p.add_task(description, total=None, label="")

        def update(done, total, label):
            p.update(task, completed=done, total=total, label=label)
        yield update


def bar_unless(quiet: bool, description: str, finished: bool = False) -> contextlib.AbstractContextManager[Steps | None]:
    """:func:`bar`, or no callback at all (None) when ``quiet`` (e.g. ``--json``: stderr stays clean)."""
    return contextlib.nullcontext(None) if quiet else bar(description, finished)


@contextlib.contextmanager
def status_line(quiet: bool, description: str) -> Iterator[Steps | None]:
    """A ``progress(done, total, label)`` callback that shows ``description: label`` as one line on
    stderr that updates in place (a spinner, transient), only on a terminal; None when ``quiet`` or
    piped (a log gets the result, not the churn). ``lab exercise check``: which test is running."""
    console = Console(stderr=True)
    if quiet or not console.is_terminal:
        yield None
        return
    with console.status(Text(description), spinner="dots") as st:
        def update(done, total, label):  # one line: cut to the terminal's width (the spinner takes 2), never wrapped
            text, room = f"{description}: {label}", max(console.width - 3, 10)
            st.update(Text(text if len(text) <= room else text[:room - 1] + "…"))
        yield update
