"""Code says what is, not how it got there: no project issue numbers and no dated history in the
comments and docstrings of lab/, kernels/ and torch_bridge/ (git log and docs/benchmarks.md hold those).

List the offenders, one `file:line: text` a line:

    python -m tests.docs.test_code_hygiene

Upstream references that are sources ("numba-cuda issue 531", "NVIDIA/numba-cuda#902") are allowed.
"""

from __future__ import annotations

import io
import re
import sys
import tokenize
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("lab", "kernels", "torch_bridge")

# "issue 12", "issue-12", "issue12", "issues 12 and 14", "#12", "PR 7", "PR-7"; a date such as 2026-11-23 or 2026-11
# ("issues 8 independent loads" is the verb: a plural counts only as a list of numbers)
_REF = re.compile(
    r"\b(?:issue|PR)(?:\s+|[-_]|(?=#?\d))#?\d+|\bissues\s+#?\d+\s*(?:,|and|-)\s*#?\d+|(?<![\w&/])#\d+\b|\b20\d\d-[01]\d(?:-[0-3]\d)?\b",
    re.IGNORECASE,
)
# a reference to another project's tracker is a source, not our history
_UPSTREAM = re.compile(
    r"(?:numba-cuda|numba|llvmlite|cupy|pytorch|torch|cpython|python|triton|jax|nvbench|cutlass|"
    r"[\w.-]+/[\w.-]+)\s*(?:issue|PR|pull)?\s*#?\d+$",
    re.IGNORECASE,
)


def _texts(path: Path):
    """(line, text) of every comment and docstring-like string statement of one module; a string's text
    is its whole body (lines stripped), so a reference wrapped over two lines is one."""
    src = path.read_text(encoding="utf-8")
    prev = tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
        elif tok.type == tokenize.STRING and prev in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT):
            yield tok.start[0], "\n".join(part.strip() for part in tok.string.splitlines())
        if tok.type not in (tokenize.COMMENT,):
            prev = tok.type


def offenders(root: Path = ROOT) -> list[str]:
    """Every `path:line: text` of PACKAGES that cites a project issue or a date."""
    out = []
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            for line, text in _texts(path):
                for m in _REF.finditer(text):
                    before = text[max(0, m.start() - 40) : m.end()]
                    if _UPSTREAM.search(before):
                        continue
                    at = line + text.count("\n", 0, m.start())
                    near = " ".join(text[max(0, m.start() - 60) : m.end() + 20].split())
                    out.append(f"{path.relative_to(root)}:{at}: ...{near}...")
                    break
    return out


def test_the_patterns_catch_history_and_spare_sources():
    def hits(text):
        return [m for m in _REF.finditer(text) if not _UPSTREAM.search(text[max(0, m.start() - 40) : m.end()])]

    for bad in ("# measured in issue 12", "# see #12", "# (2026-11-23)", '"""Fixed in PR 7."""', "# issues 3 and 4",
                "# the issue-11 fix", "# after issue11", "# see PR-7"):
        assert hits(bad), bad
    for ok in ("# numba-cuda issue 531", "# NVIDIA/numba-cuda#902", "# 32 lanes, 4 warps", "# x[#] index", "# 0x2026"):
        assert not hits(ok), ok


def test_no_issue_numbers_or_dates_in_code_comments():
    found = offenders()
    assert not found, f"{len(found)} comments/docstrings cite an issue or a date:\n" + "\n".join(found[:40])


if __name__ == "__main__":
    lines = offenders()
    print("\n".join(lines))
    print(f"{len(lines)} offenders", file=sys.stderr)
    sys.exit(1 if lines else 0)
