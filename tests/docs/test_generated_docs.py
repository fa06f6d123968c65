"""The lists in the docs that the code knows are the code's (lab.cli.doctables): the kernels and their
rungs (README.md), `lab run`'s options (docs/running.md), the torch ops (docs/torch.md), the
exercises in `lab exercise list` order (exercises/README.md); and `--size`'s help names every kernel.
After a change that moves one: ``python -m lab.cli.doctables`` rewrites the files."""
from __future__ import annotations

import json
import re

import pytest

import kernels
from lab.cli import doctables as D

ROOT = D.ROOT


def _region(name: str) -> str:
    rel = next(rel for rel, names in D.FILES.items() if name in names)
    found = D.regions((ROOT / rel).read_text(encoding="utf-8"))
    assert name in found, f"{rel} lost its <!-- generated:{name} --> region"
    return found[name]


@pytest.mark.parametrize("name", sorted(D.GENERATORS))
def test_every_generated_list_is_the_codes(name):
    if name == "torch-ops":
        pytest.importorskip("torch")
    assert _region(name).strip() == D.GENERATORS[name]().strip(), (
        f"the {name} list differs from the code: run `python -m lab.cli.doctables`")


def _rows(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in table.strip().splitlines()[2:]]


def test_the_kernel_table_has_every_kernel_and_says_which_have_auto():
    rows = {r[0].strip("`"): r for r in _rows(_region("kernels"))}
    assert list(rows) == list(kernels.NAMES)
    for name in kernels.NAMES:
        spec = kernels.load(name)
        rungs = [v for v in spec.variants if v != "auto"]
        assert rows[name][1] == ", ".join(f"`{r}`" for r in rungs), name
        assert rows[name][2] == ("yes" if "auto" in spec.variants else "no"), name
    assert rows["transpose"][2] == "no"  # not "every kernel has auto", as a hand-written table once said


def test_the_run_options_table_has_every_option(lab):
    table = _region("run-options")
    code, out, _ = lab("run", "--help")
    assert code == 0
    for opt in sorted(set(re.findall(r"^\s+(--[\w-]+)", out, re.MULTILINE)) - {"--help"}):
        assert f"`{opt}" in table, f"docs/running.md's table lacks {opt}"
    assert "`--counters`" in table and "`--arrays`" in table


def test_the_exercise_path_is_numbered_as_lab_exercise_list_numbers_it(lab, tmp_path):
    code, out, _ = lab("exercise", "list", "--json", "--dir", str(tmp_path))
    assert code == 0
    listed = [e["name"] for e in json.loads(out)]
    table = [(int(r[0]), r[1].strip("`")) for r in _rows(_region("exercises"))]
    assert table == list(enumerate(listed, 1))


def test_the_torch_ops_table_has_every_registered_op():
    torch = pytest.importorskip("torch")
    from torch_bridge import lab_ops

    names = [r[0].strip("`").removeprefix("torch.ops.lab.") for r in _rows(_region("torch-ops"))]
    assert names == list(lab_ops.DECLARED)
    assert "transpose" in names
    for name in names:
        assert hasattr(torch.ops.lab, name)


def test_size_help_names_every_kernel_in_its_specs_form(lab):
    forms = dict(part.split(": ") for part in kernels.size_forms().split("; "))
    by_kernel = {k: form for names, form in forms.items() for k in names.split(", ")}
    assert sorted(by_kernel) == sorted(kernels.NAMES)
    for name in kernels.NAMES:  # read from the sources without importing: the same as the spec says
        spec = kernels.load(name)
        assert spec.size_help.startswith(by_kernel[name].removesuffix(" or N")), name
        assert by_kernel[name].endswith(" or N") == spec.square_ok, name
    code, out, _ = lab("run", "--help")
    assert code == 0 and all(name in " ".join(out.split()) for name in kernels.NAMES)


def test_render_rewrites_a_stale_region_and_refuses_an_unknown_one():
    stale = "intro\n<!-- generated:exercises -->\n| old | table |\n<!-- /generated:exercises -->\nend\n"
    new = D.render(stale)
    assert new.startswith("intro\n<!-- generated:exercises -->\n| # | name |") and new.endswith(
        "<!-- /generated:exercises -->\nend\n")
    assert D.render(new) == new
    with pytest.raises(ValueError, match="no such list"):
        D.render("<!-- generated:nonsense -->\nx\n<!-- /generated:nonsense -->")


def test_adding_a_kernel_names_every_field_of_a_kernelspec():
    """docs/adding-a-kernel.md's table of declarations covers every KernelSpec field: a row names it,
    or it lies in a row's "`first` ... `last`" range (in the dataclass's order)."""
    import dataclasses

    from kernels.spec import KernelSpec

    text = (ROOT / "docs" / "adding-a-kernel.md").read_text(encoding="utf-8")
    start = text.index("| field | read by | what it is |")
    fields = [f.name for f in dataclasses.fields(KernelSpec)]
    named = set()
    for row in _rows(text[start:text.index("\n\n", start)]):
        names = re.findall(r"`(\w+)`", row[0])
        if "..." in row[0] and len(names) == 2:
            names = fields[fields.index(names[0]):fields.index(names[1]) + 1]
        named |= set(names)
    assert not [f for f in fields if f not in named], "add these KernelSpec fields to docs/adding-a-kernel.md's table"
