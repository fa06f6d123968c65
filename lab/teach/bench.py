"""Performance grading of an exercise (``lab exercise check NAME --bench``), after every hidden test
passed. Three sides, as for the hidden tests:

* the parent (the judge) picks the problem (:func:`plan`: bench.py's case or the largest hidden
  test) and sends its inputs in the request (:func:`lab.teach.contained.channel.make_request`, key "bench");
* the student's contained child (``python -m lab.teach.contained.measure ...``:
  :func:`lab.teach.contained.measure.main`, the executor's :func:`lab.teach.contained.executor.main`,
  then, once the parent judged every test passed, the benchmark) runs only the student's kernel on
  those inputs and hands back raw counts (:func:`lab.teach.contained.measure.measure`): it
  reads neither the reference solution nor the hidden tests (hidden from it like from any child);
* the reference's numbers come from a trusted child of the lab's own code (:func:`reference`,
  ``python -m lab.teach.bench --reference``: no student code in it), once per exercise, backend
  and seed in a process; and the parent computes the pass line from the two (:func:`judge`).

Nothing here prints. The counts and timings come from the lab's own tracer and timer in the child,
around the kernel built from the source the judge read (:func:`lab.teach.contained.executor.load_student`:
nothing of the file but its kernel runs, so nothing can replace :func:`measure`); the launch
configuration is the judge's.

On a GPU: the student's kernel, the reference solution (``exercises/NAME/solution.py``) and, where
the exercise names one (meta ``RUNG = "kernel:variant"``), the ``kernels/`` rung it mirrors are
timed with the lab's timer (:class:`lab.core.timing.Timer`: CUDA events, calls queued behind a
blocked GPU, L2 flushed before each call, nvbench's stop rule) on the same inputs. Reported:

* ``pct_of_reference`` = 100 x reference ms / student ms (the reference's speed is 100%);
* ``pct_of_peak``: the bytes the problem must move per ms against the *measured* device-to-device
  copy bandwidth (:func:`lab.core.device.measure_copy_bandwidth`; the nominal DRAM bandwidth when
  that fails) for ``PEAK = "copy"``, or FLOP/ms against the FP32 peak
  (:func:`lab.core.device.describe`) for ``PEAK = "fp32"``;
* ``passed``: ``pct_of_reference >= PASS_PCT_OF_REFERENCE`` (meta; 70 when missing).

In the simulator nothing can be timed; instead every warp's global loads and stores are traced
(:class:`lab.core.trace.SectorTracer`, as ``lab counters --sim``) in the lab's executor
(:func:`lab.core.simt.run`, which has the warp shuffles Numba's simulator lacks), and the student's
32-byte sectors are compared with the reference's: ``passed`` when the loads' and the stores'
sectors in all are each within ``SECTOR_FACTOR`` (meta; 1.25 when missing) of the reference's, and
the global atomics within ATOMIC_FACTOR. A failing line names its cause: sectors per warp request
(coalescing: consecutive threads touching consecutive elements), sectors fetched again for the same
data (reuse: shared memory), or atomics per element. This grades memory traffic without a GPU.

The inputs: ``exercises/NAME/bench.py``'s ``case(rng, simulator)`` (a GPU-sized problem), else the
largest hidden test (a note says so: small for a GPU). Source: CUDA C++ Best Practices Guide,
"Coalesced Access to Global Memory" and "Using CUDA GPU Timers".
"""
from __future__ import annotations

import json
import math
import os
import sys
import subprocess
import tempfile

import numpy as np

from lab.teach.contained.measure import failure_text, measure, time_launch
import exercises
import kernels
from kernels.spec import plural
from lab.core import session, device, contenders as C, simulator as core_simulator
from lab.core.session import child_env
from lab.teach.contained.executor import load_student
from lab.teach.messages import quote
from lab.teach.procs import kill_group, track, untrack

SIM_MAX_ELEMENTS = 20_000  # simulator: the largest hidden test up to this many elements (seconds, not minutes)
KEYS = ("backend", "case", "passed", "message", "pass_line", "student_ms", "reference_ms", "pct_of_reference",
        "peak", "achieved", "peak_value", "peak_unit", "pct_of_peak", "peak_source", "rung", "rung_ms",
        "pct_of_rung", "sectors", "timing", "notes")


