"""lab.cli.exit_now: the process entry ends the process at once, yet flushes, runs atexit and keeps the code."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHILD = """import atexit, sys, threading
from lab.cli import exit_now
atexit.register(lambda: print("atexit ran", file=sys.stderr))
print("buffered output")  # a pipe: block-buffered, lost if not flushed
if "thread" in sys.argv:
    threading.Thread(target=lambda: (__import__("time").sleep(0.2), print("thread done")), daemon=False).start()
exit_now(int(sys.argv[1]) if sys.argv[1].isdigit() else sys.argv[1])
print("not reached")
"""


def child(*args, **env):
    return subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "CUDA_INJECTION64_PATH": "", "LD_PRELOAD": "", **env}, timeout=60)


def test_exit_now_flushes_runs_atexit_and_keeps_the_code():
    p = child("3")
    assert (p.returncode, p.stdout, p.stderr) == (3, "buffered output\n", "atexit ran\n")
    p = child("no such file")  # sys.exit("text"): the text on stderr, exit code 1
    assert p.returncode == 1 and p.stderr.startswith("no such file")


def test_exit_now_waits_for_threads_and_leaves_profilers_their_teardown():
    p = child("0", "thread")
    assert p.returncode == 0 and p.stdout == "buffered output\nthread done\n"
    p = child("4", CUDA_INJECTION64_PATH="/nonexistent/libinjection.so")
    assert (p.returncode, p.stdout, p.stderr) == (4, "buffered output\n", "atexit ran\n")
