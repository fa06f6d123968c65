"""Text taken from untrusted code (a submission's messages, names, exceptions) made safe to show:
in a terminal, a table, a JSON document or a spreadsheet. Nothing here prints.

A terminal obeys control characters: ESC starts a sequence that can move the cursor, clear the
screen, retitle the window (OSC ``ESC ] 0 ; ... BEL``) or write a link; ``\\r`` rewrites a line;
Unicode's bidirectional overrides (U+202E ...) show text in another order than it is stored
("Trojan Source", CVE-2021-42574). A spreadsheet runs a cell that starts with ``= + - @`` (or a
tab or ``\\r`` before one) as a formula (OWASP, "CSV Injection").
"""
from __future__ import annotations

import re

# bidirectional embeddings, overrides and isolates, the marks, the Arabic letter mark
_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + _BIDI + "\u2028\u2029]")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _escaped(m: re.Match) -> str:
    c = m.group(0)
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def printable(text) -> str:
    """``text`` with every control character (C0 but newline and tab, DEL, C1: ESC, ``\\r``, the
    OSC introducer ...), bidirectional control and line/paragraph separator written as an escape
    (``\\x1b``, ``\\u202e``): shown, never obeyed. Non-strings are returned as ``str(text)``'s."""
    text = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_escaped, text)


_LINE_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f" + _BIDI + "\u2028\u2029\u0085]")


def printable_line(text) -> str:
    """:func:`printable`, and newlines and tabs escaped too (``\\x0a``, ``\\x09``): one line, for a
    name or a gradebook cell, where a newline would print a row of its own (a student's folder
    named ``"x\\nbob  vecadd  6/6  passed"``)."""
    text = text if isinstance(text, str) else str(text)
    return _LINE_UNSAFE.sub(_escaped, text)


def printable_tree(obj, one_line: bool = False):
    """A JSON-like value (dicts, lists, strings, numbers) with every string passed through
    :func:`printable` (``one_line``: :func:`printable_line`), keys too. The same object shape;
    numbers, booleans and None as they are."""
    show = printable_line if one_line else printable
    if isinstance(obj, str):
        return show(obj)
    if isinstance(obj, dict):
        return {show(k) if isinstance(k, str) else k: printable_tree(v, one_line) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [printable_tree(v, one_line) for v in obj]
    return obj


def spreadsheet_cell(value):
    """A CSV cell that a spreadsheet shows as text: a string starting with ``= + - @``, a tab or
    ``\\r`` gets a leading ``'`` (the OWASP advice), after :func:`printable`. Numbers pass as they are."""
    if not isinstance(value, str):
        return value
    value = printable(value)
    return "'" + value if value.startswith(FORMULA_START) else value