def _blank(ex, backend) -> dict:
    doc = dict.fromkeys(KEYS)
    doc.update(backend=backend, peak=ex.peak, rung=ex.rung, notes=[], passed=False)
    return doc


def pick_case(ex, rng, simulator: bool):
    """(Case, note or None): bench.py's case, else the largest hidden test of the fixed sizes (in the
    simulator the largest up to SIM_MAX_ELEMENTS elements)."""
    mod = ex.bench()
    if mod is not None:
        return mod.case(rng, simulator), None
    cases = ex.hidden().cases(rng)
    public = _public_names(ex)  # the sizes hidden.py fixes: the same problem whatever the seed (not the drawn one)
    cases = [c for c in cases if c.name in public] or cases

    def size(c):
        return sum(a.size for a in c.args if isinstance(a, np.ndarray)) + sum(math.prod(s) for s, _ in c.outputs)

    pool = [c for c in cases if size(c) <= SIM_MAX_ELEMENTS] if simulator else cases
    case = max(pool or cases, key=size) if pool else min(cases, key=size)
    note = None if simulator else (f"timed at the hidden tests' largest size ({case.name}): small for a GPU; "
                                   f"add exercises/{ex.name}/bench.py for a larger one")
    return case, note


_PUBLIC: dict = {}


def _public_names(ex) -> set:
    """The names of exercise ``ex``'s hidden tests that three seeds share: its fixed sizes, not the one
    drawn from the seed (:func:`exercises.and_drawn`), so that a bench times one problem whatever the seed."""
    if ex.name not in _PUBLIC:
        names = [{c.name for c in ex.hidden().cases(np.random.default_rng(s))} for s in (0, 1, 2)]
        _PUBLIC[ex.name] = set.intersection(*names)
    return _PUBLIC[ex.name]


def bytes_moved(ex, case) -> int:
    """bench.py's ``bytes(case)``, else every input array read once and every output written once."""
    mod = ex.bench()
    if mod is not None and hasattr(mod, "bytes"):
        return int(mod.bytes(case))
    n = sum(a.nbytes for a in case.args if isinstance(a, np.ndarray))
    return int(n + sum(math.prod(s) * np.dtype(dt).itemsize for s, dt in case.outputs))


def plan(ex, seed: int, simulator: bool):
    """(Case, note or None): the problem the bench runs, drawn from ``seed`` (the request's
    ``bench_seed``) by the judge's process (:func:`pick_case`)."""
    return pick_case(ex, np.random.default_rng(int(seed) + 1), simulator)


def run(name: str, path: str, backend: str, seed: int) -> dict:
    """The bench document of ``path`` (the student's file) for exercise ``name`` (keys: KEYS), every
    side in this process (for the lab's own tests: the student's kernel runs here)."""
    ex = exercises.load(name)
    case, note = plan(ex, seed, backend == "simulator")
    try:
        mine = measure(load_student(path, ex), ex, case, backend)
    except Exception as e:  # noqa: BLE001 - a student's kernel that misbehaves only at this size
        mine = {"error": failure_text(e)}
    return judge(ex, case, backend, mine, _reference_here(ex, case, backend), note,
                 source=open(path, encoding="utf-8", errors="replace").read())


_REFERENCE: dict = {}
REFERENCE_TIMEOUT_S = 300.0  # the reference's own benchmark (the lab's code; once per exercise and seed)


