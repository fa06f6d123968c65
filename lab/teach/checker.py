"""The judge of the exercise checker: it makes the hidden tests, their float64 references, the
launch configurations (the student's ``launch()`` interpreted here, :func:`launch_config`) and every
verdict, and it never runs the student's code: the file is read as source (:mod:`lab.teach.contained.source`).
The kernel built from that source is launched only by :mod:`lab.teach.contained.executor`, in a child process
that the parent (:func:`lab.teach.workspace.check`) kills when a test runs past its timeout; the
child gets the source, each test's inputs and launch configuration (never a reference, a tolerance
or the seed) and hands back raw data (output arrays, the simulator's tracer's records and counts) in
files of its folder, which :class:`Judge` reads safely and re-checks against what was asked; the
mapping lessons' facts are derived here from the counts. Nothing the child prints or writes is taken
as a verdict.

Per hidden test: poison the outputs (NaN; integer outputs twice, with two different poisons), launch
the student's kernel (in the simulator through :mod:`lab.core.simt`, which traces who wrote what, out-of-
bounds accesses and shared-memory races; on a GPU with guard bands around each output), compare with
the float64 reference, and turn what went wrong into one diagnosing message. Messages name at most
one expected element, never the test's code or its data.

What the child runs is the kernel built from the checked source and nothing else of the file (its
top level never runs; the kernel's module holds only the allow-list's objects), so no code of the
student's can compute outputs on the CPU or forge the tracer's records; an output that holds values
no traced thread stored fails all the same. A kernel must be defined in the file: importing the
lab's code (its kernels, the shipped solution) is refused as source.

The judge's parts, one idea each: :mod:`lab.teach.cases` (the hidden tests and their poisons),
:mod:`lab.teach.contained.channel` (the request out, the raw results back, read safely and checked against
what was asked), :mod:`lab.teach.messages` (the words of every failure); this module judges. Import
their names from them: nothing is re-exported here.
"""
from __future__ import annotations

import json
import os
import ast
import math

import numpy as np

from exercises import LAST_LEFT_OUT
from kernels.spec import plural
from lab.teach.cases import COMPILE_TEST, compile_entry, compile_sigs
from lab.teach.contained.channel import JSON_CAP, ResultError, raw_result, read_child_file, result_cap, result_name
from lab.teach.contained.executor import launch_config
from lab.teach.diagnose import exercise_mistakes, mistake_for_access, mistake_message, oob_index_rule, load_index_hint, repeated_atomic, repeated_reads_hint, differential
from lab.teach.indices import GUARD_WORDS, OFFSET_ASKED, RUNS_PAST
from lab.teach.launches import zero_blocks_line, launch_line, launch_mismatch
from lab.teach.reference import unstored_words, reference_reads_left, reference_loads, unread_cell, atomic_op_fact, hedge_fact
from lab.teach.shared_words import TILE_CHOICE
from lab.teach.messages import (DIAGNOSIS, EVERY_BLOCK_REPEATS, MAP_ENV, VALUES, Failed, block_stride_hint, error_line,
                                fmt_idx, fmt_who, kernel_error_message, many_writers_message, ndims, offset_hint,
                                one_store_line, own_partial_cause, poison_hint, quote, race_text, scaled_hint,
                                store_and_atomic_message, store_in_source, store_line, transposed_hint,
                                unwritten_message, writers_map)
from lab.teach.contained import syntax, gpu_compile
from lab.core.blocks import ranges_text
from lab.core.check import check_outputs
from lab.core.simt import poisoned, FLOAT_SENTINEL
from lab.teach.contained.source import Launch
from lab.teach.kernel_words import refined
from lab.teach.lessons import facts_from_counts, lesson_message
from lab.teach.tree_lesson import atomic_combine_message
from lab.teach.values import tile_extent_fact, output_read_first, LAST_TERM_RESET, last_term_words, whole_number_hint, blocks_without_atomic, last_loaded_words, index_shift_hint


def verdict(outs, refs, tols, out_specs=None, second=None):
    """A ``lab.core.check.Verdict`` (ok, max_abs_err, rel_err, reason): the lab's one correctness
    check (``lab.core.runner.check_outputs``, i.e. ``lab.core.check.check_outputs``: count/shape/dtype,
    two-poison integers, tolerances or Bounds).

    The only call to it in the exercise checker, so a change to the lab's check lands here too.
    """
    return check_outputs(outs, refs, tols, out_specs=out_specs, second=second)


def _bad(out64, ref, tol):
    """Elements outside the tolerance (an absolute bound, or kernels.spec.Bounds), and its text at
    one element."""
    if hasattr(tol, "lo") and hasattr(tol, "hi"):
        lo = np.broadcast_to(np.asarray(tol.lo, np.float64), ref.shape)
        hi = np.broadcast_to(np.asarray(tol.hi, np.float64), ref.shape)
        return ~((out64 >= lo) & (out64 <= hi)), lambda i: (f"exactly {lo[i]:.9g} is right" if lo[i] == hi[i]
                                                          else f"accepted {lo[i]:.9g}..{hi[i]:.9g}")
    bound = np.broadcast_to(np.asarray(tol, np.float64), ref.shape)
    return ~(np.abs(out64 - ref) <= bound), lambda i: f"tolerance {bound[i]:.2g}"


