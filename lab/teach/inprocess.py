"""The hidden tests of an exercise with the executor and the judge in one process, through the same
request and result files as a contained check (:func:`run_all`). For the lab's own tests and the
catalogue of mistakes: the student's kernel runs in this process, so this is no contained check
(:func:`lab.teach.workspace.check` runs :mod:`lab.teach.contained.executor` in a child). The judge's
side: it may import the contained package; nothing there imports this."""
from __future__ import annotations

import json
import os
import tempfile

import numpy as np

import exercises
from lab.teach.cases import COMPILE_TEST, compile_entry, compile_sigs, hidden_cases
from lab.teach.checker import Judge, launch_plan
from lab.teach.contained import gpu_compile
from lab.teach.contained import source as S
from lab.teach.contained.channel import INPUTS, REQUEST, make_request, write_request
from lab.teach.contained.executor import execute
from lab.teach.messages import Failed


def run_all(name, path, backend, seed, emit=lambda obj: None, skip=(), compile_check=True):
    """Every hidden test of exercise ``name`` on the student's file ``path``, executor and judge in
    this process, through the same request and result files (for the lab's own tests: the kernel
    runs here, so this is no contained check; :func:`lab.teach.workspace.check` runs the executor
    in a child). The backend must already be selected. Returns [{"name", "passed", "message"}];
    ``emit`` gets the progress events and ``{"note": text}`` for a check that was skipped; ``skip``:
    names of tests not to run; ``compile_check``: also compile the kernel offline for a GPU, the
    test "compiles for a GPU", first: in the simulator nothing runs a kernel that does not compile
    (only that test comes back)."""
    ex = exercises.load(name)
    rng = np.random.default_rng(int(seed))
    cases = hidden_cases(ex, rng)
    try:  # the judge reads the file as source: nothing of it runs when it is refused
        text = S.read(path)
        prog = S.extract(text, str(path), ex.kernel, ex.launch)
    except (Failed, OSError) as e:
        failed = {"name": "load", "passed": False, "message": str(e) if isinstance(e, Failed) else
                  f"cannot read {os.path.basename(str(path))}: {e.strerror or e}"}
        emit(failed)
        return [failed]
    launches = launch_plan(ex, prog, cases)
    do_compile = compile_check and gpu_compile.enabled() and COMPILE_TEST not in skip
    results = []
    if do_compile and backend == "simulator":  # the compile first: it proves the kernel holds only device code
        gate = compile_entry(gpu_compile.check(str(path), ex.kernel, compile_sigs(cases), text=text), backend)
        if isinstance(gate, str):
            emit({"note": gate})
        else:
            emit(gate)
            results.append(gate)
            if not gate["passed"]:
                return results
        do_compile = False
    request, inputs = make_request(ex, cases, backend, do_compile, rng, launches=launches, source=text)
    with tempfile.TemporaryDirectory(prefix="lab-check-") as folder:
        write_request(folder, request, inputs)
        with np.load(os.path.join(folder, INPUTS), allow_pickle=False) as z:
            execute(json.loads(open(os.path.join(folder, REQUEST)).read()), z, str(path),
                    folder, emit, skip)
        judge = Judge(ex, cases, backend, path, folder, do_compile, launches=launches, source=text)
        try:
            failed = judge.load_failure()
            if failed:
                emit(failed)
                return [failed]
            for n in judge.planned:
                if n in skip:
                    continue
                r = judge.test(n)
                if r is not None:
                    emit(r)
                    results.append(r)
            for note in judge.notes:
                emit({"note": note})
            return results
        finally:
            judge.close()