def reference(name: str, backend: str, seed: int) -> dict:
    """The reference solution's raw numbers for the bench of ``name`` drawn from ``seed`` (as
    :func:`measure`'s, on a GPU with "peak_value", "peak_source" and "rung_ms"), made by a child
    process that runs only the lab's own code (``python -m lab.teach.bench --reference``), once
    per (exercise, backend, seed) in this process. {"error": why} when it failed."""
    key = (name, backend, int(seed))
    missing = _no_solution(name)
    if missing:  # no process to start for it
        return missing
    if key not in _REFERENCE:
        # the lab's own code only: from an empty folder, with no folder of the caller's on sys.path
        # (a student's json.py beside the file checked once ran here, as the teacher), no bytecode
        # written next to the solution it imports, its own session (no terminal; killed as a group)
        env = child_env(NUMBA_ENABLE_CUDASIM="1" if backend == "simulator" else "0", PYTHONDONTWRITEBYTECODE="1")
        try:
            with tempfile.TemporaryDirectory(prefix="lab-reference-") as empty:
                proc = subprocess.Popen([*session.python_module("lab.teach.bench"), "--reference", name, backend,
                                         str(int(seed))], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        stdin=subprocess.DEVNULL, text=True, env=env, cwd=empty,
                                        start_new_session=True)
                track(proc)
                try:
                    out, _ = proc.communicate(timeout=REFERENCE_TIMEOUT_S)
                finally:
                    kill_group(proc)
                    untrack(proc)
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
            got = json.loads(out.strip().splitlines()[-1])
        except (subprocess.SubprocessError, OSError, ValueError, IndexError) as e:
            got = {"error": f"the reference's benchmark could not run ({type(e).__name__})"}
        _REFERENCE[key] = got if isinstance(got, dict) else {"error": "the reference's benchmark returned nothing"}
    return _REFERENCE[key]


def _no_solution(name: str) -> dict | None:
    """{"error": why} where this install has no reference solution of ``name`` (a course that ships
    the solutions to teachers only: :attr:`exercises.Exercise.solution`), else None."""
    if exercises.load(name).has_solution:
        return None
    return {"error": f"the reference solution of {name} is not installed here, so there is nothing to time against "
                     f"(a teacher's install has it: LAB_SOLUTIONS=DIR names their folder)"}


def _reference_here(ex, case, backend: str) -> dict:
    """:func:`reference`'s numbers, made in this process."""
    missing = _no_solution(ex.name)
    if missing:
        return missing
    try:
        out = measure(load_student(str(ex.solution), ex), ex, case, backend)
        if backend != "simulator":
            out.update(_peak(ex))
            out["rung_ms"] = _rung(ex, case)
        return out
    except Exception as e:  # noqa: BLE001 - the lab's own failure: said in the document
        return {"error": "the reference: " + failure_text(e)}


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _valid(raw, backend: str) -> bool:
    """Whether ``raw`` has the shape of :func:`measure`'s numbers (non-negative finite numbers)."""
    if not isinstance(raw, dict):
        return False
    if backend != "simulator":
        return _number(raw.get("ms")) and raw["ms"] > 0
    keys = ("requests", "sectors", "bytes", "touched")
    return _number(raw.get("atomic_ops")) and all(
        isinstance(raw.get(k), dict) and all(_number(raw[k].get(f)) for f in keys)
        and all(raw[k].get(f) is None or _number(raw[k].get(f)) for f in ("per_request", "efficiency"))
        for k in ACCESS)


def judge(ex, case, backend: str, mine, ref, note=None, source=None) -> dict:
    """The bench document (keys: KEYS) from the student's raw numbers ``mine`` (the child's, checked
    for their shape) and the reference's ``ref`` (:func:`reference`'s, or a function returning
    them, called only when needed): the pass line is computed here, never taken from the child.
    ``source``: the student's file's text (the notes quote its lines)."""
    doc = _blank(ex, backend)
    doc["case"] = case.name
    if note:
        doc["notes"].append(note)
    if isinstance(mine, dict) and "error" in mine:
        doc["message"] = str(mine["error"])[:500]
        return doc
    if not _valid(mine, backend):
        doc["message"] = "the benchmark's child returned no valid numbers"
        return doc
    ref = ref() if callable(ref) else ref
    if not isinstance(ref, dict) or "error" in ref or not _valid(ref, backend):
        doc["message"] = str((ref or {}).get("error") if isinstance(ref, dict) else "") or \
            "the reference's numbers are missing"
        return doc
    (_sectors if backend == "simulator" else _timed)(ex, case, mine, ref, doc)
    if backend == "simulator":
        doc["notes"].extend(_uncounted(mine, source))
    return doc