def judged_launch_config(launch, ex, case):
    """:func:`lab.teach.contained.executor.launch_config` (the shape of what the student's launch()
    returns), then the judge's own rule: where the test asks for a block size (the exercise's launch()
    has one parameter named like ``threads``: :func:`threads_param`), the blocks must have that many
    threads (a launch() that ignores it passes tests that name a block size it never used). Failed
    naming the test's block size and the one returned."""
    try:
        grid, block = launch_config(launch, ex, case)
    except Failed as e:
        raise Failed(zero_blocks_line(launch, case, str(e))) from None
    k = threads_param(ex)
    b = (block,) if isinstance(block, int) else tuple(block)
    if k is not None and k < len(case.launch_args) and math.prod(b) != int(case.launch_args[k]):
        asked = int(case.launch_args[k])
        raise Failed(f"your {ex.launch}{tuple(case.launch_args)} returned blocks of {math.prod(b)} threads, but this "
                     f"test asks for {asked} threads a block (argument {k + 1} of {ex.launch}()): use the block size "
                     f"you are given, and count the blocks with it")
    return grid, block


_THREADS_PARAM: dict = {}


def threads_param(ex) -> int | None:
    """The position of the exercise's launch() parameter that is the block size the test asks for (the
    one parameter of the scaffold's launch(), which every student gets, named like ``threads``), or
    None. Read from the scaffold's source (never run; the solution is not needed)."""
    key = (str(getattr(ex, "scaffold", None)), getattr(ex, "launch", None))
    if key not in _THREADS_PARAM:
        found = None
        try:
            with open(ex.scaffold, encoding="utf-8") as f:
                tree = syntax.parse(f.read())
            fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == ex.launch)
            names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
            hits = [i for i, n in enumerate(names) if "thread" in n.lower()]
            found = hits[0] if len(hits) == 1 else None
        except Exception:  # noqa: BLE001 - no scaffold or no launch(): nothing to compare
            found = None
        _THREADS_PARAM[key] = found
    return _THREADS_PARAM[key]


def launch_plan(ex, prog, cases) -> list:
    """Per case of ``cases``: (grid, block), the test's own or what the file's launch() gives
    (:func:`launch_config`, from the :class:`lab.teach.contained.source.Program` ``prog``), or the Failed
    message (a str) when launch() failed for that test."""
    launch = Launch(prog, ex.launch) if ex.launch else None
    out = []
    for c in cases:
        if c.grid is not None:
            out.append((c.grid, c.block))
            continue
        try:
            out.append(judged_launch_config(launch, ex, c))
        except Failed as e:
            out.append(str(e))
            continue
        shape = tuple(c.outputs[0][0]) if c.outputs else ()
        # the launch's own evidence, for the never-written message (the judge's data, not the child's)
        c.launch_hint = launch_mismatch(launch, ex.launch, tuple(c.launch_args), shape)
        c.launch_lines = [launch_line(launch, k) for k in range(len(shape))]  # the line dividing each size
    return out


def judge_case(ex, case, raw, backend):
    """:func:`judge_case_facts`, its failure's words refined where the student's kernel is the
    reference solution's but for one statement (:func:`lab.teach.kernel_words.refined`): that statement
    named in place of words that only say what differs, and added to the others."""
    try:
        return judge_case_facts(ex, case, raw, backend)
    except Failed as e:
        text = refined(ex, case, raw, str(e))
        if text is None:
            raise
        raise Failed(text, e.map, e.kind) from None


