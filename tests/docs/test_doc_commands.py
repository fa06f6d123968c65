"""Every shell command in README.md, exercises/README.md and docs/*.md still exists as written.

Fenced blocks with no language (or sh, bash, shell, console) are shell; ```text and ```python are not: each line is a command (in a transcript block, the ``$``
lines). A ``lab`` command is parsed by the CLI itself (click: the command, every option and its value,
choices such as kernels and variants), without running it; ``python -m MODULE`` must import (for
``lab.cli.scripts``, its sub-command must exist; for ``pytest``, its paths); ``python FILE`` and ``bash
FILE`` must exist; ``pip install -e ".[a,b]"`` may name only extras of pyproject.toml. Other programs
(jupyter, docker, apt-get, ...) must be in KNOWN_TOOLS. Transcripts are run for real in
tests/docs/test_transcripts.py.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from pathlib import Path

import click
import pytest

from lab.core.errors import LabError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import transcripts  # noqa: E402  (scripts/ is not a package)

# programs the lab does not own: named in the docs, not checked here
KNOWN_TOOLS = {"jupyter", "docker", "apt-get", "git", "cd", "export", "source", ".", "ncu", "nsys",
               "nvidia-smi", "compute-sanitizer", "ls", "cat", "echo", "cp", "mkdir", "uv"}
# folders a user makes (the exercise workspace, generated notebooks): files in them need not exist here
USER_FOLDERS = ("lab-exercises/", "notebooks/", "~/")
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
_SHELL_LANGS = {"", "sh", "bash", "console", "shell"}  # ```text is output, not commands


def commands(path: Path) -> list[tuple[int, str]]:
    """(line number, command) of every shell command in one markdown file."""
    text = path.read_text(encoding="utf-8")
    out = []
    for fence in _FENCE.finditer(text):
        if fence["lang"] not in _SHELL_LANGS:
            continue
        first = text.count("\n", 0, fence.start("body")) + 1
        lines = fence["body"].splitlines()
        transcript = bool(lines) and lines[0].startswith("$ ")
        for k, line in enumerate(lines):
            if transcript:
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            line = _strip_comment(line).strip()
            if line and not line.startswith("#"):
                out.append((first + k, line))
    return out


def _strip_comment(line: str) -> str:
    """The command without its trailing ``# comment`` (a # outside quotes, after whitespace)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def _segments(command: str) -> list[list[str]]:
    """The simple commands of a line (split at &&, ||, |, ;), each without redirections and VAR=value."""
    command = re.sub(r"(?<=\s)(?:\d|&)?(?:>>?|<)(?:&\d\b|\s*[^\s&|;]+)", " ", command)
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    segs = [[]]
    for w in lexer:
        if w in ("&&", "||", "|", ";"):
            segs.append([])
        elif not segs[-1] and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", w):
            continue
        else:
            segs[-1].append(w)
    return [s for s in segs if s]


def _extras() -> set[str]:
    try:
        import tomllib  # Python >= 3.11
    except ImportError:
        tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml on Python 3.10 needs tomli")
    with open(ROOT / "pyproject.toml", "rb") as f:
        return set(tomllib.load(f)["project"]["optional-dependencies"])


def _check_lab(args: list[str]) -> None:
    """Parse ``lab ARGS`` with the CLI's click objects: unknown commands, options, choices fail."""
    from lab.cli import cli

    ctx = cli.make_context("lab", list(args), resilient_parsing=False)
    cmd, rest, parent = cli, _rest(ctx), ctx
    while isinstance(cmd, click.Group) and rest:
        name, cmd, rest = cmd.resolve_command(parent, rest)
        parent = cmd.make_context(name, list(rest), parent=parent)
        rest = _rest(parent) if isinstance(cmd, click.Group) else []


def _rest(ctx: click.Context) -> list[str]:
    """A group context's sub-command and its arguments, not yet parsed (click 8.1 and 8.2+)."""
    protected = ctx._protected_args if hasattr(ctx, "_protected_args") else ctx.protected_args
    return [*protected, *ctx.args]