def _count(v) -> int:
    return int(v) if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 62 else 0


def _uncounted(mine: dict, source=None) -> list:
    """Notes for the loads the pass line left out (:func:`trace_launch`): re-loads of a value the
    thread already held (the compiler keeps it in a register), named at their line; the loads of
    blocks that stored nothing (a spare block row or column of a rounded-up grid)."""
    lines = str(source).splitlines() if source else None
    notes = []
    repeats = _count(mine.get("repeat_loads"))
    if repeats:
        rows = mine.get("repeat_lines") if isinstance(mine.get("repeat_lines"), list) else []
        at = [quote(lines, r[0]) for r in rows[:2] if isinstance(r, list) and len(r) == 2 and _count(r[0])]
        where = f" ({'; '.join(a for a in at if a)})" if any(at) else ""
        notes.append(f"not counted: {plural(repeats, 'load')} of an address the same thread had just loaded, with no "
                     f"store between{where}: the compiler keeps such a value in a register (one load); reading it "
                     f"once into a variable says so")
    idle = _count(mine.get("idle_blocks"))
    if idle:
        notes.append(f"not counted: {_count(mine.get('idle_load_sectors'))} sectors loaded by {plural(idle, 'block')} "
                     f"that stored nothing (spare blocks of a rounded-up grid, past the output): they cost time on a "
                     f"GPU; a block whose tile lies outside the output can return before loading")
    return notes


# --- the simulator: sectors per warp request ----------------------------------------------------------
SLACK_SECTORS = 4  # sectors a kernel may fetch or store beyond FACTOR x the reference's (one warp's request)
ATOMIC_FACTOR, ATOMIC_SLACK = 2.0, 32  # global atomics: per element where the reference has one a block fails
ACCESS = {"load": ("loads", "read", "read"), "store": ("stores", "write", "written")}


def _sectors(ex, case, ours_raw, theirs_raw, doc) -> None:
    """The simulator's pass line: for the global loads and for the stores, the sectors fetched in all
    at most ``SECTOR_FACTOR`` x the reference's (+ SLACK_SECTORS); global atomic operations at most
    ATOMIC_FACTOR x the reference's (+ ATOMIC_SLACK). A failing line names its cause: sectors per
    warp request above the reference's (uncoalesced: consecutive threads do not touch consecutive
    elements), or more requests for the same data (re-reads: each sector fetched again and again,
    where the reference keeps the data in shared memory or registers), or atomics per element."""
    a, b = ours_raw, theirs_raw
    f = ex.sector_factor
    ours = {k: a[k] for k in ACCESS}
    theirs = {k: b[k] for k in ACCESS}
    doc["sectors"] = {"student": ours["load"]["per_request"], "reference": theirs["load"]["per_request"],
                      "student_store": ours["store"]["per_request"], "reference_store": theirs["store"]["per_request"],
                      "factor": f,
                      "student_load_sectors": ours["load"]["sectors"], "reference_load_sectors": theirs["load"]["sectors"],
                      "student_store_sectors": ours["store"]["sectors"],
                      "reference_store_sectors": theirs["store"]["sectors"],
                      "student_load_touched": ours["load"]["touched"], "reference_load_touched": theirs["load"]["touched"],
                      "student_atomics": a["atomic_ops"], "reference_atomics": b["atomic_ops"], "cause": None}
    doc["pass_line"] = (f"loads and stores at most {f:g}x the reference's sectors, global atomics at most "
                        f"{ATOMIC_FACTOR:g}x its count")
    doc["timing"] = ("CUDA simulator: 32-byte sectors of the global loads and stores, per warp request and in "
                     "all (lab.core.trace)")
    if not theirs["load"]["requests"] and not theirs["store"]["requests"] and not ours["load"]["requests"]:
        doc["passed"] = True
        doc["message"] = "no global loads or stores traced (slices are not traced): coalescing not graded"
        return
    fails = []
    for kind in ACCESS:
        m, r = ours[kind], theirs[kind]
        if m["sectors"] > f * r["sectors"] + SLACK_SECTORS:
            fails.append(_why(kind, m, r, f))
    if a["atomic_ops"] > ATOMIC_FACTOR * b["atomic_ops"] + ATOMIC_SLACK:
        fails.append(("atomics", f"your kernel makes {a['atomic_ops']} atomic updates of global memory, the "
                                 f"reference {b['atomic_ops']}: combine the values within the block first (shared "
                                 f"memory or warp shuffles), then one atomic per block (or per bin)"))
    doc["passed"] = not fails
    fails.sort(key=lambda f: f[0] != "atomics")  # atomics per element first: they dwarf the loads around them
    if fails:
        doc["sectors"]["cause"] = fails[0][0]
        doc["message"] = "; ".join(text for _, text in fails)
        return
    mine_ld, ref_ld = ours["load"], theirs["load"]
    doc["message"] = (f"your loads touch {mine_ld['per_request']:.3g} sectors per warp request; the reference "
                      f"touches {ref_ld['per_request']:.3g}"
                      if mine_ld["per_request"] is not None and ref_ld["per_request"] is not None
                      else "your loads and stores move no more sectors than the reference's")
    if ours["store"]["sectors"] or theirs["store"]["sectors"]:
        doc["message"] += (f" (stores: {ours['store']['sectors']} sectors in all, the reference "
                           f"{theirs['store']['sectors']})")


