"""``lab compare A.json B.json``: per row, B's speedup over A and whether it is beyond the noise.

A and B are ``lab run --json``, ``lab bench --json`` or ``lab sweep --json`` outputs. Rows are
matched on (kernel, contender, variant), plus size and threads per block when a file holds several
runs of one kernel. The noise of a row is its relative spread, IQR / median (``results[].noise``
when the file has it, else ``iqr_ms / median_ms``). A difference is *beyond the noise* when the
medians differ by more than the two rows' noises added: |B - A| / min(A, B) > noise_A + noise_B,
i.e. the two middle halves of the samples cannot overlap. Time the same version twice to see the
noise of your machine. Nothing here prints.
"""
from __future__ import annotations

import contextlib
import json

from lab.core.errors import SCHEMA_VERSION, LabError


def reports_in(obj) -> list[dict]:
    """The ``lab run --json`` dicts inside a loaded JSON document (run, bench, sweep or a list)."""
    if isinstance(obj, list):
        return [r for o in obj for r in reports_in(o)]
    if isinstance(obj, dict) and "results" in obj and "kernel" in obj:
        return [obj]
    if isinstance(obj, dict) and isinstance(obj.get("reports"), list):
        return reports_in(obj["reports"])
    return []


# what lab compare, lab roofline --from and lab bench --from read of each run and each of its rows
REPORT_KEYS = {"kernel": str, "backend": str, "device": dict, "size": list, "threads_per_block": int,
               "flops": (int, float), "bytes_moved": (int, float), "results": list}
RESULT_KEYS = {"contender": str, "variant": str, "status": str}
HOW = "write it with lab run/bench/sweep --json"


def check_report(rep, path: str) -> None:
    """LabError naming ``path`` and the first key that ``rep`` lacks (or holds the wrong type of)."""
    def bad(where, key, want):
        kind = want.__name__ if isinstance(want, type) else "a number"
        return LabError(f"{path}: not a lab --json document: {where} has no {key!r} ({kind}); {HOW}")

    if not isinstance(rep, dict):
        raise LabError(f"{path}: not a lab --json document: a run is a {type(rep).__name__}; {HOW}")
    for key, want in REPORT_KEYS.items():
        if not isinstance(rep.get(key), want) or isinstance(rep.get(key), bool):
            raise bad("a run", key, want)
    for r in rep["results"]:
        if not isinstance(r, dict):
            raise LabError(f"{path}: not a lab --json document: a result of {rep['kernel']} is a "
                           f"{type(r).__name__}; {HOW}")
        for key, want in RESULT_KEYS.items():
            if not isinstance(r.get(key), want):
                raise bad(f"a result of {rep['kernel']}", key, want)