def judge_case_facts(ex, case, raw, backend):
    """Raise Failed with a diagnosing message, or return the pass message. ``raw``: what the executor
    handed back for ``case``, checked by :func:`raw_result` (grid, block, onames, runs: [(outputs,
    trace or None, writers or None)], again: the GPU's finite-poison outputs or None, error: a
    simulator launch that raised, or None)."""
    grid, block = raw.grid, raw.block
    runs = raw.runs
    source = getattr(raw, "source", None)  # the lines of the student's file, as the judge read it

    def at_store(k, flat, trace):
        """' at line N: `code`': the line of the first write of element ``flat`` of output ``k``."""
        q = quote(source, store_line(trace, k, flat))
        return f" at {q}" if q else ""

    outs, trace, writers = runs[0]
    nd = ndims(grid)
    onames = raw.onames
    if raw.error is not None:
        last = runs[-1][1]
        halo = None
        if last is not None and last.oob and min(last.oob[0][1]) < 0 and last.oob[0][0] in list(raw.names):
            halo = reference_reads_left(ex, case, list(raw.names).index(last.oob[0][0]))
        msg = kernel_error_message(raw.error, last, grid, block, case, raw.names, source, halo=halo)  # the run that raised
        if last is not None and last.oob and not (last.races or last.shared_rmw) and msg.startswith("out of bounds"):
            name, idx, _, who, _ = last.oob[0]
            lesson = mistake_for_access(exercise_mistakes(ex), case, name, idx, who)
            if not lesson and name in list(raw.names) and any(g in msg for g in GUARD_WORDS):
                lesson = RUNS_PAST if reference_loads(ex, case, list(raw.names).index(name), who, grid, block) else None
            if lesson:  # the lesson's mistake made exactly this access: it says why
                msg = kernel_error_message(raw.error, last, grid, block, case, raw.names, source, lesson=lesson,
                                           halo=halo)
        if last is not None and last.oob and msg.endswith(TILE_CHOICE):  # a tile too small, or an index past it?
            fact = tile_extent_fact(ex, case, last.oob[0][0], tuple(last.oob[0][2]))
            if fact:
                msg = msg[:-len(TILE_CHOICE)] + fact
        if msg.endswith(RUNS_PAST) or msg.endswith(OFFSET_ASKED):  # the launch's loads, the access, beside the reference
            rule = oob_index_rule(ex, case, last, grid, block, list(raw.names), source)
            if rule and msg.endswith(RUNS_PAST):
                msg = msg[:-len(RUNS_PAST)] + "the index is wrong: " + rule
            elif rule:  # a loop bound, or an offset? the offset: the whole advice is the rule's
                msg = kernel_error_message(raw.error, last, grid, block, case, raw.names, source, halo=halo,
                                           lesson="the index is wrong: " + rule)
        raise Failed(msg)
    if trace is not None:
        if trace.barrier_mismatch:
            b, counts = trace.barrier_mismatch[0]
            desc = ", ".join(f"{plural(v, 'thread')} passed {k}" for k, v in sorted(counts.items()))
            raise Failed(f"not every thread of block {tuple(b)[:nd]} reached the same cuda.syncthreads() "
                         f"calls ({desc}): a barrier inside a branch or after an early return is undefined "
                         f"behaviour and can hang on a GPU; let all threads reach every barrier")
        if trace.races or trace.shared_rmw:
            raise Failed(race_text(trace, grid, block, source))
        init_msg = store_and_atomic_message(trace, onames, case, nd, source)
        if init_msg:
            raise Failed(init_msg)
        if trace.global_rmw:
            name, idx, a, b = trace.global_rmw[0]
            at = ""
            if name in onames and len(idx) == len(case.outputs[onames.index(name)][0]):
                k = onames.index(name)
                shape = tuple(case.outputs[k][0])
                at = at_store(k, int(np.ravel_multi_index(tuple(idx), shape)) if shape else 0, trace)
            raise Failed(f"race: {fmt_idx(name, idx)}{at} is read and updated by several threads "
                         f"({fmt_who(a, nd)} and {fmt_who(b, nd)}) without an atomic: use "
                         f"cuda.atomic.add (or min/max)")
    if trace is not None:
        _untraced_values(case, outs, writers, onames, getattr(trace, "lab_touched", None))
    # the mapping lesson's facts, derived here from the tracer's raw counts (lab.teach.lessons.facts_from_counts;
    # raw_result refused a simulator's result without them: a lesson is never skipped for want of facts)
    facts = None
    if trace is not None and getattr(ex, "lesson", None):
        facts = facts_from_counts(trace.lab_counts, writers, grid, block, onames)
    # never-written elements: NaN in a float output, or a value that changed with the poison; the
    # simulator's tracer tells those apart from elements that were written with NaN (or garbage)
    for k, (out, ref) in enumerate(zip(outs, case.refs)):
        out = np.asarray(out)
        if case.init is not None:
            continue
        if out.dtype.kind == "f":
            unwritten = np.isnan(out) & ~np.isnan(np.asarray(ref, dtype=np.float64))
        else:
            unwritten = np.asarray(runs[1][0][k]) != out
        if unwritten.any():
            written = _written_mask(writers[k], out.shape) if writers is not None else None
            if written is None and out.dtype.kind == "f" and backend != "simulator":
                # no tracer on a GPU: run again with a finite poison; NaN in both runs was written
                again = None if raw.again is None else np.asarray(raw.again[k])
                written = None if again is None else ~(again == np.asarray(simt_poison(out.dtype)))
                if written is not None and (unwritten & written).any():
                    first = tuple(int(v) for v in np.argwhere(unwritten & written)[0])
                    raise Failed(f"{fmt_idx(onames[k], first)} is NaN although it was written (a second run "
                                 f"with another poison tells the two apart): read before initialised (an "
                                 f"accumulator not set to 0 before +=, shared memory read before it was "
                                 f"filled)? or 0/0, inf/inf (an overflow)?; {int((unwritten & written).sum())} of "
                                 f"{plural(out.size, 'element')} like this", kind=VALUES)
                written = None
            if written is not None and (unwritten & written).any():
                first = tuple(int(v) for v in np.argwhere(unwritten & written)[0])
                flat = int(np.ravel_multi_index(first, out.shape)) if out.shape else 0
                what = "NaN" if out.dtype.kind == "f" else "a value that depends on what the output held before"
                seen = ""
                if trace is not None and trace.uninit:  # the tracer saw the read: name it
                    arr, uidx, uwho, uline = trace.uninit[0]
                    seen = (f"; the simulator saw {fmt_who(uwho, nd)} read shared {fmt_idx(arr, uidx)}"
                            f"{f' at {quote(source, uline)}' if uline else ''} before any thread of its block wrote it")
                lesson = mistake_message(exercise_mistakes(ex), case, outs, _counts(trace))
                if lesson:
                    raise Failed(f"{fmt_idx(onames[k], first)} was written by {fmt_who(writers[k][flat], nd)}"
                                 f"{at_store(k, flat, trace)}, but it is {what}{seen}. Hint: {lesson}", kind=VALUES)
                own = output_read_first(_counts(trace), onames[k], writers[k][flat], flat, grid, block, source)
                if own:  # the writer read the output element it adds into: garbage in, NaN out
                    raise Failed(f"{fmt_idx(onames[k], first)} was written by {fmt_who(writers[k][flat], nd)}"
                                 f"{at_store(k, flat, trace)}, but it is {what}{seen}. Hint: {own}", kind=VALUES)
                if trace is not None and trace.uninit:  # a cell the reference never reads: the read's index
                    arr, uidx, _uwho, _uline = trace.uninit[0]
                    where = unread_cell(ex, case, arr, tuple(uidx))
                    if where:
                        raise Failed(f"{fmt_idx(onames[k], first)} was written by {fmt_who(writers[k][flat], nd)}"
                                     f"{at_store(k, flat, trace)}, but it is {what}{seen}. Hint: {where}", kind=VALUES)
                told = case.diagnose(outs, case.refs) if case.diagnose is not None and out.dtype.kind == "f" else None
                if told and "NaN" in told:  # the exercise's own reading of NaN in its outputs
                    raise Failed(f"{fmt_idx(onames[k], first)} was written by {fmt_who(writers[k][flat], nd)}"
                                 f"{at_store(k, flat, trace)}, but it is {what}{seen}. Hint: {told}", kind=VALUES)
                unstored = unstored_words(ex, case, trace, source)
                if unstored:  # the read's cell has no store that ran: the stores' conditions and loops, quoted
                    raise Failed(f"{fmt_idx(onames[k], first)} was written by {fmt_who(writers[k][flat], nd)}"
                                 f"{at_store(k, flat, trace)}, but it is {what}{seen}. Hint: {unstored}", kind=VALUES)
                raise Failed(f"{fmt_idx(onames[k], first)} was written by {fmt_who(writers[k][flat], nd)}"
                             f"{at_store(k, flat, trace)}, but it "
                             f"is {what}: read before initialised (an accumulator not set to 0 before +=, shared "
                             f"memory read before it was filled)? or 0/0, inf/inf (an overflow)?; "
                             f"{int((unwritten & written).sum())} of {plural(out.size, 'element')} like this{seen}")
            lesson = mistake_message(exercise_mistakes(ex), case, outs, _counts(trace))
            if lesson:  # the lesson's mistake leaves exactly these elements unwritten (NaN in its outputs)
                first = tuple(int(v) for v in np.argwhere(unwritten)[0])
                raise Failed(f"{int(unwritten.sum())} of {plural(out.size, 'element')} of {onames[k]} never written, "
                             f"the first {fmt_idx(onames[k], first)}. Hint: {lesson}",
                             writers and writers_map(onames[k], writers[k], out.shape, grid, block), kind=VALUES)
            hint = getattr(case, "launch_hint", None) if case.grid is None and k == 0 else None
            if hint:
                first = tuple(int(v) for v in np.argwhere(unwritten)[0])
                hint = (f"{int(unwritten.sum())} of {plural(out.size, 'element')} of {onames[k]} never written, the "
                        f"first {fmt_idx(onames[k], first)}: {hint}")
            if not hint and writers is not None:
                stride = block_stride_hint(writers[k], out.shape, grid, block)
                if stride:
                    first = tuple(int(v) for v in np.argwhere(unwritten)[0])
                    hint = (f"{int(unwritten.sum())} of {plural(out.size, 'element')} of {onames[k]} never written, "
                            f"the first {fmt_idx(onames[k], first)}: {stride}"
                            f"{' (the store: ' + at_store(k, min(writers[k]), trace)[4:] + ')' if at_store(k, min(writers[k]), trace) else ''}")
            if not hint:
                hint = unwritten_message(onames[k], unwritten, grid, block, checker_grid=case.grid is not None,
                                         stored_at=quote(source, store_in_source(source, onames[k])))
                line = one_store_line(trace, k)
                if line and ("index" in hint or "indices" in hint) and "round the number of blocks up" not in hint:
                    hint += f" (every element of {onames[k]} was stored at {quote(source, line)})"
                dims = getattr(case, "launch_lines", None) or []
                if "round the number of blocks up" in hint and case.grid is None and dims:
                    d = 0 if len(dims) == 1 else (len(dims) - 2 if "along y" in hint else len(dims) - 1)
                    if dims[d]:
                        hint += f" (your launch() at {dims[d]})"
            raise Failed(hint,
                         writers and writers_map(onames[k], writers[k], out.shape, grid, block), kind=VALUES)
    if trace is not None and case.init is not None:  # an accumulator (dot's out[0]): atomics only
        for k, others in enumerate(getattr(trace, "lab_others", [])):
            if others:
                flat = min(others)
                n = 1 + len(others[flat])
                idx = tuple(int(v) for v in np.unravel_index(flat, tuple(case.outputs[k][0])))
                one_each = len({tuple(w[0]) for w in [writers[k][flat], *others[flat]]}) == n
                raise Failed(f"{fmt_idx(onames[k], idx)} was stored to by {n} threads{', one per block' if one_each else ''} "
                             f"with a plain store{at_store(k, flat, trace)}: the last one wins and the other partials are lost; add with "
                             f"cuda.atomic.add")
    if trace is not None and getattr(ex, "one_writer", False):
        for k, others in enumerate(getattr(trace, "lab_others", [])):
            if others:
                stride = block_stride_hint(writers[k], case.outputs[k][0], grid, block)
                text = many_writers_message(onames[k], case.outputs[k][0], writers[k], others, grid, block,
                                             at_store(k, min(others), trace), getattr(trace, "lab_counts", None))
                if stride and not getattr(text, "cause", False):  # the writers' index names it: no loop guessed
                    raise Failed(f"{text.replace(EVERY_BLOCK_REPEATS, '')}: {stride}")
                raise Failed(text)
    second = runs[1][0] if len(runs) > 1 else None
    verdict_ = verdict(outs, case.refs, case.tols, out_specs=case.outputs, second=second)
    if verdict_.ok:
        if trace is not None and trace.uninit:
            arr, idx, who, line = trace.uninit[0]
            at = f" at {quote(source, line)}" if line else ""
            raise Failed(f"right values here, but {fmt_who(who, nd)} read {fmt_idx(arr, idx)}{at} before any thread of "
                         f"its block wrote it: shared memory starts with whatever the last kernel left there (the "
                         f"simulator fills it with NaN or 0xAB.., which this result happened to ignore); store every "
                         f"element before it is read (e.g. 0 or the identity for threads past the end)")
        if facts is not None:
            lesson = lesson_message(ex.lesson, facts, launch=ex.launch if case.grid is None else None,
                                    output=onames[0] if onames else "the output")
            if not lesson and trace is not None:
                lesson = atomic_combine_message(ex, case, facts)
            if lesson:
                raise Failed(lesson)
        return f"ok (max abs error {verdict_.max_abs_err:.2g})"
    lesson = mistake_message(exercise_mistakes(ex), case, outs, _counts(trace))
    for k, (out, ref, tol) in enumerate(zip(outs, case.refs, case.tols)):
        out64 = np.asarray(out, dtype=np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        if out64.shape != ref.shape:
            raise Failed(f"{onames[k]} has shape {out64.shape}, expected {ref.shape}")
        bad, tol_text = _bad(out64, ref, tol)
        if not bad.any():
            continue
        if case.init is not None and np.array_equal(out64, np.asarray(case.init[k], np.float64).reshape(out64.shape)):
            first = np.asarray(out).ravel()[:2].tolist()
            counts = getattr(trace, "lab_counts", None) if trace is not None else None
            names = [a[0] for a in counts["arrays"]] if counts else []
            updates = sum(int(c) for kd, a, _, c in counts["per_thread"]
                          if int(kd) == 2 and names[int(a)] == onames[k]) if counts and onames[k] in names else 0
            stores = len(writers[k]) if writers is not None else 0
            touched = set(writers[k]) if writers is not None else set()
            want = np.flatnonzero(np.asarray(ref).ravel() != np.asarray(case.init[k], np.float64).ravel())
            if touched and len(want) and not touched & set(int(f) for f in want):  # updates only where nothing changes
                first = tuple(int(v) for v in np.unravel_index(int(want[0]), ref.shape))
                raise Failed(f"{onames[k]} still holds its initial values: the updates reached only {len(touched)} of "
                             f"its {plural(ref.size, 'element')} ({onames[k]}[{ranges_text(sorted(touched), most=3)}]), "
                             f"and none of the ones that should change: {fmt_idx(onames[k], first)} should be "
                             f"{ref[first]:g} but no thread updated it{at_store(k, min(touched), trace)}: the loop "
                             f"over {onames[k]}'s elements covers only part of them (each thread must take every "
                             f"element t, t + blockDim.x, ... up to the last)", kind=VALUES)
            if updates:
                fact = atomic_op_fact(ex, case, k, trace, onames[k], source)
                if fact:
                    raise Failed(f"{onames[k]} still holds its initial values ({', '.join(map(str, first))}, ...) "
                                 f"although {updates} atomic update{'s' if updates != 1 else ''} reached it: {fact}",
                                 kind=VALUES)
            if updates or stores:
                what = (f"{updates} atomic update{'s' if updates != 1 else ''}" if updates else
                        f"stores to {plural(stores, 'element')}")
                raise Failed(f"{onames[k]} still holds its initial values ({', '.join(map(str, first))}, ...) although "
                             f"{what} reached it{at_store(k, min(writers[k]), trace) if stores else ''}: every one "
                             f"added or stored what was already there (0, the identity): is the value added the "
                             f"right one, from the right elements (the block's partial, the bin's count)?", kind=VALUES)
            raise Failed(f"{onames[k]} still holds its initial value {first}: nothing was "
                         f"written or added to it", kind=VALUES)
        if lesson:
            first = tuple(int(v) for v in np.argwhere(bad)[0])
            flat = int(np.ravel_multi_index(first, ref.shape)) if ref.shape else 0
            who = writers[k].get(flat) if writers else None
            by = f"; written by {fmt_who(who, nd)}{at_store(k, flat, trace)}" if who is not None else ""
            raise Failed(f"{fmt_idx(onames[k], first)} = {out64[first]:.6g}, expected {ref[first]:.6g}; "
                         f"{int(bad.sum())} of {plural(ref.size, 'element')} wrong{by}. Hint: {lesson}",
                         writers and writers_map(onames[k], writers[k], out64.shape, grid, block), kind=VALUES)
        if ref.size > 1 and not np.any(out64) and np.any(ref):
            if writers is not None and len(writers[k]) == ref.size:
                line = one_store_line(trace, k)
                where = f" (stored at {quote(source, line)})" if line else ""
                nz = tuple(int(v) for v in np.argwhere(ref != 0)[0])
                why = "check the formula (a clamp, a scale)"
                if trace is not None:  # several stores to an element (the last one's 0 wins)? the trace decides
                    why = hedge_fact(ex, case, k, nz, writers, trace, grid, block, list(raw.names), source) or why
                raise Failed(f"{onames[k]} is all zeros, though every element was written{where}: the value stored is 0 "
                             f"(expected e.g. {fmt_idx(onames[k], nz)} = {ref[nz]:.6g}): {why}", kind=VALUES)
            raise Failed(f"{onames[k]} is all zeros: is anything written? (a kernel that writes 0.0 "
                         f"cannot pass)", kind=VALUES)
        first = tuple(int(v) for v in np.argwhere(bad)[0])
        digits = 9 if hasattr(tol, "lo") else 6
        if np.dtype(case.outputs[k][1]).kind in "iub":  # integers exactly (2.84831e+07 hid a difference of 1)
            got, want = f"{int(out64[first])}", f"{int(round(ref[first]))}" if np.isfinite(ref[first]) else f"{ref[first]}"
        else:
            got, want = f"{out64[first]:.{digits}g}", f"{ref[first]:.{digits}g}"
        msg = (f"{fmt_idx(onames[k], first)} = {got}, expected {want} "
               f"({tol_text(first)}); "
               f"{int(bad.sum())} of {plural(ref.size, 'element')} wrong")
        if writers is not None:
            flat = int(np.ravel_multi_index(first, ref.shape)) if ref.shape else 0
            who = writers[k].get(flat)
            if who is not None:
                msg += f"; written by {fmt_who(who, nd)}{at_store(k, flat, trace)}"
        extra = transposed_hint(out64, ref, bad)
        if trace is not None and not scaled_hint(out64, ref, bad) and not poison_hint(out64, ref, bad, out.dtype):
            extra = load_index_hint(ex, case, trace, grid, block, list(raw.names), source) or extra
        whole = whole_number_hint(out64, ref, bad, out.dtype)
        if not whole and case.init is not None and trace is not None:  # an accumulator: which blocks added
            whole = blocks_without_atomic(_counts(trace), onames[k], grid, block)
        if whole:
            extra = whole
        elif case.diagnose is not None and not (extra or "").startswith("the reference solution"):
            extra = case.diagnose(outs, case.refs) or extra
            if extra and LAST_TERM_RESET in extra and writers is not None:  # a reset, or a store in the loop?
                flat = int(np.ravel_multi_index(first, ref.shape)) if ref.shape else 0
                extra = last_term_words(extra, _counts(trace), onames[k], writers[k].get(flat), grid, block,
                                        quote(source, store_line(trace, k, flat)))
            if getattr(extra, "hedge", False) and trace is not None:  # the values ask (exercises.Hedge): does the trace decide?
                extra = hedge_fact(ex, case, k, first, writers, trace, grid, block, list(raw.names), source) or extra
            if extra == LAST_LEFT_OUT:  # the values' guess; the trace says whether it was loaded
                extra = last_loaded_words(_counts(trace), case, grid, block, source) or extra
            # exercises.sum_hints' words (OWN_PARTIAL) for thread 0's partial alone: why, from the line that stored it
            if extra and "threads' partials reached the value stored" in extra and writers is not None:
                extra += own_partial_cause(source, store_line(trace, k, int(np.ravel_multi_index(first, ref.shape))
                                                              if ref.shape else 0))
        scaled = scaled_hint(out64, ref, bad)
        if scaled and trace is not None:  # the trace's atomics say why: every thread of a block added
            m = int(round(float(out64[first] / ref[first])))
            flat = int(np.ravel_multi_index(first, ref.shape)) if ref.shape else 0
            scaled = repeated_atomic(getattr(trace, "lab_counts", None), onames[k], grid, block, m,
                                     quote(source, store_line(trace, k, flat))) or scaled
            if scaled.endswith("instead of once?"):  # no atomic repeated: an element read by m threads?
                scaled = repeated_reads_hint(ex, case, trace, grid, block, list(raw.names), source, m) or scaled
        poisoned = None if scaled else poison_hint(out64, ref, bad, out.dtype)
        if poisoned and poisoned.startswith("it is NaN") and trace is not None and trace.uninit:  # the read seen
            arr, uidx, uwho, uline = trace.uninit[0]
            poisoned = (f"the simulator saw {fmt_who(uwho, nd)} read shared {fmt_idx(arr, uidx)}"
                        f"{f' at {quote(source, uline)}' if uline else ''} before any thread of its block wrote it, "
                        f"and the value read there (the simulator's NaN) reached {onames[k]}: "
                        + (unstored_words(ex, case, trace, source) or "every cell the block reads must be stored first "
                           "(threads past the end store 0, the identity, into their own cell)"))
        extra = scaled or poisoned or extra
        if not extra:  # the reference moved by a constant index: the index is off by it
            extra = index_shift_hint(out64, ref, bad)
        if not extra and trace is not None:  # no hint fits: what differs from the reference's own trace
            extra = differential(ex, case, k, first, writers, trace, grid, block, list(raw.names), source)
            shift = offset_hint(out64, ref, bad) if extra else None
            extra = f"{extra}; {shift}" if shift else extra
        raise Failed(msg + (f". Hint: {extra}" if extra else ""),
                     writers and writers_map(onames[k], writers[k], out64.shape, grid, block), kind=VALUES)
    raise Failed(f"output differs from the float64 reference: {verdict_.reason}", kind=VALUES)


def _counts(trace):
    """The tracer's raw counts of a simulator run, with its ``uninit`` reads (None without a trace)."""
    counts = getattr(trace, "lab_counts", None) if trace is not None else None
    return None if counts is None else {**counts, "uninit": list(getattr(trace, "uninit", None) or [])}


def _untraced_values(case, outs, writers, onames, touched=None) -> None:
    """Failed when an output holds values (not its poison, not its initial value) that no thread of
    the kernel stored: nothing at all was stored into it, or an element changed without a store of
    a traced thread (the tracer follows views and slices too; ``touched``, the executor's record of
    an output indexed at all, no longer excuses one). Such values were not computed by the kernel's
    threads."""
    for k, out in enumerate(outs):
        out = np.asarray(out)
        if writers[k] is None:
            continue
        shape, dt = case.outputs[k]
        if case.init is not None:
            before = np.asarray(case.init[k], dtype=dt).reshape(out.shape)
        else:
            before = poisoned(tuple(shape), dt, 0)
        changed = ~((out == before) | (np.isnan(out) & np.isnan(before))) if out.dtype.kind == "f" else out != before
        if not changed.any():
            continue
        if not writers[k]:  # (a store through a view or a slice is traced too: lab.core.simt.Traced)
            raise Failed(f"{onames[k]} holds values, but no thread of your kernel stored into it (the simulator "
                         f"traced every thread): its values were not computed by the kernel's threads (filled "
                         f"around the launch?)")
        stray = changed & ~_written_mask(writers[k], out.shape)
        if stray.any():
            first = tuple(int(v) for v in np.argwhere(stray)[0]) if out.shape else ()
            raise Failed(f"{fmt_idx(onames[k], first)} holds a value, but no thread of your kernel stored into it "
                         f"(the simulator traced every thread's stores); {int(stray.sum())} of "
                         f"{plural(out.size, 'element')} like this: the values were not computed by the kernel's "
                         f"threads (filled around the launch?)")


def simt_poison(dtype):
    return np.dtype(dtype).type(FLOAT_SENTINEL)


def _written_mask(writer, shape):
    """Boolean array of ``shape``: which elements the tracer saw written."""
    mask = np.zeros(int(np.prod(shape)) if shape else 1, bool)
    if writer:
        mask[np.fromiter(writer.keys(), int, len(writer))] = True
    return mask.reshape(shape) if shape else mask.reshape(())


class Judge:
    """The parent's side of one executor child: it judges each test from the raw results the child
    left in ``folder`` (never from what the child printed), in the order they come."""

    def __init__(self, ex, cases, backend: str, path: str, folder: str, compile_planned: bool = False,
                 launches=None, source: str | None = None):
        self.ex, self.cases, self.backend, self.path, self.folder = ex, cases, backend, str(path), folder
        self.source = source  # the file's text the judge read and sent (None: messages give line numbers only)
        self._lines = None
        # per case: (grid, block) the judge evaluated (lab.teach.checker.launch_plan), or its failure (a str)
        self.launches = list(launches) if launches is not None else [
            (c.grid, c.block) if c.grid is not None else None for c in cases]
        self.index = {c.name: i for i, c in enumerate(cases)}
        self.planned = ([COMPILE_TEST] if compile_planned else []) + [c.name for c in cases]
        self.notes: list[str] = []
        self.dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))

    def source_lines(self) -> list:
        """The lines of the student's file, which messages quote: the text the judge read and sent the
        child ([] without one: the messages give line numbers only; the file itself is never read
        again here, it may since have become anything, a FIFO included)."""
        if self._lines is None:
            self._lines = str(self.source).splitlines() if self.source is not None else []
        return self._lines

    def close(self):
        if self.dir_fd is not None:
            os.close(self.dir_fd)
            self.dir_fd = None

    def _json(self, key):
        data = read_child_file(self.folder, result_name(key, "json"), JSON_CAP, self.dir_fd)
        if not data:  # missing, or made empty by write_request and not written yet
            return None
        try:
            return json.loads(data)
        except ValueError:
            raise ResultError("a damaged JSON record") from None

    def load_failure(self) -> dict | None:
        """The "load" entry when the executor could not load the file, else None."""
        try:
            rec = self._json("load")
        except Exception as e:  # noqa: BLE001 - a link, a FIFO, a JSON bomb: no result, a failure
            return {"name": "load", "passed": False,
                    "message": f"the checker's child returned no result ({e if isinstance(e, ResultError) else error_line(e)})"}
        if rec is None:
            return None
        msg = rec.get("failed") if isinstance(rec, dict) else None
        return {"name": "load", "passed": False, "message": str(msg)[:2000] if msg else "the file did not load"}

    def compile(self) -> dict | None:
        """The compile test's entry (None when it has no result; a skip becomes a note)."""
        try:
            rec = self._json("compile")
            if rec is None:
                return None
            if not isinstance(rec, dict):
                raise ResultError("a compile record that is not one")
            if "skipped" not in rec:  # an "ok" is believed only with the PTX this process checks
                cc = tuple(int(v) for v in (rec.get("cc") or gpu_compile.CC))[:2]
                rec = dict(gpu_compile.verified(rec, self.ex.kernel, len(compile_sigs(self.cases)), cc), cc=list(cc))
            r = compile_entry(rec, self.backend)
        except Exception as e:  # noqa: BLE001 - no result, a failure
            return {"name": COMPILE_TEST, "passed": False,
                    "message": f"the checker's child returned no result ({e if isinstance(e, ResultError) else error_line(e)})"}
        if isinstance(r, str):
            if r not in self.notes:
                self.notes.append(r)
            return None
        return r

    def has(self, name: str) -> bool:
        """Whether the child left a result for test ``name``."""
        key = "compile" if name == COMPILE_TEST else self.index.get(name)
        if key is None:
            return False
        if key != "compile" and isinstance(self.launches[key], str):
            return True  # its launch() failed: judged without a result
        try:
            return os.stat(result_name(key, "json"), dir_fd=self.dir_fd, follow_symlinks=False).st_size > 0
        except OSError:
            return False

    def test(self, name: str) -> dict | None:
        """The entry of test ``name`` from its raw result; None when there is none."""
        if name == COMPILE_TEST:
            return self.compile()
        i = self.index.get(name)
        if i is None:
            return None
        case = self.cases[i]
        if isinstance(self.launches[i], str):  # the file's launch() failed here: no kernel ran
            return {"name": name, "passed": False, "message": self.launches[i], "kind": DIAGNOSIS}
        try:
            rec = self._json(i)
            if rec is None:
                return None
            npz = read_child_file(self.folder, result_name(i, "npz"), result_cap(case, self.launches[i]),
                                  self.dir_fd)
            raw = raw_result(case, rec, npz, self.backend, self.path, launch=self.launches[i])
            raw.source = self.source_lines()
            return {"name": name, "passed": True, "message": judge_case(self.ex, case, raw, self.backend)}
        except Failed as e:
            result = {"name": name, "passed": False, "message": str(e), "kind": e.kind}
            if e.map and os.environ.get(MAP_ENV, "").strip().lower() in ("1", "on", "yes", "true"):
                result["map"] = e.map
            return result
        except ResultError as e:
            return {"name": name, "passed": False, "message": f"the checker's child returned no valid result ({e})"}
        except Exception as e:  # noqa: BLE001 - data the messages could not read: no verdict but a failure
            return {"name": name, "passed": False,
                    "message": f"the checker's child returned a result that could not be judged ({error_line(e)})"}