def _why(kind, m, r, f) -> tuple:
    """(cause, message) of ``kind``'s (load or store) traffic above the pass line. Sectors in all =
    (bytes the requests ask for) / (bytes used per byte fetched) / 32: against the reference's, the
    second factor is coalescing (each request's lanes spread over more sectors than their bytes
    need, or one lane a request), the first the volume asked for (the same elements read again:
    reuse). The larger names the cause; the other is added when it alone exceeds the factor."""
    words, verb, done = ACCESS[kind]
    eff_m, eff_r = (m["efficiency"] or 100.0), (r["efficiency"] or 100.0)
    coalescing = eff_r / eff_m
    volume = m["bytes"] / max(r["bytes"], 1)
    spr_r = f"{r['per_request']:.3g}" if r["per_request"] is not None else "none"
    uncoalesced = (f"your {words} touch {m['per_request']:.3g} sectors per warp request and use {eff_m:.0f}% of "
                   f"the bytes they fetch; the reference touches {spr_r} and uses {eff_r:.0f}% ({m['sectors']} "
                   f"sectors in all, the reference {r['sectors']}; more than {f:g}x): do consecutive threads "
                   f"{verb} consecutive elements?")
    again = m["sectors"] / max(m["touched"], 1)
    again_r = r["sectors"] / max(r["touched"], 1) if r["sectors"] else 0.0
    same = (f"the same {m['touched']} distinct sectors" if m["touched"] == r["touched"] else
            f"{m['touched']} distinct sectors (the reference {r['touched']})")
    keep = ("keep them in shared memory (or registers) and reuse them" if kind == "load" else
            "write each element once, from registers or shared memory")
    not_coalescing = "" if coalescing > f else ", not uncoalesced requests"
    reuse = (f"your {words} move {m['sectors']} sectors, the reference {r['sectors']} (more than {f:g}x), over "
             f"{same}: each is {done} {again:.2g} times from global memory (the reference's {again_r:.2g}), "
             f"{volume:.2g}x the bytes the reference asks for: re-{'reads' if kind == 'load' else 'writes'} of "
             f"the same elements{not_coalescing}; {keep}")
    if coalescing >= volume:
        return ("coalescing", uncoalesced + (f"; and {reuse}" if volume > f else ""))
    return ("reuse", reuse + (f"; and {uncoalesced}" if coalescing > f else ""))