def check(argv: list[str]) -> str | None:
    """Why one simple command no longer works as documented, or None."""
    prog, args = argv[0], argv[1:]
    if prog == "lab":
        try:
            _check_lab(args)
        except click.exceptions.Exit:
            return None  # --help
        except (click.ClickException, LabError) as e:  # LabError: a value an option's declaration refuses
            message = e.format_message() if isinstance(e, click.ClickException) else str(e)
            if "does not exist" in message and any(a.startswith(USER_FOLDERS) or a.endswith(".json") for a in args):
                return None  # a user's own file (submissions, a.json): parsed as far as it can be here
            return message
        return None
    if prog in ("python", "python3"):
        if args[:2] == ["-m", "venv"]:
            return None
        if args[:1] == ["-m"]:
            mod, rest = args[1], args[2:]
            if mod == "lab":
                return check(["lab", *rest])
            if importlib.util.find_spec(mod) is None:
                return f"no module {mod}"
            if mod == "lab.cli.scripts":
                from lab.cli.scripts import SCRIPTS

                if not rest or rest[0] not in SCRIPTS:
                    return f"python -m lab.cli.scripts has {sorted(SCRIPTS)}, not {rest[:1]}"
            if mod == "pytest":
                missing = [a for a in rest if not a.startswith("-") and "/" in a and not (ROOT / a.split("::")[0]).exists()]
                return f"no such test path: {missing}" if missing else None
            return None
        script = args[0] if args else ""
        return None if script.startswith(USER_FOLDERS) or (ROOT / script).is_file() else f"no such file {script}"
    if prog == "bash":
        return None if (ROOT / args[0]).is_file() else f"no such file {args[0]}"
    if prog == "pip":
        if args[:1] != ["install"]:
            return f"pip {args[:1]}"
        for a in args:
            m = re.search(r"\[([\w,-]+)\]", a)
            if m and (missing := set(m.group(1).split(",")) - _extras()):
                return f"pyproject.toml has no extra {sorted(missing)}"
        return None
    if prog in KNOWN_TOOLS:
        return None
    return f"unknown program {prog!r} (not lab, python, bash, pip or tests/docs' KNOWN_TOOLS)"


def _all_commands():
    return [(path, line, cmd) for path in transcripts.doc_files() for line, cmd in commands(path)]


def test_the_docs_have_commands_and_the_parser_finds_them():
    found = _all_commands()
    assert len(found) > 30
    readme = {cmd for path, _, cmd in found if path.name == "README.md" and path.parent == ROOT}
    assert "lab exercise check vecadd" in readme and "python scripts/transcripts.py" in readme
    assert _segments('LAB_COMPILER=x python -m pytest -m gpu > log 2>&1 && lab run vecadd | tee x') == [
        ["python", "-m", "pytest", "-m", "gpu"], ["lab", "run", "vecadd"], ["tee", "x"]]
    assert _strip_comment('pip install -e ".[a]" # the #1 way') == 'pip install -e ".[a]" '


def test_the_check_catches_drift():
    assert check(["python", "-m", "lab.bench.compiler_table", "--out", "x.md"]) == "no module lab.bench.compiler_table"
    assert "no-such-option" in check(["lab", "run", "vecadd", "--no-such-option"])
    assert check(["lab", "run", "vecadd", "--dtype", "float7"]) is not None
    assert check(["lab", "nosuchcommand"]) is not None
    assert check(["pip", "install", "-e", ".[dev,nosuchextra]"]) is not None
    assert check(["lab", "run", "matvec", "--threads", "1024"]) is None


@pytest.mark.parametrize("path", transcripts.doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_documented_command_exists(path):
    bad = []
    for line, cmd in commands(path):
        try:
            segs = _segments(cmd)
        except ValueError as e:
            bad.append(f"{path.relative_to(ROOT)}:{line}: {cmd}: cannot split ({e})")
            continue
        for argv in segs:
            if argv[0] in ("tee", "head", "tail", "grep"):
                continue
            why = check(argv)
            if why:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {cmd}: {why}")
    assert not bad, "\n".join(bad)


def test_the_readme_is_a_map_with_the_quick_start_ci_runs():
    """At most 250 lines, by reader (the depth, and the GPU transcripts, live in docs/); the two
    Quick-start commands sit after the markers .ci/run parses."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move depth to docs/"
    for heading in ("## Quick start", "## Learn", "## Teach", "## Measure"):
        assert any(line.startswith(heading) for line in lines), heading
    for marker, start in (("<!-- quickstart:main -->", "python3 -m venv .venv"),
                          ("<!-- quickstart:test -->", "python3 -m venv .venv")):
        k = lines.index(marker)
        assert lines[k + 1] == "```" and lines[k + 2].startswith(start) and lines[k + 3] == "```", marker
    assert "python -m pytest -n auto" in lines[lines.index("<!-- quickstart:test -->") + 2]
