"""The transcripts in the docs are what their commands print now (scripts/transcripts.py --check).

The simulator transcripts run here, all at once (each a ``lab`` process, as a user runs it); the GPU
ones run with ``-m gpu`` on a GPU. Numbers (seeds, timings, errors) are masked; words, rows, notes and
``file.py:LINE`` references must match. After a change that moves them: ``python scripts/transcripts.py``
(``--gpu`` on a GPU) rewrites the files.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import SIMULATOR

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import transcripts  # noqa: E402  (scripts/ is not a package)


def _check(backend: str) -> list[str]:
    todo = [t for t in transcripts.find() if t.backend == backend]
    assert todo, f"no {backend} transcripts found"
    if backend == "gpu":  # a GPU transcript is compared only on the GPU model that made it
        here = transcripts.gpu_name()
        others = sorted({t.made_on for t in todo if t.made_on != here})
        todo = [t for t in todo if t.made_on == here]
        if not todo:
            pytest.skip(f"the GPU transcripts were made on {', '.join(others)}; this GPU is {here} "
                        "(python scripts/transcripts.py --gpu here would remake them)")
    bad = []
    for t, (code, out, _) in zip(todo, transcripts.run_all(todo)):
        why = transcripts.drift(t, code, out) or next(
            (f"a line of {len(line)} columns: {line!r}" for line in out.splitlines() if len(line) > transcripts.COLUMNS), None)
        if why:
            bad.append(f"{t.path.relative_to(ROOT)} {t.name}: $ {t.command}: {why}")
    return bad


def test_structure_masks_numbers_but_keeps_code_lines():
    s = transcripts.structure
    assert s("numba  row_per_thread  ok   256 ms  6.7e-06\nseed 3128072347") == s(
        "numba row_per_thread ok 1.5 s 9.7e-07 seed 42")
    assert s("A at kernels/matvec.py:34, 32.0 a request") != s("A at kernels/matvec.py:39, 32.0 a request")
    assert s("warp_per_row ok") != s("warp_per_row FAIL")


def test_every_transcript_region_is_well_formed():
    found = transcripts.find()
    names = {(t.path.name, t.name) for t in found}
    assert ("README.md", "simulator") in names and ("counters.md", "counters-sim") in names
    assert all(t.command.startswith("lab ") for t in found)
    assert {t.backend for t in found} == {"sim", "gpu"}
    assert all(t.made_on for t in found), [t.name for t in found if not t.made_on]  # every one says where


@pytest.mark.slow
def test_simulator_transcripts_match_their_commands():
    bad = _check("sim")
    assert not bad, "run `python scripts/transcripts.py` to regenerate:\n" + "\n".join(bad)


def gpu_commands() -> list[str]:
    """The ``lab`` commands of the blocks after a ``<!-- run:gpu -->`` marker (README's GPU machine)."""
    import re

    out = []
    for path in transcripts.doc_files():
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"^<!-- run:gpu -->\n```[a-z]*\n(.*?)^```$", text, re.MULTILINE | re.DOTALL):
            out += [line.split("  #")[0].strip() for line in m.group(1).splitlines() if line.startswith("lab ")]
    return out


def test_the_readme_names_its_gpu_commands():
    assert "lab device --measure" in gpu_commands() and len(gpu_commands()) >= 3


@pytest.mark.gpu
def test_the_readme_gpu_commands_run():
    if SIMULATOR:
        pytest.skip("the README's GPU commands need a GPU")
    todo = [transcripts.Transcript(ROOT / "README.md", "run:gpu", "gpu", cmd, "") for cmd in gpu_commands()]
    bad = [f"$ {t.command}: exit {code}" for t, (code, _, _) in zip(todo, transcripts.run_all(todo, jobs=1)) if code]
    assert not bad, "\n".join(bad)


@pytest.mark.gpu
def test_gpu_transcripts_match_their_commands():
    if SIMULATOR:
        pytest.skip("the GPU transcripts need a GPU (python scripts/transcripts.py --gpu there)")
    bad = _check("gpu")
    assert not bad, "run `python scripts/transcripts.py --gpu` to regenerate:\n" + "\n".join(bad)
