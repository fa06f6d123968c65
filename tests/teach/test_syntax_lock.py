"""lab.teach.contained.syntax: the lab's syntax trees are made one thread at a time. CPython 3.11 keeps the
AST conversion's recursion depth per interpreter, so two grader threads parsing at once failed an honest
submission ("SystemError: AST constructor recursion depth mismatch", seen in a fresh clone's run)."""
import ast
import pathlib
import threading

from lab.teach.contained import syntax

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_parse_of_the_lab_goes_through_the_lock():
    """No module of lab/ or exercises/ but syntax.py calls ast.parse (or compile of a syntax tree) itself."""
    found = []
    for p in [*(ROOT / "lab").rglob("*.py"), *(ROOT / "exercises").rglob("*.py")]:
        if p.name == "syntax.py" and p.parent.name == "contained":
            continue
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.Call) and ast.unparse(n.func) in ("ast.parse", "compile") and not (
                    n.args and isinstance(n.args[0], ast.Constant)):
                found.append(f"{p.relative_to(ROOT)}:{n.lineno}: {ast.unparse(n)[:80]}")
    assert not found, found


def test_parse_waits_for_the_lock_and_threads_parse_together():
    done = []
    with syntax._LOCK:  # another thread is converting a tree: this parse waits for it
        t = threading.Thread(target=lambda: done.append(syntax.parse("x = 1")))
        t.start()
        t.join(0.3)
        assert not done
    t.join(10)
    assert len(done) == 1 and isinstance(done[0], ast.Module)
    src = "def f(x):\n" + "".join(f"    y{i} = [(x + {i}) * (x - {i}) for _ in range(3)]\n" for i in range(200))
    errors = []

    def work():
        try:
            for _ in range(10):
                syntax.compile_tree(syntax.parse(src), "<f>", "exec")
        except Exception as e:  # noqa: BLE001 - any failure is the test's
            errors.append(repr(e))

    threads = [threading.Thread(target=work) for _ in range(6)]
    [t.start() for t in threads]
    [t.join(60) for t in threads]
    assert not errors, errors
