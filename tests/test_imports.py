"""Imports sit at the top of a module. An import inside a function stays only where it must, and says
why on its line (``# lazy: <reason>``):

* ``backend``: it imports numba (or the compiler :mod:`kernels.compiler` picks), and the backend, GPU or
  CUDA simulator (``NUMBA_ENABLE_CUDASIM``), is chosen at run time first (lab.core.simulator,
  kernels.compiler);
* ``optional``: an optional package (torch, cupy, matplotlib, triton, nbformat, cuda.bindings, cupti ...);
* ``heavy``: a module that a light command's start (``lab --help``, ``lab exercise list``) does not load, or
  that the contained tests child (started for every check) does not need;
* ``cycle``: a top-level import would make an import cycle.

And a name that the tests patch (``monkeypatch.setattr(runner, "run", fake)``), or that the lab rebinds
at run time, is never bound at import by ``from module import name``: the importing module would keep
the object it found when it was first imported (a fake, if that happened inside a patched test). Such
modules are imported whole (``from lab.core import runner``) and the name looked up at the call
(``runner.run(...)``).
"""
import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHECKED = ("lab", "kernels", "torch_bridge")
PACKAGES = ("lab", "kernels", "torch_bridge", "exercises")
LAZY = re.compile(r"#.*\blazy: (backend|optional|heavy|cycle)\b")

# (module, name) that the lab itself rebinds at run time: a binding made at import would go stale
REBOUND = {
    ("lab.core.device", "measure_copy_bandwidth"),  # lab.bench.shapes swaps it for a measured value
    ("numba.cuda.simulator.kernel", "_kernel_context"),  # lab.core.simt: the block being simulated
    ("numba.cuda.dispatcher", "get_current_device"),  # lab.core.resources, gpu_compile: the target's cc
    ("numba.cuda", "jit"),  # kernels.compiler wraps it (the kernel cache)
}


def _sources(packages=CHECKED):
    for pkg in packages:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            yield path, path.read_text()


def function_level_imports(text: str) -> list[ast.stmt]:
    """The import statements of ``text`` (a module's source) that run inside a function."""
    out = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                out.append(child)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(text), False)
    return out


def unmarked(text: str) -> list[int]:
    """Lines of the function-level imports of ``text`` that give no ``# lazy: <reason>``."""
    lines = text.splitlines()
    return [n.lineno for n in function_level_imports(text)
            if not any(LAZY.search(line) for line in lines[n.lineno - 1:n.end_lineno])]


def test_unmarked_finds_a_planted_function_level_import():
    text = ("import os\n\n\ndef f():\n    import json\n    import torch  # lazy: optional (torch)\n"
            "    from kernels.compiler import (\n        cuda,\n    )  # lazy: backend chosen first (numba)\n"
            "    import re  # lazy: because\n    return json, torch, cuda, re\n")
    assert unmarked(text) == [5, 10]


def test_every_function_level_import_says_why_it_is_there():
    offenders = [f"{path.relative_to(ROOT)}:{line}" for path, text in _sources() for line in unmarked(text)]
    assert not offenders, ("function-level imports without a `# lazy: backend|optional|heavy|cycle (...)` "
                           "reason (move them to the module's top):\n" + "\n".join(offenders))


def _module_files():
    files = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            files[".".join(parts)] = path
    return files


def _bound_module(files, module: str, attr: str) -> str | None:
    """What ``module.attr`` is when it names a module that ``module`` imported (``runner.kernels``)."""
    if f"{module}.{attr}" in files:
        return f"{module}.{attr}"
    path = files.get(module)
    if path is None:
        return None
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for a in node.names:
                if (a.asname or a.name.split(".")[0]) == attr:
                    return a.name if a.asname else attr
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                if (a.asname or a.name) == attr:
                    return f"{node.module}.{a.name}"
    return None


