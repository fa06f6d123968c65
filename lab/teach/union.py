"""One verdict from two backends, and one score for every outcome (pure functions; nothing here runs
or prints anything).

On a GPU the hidden tests run twice, in two contained children: on the GPU (a real compile, real
values, compute-sanitizer with ``--gpu``, speed) and in the simulator on the CPU (the traced
diagnostics: one writer per output element, shared- and global-memory races, barriers in divergent
code, reads and writes outside the guard, warp masks). :func:`merge` makes one list of test entries
from the two: a test fails when either backend fails it (or when the simulator never ran it:
:func:`not_run_in_simulator`, fail closed), and a failing message says which backend
saw it ("seen on the GPU: ...", "seen in the simulator's trace: ..."), and when one backend's
values were right where the other's were wrong, that the two disagree on values. Whether a failure
is about values or a finding of the trace is the judge's word on the entry (its "kind",
:class:`lab.teach.messages.Failed`), not read from the message's wording.

:func:`score` is the gradebook's and the check's "tests passed / total": hidden tests passed out of
the exercise's hidden tests, the same denominator whatever happened. The other entries of a check
are gates, not hidden tests: "load" (the file imports and has the kernel), "compiles for a GPU" and
compute-sanitizer's "GPU racecheck" / "GPU memcheck" / "GPU synccheck". A failed "load" or
"compiles for a GPU" scores 0 (no hidden test can pass on a GPU with a file that does not load or a
kernel that does not compile); a failed sanitizer entry fails the verdict without changing the count.
"""
from __future__ import annotations

import re

GPU_SAW = "seen on the GPU"
SIM_SAW = "seen in the simulator's trace"
SANITIZER_SAW = "seen by compute-sanitizer on the GPU"
LOAD = "load"
COMPILE_TEST = "compiles for a GPU"  # lab.teach.cases.COMPILE_TEST (not imported: that module imports NumPy)
SANDBOX = "sandbox"  # what the sandbox stopped (lab.teach.workspace.check): its results cannot be trusted
ZEROING_GATES = (LOAD, COMPILE_TEST, SANDBOX)


def _said(message: str, who: str) -> str:
    """``message`` prefixed with the backend that saw it (once: a message already saying so is kept)."""
    return message if message.startswith(who) else f"{who}: {message}"


_VALUES = re.compile(r"\] = \S+, expected |never written|is all zeros|still holds its initial value|"
                     r"is NaN although it was written|differs from the float64 reference")


def values_wrong(message: str) -> bool:
    """Whether a failing message is about the output's values (an element wrong, never written, all
    zeros ...), not a finding of the simulator's trace (a race, a barrier, an access outside the
    guard, several writers) or a stop (timed out, raised). For an entry without the judge's "kind"."""
    return bool(_VALUES.search(message))


def _values(entry: dict) -> bool:
    """Whether a failing entry is about the output's values: the judge's "kind" ("values" or
    "diagnosis", :class:`lab.teach.messages.Failed`); an entry without one (a timeout, a stop, a
    load failure, an older record) by its message (:func:`values_wrong`)."""
    kind = entry.get("kind")
    return kind == "values" if isinstance(kind, str) else values_wrong(entry["message"])


_ADVICE = re.compile(r"(?:: |; |, )(?=(?:guard|add|use|round|check|let|initiali[sz]e|remove|store|set)\b)")


def observed(message: str) -> str:
    """What a failing message observed, without the advice that follows it ("out of bounds: your
    kernel wrote past its last element (...)" of "...: guard it, e.g. `if i < n:`")."""
    return _ADVICE.split(message, maxsplit=1)[0]


def _one(g: dict, s: dict | None) -> dict:
    """The merged entry of one test: ``g`` the GPU's, ``s`` the simulator's (None: it did not run it)."""
    if s is None or s.get("kind") == NOT_RUN:
        if g["passed"]:  # the simulator never ran it: it cannot pass (not_run_in_simulator)
            return g if s is None else dict(g, passed=False, message=s["message"], seen_by=["simulator"])
        return dict(g, message=_said(g["message"], GPU_SAW), seen_by=["gpu"])
    if g["passed"] and s["passed"]:
        return g
    if not g["passed"] and not s["passed"]:
        if g["message"] == s["message"]:
            msg = f"{GPU_SAW} and in the simulator's trace: {g['message']}"
        elif not _values(s):  # the trace's diagnosis names the thread and the index: its advice
            # leads, the GPU's generic advice (it cannot know the thread's own index) is left out
            msg = f"{SIM_SAW}: {s['message']}; {GPU_SAW} too: {observed(g['message'])}"
        else:
            msg = f"{SIM_SAW}: {s['message']}; {GPU_SAW}: {g['message']}"
        out = dict(g, passed=False, message=msg, seen_by=["simulator", "gpu"])
    elif g["passed"]:  # the trace saw what this run on the hardware did not show
        why = ("the GPU's values were right: the two backends disagree on values (a race, or a read before a "
               "write, that one run shows and the other does not?)" if _values(s) else
               "on the GPU the values were right; the trace sees what the values do not show")
        out = dict(g, passed=False, seen_by=["simulator"], message=f"{SIM_SAW}: {s['message']} ({why})")
    else:
        why = ("the simulator's values were right: the two backends disagree on values (a race, memory read "
               "before it was written, or an order of floating-point operations that only the GPU shows?)"
               if _values(g) else "the simulator passed this test")
        out = dict(g, passed=False, seen_by=["gpu"], message=f"{GPU_SAW}: {g['message']} ({why})")
    if "map" in s:  # the simulator's who-wrote-what (the notebook draws it)
        out["map"] = s["map"]
    return out


