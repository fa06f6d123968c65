"""Words for two threads of a block that stored one shared-memory cell in one barrier phase (a write-write
race, :func:`lab.teach.messages.race_message`), where the student's own text names the cause: the store's
index does not depend on the thread at all (every thread that runs the line stores one cell), its value is
the same for both threads although other names of the kernel tell them apart (a lane where the warp was
meant), or two stores of one array index it with the same expressions in another order (``s[tx, ty]`` and
``s[ty, tx]``). Pure functions of the file's text and the two threads' coordinates; None where the text
does not single the cause out. The judge reads the student's text and runs none of it.

Source: CUDA C++ Programming Guide, "Shared Memory" (each thread of a block stores its own cells; two
stores to one cell in one phase leave either value).
"""
from __future__ import annotations

import ast
import operator as op
from lab.teach.contained import syntax
from lab.teach.shared_words import warp_slot_store

_BINS = {ast.Add: op.add, ast.Sub: op.sub, ast.Mult: op.mul, ast.FloorDiv: op.floordiv, ast.Mod: op.mod,
         ast.BitAnd: op.and_, ast.RShift: op.rshift, ast.LShift: op.lshift}
_AXES = ("x", "y", "z")


def _eval(node, env):
    """The int value of ``node`` over ``env`` (names, and cuda.threadIdx/blockIdx/blockDim.x|y|z as
    dotted names); None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, (ast.Name, ast.Attribute)):
        return env.get(ast.unparse(node))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINS:
        a, b = _eval(node.left, env), _eval(node.right, env)
        if a is None or b is None or (isinstance(node.op, (ast.FloorDiv, ast.Mod)) and b == 0):
            return None
        return _BINS[type(node.op)](a, b)
    if isinstance(node, ast.Call) and ast.unparse(node) == "cuda.grid(1)":
        return env["cuda.blockIdx.x"] * env["cuda.blockDim.x"] + env["cuda.threadIdx.x"]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        a = _eval(node.operand, env)
        return None if a is None else -a
    return None


def _thread_env(tree, who, block):
    """(env, tainted): every name the kernel binds once to an int expression of the thread's and block's
    coordinates and module constants, valued for thread ``who`` = (block index, thread index); tainted:
    the names whose value comes from cuda.threadIdx."""
    blk, thr = who
    blk = (tuple(int(v) for v in tuple(blk)) + (0, 0, 0))[:3]
    thr = (tuple(int(v) for v in tuple(thr)) + (0, 0, 0))[:3]
    bd = (tuple(int(v) for v in (block if isinstance(block, (tuple, list)) else (block,))) + (1, 1, 1))[:3]
    env, tainted = {}, set()
    for i, a in enumerate(_AXES):
        env[f"cuda.threadIdx.{a}"], env[f"cuda.blockIdx.{a}"], env[f"cuda.blockDim.{a}"] = thr[i], blk[i], bd[i]
        tainted.add(f"cuda.threadIdx.{a}")
    bound = {}
    for st in ast.walk(tree):
        if isinstance(st, ast.Assign):
            for tg in st.targets:
                for n in (tg.elts if isinstance(tg, ast.Tuple) else [tg]):
                    if isinstance(n, ast.Name):
                        bound[n.id] = bound.get(n.id, 0) + 1
        elif isinstance(st, (ast.AugAssign, ast.For)) and isinstance(st.target, ast.Name):
            bound[st.target.id] = bound.get(st.target.id, 0) + 2  # changes: not one value
    for st in sorted((s for s in ast.walk(tree) if isinstance(s, ast.Assign)), key=lambda s: s.lineno):
        if len(st.targets) != 1:
            continue
        tg, val = st.targets[0], st.value
        pairs = [(tg, val)]
        if isinstance(tg, ast.Tuple) and isinstance(val, ast.Tuple) and len(tg.elts) == len(val.elts):
            pairs = list(zip(tg.elts, val.elts))
        for name, expr in pairs:
            if not isinstance(name, ast.Name) or bound.get(name.id) != 1:
                continue
            v = _eval(expr, env)
            if v is None:
                continue
            env[name.id] = v
            if any(ast.unparse(n) in tainted or ast.unparse(n) == "cuda.grid(1)" for n in ast.walk(expr)
                   if isinstance(n, (ast.Name, ast.Attribute, ast.Call))):
                tainted.add(name.id)
    return env, tainted


def _stores(tree, arr, line):
    """The subscripts of ``arr`` stored at ``line`` (a plain or augmented assignment)."""
    out = []
    for st in ast.walk(tree):
        if isinstance(st, (ast.Assign, ast.AugAssign)) and st.lineno == line:
            for tg in (st.targets if isinstance(st, ast.Assign) else [st.target]):
                if isinstance(tg, ast.Subscript) and ast.unparse(tg.value) == arr:
                    out.append(tg.slice)
    return out


def _parts(node):
    return list(node.elts) if isinstance(node, ast.Tuple) else [node]


def store_race_words(text: str, arr: str, idx, lines: tuple, me, them, block) -> str | None:
    """:func:`same_cell_words`, where a store's index that does not depend on the thread comes first, then
    every lane of a warp storing its warp's slot (:func:`lab.teach.shared_words.warp_slot_store`, one line),
    then the rest of :func:`same_cell_words`."""
    words = same_cell_words(text, arr, lines, me, them, block)
    if words and "does not depend on the thread" in words:
        return words
    bd = (list(block) if isinstance(block, (tuple, list)) else [int(block)]) + [1, 1]
    if lines[0] and lines[0] == lines[1]:
        lane = warp_slot_store(int(tuple(me[1])[0]), int(tuple(them[1])[0]), idx, arr, bd[:3])
        if lane:
            return lane
    return words


def same_cell_words(text: str, arr: str, lines: tuple, me, them, block) -> str | None:
    """Why threads ``me`` and ``them`` (each (block index, thread index)) both stored shared ``arr``'s one
    cell in one phase, at ``lines`` (this store's, the other's), from the file ``text``; None where the text
    does not say (a store in a loop, an index through names bound more than once)."""
    try:
        tree = syntax.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    if not lines[0] or not lines[1]:
        return None
    mine, theirs = _stores(tree, arr, int(lines[0])), _stores(tree, arr, int(lines[1]))
    if len(mine) != 1 or len(theirs) != 1:
        return None
    a, b = mine[0], theirs[0]
    sa, sb = [ast.unparse(p) for p in _parts(a)], [ast.unparse(p) for p in _parts(b)]
    if lines[0] != lines[1]:
        if len(sa) > 1 and sa != sb and sorted(sa) == sorted(sb):
            return (f"the store at line {lines[0]} indexes {arr}[{', '.join(sa)}] and the one at line {lines[1]} "
                    f"{arr}[{', '.join(sb)}]: the same indices in another order, so one thread's cell in one store "
                    f"is another thread's cell in the other: index both stores in the same order (the order the "
                    f"reads of {arr} use)")
        return None
    env_a, tainted = _thread_env(tree, me, block)
    env_b, _ = _thread_env(tree, them, block)
    inner = {id(n.value) for n in ast.walk(a) if isinstance(n, ast.Attribute)}  # cuda, cuda.threadIdx
    names = {ast.unparse(n) for n in ast.walk(a) if isinstance(n, (ast.Name, ast.Attribute)) and id(n) not in inner}
    if any(n not in env_a for n in names):
        return None  # a loop variable or a name bound twice: the index's value is not the text's alone
    code = ast.unparse(a)
    if not names & tainted:
        return (f"the index `{code}` of the store at line {lines[0]} does not depend on the thread: every thread "
                f"that runs this line stores the one cell {arr}[{_eval(a, env_a) if not isinstance(a, ast.Tuple) else code}]: "
                f"add the thread's own index (its threadIdx, or a name made from it) so that each thread stores "
                f"its own cell")
    if isinstance(a, ast.Tuple) or _eval(a, env_a) != _eval(a, env_b):
        return None
    differ = [f"{n} = {env_a[n]} and {env_b[n]}" for n in sorted(tainted)
              if n in env_a and n in env_b and "." not in n and env_a[n] != env_b[n]]
    if not differ:
        return None
    return (f"its index `{code}` has the same value ({_eval(a, env_a)}) for both threads, while names of your kernel "
            f"tell them apart ({'; '.join(differ[:3])}): the index of this store must be one of those (each "
            f"thread, or each warp, its own cell)")