@contextlib.contextmanager
def reading(*paths: str):
    """Work on documents read from ``paths``: a key or value they lack (a document written by hand,
    or by another program) is LabError naming the files, not a traceback."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError) as e:
        raise LabError(f"{', '.join(paths)}: not a complete lab --json document "
                       f"({type(e).__name__}: {str(e).strip()[:80]}); {HOW}") from None


def load_reports(path: str) -> list[dict]:
    """Read ``path``; LabError (one line) when it is missing, not JSON, or holds no run results."""
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except OSError as e:
        raise LabError(f"{path}: cannot read ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise LabError(f"{path}: not JSON ({e.msg} at line {e.lineno}); {HOW}") from None
    except (UnicodeDecodeError, ValueError):
        raise LabError(f"{path}: not JSON (not UTF-8 text: a binary file?); {HOW}") from None
    reps = reports_in(obj)
    if not reps:
        raise LabError(f"{path}: no run results in it; {HOW}")
    for rep in reps:
        check_report(rep, path)
    return reps


def noise(result: dict) -> float | None:
    """IQR / median of a row: ``results[].noise`` when present, else derived; None if untimed."""
    if result.get("noise") is not None:
        return float(result["noise"])
    if result.get("median_ms") and result.get("iqr_ms") is not None:
        return result["iqr_ms"] / result["median_ms"]
    return None


def _keyed(reports: list[dict], split: set) -> dict:
    out = {}
    for rep in reports:
        for r in rep["results"]:
            key = (rep["kernel"], r["contender"], r["variant"])
            if rep["kernel"] in split:
                key += ("x".join(map(str, rep["size"])), rep["threads_per_block"])
            out[key] = (rep, r)
    return out


def _note(notes: list[str], line: str) -> None:
    if line not in notes:
        notes.append(line)


def compare(a: list[dict], b: list[dict]) -> dict:
    """Match rows of run reports ``a`` and ``b``; returns {"schema_version", "rows": [...], "only_a": [...],
    "only_b": [...], "notes": [...]}.

    Each row: kernel, contender, variant (+ size, threads when split), a_ms, b_ms, speedup (A / B:
    above 1 means B is faster), noise_a, noise_b, beyond_noise (bool, None when either is untimed),
    verdict ("faster", "slower", "within noise", or why there is no verdict).
    """
    def many(reps):
        seen: dict = {}
        for rep in reps:
            seen[rep["kernel"]] = seen.get(rep["kernel"], 0) + 1
        return {k for k, n in seen.items() if n > 1}

    split = many(a) | many(b)
    ka, kb = _keyed(a, split), _keyed(b, split)
    rows, notes = [], []
    if {r["backend"] for r in a + b} & {"simulator"}:
        notes.append("simulator runs: times are the simulation's wall clock, not GPU times")
    devices = {r["device"].get("name") for r in a} | {r["device"].get("name") for r in b}
    if len(devices) > 1:
        notes.append(f"different devices: {', '.join(sorted(map(str, devices)))}")
    for key in [k for k in ka if k in kb]:
        (ra, xa), (rb, xb) = ka[key], kb[key]
        row = {"kernel": key[0], "contender": key[1], "variant": key[2], "size": "x".join(map(str, rb["size"])),
               "threads": rb["threads_per_block"], "a_ms": xa["median_ms"], "b_ms": xb["median_ms"],
               "noise_a": noise(xa), "noise_b": noise(xb), "speedup": None, "beyond_noise": None}
        if row["a_ms"] and row["b_ms"]:
            row["speedup"] = row["a_ms"] / row["b_ms"]
            rel = abs(row["b_ms"] - row["a_ms"]) / min(row["a_ms"], row["b_ms"])
            row["beyond_noise"] = rel > row["noise_a"] + row["noise_b"]
            row["verdict"] = ("faster" if row["speedup"] > 1 else "slower") if row["beyond_noise"] else "within noise"
            few = min(xa.get("timed_calls") or 0, xb.get("timed_calls") or 0)
            if few and few < 5:
                _note(notes, f"some rows have {few} timed calls: their IQR is a weak noise estimate (use --repeats 20+)")
        else:
            row["verdict"] = f"not timed ({xa['status'] if not row['a_ms'] else xb['status']})"
        if ra["size"] != rb["size"] or ra["threads_per_block"] != rb["threads_per_block"]:
            _note(notes, f"{key[0]}: A ran {'x'.join(map(str, ra['size']))} --threads {ra['threads_per_block']}, "
                         f"B ran {row['size']} --threads {row['threads']}")
        rows.append(row)
    fmt = lambda k: " ".join(map(str, k))  # noqa: E731
    return {"schema_version": SCHEMA_VERSION, "rows": rows, "only_a": [fmt(k) for k in ka if k not in kb],
            "only_b": [fmt(k) for k in kb if k not in ka], "notes": notes}


def row_name(result: dict) -> str:
    """A contender's label: the Numba variant (rung), the library op, or ``numpy`` for the CPU reference."""
    if result["contender"] == "numba":
        return result["variant"]
    return result["contender"] if result["variant"] in ("-", "reference (CPU)") else result["variant"]