def _peak(ex) -> dict:
    """The device's peak for ``ex.peak`` (the reference's trusted child measures it)."""
    if ex.peak == "fp32":
        return {"peak_value": device.describe(False).get("peak_fp32_gflops"),
                "peak_source": "nominal FP32 peak (lab.core.device.describe)"}
    try:
        return {"peak_value": device.measure_copy_bandwidth()["gbps"], "peak_source": "measured device-to-device copy"}
    except Exception:  # noqa: BLE001 - too little free memory for the 1 GiB copy: the nominal figure
        return {"peak_value": device.describe(False).get("peak_bandwidth_gbps"), "peak_source": "nominal DRAM bandwidth"}


def _timed(ex, case, mine, ref, doc) -> None:
    doc["student_ms"], doc["timing"] = mine["ms"], mine.get("timing")
    doc["reference_ms"] = ref["ms"]
    doc["pct_of_reference"] = 100.0 * doc["reference_ms"] / doc["student_ms"]
    doc["pass_line"] = f"at least {ex.pass_pct:g}% of the reference's speed"
    doc["passed"] = doc["pct_of_reference"] >= ex.pass_pct
    seconds = doc["student_ms"] * 1e-3
    doc["peak_value"], doc["peak_source"] = ref.get("peak_value"), ref.get("peak_source")
    if ex.peak == "fp32":
        mod = ex.bench()
        flops = mod.flops(case) if mod is not None and hasattr(mod, "flops") else None
        doc["peak_unit"] = "GFLOP/s"
        if flops:
            doc["achieved"] = flops / seconds / 1e9
        else:
            doc["notes"].append(f"no flops(case) in exercises/{ex.name}/bench.py: % of FP32 peak not computed")
    else:
        doc.update(peak_unit="GB/s", achieved=bytes_moved(ex, case) / seconds / 1e9)
    if doc["achieved"] is not None and doc["peak_value"]:
        doc["pct_of_peak"] = 100.0 * doc["achieved"] / doc["peak_value"]
    if _number(ref.get("rung_ms")):
        doc["rung_ms"] = ref["rung_ms"]
        doc["pct_of_rung"] = 100.0 * doc["rung_ms"] / doc["student_ms"]
    doc["message"] = (f"{doc['student_ms']:.4g} ms, {doc['pct_of_reference']:.0f}% of the reference's speed "
                      f"({doc['reference_ms']:.4g} ms)"
                      + (f", {doc['pct_of_peak']:.0f}% of {'copy bandwidth' if ex.peak == 'copy' else 'FP32 peak'}"
                         if doc["pct_of_peak"] is not None else "")
                      + ("" if doc["passed"] else f": below the pass line ({doc['pass_line']})"))


def _rung(ex, case):
    """The ms of the kernels/ rung ``ex.rung`` at the same problem size (bench.py's
    ``rung_size(case)``), or None."""
    mod = ex.bench()
    if not ex.rung or mod is None or not hasattr(mod, "rung_size"):
        return None
    kernel, variant = ex.rung.split(":")
    spec = kernels.load(kernel)
    size = tuple(mod.rung_size(case))
    v = spec.variants[variant]
    if v.accepts(256):
        return None
    inputs = spec.make_inputs(size, np.dtype(np.float32), np.random.default_rng(0))
    prepared = C.prepare_numba(spec, size, v, v.launch(size, 256), inputs, False)
    return float(time_launch(prepared.call, prepared.sync)[0])


def _reference_main(name: str, backend: str, seed: str) -> None:
    """``python -m lab.teach.bench --reference NAME BACKEND SEED``: the reference's numbers
    (:func:`reference`) as the last line of stdout. Runs the lab's own code only."""
    sys.dont_write_bytecode = True  # no __pycache__/solution.*.pyc beside the hidden solution
    core_simulator.select("sim" if backend == "simulator" else "gpu")
    ex = exercises.load(name)
    case, _ = plan(ex, int(seed), backend == "simulator")
    sys.stdout.write("\n" + json.dumps(_reference_here(ex, case, backend)) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] != ["--reference"] or len(sys.argv) != 5:
        sys.exit("usage: python -m lab.teach.bench --reference NAME BACKEND SEED "
                 "(the student's side is python -m lab.teach.contained.measure)")
    _reference_main(*sys.argv[2:5])
    sys.stdout.flush()
    os._exit(0)
