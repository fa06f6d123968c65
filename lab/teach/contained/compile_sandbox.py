"""The offline GPU compile (:mod:`lab.teach.contained.gpu_compile`) of untrusted files, contained like the
checker's own child (:mod:`lab.teach.contained.sandbox`): ``python -m lab.teach.contained.compile_sandbox LIMITS FOLDER``
under bubblewrap where it works (no network, no GPU, a read-only view of what a compile needs, the
exercises' solutions and hidden tests hidden), with the allow-listed environment, the resource
limits, Landlock, then seccomp and the audit hook before the first kernel is built from its source.

The parent (:func:`run`) copies the files into a private folder, writes ``compile-request.json``
({"items": [{"path", "kernel", "sigs", "cc"}]}) and makes every result file ``compile-K.json``
empty beforehand; the child writes, per item, {"ok": true, "ptx": [...]}, {"ok": false, "message",
"line"}, {"skipped": why} or {"violation": what the sandbox stopped}. The parent reads each through
:func:`lab.teach.contained.childio.read_child_file` (a regular file, no link, size-capped) and believes an "ok"
only with a PTX per signature that it checks itself (:func:`lab.teach.contained.gpu_compile.verified`: the
``.version``, the ``.target`` of the compute capability asked, an ``.entry`` of the student's
kernel): a child's "ok" alone is no result. Several files of one student go to one child (``lab
exercise grade``): the start-up (Python, Numba, NVVM) is paid once per student, not per exercise.

The child builds each kernel from the source text the parent wrote
(:func:`lab.teach.contained.gpu_compile.compile_source`): the student's file is never imported, so nothing of
it runs here but the compiler on its syntax tree. Nothing here prints.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from lab.core import resources
from lab.core.session import child_env
from lab.teach import procs as W
from lab.teach.contained import gpu_compile, source, sandbox as S
from lab.teach.contained.childio import UnsafeChildFile, read_child_file

REQUEST = "compile-request.json"
STARTUP_S = 60.0  # Python, Numba and NVVM loading, before the first file's own time


def result_name(k: int) -> str:
    return f"compile-{k}.json"


def run(items, limits, env=None, cc=None, timeout: float = 50.0, deadline: float | None = None) -> list[dict]:
    """Compile each (path, kernel, sigs) of ``items`` (:func:`lab.teach.contained.gpu_compile.arg_types`
    descriptors) for ``cc`` (default :data:`lab.teach.contained.gpu_compile.CC`) in one contained child with
    ``limits`` (:class:`lab.teach.contained.sandbox.Limits`); ``env``: the grader's environment (default this
    process's), of which the child gets the allow-listed part. Returns per item what
    :func:`lab.teach.contained.gpu_compile.verified` makes of the child's word: {"ok": True, "ptx"}, {"ok":
    False, "message", "line"} or {"skipped": why}; a violation is a failure saying what was stopped.
    ``timeout``: seconds per file (the first one gets :data:`STARTUP_S` more); ``deadline``
    (``time.monotonic()``): the whole compile stops there. A file whose compile runs past either
    fails ("took longer"), it is not skipped.

    Cached: the compiler's verdict on a file, read back from the child and checked here (never a
    skip, a timeout or what the sandbox stopped), is kept under a hash of its source text, kernel,
    signatures, ``cc``, the compile's code and numba-cuda's version
    (:func:`lab.teach.contained.gpu_compile.cache_key`, apart from the uncontained compile's verdicts);
    a file checked again unchanged starts no child."""
    cc = tuple(cc or gpu_compile.CC)
    results: list = [None] * len(items)
    keys: list = [None] * len(items)
    todo = []
    for k, (path, kernel, sigs, *rest) in enumerate(items):
        text = rest[0] if rest and rest[0] is not None else None
        item = items[k]
        try:
            text = source.read(path) if text is None else text
            keys[k] = gpu_compile.cache_key(path, kernel, [list(s) for s in sigs], cc, text, "contained")
            item = (path, kernel, sigs, text)
        except Exception:  # noqa: BLE001 - no source: the compile below says why
            pass
        got = gpu_compile.cached_verdict(keys[k]) if keys[k] else None
        checked = gpu_compile.verified(got, kernel, len(sigs), cc) if got is not None else None
        if checked is not None and checked.get("ok") is got.get("ok"):  # an "ok" stands on its PTX, checked again
            results[k] = checked
        else:  # nothing kept, or an entry that is no verdict (edited): compiled again
            todo.append((k, item))
    if todo:
        fresh = _compile([item for _, item in todo], limits, env, cc, timeout, deadline)
        for (k, _), (result, verdict) in zip(todo, fresh):
            results[k] = result
            if verdict and keys[k]:
                gpu_compile.remember(keys[k], result)
    return results


def _compile(items, limits, env, cc, timeout, deadline) -> list[tuple[dict, bool]]:
    """:func:`run` for ``items`` with no cached verdict: per item (its result, whether it is the compiler's
    verdict, read from the child and checked, that may be kept)."""
    items = list(items)
    private = tempfile.mkdtemp(prefix="lab-compile-")
    copies, seen, texts = [], set(), []
    for k, (path, _, _, *rest) in enumerate(items):
        base = os.path.basename(path)
        name = base if base not in seen else f"{k}_{base}"
        seen.add(name)
        copies.append(os.path.join(private, name))
        text = rest[0] if rest and rest[0] is not None else None
        if text is None:
            try:
                text = source.read(path)
            except Exception as e:  # noqa: BLE001 - no source to compile: the reason, in the child's place
                text = ""
                items[k] = (path, items[k][1], items[k][2], None, str(e))
        texts.append(text)
        with open(copies[-1], "w", encoding="utf-8") as f:  # the text the judge read: the child compiles it
            f.write(text)
    request = {"items": [{"path": c, "kernel": item[1], "sigs": [list(s) for s in item[2]], "cc": list(cc)}
                         for c, item in zip(copies, items)]}
    with open(os.path.join(private, REQUEST), "w") as f:
        json.dump(request, f)
    outs = [os.path.join(private, result_name(k)) for k in range(len(items))]
    for o in outs:
        open(o, "w").close()
    base_env = child_env(**{**(env or {}), "NUMBA_ENABLE_CUDASIM": "0", "LAB_COMPILER": "numba-cuda",
                            "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS": "0"})
    env = dict(S.child_environment(base_env), HOME=private, TMPDIR=private, TEMP=private, TMP=private,
               PYTHONDONTWRITEBYTECODE="1", NUMBA_CACHE_DIR=os.path.join(private, ".numba"),
               XDG_CACHE_HOME=os.path.join(private, ".cache"), MALLOC_ARENA_MAX="2")
    env.setdefault("PATH", os.defpath)
    for var in S.THREAD_VARS:
        env.setdefault(var, "1")
    results: list = [None] * len(items)
    verdicts = [False] * len(items)
    try:
        todo = list(range(len(items)))
        while todo:  # one child for the items left; a file that hangs costs its own timeout, the rest go on
            stuck = _one_child(private, copies, outs, request, todo, limits, env, timeout, deadline)
            done = [k for k in todo if os.path.getsize(outs[k])]
            for k in done:
                results[k] = _take(private, k, items[k], cc)
                verdicts[k] = results[k].pop(_VERDICT, False)
            todo = [k for k in todo if k not in done]
            if todo and stuck and stuck.startswith((TOOK_LONGER, STOPPED)):  # the file's own doing: its failure
                first = todo.pop(0)
                results[first] = {"ok": False, "line": None, "message": f"{stuck} (stopped by the checker)"}
            elif todo:
                first = todo.pop(0)
                # no verdict (a grade's gate then fails: lab.teach.child._compile_gate; a self-check notes it)
                results[first] = {"skipped": stuck or "the compile's process left no result"}
            if todo and deadline is not None and time.monotonic() >= deadline:
                for k in todo:
                    results[k] = {"ok": False, "line": None,
                                  "message": "not compiled: the compile's time ran out on an earlier file"}
                todo = []
    finally:
        shutil.rmtree(private, ignore_errors=True)
    return list(zip(results, verdicts))


_VERDICT = "lab_verdict"  # (:func:`_take`'s mark, removed by :func:`_compile`) the compiler's own word, checked
TOOK_LONGER = "the compile took longer than"
STOPPED = "stopped by the sandbox:"


def _one_child(private, copies, outs, request, todo, limits, env, timeout, deadline=None) -> str | None:
    """Run one child on the items ``todo`` (their request rewritten); wait until it ends, or kill
    it when an item takes longer than ``timeout`` s (the first longer: :data:`STARTUP_S` more), or
    at ``deadline``, or when its private folder grows past the disk limit
    (:func:`lab.teach.contained.sandbox.folder_problem`). Returns why it stopped early, or None."""
    with open(os.path.join(private, REQUEST), "w") as f:
        json.dump({"items": [dict(request["items"][k], out=k) for k in todo]}, f)
    cmd = [*S.python("lab.teach.contained.compile_sandbox"), limits.to_arg(), private]
    cmd, _notes = S.wrap(cmd, private, Path(copies[0]), outs[0], "simulator", False, env,  # (no GPU needed)
                         copies[1:] + [os.path.join(private, REQUEST)], outs[1:], landlock=limits.landlock)
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, cwd=private)
    W.track(proc)
    why, since, seen, checked = None, time.monotonic(), 0, 0.0
    try:
        while proc.poll() is None:
            n = sum(1 for k in todo if os.path.getsize(outs[k]))
            if n > seen:
                seen, since = n, time.monotonic()
            allowed = timeout + (STARTUP_S if not seen else 0)
            now = time.monotonic()
            if now - since > allowed:
                why = f"{TOOK_LONGER} {allowed:.0f} s"
                break
            if deadline is not None and now >= deadline:
                why = f"{TOOK_LONGER} the time left for this submission's compile"
                break
            if now - checked > S.FOLDER_CHECK_S:
                checked = now
                full = S.folder_problem(private)
                if full:
                    why = f"{STOPPED} {full}"
                    break
            time.sleep(0.02)
        if why is None and proc.returncode:
            why = f"the compile's process ended with exit code {proc.returncode}"
    finally:
        W.kill_group(proc)
        W.untrack(proc)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    return why


def _take(private, k, item, cc) -> dict:
    """The parent's reading of result ``k``: a regular file, size-capped, its "ok" checked."""
    path, kernel, sigs = item[:3]
    if len(item) > 4:  # the file could not be read as source
        return {"ok": False, "line": None, "message": str(item[4])[:300]}
    try:
        data = read_child_file(private, result_name(k), len(sigs) * gpu_compile.PTX_CAP + (1 << 20))
        raw = json.loads(data) if data else None
    except (UnsafeChildFile, ValueError) as e:
        return {"ok": False, "line": None, "message": f"the compile's result file was tampered with ({e})"}
    if isinstance(raw, dict) and "violation" in raw:
        return {"ok": False, "line": None, "message": f"stopped by the sandbox: {str(raw['violation'])[:200]}"}
    result = dict(gpu_compile.verified(raw, kernel, len(sigs), cc))
    if isinstance(raw, dict) and raw.get("ok") in (True, False) and raw.get("ok") is result.get("ok"):
        result[_VERDICT] = True  # the compiler's word, and its PTX the evidence checked (a forged "ok" is not kept)
    return result


# --- The child ---------------------------------------------------------------------------------------------
def _warm(cc) -> None:
    """Compile a tiny kernel before the lockdown: NVVM and the libraries Numba looks for load now."""
    def lab_compile_warm(x):
        x[0] = 1

    gpu_compile.compile_here(lab_compile_warm, [[["array", "<i4", 1, "C"]]], __file__, cc)


def _write(private: str, k: int, record: dict) -> None:
    with open(os.path.join(private, result_name(k)), "w") as f:
        f.write(json.dumps(record))


def main(argv) -> None:
    S.contain_process()
    limits, private = S.Limits.from_arg(argv[0]), os.path.realpath(argv[1])
    S.set_limits(limits, True)  # an address-space limit too: no GPU context here
    with open(os.path.join(private, REQUEST)) as f:
        items = json.load(f)["items"]
    outs = [int(item["out"]) for item in items]
    why = resources.offline_unavailable()
    if why:
        for k in outs:
            _write(private, k, {"skipped": f"needs {why}"})
        return
    from numba import cuda  # noqa: F401 - the real one (NUMBA_ENABLE_CUDASIM=0), loaded before the lockdown  # lazy: backend chosen first (numba)

    _warm(tuple(items[0]["cc"]) if items else gpu_compile.CC)
    S.confine(private, limits)
    S.lock()  # seccomp: no process, socket, signal elsewhere or executable memory from here on
    stopped: list = []
    S.install_hook(private, stopped.append)
    for k, item in enumerate(items):
        path, kernel = item["path"], item["kernel"]
        before = len(stopped)
        try:  # from the source the parent wrote (the student's file is never imported: nothing of it runs)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            r = gpu_compile.compile_source(text, path, kernel, item["sigs"], item["cc"])
        except Exception as e:  # noqa: BLE001 - the compile itself broke: no verdict
            r = {"skipped": f"the compile could not run ({type(e).__name__}: {str(e).strip()[:120]})", "broken": True}
        if len(stopped) > before:
            r = {"violation": stopped[before]}
        _write(private, outs[k], r)


if __name__ == "__main__":
    main(sys.argv[1:])
    os._exit(0)
