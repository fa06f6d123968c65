"""One backend for the whole session, chosen before anything imports numba.cuda; the fixtures every
test file shares: ``rng``, ``simulator`` and ``lab`` (the one CLI harness).

On a machine with a CUDA GPU the tests run on it (select the GPU set with ``-m gpu``); elsewhere
(CI) they run in Numba's CUDA simulator, at small sizes. ``LAB_TEST_BACKEND=sim|gpu`` forces one.

Layout: tests are filed by what they test, mirroring the code (tests/README.md).
"""
import itertools
import os

import numpy as np
import pytest
from click.testing import CliRunner

from lab.core import compilers
from lab.core.simulator import select
from lab.core.errors import LabError

# Tuned configurations: the tests never read or write the user's cache (kernels.tuning); each process
# gets an empty one of its own (tests that tune set their own LAB_CACHE_DIR).
if not os.environ.get("LAB_CACHE_DIR"):
    import tempfile

    os.environ["LAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="lab-tests-cache-")
# The HMAC key of exercise check records (lab.teach.records.record_key): never the user's own.
if not os.environ.get("LAB_DATA_DIR"):
    import tempfile

    os.environ["LAB_DATA_DIR"] = tempfile.mkdtemp(prefix="lab-tests-data-")

BACKEND = select({"sim": "sim", "gpu": "gpu"}.get(os.environ.get("LAB_TEST_BACKEND", ""), "auto"))
SIMULATOR = BACKEND == "simulator"
if SIMULATOR:  # as lab run does: a simulated barrier costs ~0.2 ms, not up to 5 (lab.core.runner)
    from lab.core.runner import enter_simulator_threads

    enter_simulator_threads()
# The compiler of the kernels under test: LAB_COMPILER (numba-cuda by default; run the gpu tests
# once per installed compiler, e.g. LAB_COMPILER=numba-cuda-mlir pytest -m gpu).
try:
    COMPILER = compilers.select(None, SIMULATOR)
except LabError as e:
    raise pytest.UsageError(f"LAB_COMPILER: {e}") from None


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: two workers a core. Much of the suite waits on child processes (the checker's
    contained children, their timeouts, Jupyter kernels), not on the CPU: on CI's 2 cores, 4 workers
    ran the suite in 292 s where 2 took 340 s (2026-11-25)."""
    return 2 * (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def pytest_configure(config):
    """Under ``-n`` (the README's ``-n auto``): work stealing instead of fixed chunks, so a worker that
    drew a few long tests gives its queue to the idle ones (pytest-xdist >= 3.2).

    Once, before any worker starts: the lab's own modules compiled to bytecode (``compileall``, which
    writes ``__pycache__`` even where ``PYTHONDONTWRITEBYTECODE`` is set, as in many container images).
    The suite starts a Python process for most checks (the judge, the contained child, the compile child,
    ``lab`` as a user runs it); on a fresh clone with that setting each one compiled every module it
    imported from source, about 0.25 CPU s a contained check (2,500 tests: minutes of CPU on 2 cores).
    ``exercises/`` is left out: no bytecode beside the hidden solutions."""
    if not hasattr(config, "workerinput"):
        import compileall
        from pathlib import Path

        root = Path(__file__).resolve().parents[1]
        for package in ("lab", "kernels", "torch_bridge"):
            compileall.compile_dir(root / package, quiet=2)
        _rewrite_tests_once(config, root / "tests")
    if getattr(config.option, "dist", "no") == "load" and not hasattr(config, "workerinput"):
        config.option.dist = "worksteal"
        os.environ["LAB_TESTS_WORKSTEAL"] = "1"  # the workers (started after this) order their collection for it


def _rewrite_tests_once(config, tests) -> None:
    """The test modules' assertion rewriting (pytest's cached ``__pycache__/*-pytest-*.pyc``), made
    here once. Where ``PYTHONDONTWRITEBYTECODE`` is set pytest reads that cache but never writes it, so
    each xdist worker rewrote every test module again (about 5 CPU s a worker on 2 cores). Written as
    pytest writes it (its own functions, atomically), only where it is missing or stale; any failure
    leaves the workers to rewrite as before."""
    import sys

    if not sys.dont_write_bytecode:
        return  # pytest writes the cache itself
    try:
        from _pytest.assertion import rewrite as R

        state = config.stash[R.assertstate_key]
        for fn in sorted(tests.rglob("*.py")):
            if not (fn.name.startswith("test_") or fn.name == "conftest.py"):
                continue
            pyc = R.get_cache_dir(fn) / (fn.name[:-3] + R.PYC_TAIL)
            if R._read_pyc(fn, pyc, state.trace) is None and R.try_makedirs(pyc.parent):
                source_hash, code = R._rewrite_test(fn, config)
                R._write_pyc(state, code, source_hash, pyc)
    except Exception:  # noqa: BLE001 - an optimisation of pytest's internals: never a reason to fail the run
        return


def pytest_report_header(config):
    return f"lab backend: {BACKEND}; compiler: {COMPILER} {compilers.version(COMPILER) or ''}"


@pytest.hookimpl(trylast=True)  # after -k / -m deselected: the workers' chunks are of what runs
def pytest_collection_modifyitems(config, items):
    """On a GPU only tests marked ``gpu`` make sense unselected; in the simulator all run. Under ``-n``
    the tests marked ``slow`` are spread over the workers, each worker's share first (see
    :func:`_slow_first_on_every_worker`)."""
    if hasattr(config, "workerinput") and os.environ.get("LAB_TESTS_WORKSTEAL") == "1":
        items[:] = _slow_first_on_every_worker(items, int(config.workerinput.get("workercount", 1)))
    if SIMULATOR:
        return
    skip = pytest.mark.skip(reason="simulator-only test (a GPU session runs the tests marked gpu)")
    for item in items:
        if "gpu" not in item.keywords and "cpu_ok" not in item.keywords:
            item.add_marker(skip)


def _slow_first_on_every_worker(items: list, workers: int) -> list:
    """The order in which xdist's work stealing hands out the collection: contiguous chunks, the i-th
    worker ``len(rest) // (workers - i)`` items. The ``slow`` tests go round-robin to the chunks, at
    each chunk's front, so every worker starts its long tests first and no worker holds them all (a
    thief takes the tail of a queue: the short tests). Otherwise the collection order is kept."""
    if workers < 2:
        return items
    slow = [it for it in items if "slow" in it.keywords]
    fast = iter([it for it in items if "slow" not in it.keywords])
    chunks: list[list] = [[] for _ in range(workers)]
    for k, it in enumerate(slow):
        chunks[k % workers].append(it)
    left = len(items)
    for i, chunk in enumerate(chunks):
        size = left // (workers - i)
        left -= size
        chunk.extend(itertools.islice(fast, max(0, size - len(chunk))))
    return [it for chunk in chunks for it in chunk] + list(fast)


def skip_unavailable(kernel: str, variant: str, dtype="float32") -> None:
    """pytest.skip with the rung's own one-line reason where it does not run here, as `lab run` skips it
    (e.g. the tensor-core rungs under numba-cuda on a GPU: no inline PTX)."""
    import kernels

    v = kernels.load(kernel).variants[variant]
    why = v.unavailable(np.dtype(dtype)) if getattr(v, "unavailable", None) else None
    if why:
        pytest.skip(why)


@pytest.fixture(autouse=True)
def _no_stop_flag_left_behind():
    """A test that delivers Ctrl-C (lab.teach.procs.stop_all, as lab's interrupt handler does) leaves the
    checker's stop flag set for its process: the next test starts without it, as a new ``lab`` command
    does (check and grade clear it first; a test calling their parts directly would see every child
    killed at once)."""
    yield
    import sys

    procs = sys.modules.get("lab.teach.procs")
    if procs is not None:
        procs.STOP.clear()



@pytest.fixture(autouse=True)
def _signal_mask_left_as_found():
    """A test that leaves SIGINT (or another signal) blocked in its worker's main thread passes it on to
    every child a later test starts (they inherit the mask: a Ctrl-C test's child then ignores SIGINT):
    the test that changed the mask fails here, by name, and the mask is put back."""
    import signal as _signal

    before = _signal.pthread_sigmask(_signal.SIG_BLOCK, [])
    yield
    after = _signal.pthread_sigmask(_signal.SIG_BLOCK, [])
    if after != before:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, before)
        pytest.fail(f"this test left the signal mask changed: {sorted(after - before)} blocked, "
                    f"{sorted(before - after)} unblocked", pytrace=False)

@pytest.fixture
def rng():
    """Fresh random inputs every run; the seed is printed on failure for a replay."""
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"rng seed {seed}")
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def simulator():
    return SIMULATOR


# --- the CLI harness ------------------------------------------------------------------------------------
class _Entry:
    """``lab``'s entry point (lab.cli.main) as CliRunner invokes a command: with the entry point's own
    error handling, so a LabError or a click error is one line on stderr and exit code 2, as in a shell."""

    name = "lab"

    @staticmethod
    def main(args=(), prog_name="lab", **extra):
        from lab.cli import main

        main(list(args))


def run_lab(*args, columns: int = 80, env: dict | None = None, input: str | None = None) -> tuple[int, str, str]:
    """Run ``lab ARGS`` in this process under click's CliRunner: stdout and stderr captured apart (not a
    terminal, like a pipe), ``COLUMNS=columns``. Returns (exit code, stdout, stderr). An exception that
    escapes ``main`` (a crash, not an error message) is raised into the test."""
    result = CliRunner().invoke(_Entry, [str(a) for a in args], input=input, catch_exceptions=False,
                                env={"COLUMNS": str(columns), **(env or {})}, prog_name="lab")
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def lab():
    """``lab("run", "vecadd", ...) -> (exit code, stdout, stderr)``: see :func:`run_lab`."""
    return run_lab