def merge(gpu_tests: list[dict], sim_tests: list[dict]) -> list[dict]:
    """One list of test entries ``{"name", "passed", "message"}`` (+ ``"seen_by"``: the backends
    that failed it, ``"gpu"`` / ``"simulator"``, on a failing entry; + the simulator's ``"map"``)
    from the GPU's and the simulator's, in the GPU's order, then the entries only the simulator has.

    A test passes only when every backend that ran it passed it. A test only one backend ran keeps
    that backend's entry (its failure says which backend saw it). Passing entries keep the GPU's
    message (its error there)."""
    sim_by = {t["name"]: t for t in sim_tests}
    out = []
    for g in gpu_tests:
        out.append(_one(g, sim_by.pop(g["name"], None)))
    for s in sim_by.values():
        out.append(s if s["passed"] else dict(s, message=_said(s["message"], SIM_SAW), seen_by=["simulator"]))
    return out


NOT_RUN_IN_SIMULATOR = "not run in the simulator"
NOT_RUN = "not run"  # the "kind" of :func:`not_run_in_simulator`'s entries (the judge's kinds: "values", "diagnosis")


def not_run_in_simulator(gpu_tests: list[dict], sim_tests: list[dict], why: str) -> list[dict]:
    """``sim_tests`` with a failing entry for every hidden test the GPU ran and the simulator did not
    (its child stopped, its offline compile gate failed or timed out, the leg raised): on a GPU the
    verdict is both backends', so a test the simulator's trace never saw cannot pass (a wrong kernel
    whose race or barrier only the trace sees would pass on the GPU alone). Nothing is added when the
    GPU ran no hidden test (its load or compile failed: that entry is the verdict)."""
    ran = {t["name"] for t in sim_tests}
    missing = [n for n in hidden_of(gpu_tests) if n not in ran]
    return sim_tests + [{"name": n, "passed": False, "kind": NOT_RUN,
                         "message": f"{NOT_RUN_IN_SIMULATOR}: {why}; on a GPU a test passes only when both "
                                    f"backends ran it (check again; `--sim` runs the simulator alone)"}
                        for n in missing]


def sanitizer_entry(entry: dict) -> dict:
    """A compute-sanitizer entry (``GPU racecheck`` ...), its failure saying that compute-sanitizer saw it."""
    if entry["passed"]:
        return entry
    return dict(entry, message=_said(entry["message"], SANITIZER_SAW), seen_by=["compute-sanitizer"])


def score(tests: list[dict], hidden: list[str]) -> tuple[int, int]:
    """(hidden tests passed, hidden tests) of a check's entries ``tests``; ``hidden``: the names of
    the exercise's hidden tests (its cases, in order). A hidden test counts as passed when an entry
    of that name passed and none failed; a failed "load" or "compiles for a GPU" scores 0; entries
    that are not hidden tests (the gates) never add to the count."""
    total = len(hidden)
    if any(not t["passed"] and t["name"] in ZEROING_GATES for t in tests):
        return 0, total
    ok = {t["name"] for t in tests if t["passed"]}
    bad = {t["name"] for t in tests if not t["passed"]}
    return sum(1 for n in hidden if n in ok and n not in bad), total


def hidden_of(tests: list[dict], gates=(LOAD, COMPILE_TEST, SANDBOX)) -> list[str]:
    """The hidden-test names among a check's entries: every name that is not a gate (``load``,
    ``compiles for a GPU``, ``sandbox``, ``GPU <tool>``), each once, in order."""
    seen = []
    for t in tests:
        n = t["name"]
        if n not in gates and not n.startswith("GPU ") and n not in seen:
            seen.append(n)
    return seen