def patched_names() -> set[tuple[str, str]]:
    """(module, name) of every ``monkeypatch.setattr``/``setattr``/``mock.patch`` in tests/ whose target is
    a module: ``setattr("a.b.name", v)`` or ``setattr(M, "name", v)`` where M is a module the test
    imported (``import a.b as M``, ``from a import b``, ``M = pytest.importorskip("a.b")``,
    ``sys.modules["a.b"]``, ``M.sub`` for a module M imported)."""
    files = _module_files()
    found = set()
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text())
        alias = {}
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                for a in n.names:
                    alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
                for a in n.names:
                    alias[a.asname or a.name] = f"{n.module}.{a.name}"
            elif isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and n.value.args \
                    and isinstance(n.value.args[0], ast.Constant) and isinstance(n.value.args[0].value, str) \
                    and ast.unparse(n.value.func).endswith(("import_module", "importorskip")):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        alias[t.id] = n.value.args[0].value

        def module_of(e, alias=alias):
            if isinstance(e, ast.Name):
                return alias.get(e.id)
            if isinstance(e, ast.Attribute):
                base = module_of(e.value, alias)
                return base and (_bound_module(files, base, e.attr) or f"{base}.{e.attr}")
            if isinstance(e, ast.Subscript) and ast.unparse(e.value) == "sys.modules" \
                    and isinstance(e.slice, ast.Constant):
                return e.slice.value
            return None

        for n in ast.walk(tree):
            if not (isinstance(n, ast.Call) and n.args and ast.unparse(n.func).split(".")[-1]
                    in ("setattr", "delattr", "patch", "object")):
                continue
            first = n.args[0]
            second = n.args[1] if len(n.args) > 1 else None
            name_given = isinstance(second, ast.Constant) and isinstance(second.value, str)
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and not name_given:
                module, _, name = first.value.rpartition(".")
                found.add((module, name))
            elif name_given and (module := module_of(first)):
                found.add((module, second.value))
    return found


def test_the_patched_names_are_found():
    patched = patched_names()
    assert {("lab.core.runner", "run"), ("lab.core.device", "describe"), ("lab.core.simulator", "select"),
            ("kernels", "load"), ("lab.teach.workspace", "run_child")} <= patched


def _load_time_imports(tree):
    """The import statements that run when the module loads (its body, if/try/with blocks, class bodies)."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.ClassDef)) or type(node).__name__ == "TryStar":
            for field in ("body", "orelse", "finalbody", "handlers"):
                stack.extend(getattr(node, field, []))
        elif isinstance(node, ast.ExceptHandler):
            stack.extend(node.body)


def _absolute(path: pathlib.Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    parts = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    parts = parts[:len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


# bound at import on purpose, and patched where they are bound or read at import: (importing module, module, name)
BOUND_AT_IMPORT = {
    ("lab.cli.run", "kernels", "NAMES"),  # the help text of `lab run`, written at import
    ("lab.core.session", "lab.core.simulator", "select"),  # session.select: the same function, named there too
}
# bound at import before imports moved to the top, not changed here (the lead decides): each keeps the
# object it found at its first import
BEFORE = {
    ("lab.core.compilers", "kernels.backend", "gpu_count"),
    ("lab.inspect.occupancy", "lab.core.occupancy", "current_cc"),
    ("lab.inspect.sanitize", "lab.core.sanitizer", "find_sanitizer"),
    ("kernels.gemm.async_copy", "kernels.gemm.mma", "UNAVAILABLE"),
    ("kernels.gemm.skinny", "kernels.gemm.split_k", "SPLIT_MIN_K"),
}


def test_no_patched_or_rebound_name_is_bound_at_import():
    """``from lab.core.runner import run`` at a module's top keeps whatever ``run`` was when that module
    was first imported: import the module (``from lab.core import runner``) and call ``runner.run``."""
    patched = patched_names()
    watched = patched | REBOUND
    files = {path: name for name, path in _module_files().items()}
    offenders = []
    for path, text in _sources():
        importer = files[path]
        for node in _load_time_imports(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                module = _absolute(path, node)
                # a test that patches the importer's own binding (doctor.gpu_count) means that binding
                offenders += [f"{path.relative_to(ROOT)}:{node.lineno}: from {module} import {a.name}"
                              for a in node.names if (module, a.name) in watched
                              and (importer, a.asname or a.name) not in patched
                              and (importer, module, a.name) not in BOUND_AT_IMPORT | BEFORE]
    assert not offenders, "import the module instead:\n" + "\n".join(offenders)
