"""The lab's kernels: each module holds the kernels, their launch math and a NumPy reference.

Importing a kernel module imports ``numba.cuda`` (through ``kernels.compiler``), so the backend (GPU or simulator) is chosen
first: by ``lab.core.simulator.select``, or else automatically (the simulator when no GPU is usable, with one warning); this package itself imports nothing heavy, and :func:`load` imports
a kernel module on demand.

A kernel is a module of this package that declares ``SPEC = KernelSpec(...)`` at its bottom
(kernels/spec.py): :data:`NAMES` finds every such module by reading the sources (no import), in
the order its spec's ``order=`` gives (then by name), and every lab command reads the rest from the
spec. No list elsewhere names a kernel (docs/adding-a-kernel.md).
"""
from __future__ import annotations

import ast
import difflib
import importlib
import os
import re

_SPEC_LINE = re.compile(r"^SPEC = KernelSpec\(", re.MULTILINE)


def _spec_keywords(path: str) -> dict | None:
    """The keyword arguments of the ``SPEC = KernelSpec(...)`` statement in the module at ``path`` whose
    values are literals (``order=``, ``size_help=``, ``square_ok=`` ...), or None when the module declares
    no spec. Only that statement is parsed; nothing is imported."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = _SPEC_LINE.search(text)
    if m is None:
        return None
    try:
        tree = ast.parse(text[m.start():])
    except SyntaxError:  # the statement and what follows it are not a module on their own: parse all
        tree = ast.parse(text)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "SPEC" for t in node.targets):
            return {kw.arg: kw.value.value for kw in getattr(node.value, "keywords", [])
                    if kw.arg and isinstance(kw.value, ast.Constant)}
    return {}


def _declared_order(path: str) -> int | None:
    """The ``order=`` of the ``SPEC = KernelSpec(...)`` statement in the module at ``path`` (100 when
    not given), or None when the module declares no spec."""
    found = _spec_keywords(path)
    if found is None:
        return None
    order = found.get("order", 100)
    return order if isinstance(order, int) else 100


def discover(folder: str | None = None) -> tuple[str, ...]:
    """The kernel modules of ``folder`` (this package's by default): each ``NAME.py`` that declares
    ``SPEC = KernelSpec(``, sorted by its spec's ``order`` and then by name."""
    folder = folder or os.path.dirname(os.path.abspath(__file__))
    found = []
    for entry in sorted(os.listdir(folder)):
        if entry.endswith(".py") and not entry.startswith("_"):
            order = _declared_order(os.path.join(folder, entry))
            if order is not None:
                found.append((order, entry[:-3]))
    return tuple(name for _, name in sorted(found))


NAMES = discover()


def size_forms() -> str:
    """How ``--size`` is written for each kernel, grouped by form, from the specs' literal ``size_help``
    and ``square_ok`` (read from the sources: nothing imported, so the CLI's help costs no numba), e.g.
    "vecadd, quantize: N; matvec, softmax: ROWSxCOLS; matmul: MxNxK or N"."""
    here = os.path.dirname(os.path.abspath(__file__))
    groups: dict[str, list[str]] = {}
    for name in NAMES:
        kw = _spec_keywords(os.path.join(here, name + ".py")) or {}
        form = re.split(r",| \(", str(kw.get("size_help", "?")), maxsplit=1)[0].strip()
        groups.setdefault(form + (" or N" if kw.get("square_ok") else ""), []).append(name)
    return "; ".join(f"{', '.join(names)}: {form}" for form, names in groups.items())


def load(name: str):
    """The KernelSpec of kernel ``name``; KeyError with a did-you-mean for unknown names."""
    if name not in NAMES:
        close = difflib.get_close_matches(name, NAMES, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise KeyError(f"unknown kernel {name!r}{hint}; kernels: {', '.join(NAMES)}")
    return importlib.import_module(f"kernels.{name}").SPEC


def load_variant(name: str, variant: str | None = None):
    """(KernelSpec, variant name) of kernel ``name``: ``variant`` or, when None, its first rung.
    KeyError (with the choices) for an unknown kernel or variant."""
    spec = load(name)
    variant = variant or next(iter(spec.variants))
    if variant not in spec.variants:
        raise KeyError(f"unknown variant {variant!r} of {name}; choose from: {', '.join(spec.variants)}")
    return spec, variant
