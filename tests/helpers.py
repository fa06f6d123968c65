"""Run a kernel variant the way the runner does: poisoned outputs (two poisons for integer outputs),
canaries past each output, float64 reference, the spec's tolerances, through ``lab.core.check``."""
import numpy as np

from lab.core import contenders as C
from lab.core.check import check_prepared


def run_variant(spec, variant, size, threads, rng, dtype=np.float32, simulator=True):
    """Run ``variant`` once on fresh random inputs; returns (ok, max_abs_err, outputs, refs)."""
    inputs = spec.make_inputs(size, np.dtype(dtype), rng)
    refs = spec.reference(*[a.astype(np.float64) for a in inputs])
    tols = spec.tolerance(inputs, refs, np.dtype(dtype))
    v = spec.variants[variant]
    prepared = C.prepare_numba(spec, size, v, v.launch(size, threads), inputs, simulator)
    checked = check_prepared(prepared, refs, tols, spec.out_specs(size, np.dtype(dtype)))
    return checked.verdict.ok, checked.verdict.max_abs_err, checked.outputs, refs


def check_rung(kernel, variant, size, threads, rng, simulator, dtype=np.float32):
    """Assert that ``variant`` of ``kernel`` passes the check at ``size`` and ``threads``."""
    import kernels

    ok, err, *_ = run_variant(kernels.load(kernel), variant, size, threads, rng, dtype=dtype, simulator=simulator)
    assert ok, f"{kernel} {variant} at {size}, {threads} threads: max abs err {err}"


# --- the commands' tests ---------------------------------------------------------------------------------
FAST = ["--contenders", "numba,numpy", "--repeats", "1"]  # lab bench/sweep options: a quick timed run
TINY = ["--repeats", "1", "--warmup", "0", "--contenders", "numba,numpy"]  # lab run: one timed call a row


def fits(text, width=80):
    """Every line of ``text`` fits ``width`` columns and nothing was cut."""
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    assert "…" not in text and "..." not in text  # nothing cut


def one_line_exit_2(code, err, needle):
    assert code == 2, err
    assert needle in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def fake_gpu_report(medians: dict, kernel="vecadd", size=(1 << 26,), iqr=0.001, noise=None):
    """A ``lab run --json``-shaped dict as a GPU run would write it (for the presentation logic only)."""
    results = []
    for (contender, variant), ms in medians.items():
        r = {"contender": contender, "variant": variant, "status": "ok", "reason": "", "ok": True, "median_ms": ms,
             "iqr_ms": iqr, "timed_calls": 50, "gflops": size[0] / (ms * 1e-3) / 1e9, "gbps": None}
        if noise is not None:
            r["noise"] = noise
        results.append(r)
    return {"kernel": kernel, "backend": "gpu", "device": {"name": "Test GPU", "peak_fp32_gflops": 60000.0},
            "size": list(size), "threads_per_block": 256, "repeats": 50, "warmup": 5, "dtype": "float32",
            "flops": size[0], "bytes_moved": 12 * size[0], "copy_bandwidth": {"gbps": 3000.0}, "results": results}


def mutated_solution(tmp_path, name, subs):
    """The exercise ``name``'s solution with each (old, new) of ``subs`` substituted, written to
    tmp_path/NAME.py; each ``old`` must be in the solution (a substitution that no longer applies fails)."""
    import exercises

    src = exercises.load(name).solution.read_text()
    for old, new in subs:
        assert old in src, f"the substitution does not apply to {name}: {old!r}"
        src = src.replace(old, new)
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    return path


def bad_inputs(table: str) -> list:
    """``(args, needle)`` pytest params from a text table, one case a line: ``ARGS | NEEDLE``, the lab
    command line (shell words) and a phrase its one-line error must have; the command line is the id."""
    import shlex

    import pytest

    rows = [line.split(" | ", 1) for line in table.strip().splitlines()]
    return [pytest.param(shlex.split(args), needle.strip(), id=args.strip()) for args, needle in rows]


def shown(obj) -> str:
    """``obj`` (a gradebook row, a check's document) as one string for an assertion's message: pytest cuts a
    dict's repr to one line ('...'), a string it shows whole, so a failure on CI says its reason."""
    import json

    return json.dumps(obj, default=str)[:6000]
