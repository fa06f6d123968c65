"""Every ```python block in README.md, exercises/README.md and docs/*.md runs, as numba-cuda's doc
examples do: each in a fresh Python process (the block as written, from a scratch folder), in the
simulator here and on the GPU with ``-m gpu``.

A comment line just before the fence says when a block cannot run as it stands:

* ``<!-- python:gpu REASON -->``: it needs a CUDA GPU; skipped in the simulator with REASON, run
  with ``-m gpu`` on a GPU;
* ``<!-- python:excerpt FILE -->``: a part of FILE shown in the docs (a kernel module's ``SPEC``); its
  statements must be FILE's own (compared as Python syntax trees: comments and line breaks aside);
* ``<!-- python:skip REASON -->``: never run (a standalone reproducer of an upstream bug), with REASON.
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import SIMULATOR

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import transcripts  # noqa: E402  (scripts/ is not a package)

_BLOCK = re.compile(r"^(?:<!-- python:(?P<kind>gpu|excerpt|skip)(?: (?P<why>.*?))? -->\n)?```python\n(?P<code>.*?)^```$",
                    re.MULTILINE | re.DOTALL)
_STRAY = re.compile(r"<!-- python:(?!(?:gpu|excerpt|skip)[ -])")
TIMEOUT = 300  # seconds a block may take (the simulator's blocks take seconds)


@dataclass
class Block:
    path: Path
    line: int
    kind: str  # "run", "gpu", "excerpt" or "skip"
    why: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The ```python blocks of one markdown file, each with the marker before it (or "run")."""
    text = path.read_text(encoding="utf-8")
    return [Block(path, text.count("\n", 0, m.start("code")) + 1, m["kind"] or "run", (m["why"] or "").strip(),
                  m["code"]) for m in _BLOCK.finditer(text)]


ALL = [b for p in transcripts.doc_files() for b in blocks(p)]


def _param(b: Block):
    marks = [pytest.mark.gpu] if b.kind in ("run", "gpu") else []
    return pytest.param(b, id=b.id, marks=marks)


def run_block(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter: this checkout first on the path, the session's backend."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               MPLBACKEND="Agg")
    env["NUMBA_ENABLE_CUDASIM"] = "1" if SIMULATOR else "0"
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)


def test_the_docs_have_python_blocks_and_every_marker_is_known():
    kinds = {(b.path.name, b.kind) for b in ALL}
    assert {("torch.md", "run"), ("notebooks.md", "run"), ("notebooks.md", "gpu")} <= kinds
    assert all(b.why for b in ALL if b.kind in ("gpu", "skip", "excerpt")), "a marker without its reason or file"
    for path in transcripts.doc_files():
        stray = _STRAY.search(path.read_text(encoding="utf-8"))
        assert stray is None, f"{path.name}: unknown python marker at {stray.group(0)!r}"
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"<!-- python:\w+.*? -->\n(?!```python\n)", text):
            pytest.fail(f"{path.name}: {m.group(0).strip()} is not right before a ```python fence")


@pytest.mark.parametrize("block", [_param(b) for b in ALL if b.kind in ("run", "gpu")])
def test_python_block_runs(block: Block, tmp_path):
    if block.kind == "gpu" and SIMULATOR:
        pytest.skip(f"{block.id} needs a CUDA GPU: {block.why}")
    done = run_block(block.code, tmp_path)
    assert done.returncode == 0, f"{block.id} failed (exit {done.returncode}):\n{done.stderr[-3000:]}"


def _statements(code: str) -> list[str]:
    return [ast.dump(node) for node in ast.parse(code).body]


@pytest.mark.parametrize("block", [_param(b) for b in ALL if b.kind == "excerpt"])
def test_python_excerpt_is_the_files_code(block: Block):
    source = (ROOT / block.why).read_text(encoding="utf-8")
    theirs = set(_statements(source))
    missing = [ast.unparse(ast.parse(block.code).body[k])[:80]
               for k, s in enumerate(_statements(block.code)) if s not in theirs]
    assert not missing, f"{block.id}: not in {block.why} as written there: {missing}"


def test_the_excerpt_check_catches_drift():
    b = next(b for b in ALL if b.kind == "excerpt")
    changed = b.code.replace("order=80", "order=81")
    assert changed != b.code and not set(_statements(changed)) <= set(_statements((ROOT / b.why).read_text()))
