"""``lab tune KERNEL``: search each rung's launch configurations, keep the fastest per shape class.

Like ``triton.autotune`` (a list of configs, a key, a cache), with nvbench's axes: the search space
of a kernel is, for each rung, threads per block (64 ... 1024, wherever the rung honours it: rungs
with a fixed block give one configuration; 32 ... 128 in the simulator) times the values of each
tunable parameter the rung declares (``Variant.tunables``: matmul's tile bm x bn of tile64 and
split_k, K-slab and launch bounds of register_tiled, split-K factor of split_k and vector, ...).
New rungs with tunables join the search with no change here; ``Variant.suits`` keeps a rung out of
shapes it is not meant for (matmul's vector rung away from M = 1 or N = 1).

Every candidate runs the way ``lab run`` runs a rung: inputs copied to the device, outputs poisoned,
one first call (compile + run) checked against the float64 reference (lab.core.check), and only
then timed (lab.core.timing: CUDA events, a short fixed count). A candidate that fails to compile,
runs out of resources, raises, or fails the check is recorded with the reason and skipped; it never
stops the search. The budget is wall seconds for the whole search, shared out among the shapes still
to tune; the heuristic's own choice is always measured first, so every tuned shape has a baseline.

Winners are written per (device, compute capability, compiler, kernel, shape class) to the user's
cache (kernels.tuning), merged with what it held, atomically (lab.core.files). When several tuned
shapes share a class, the configuration with the best geometric-mean slowdown against each shape's
fastest wins the class. In the simulator the same logic runs on tiny shapes; its "times" are wall
clocks of simulated calls (marked ``simulated``), which only test the logic: they are shown (and
written with ``--out``), never put in the user's cache, and ``auto`` never reads a simulated entry
(kernels.tuning), so tuning in the simulator does not change the simulator's later ``auto`` choices.
A simulator search estimated above 10 minutes (lab.core.simcost: the heuristic's runs, which always
happen, plus the budget and one candidate's overrun) does not start without ``yes``.
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
import dataclasses
import json

from kernels import tuning
from lab.core.errors import SCHEMA_VERSION, LabError
from lab.core.runner import Steps, quiet
import numpy as np
from lab.bench.shapes import skipped
from lab.core import contenders as C, catalog, device, simcost
from lab.core.check import check_prepared
from lab.core.files import check_writable, write_atomic
from lab.core.simulator import refuse_long, check_calls
from lab.core.timing import Timer

THREADS = (64, 128, 256, 512, 1024)  # the threads-per-block axis
SIM_THREADS = (32, 64, 128)  # in the simulator (each simulated thread is a Python thread)
GPU_BUDGET_S = 120.0
SIM_BUDGET_S = 30.0
GPU_CALLS = 10  # timed calls a candidate (after 2 warm-up calls): enough to rank, cheap to repeat
# The shapes of each kernel (KernelSpec.tune_shapes): in the simulator a few tiny ones, on a GPU the
# public sweep's and those the spec adds (default_shapes).


@dataclass
class Candidate:
    """One configuration: a rung, threads per block, tunable parameters; then what running it gave."""

    rung: str
    threads: int
    params: dict = field(default_factory=dict)
    heuristic: bool = False
    status: str = "pending"  # ok, FAIL (check), error (compile, resources, launch math), budget
    ms: float | None = None
    reason: str = ""

    def as_dict(self) -> dict:
        return {"rung": self.rung, "threads": self.threads, "params": self.params, "heuristic": self.heuristic,
                "status": self.status, "ms": self.ms, "reason": self.reason}

    @property
    def label(self) -> str:
        p = tuning.describe_params(self.params)
        return f"{self.rung} t={self.threads}" + (f" {p}" if p else "")

    def ident(self) -> tuple:
        return (self.rung, self.threads, tuple(sorted(self.params.items())))


def candidates(spec, size, max_threads: int = 1024, threads_axis=THREADS) -> list[Candidate]:
    """Every distinct configuration of every rung at ``size``, the heuristic's first. Two configurations
    with the same launch (grid, block, parameters) of a rung are one: a rung with a fixed block
    contributes one per parameter combination, not one per threads value. Lesson rungs slow by design
    (lab.bench.shapes.skipped) and rungs that do not suit the shape (``Variant.suits``) are left out;
    the heuristic's rung comes right after the heuristic's own choice."""
    auto = spec.variants.get("auto")
    first = None
    if auto is not None and auto.choose is not None:
        rung, t, _, *params = auto.choose(size)
        first = Candidate(rung, t, dict(params[0]) if params else {}, heuristic=True)
    out, seen = ([first] if first else []), set()
    if first:
        try:
            cfg = spec.variants[first.rung].configure(size, first.threads, first.params)
            seen.add((first.rung, cfg.grid, cfg.block, cfg.params))
        except Exception:
            pass
    for name, v in spec.variants.items():
        if name == "auto" or name in skipped(spec.name) or (v.suits and not v.suits(size)):
            continue
        axes = list(v.tunables.items())
        combos = [dict(zip([a for a, _ in axes], values)) for values in itertools.product(*[vals for _, vals in axes])]
        for t in threads_axis:
            if t > max_threads or v.accepts(t):
                continue
            for params in combos:
                try:
                    cfg = v.configure(size, t, params)
                except Exception:  # launch math that cannot serve this shape: not a candidate
                    continue
                ident = (name, cfg.grid, cfg.block, cfg.params)
                if ident in seen:
                    continue
                seen.add(ident)
                tpb = cfg.threads_per_block  # a rung with a fixed block: its block, not the t asked
                try:
                    same = v.configure(size, tpb, params)
                    t = tpb if (same.grid, same.block, same.params) == ident[1:] else t
                except Exception:
                    pass
                out.append(Candidate(name, t, dict(params)))
    # the heuristic's rung first (its neighbours in parameter space), then the others: a budget that
    # runs out has tried what is most likely to win
    return sorted(out, key=lambda c: (not c.heuristic, first is None or c.rung != first.rung))


def _first_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:160]}" if text else type(e).__name__


def measure(spec, size, dtype, cand: Candidate, inputs, refs, tols, simulator: bool) -> Candidate:
    """Run one candidate: prepare, first call checked against the reference, then timed (GPU)."""
    variant = spec.variants[cand.rung]
    try:
        cfg = variant.configure(size, cand.threads, cand.params)
        bound = dataclasses.replace(variant, launch=lambda s, t: cfg)
        prepared = C.prepare_numba(spec, size, bound, cfg, inputs, simulator)
    except Exception as e:  # compile errors, too much shared memory, bad launch math
        cand.status, cand.reason = "error", f"setup: {_first_line(e)}"
        return cand
    try:
        timer = Timer(prepared.call, prepared.timer_mode, prepared.sync)
        first = {}

        def first_call():
            first["ms"], outs = timer.first_call()
            return outs

        checked = check_prepared(prepared, refs, tols, spec.out_specs(size, dtype), first_call=first_call)
        if not checked.verdict.ok:
            cand.status, cand.reason = "FAIL", f"differs from the float64 reference: {checked.verdict.reason}"
            return cand
        if simulator:
            cand.ms = first["ms"]  # the simulated call's wall clock: tests the logic, says nothing of a GPU
        else:
            cand.ms = timer.measure(GPU_CALLS, 2).median_ms
        cand.status = "ok"
    except Exception as e:  # launch failures (too many resources requested), anything else
        cand.status, cand.reason = "error", _first_line(e)
    finally:
        prepared.release()
    return cand


def default_shapes(kernel: str, simulator: bool, spec) -> list[str]:
    """The public sweep's shapes of ``kernel`` (its spec's ``sweep.shapes``) and its ``tune_shapes["gpu"]``
    on a GPU; in the simulator its ``tune_shapes["simulator"]`` (default: its simulator size)."""
    if simulator:
        return list(spec.tune_shapes.get("simulator", ())) or ["x".join(map(str, spec.default_size(True)))]
    return (list(spec.sweep.shapes) or ["x".join(map(str, spec.default_size(False)))]) + list(spec.tune_shapes.get("gpu", ()))


def tune(kernel: str, backend: str, shapes: list[str] | None = None, budget_s: float | None = None,
         dtype: str = "float32", seed: int = 0, write: bool = True, progress: Steps = quiet,
         yes: bool = False) -> dict:
    """Tune ``kernel`` on ``backend`` ("gpu" or "simulator"); returns the ``lab tune --json`` dict
    (docs/schemas/tune.json) and, when ``write`` on a GPU, merges the winners into the user's cache
    (in the simulator never: ``cache_path`` is null).

    shapes: ``--size`` strings (default :func:`default_shapes`); budget_s: wall seconds for the whole
    search (default 120 on a GPU, 30 in the simulator). LabError (one line) for bad input, or for a
    simulator search estimated above 10 minutes without ``yes``.
    """
    simulator = backend == "simulator"
    spec = catalog.load(kernel)
    if dtype not in spec.dtypes:
        raise LabError(f"--dtype {dtype}: {spec.name} supports {', '.join(spec.dtypes)}")
    budget = budget_s if budget_s is not None else (SIM_BUDGET_S if simulator else GPU_BUDGET_S)
    if not budget > 0:
        raise LabError(f"--budget {budget_s}: give a positive number of seconds")
    texts = shapes or default_shapes(kernel, simulator, spec)
    sizes = []
    for text in texts:
        try:
            sizes.append(spec.parse_size(text))
        except ValueError as e:
            raise LabError(str(e)) from None
    write = write and not simulator  # simulated times say nothing of a GPU: auto never reads them
    if write:
        path = tuning.cache_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise LabError(f"cannot write the tuned cache {path}: {e.strerror or e}") from None
        check_writable(path, "tuned cache")
    info = device.describe(simulator)
    dev = tuning.device()
    np_dtype = np.dtype(dtype)
    max_t = info.get("max_threads_per_block") or 1024
    axis = SIM_THREADS if simulator else THREADS
    spaces = [candidates(spec, size, max_t, axis) for size in sizes]  # launch math only: before the clock starts
    if simulator and not yes:
        refuse_long(_simulator_seconds(spec, sizes, spaces, np.dtype(dtype), budget), f"lab tune {kernel}",
                    "smaller --shapes (or leave --shapes out: a few tiny shapes), a smaller --budget", yes)
    start = time.monotonic()
    deadline = start + budget
    total, done = sum(map(len, spaces)), 0
    results = []
    for i, size in enumerate(sizes):
        cls = tuning.shape_class(size)
        row = {"size": list(size), "shape_class": cls, "candidates": [], "heuristic": None, "winner": None,
               "speedup_vs_heuristic": None, "status": "tuned"}
        results.append(row)
        now = time.monotonic()
        if now >= deadline:
            row["status"] = "not tuned: budget spent"
            for cand in spaces[i]:
                cand.status, cand.reason = "budget", "not run: the budget was spent"
            row["candidates"] = [c.as_dict() for c in spaces[i]]
            done += len(spaces[i])
            continue
        shape_deadline = now + (deadline - now) / (len(sizes) - i)
        rng = np.random.default_rng(seed)
        inputs = spec.make_inputs(size, np_dtype, rng)
        refs = spec.float64_reference(inputs)
        tols = spec.tolerance(inputs, refs, np_dtype)
        cands = spaces[i]
        for j, cand in enumerate(cands):
            done += 1
            if time.monotonic() >= shape_deadline and not cand.heuristic:
                cand.status, cand.reason = "budget", "not run: this shape's share of the budget was spent"
                continue
            progress(done - 1, total, f"{kernel} {'x'.join(map(str, size))} [{j + 1}/{len(cands)}] {cand.label}")
            measure(spec, size, np_dtype, cand, inputs, refs, tols, simulator)
        row["candidates"] = [c.as_dict() for c in cands]
        ok = [c for c in cands if c.status == "ok"]
        heur = next((c for c in cands if c.heuristic), None)
        row["heuristic"] = heur.as_dict() if heur else None
        if ok:
            best = min(ok, key=lambda c: c.ms)
            row["winner"] = best.as_dict()
            if heur and heur.status == "ok" and best.ms:
                row["speedup_vs_heuristic"] = heur.ms / best.ms
        else:
            row["status"] = "not tuned: no candidate passed"
    progress(total, total, "done")
    entries = winners(kernel, results, dev, tuning.compiler(), simulator)
    doc = {"schema_version": SCHEMA_VERSION, "kernel": kernel, "backend": backend, "simulated": simulator,
           "device": dev[0], "compute_capability": dev[1], "compiler": tuning.compiler(), "dtype": dtype,
           "budget_s": budget, "elapsed_s": round(time.monotonic() - start, 3),
           "cache_path": str(tuning.cache_path()) if write else None, "shapes": results, "entries": entries,
           "sm_count": info.get("sm_count")}
    if write and entries:
        save(entries)
    return doc


def _simulator_seconds(spec, sizes, spaces, dtype, budget: float) -> float:
    """Rough wall seconds of a simulator search (lab.core.simcost): each shape's heuristic candidate
    (always run), the others up to the budget, and the costliest one's overrun (a candidate started
    before the budget ran out runs to its end)."""
    def cost(size, cand) -> float:
        try:
            cfg = spec.variants[cand.rung].configure(size, cand.threads, cand.params)
        except Exception:
            return 0.0
        return check_calls(spec, size, dtype) * simcost.call_seconds(spec.name, {cand.rung: cfg.threads_total},
                                                                     spec.flops(size))

    first, rest = 0.0, []
    for size, cands in zip(sizes, spaces):
        for c in cands:
            if c.heuristic:
                first += cost(size, c)
            else:
                rest.append(cost(size, c))
    return first + min(budget, sum(rest)) + (max(rest) if sum(rest) > budget else 0.0)


HEURISTIC = (tuning.HEURISTIC_RUNG, 0, ())  # the heuristic's choice at each shape, scored as one configuration


def winners(kernel: str, results: list[dict], dev, compiler: str, simulated: bool) -> list[dict]:
    """One cache entry per shape class: the configuration with the smallest geometric mean of
    (its ms / the fastest ms) over the class's tuned shapes where it ran (absent counts as 2x). The
    heuristic's own choice at each shape competes as one more configuration: where it wins, the
    class gets no entry, and ``auto`` keeps choosing per shape (matmul's launch model picks a
    different tile for 1024^3 and 777 x 1333 x 901, which share a class)."""
    by_class: dict = {}
    for row in results:
        if row["winner"]:
            by_class.setdefault(row["shape_class"], []).append(row)
    entries = []
    for cls, rows in by_class.items():
        scores = {}
        for row in rows:
            best = row["winner"]["ms"]
            times = {(c["rung"], c["threads"], tuple(sorted(c["params"].items()))): c["ms"]
                     for c in row["candidates"] if c["status"] == "ok"}
            heur = row.get("heuristic")
            if heur and heur.get("status") == "ok":
                times[HEURISTIC] = heur["ms"]
            for ident in set(scores) | set(times):
                scores.setdefault(ident, []).append(times[ident] / best if ident in times and best else 2.0)
        for vals in scores.values():
            vals += [2.0] * (len(rows) - len(vals))
        ident = min(scores, key=lambda k: (math.exp(sum(map(math.log, scores[k])) / len(scores[k])), k != HEURISTIC,
                                           k[0]))
        ref = max(rows, key=lambda r: math.prod(r["size"]))
        ms = (ref.get("heuristic") or {}).get("ms") if ident == HEURISTIC else next(
            (c["ms"] for c in ref["candidates"] if c["status"] == "ok"
             and (c["rung"], c["threads"], tuple(sorted(c["params"].items()))) == ident), None)
        entries.append({"device": dev[0], "compute_capability": dev[1], "compiler": compiler, "kernel": kernel,
                        "shape_class": cls, "rung": ident[0], "threads": ident[1], "params": dict(ident[2]),
                        "size": ref["size"], "ms": ms, "simulated": simulated,
                        "tuned_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    return entries


def document(entries: list[dict], match: str | None = None) -> dict:
    """A tuned-configs file (docs/schemas/tune-cache.json); ``match``: a shipped table's device text."""
    doc = {"format": tuning.FORMAT, "format_version": tuning.FORMAT_VERSION}
    if match:
        doc["match"] = match
    doc["entries"] = sorted(entries, key=tuning.entry_key)
    return doc


def save(entries: list[dict], path=None, match: str | None = None) -> str:
    """Merge ``entries`` into the tuned-configs file at ``path`` (default: the user's cache), over
    what it held for the same keys; a file that cannot be read is replaced. Written atomically."""
    path = path or tuning.cache_path()
    held = {}
    try:
        held = {tuning.entry_key(e): e for e in tuning.validate(json.loads(open(path).read()))}
    except (OSError, ValueError):
        held = {}
    held.update({tuning.entry_key(e): e for e in entries})
    write_atomic(path, json.dumps(document(list(held.values()), match), indent=1) + "\n", "tuned cache")
    tuning.forget()
    return str(path)
