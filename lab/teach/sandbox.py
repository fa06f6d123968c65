"""Containment for untrusted submissions (``lab exercise grade``): the checker's child process
(:mod:`lab.teach.checker`, or :mod:`lab.teach.bench` with ``--bench``) run as ``python -m lab.teach.sandbox LIMITS NAME PATH BACKEND SEED PROGRESS
[--bench]``, which, before the kernel is built from the student's source (lab.teach.source):

1. sets resource limits (``resource.setrlimit``; POSIX ``setrlimit(2)``): ``RLIMIT_CPU`` (CPU seconds,
   over all threads; SIGXCPU then SIGKILL), ``RLIMIT_AS`` (address space, in the simulator only: a
   CUDA context reserves far more address space than it uses), ``RLIMIT_FSIZE`` (the largest file
   it may write; SIGXFSZ) and ``RLIMIT_CORE`` 0;
2. runs in a private temporary folder (the parent made it, :func:`prepare`; HOME and TMPDIR point
   there, the student's file is a copy in it) and, where the kernel has Landlock (Linux >= 5.13;
   ``landlock(7)``), confines itself so that it may write only there (and to /dev), and read only
   the system, Python's and the lab's own folders: other students' submissions and the grader's
   output files are out of reach;
3. imports the checker's heavy modules (Numba, the lab), then installs a Python audit hook
   (PEP 578, ``sys.addaudithook``) that refuses, and reports to the parent as a *violation*,
   starting a process (fork, exec, subprocess, os.system), writing, removing or renaming a file
   outside the private folder, and opening a network connection.

Around it, where the OS offers them (:mod:`lab.core.isolation`; the parent's :func:`wrap`):
bubblewrap's namespaces (no network, its own pid namespace, /dev and /dev/shm, a read-only view of
only what running a kernel needs, its private folder a tmpfs; a root grader's child changes to a uid
of its own, :func:`drop_uid`), ``RLIMIT_NPROC`` as its thread limit, and, once the checker is
loaded, seccomp (no process, socket, signal to another process or executable memory, whatever
calls it: Python, ctypes or a compiled extension). The audit hook is not a security boundary
(CPython's documentation says so); these layers are. Where one is missing the child's notes say so
(``lab doctor`` lists them). Not isolated: the GPU, the CPU time others get while it runs. The
docs/isolation.md says what each platform gets. Nothing here
prints.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

# Measured with the default 8 MiB thread stacks: the simulator child (Python, NumPy, Numba's simulator,
# the lab) fails some of the twelve reference solutions at 1.5 GiB of address space ("can't start new
# thread": a stack per simulated thread) and passes all at 2 GiB. Stacks are now 1 MiB (THREAD_STACK), so
# a 1024-thread block needs 1 GiB of them; 4 GiB leaves room for that and a student's arrays, and stops a
# runaway allocation (MemoryError) at once.
DEFAULT_MEMORY_MB = 4096
THREAD_STACK = 1 << 20  # bytes of stack per Python thread in the child (the default, RLIMIT_STACK, is 8 MiB)
DEFAULT_CPU_S = 120
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
DEFAULT_FSIZE_MB = 64


@dataclass(frozen=True)
class Limits:
    """Per-submission limits: CPU seconds, address space (MiB; 0 = none), largest file (MiB)."""

    cpu_s: int = DEFAULT_CPU_S
    memory_mb: int = DEFAULT_MEMORY_MB
    fsize_mb: int = DEFAULT_FSIZE_MB
    landlock: bool = True

    def to_arg(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_arg(cls, text: str) -> Limits:
        return cls(**json.loads(text))


# the child's environment: only these names (and prefixes) of the grader's, never the whole of it
ENV_NAMES = ("PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONHASHSEED", "LD_LIBRARY_PATH",
             "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", *THREAD_VARS)
ENV_PREFIXES = ("LC_", "LAB_", "NUMBA_", "NVIDIA_", "CUDA_")


def child_environment(env: dict) -> dict:
    """The allow-listed part of ``env`` (:data:`ENV_NAMES`, :data:`ENV_PREFIXES`)."""
    return {k: v for k, v in env.items() if k in ENV_NAMES or k.startswith(ENV_PREFIXES)}


def prepare(path: Path, env: dict) -> tuple[str, Path, dict]:
    """The parent's half: a private folder holding a copy of the submission; returns (folder, the
    copy's path, the child's environment: the allow-listed part of ``env``
    (:func:`child_environment`), HOME and TMPDIR there, no bytecode written)."""
    private = tempfile.mkdtemp(prefix="lab-grade-")
    copy = Path(private) / Path(path).name
    shutil.copyfile(path, copy)
    env = dict(child_environment(env), HOME=private, TMPDIR=private, TEMP=private, TMP=private,
               PYTHONDONTWRITEBYTECODE="1", NUMBA_CACHE_DIR=os.path.join(private, ".numba"),
               XDG_CACHE_HOME=os.path.join(private, ".cache"),
               LAB_KERNEL_CACHE="0",  # kernels.cache: nothing to keep in a folder removed after the run
               # glibc reserves 64 MiB of address space per malloc arena, up to 8 a core: on a 16-core
               # GPU machine the simulator's 1024 threads of a block reached the address-space limit
               # ("can't start new thread", H100 machine); two arenas, whatever the machine
               MALLOC_ARENA_MAX="2")
    env.setdefault("PATH", os.defpath)
    # submissions are graded side by side (--jobs): one BLAS/OpenMP thread each, not one a core each
    # (H100 machine, 16 jobs: NumPy's references spun 16 threads a process, 2.2 CPU seconds a second)
    for var in THREAD_VARS:
        env.setdefault(var, "1")
    return private, copy, env


def wrap(cmd: list[str], private: str, copy: Path, progress: str, backend: str, bench: bool,
         env: dict, channel_in=(), channel_out=()) -> tuple[list[str], list[str]]:
    """The child's command under bubblewrap where it works here (:mod:`lab.core.isolation`), and
    ``env`` completed for it (a root grader's child: LAB_SANDBOX_UID, its own uid, which then owns
    ``progress``; LAB_SANDBOX_THREADS, the thread limit). Returns (command, notes: the layers not
    in force). ``channel_in``/``channel_out``: the judge's request files the child reads and the
    result files it writes (:func:`lab.teach.checker.write_request`), bound into its folder."""
    from lab.core import isolation as I

    why = I.bwrap_problem()
    if why:
        return cmd, [f"bubblewrap not in force: {why}; {I.FIX_BWRAP}" if "installed" in why
                     else f"bubblewrap not in force: {why}"]
    uid = I.child_uid()
    if uid is not None:
        for f in (progress, *channel_out):
            os.chown(f, uid, uid)
        env["LAB_SANDBOX_UID"] = str(uid)
    if I.thread_limit_applies():
        env["LAB_SANDBOX_THREADS"] = str(I.THREADS_MAX)
    root = str(Path(__file__).resolve().parents[2])  # the folder holding lab/, kernels/, exercises/
    hide = I.exercise_files()  # (a --bench child too: the judge sends its problem, the reference runs elsewhere)
    return I.bwrap_command(cmd, private, [str(copy), *channel_in], [progress, *channel_out], backend != "simulator", hide, root, uid), []


# --- 1. resource limits ------------------------------------------------------------------------------------
def set_limits(limits: Limits, simulator: bool) -> None:
    import resource

    def cap(which, value):
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        # the hard limit too: a soft limit alone, the submission could raise again (``resource.setrlimit``
        # is also refused by the audit hook; root could raise a hard limit, so both)
        resource.setrlimit(which, (value, value + 5 if which == resource.RLIMIT_CPU else value))

    cap(resource.RLIMIT_CPU, int(limits.cpu_s))
    cap(resource.RLIMIT_FSIZE, int(limits.fsize_mb) << 20)
    cap(resource.RLIMIT_CORE, 0)
    threads = os.environ.get("LAB_SANDBOX_THREADS")
    if threads:  # the parent set it only where the count is this child's alone (lab.core.isolation)
        cap(resource.RLIMIT_NPROC, int(threads))
    if simulator and limits.memory_mb:
        cap(resource.RLIMIT_AS, int(limits.memory_mb) << 20)


# --- 2. Landlock (the system calls: lab.core.isolation.landlock) ---------------------------------------
_LAB_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding lab/, kernels/, exercises/


def _read_roots() -> list[str]:
    """What the checker must read: the system's library folders, Python's, the site-packages, the
    lab's packages (not the folder around them: a class or a gradebook may lie there),
    the loader's /etc files, /proc, /sys, /dev, CUDA's folders (:func:`lab.core.isolation.read_paths`)."""
    from lab.core import isolation as I

    roots, _ = I.read_paths(_LAB_ROOT)
    roots += [f"/etc/{e}" for e in I.ETC_FILES] + ["/sys", "/dev"]
    # /proc: its own process and the machine's, not another process's (the grader's environment)
    roots += [f"/proc/{os.getpid()}", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/sys", "/proc/driver"]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append(os.environ[var])
    roots += [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    return sorted({os.path.realpath(r) for r in roots if os.path.exists(r)})


def landlock(private: str, hide: list[str] = ()) -> str | None:
    """Confine this process: write only under ``private`` and to the devices; read only
    :func:`_read_roots` (not ``hide``) and ``private``. Returns None when in force, else why not."""
    from lab.core import isolation as I

    return I.landlock(private, _read_roots(), hide, I.read_paths(_LAB_ROOT)[1])


# --- 3. the audit hook --------------------------------------------------------------------------------------
_PROCESS_EVENTS = {"os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                   "subprocess.Popen", "pty.spawn", "os.startfile"}
_PATH_EVENTS = {"os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.utime",
                "os.symlink", "os.link", "os.rename", "shutil.rmtree", "shutil.copyfile", "shutil.move"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _inside(path, private: str) -> bool:
    if isinstance(path, int):
        return True  # an open descriptor: the open that made it was checked
    try:
        p = os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return False
    return p == private or p.startswith(private + os.sep) or p in ("/dev/null", "/dev/zero", "/dev/urandom")


def install_hook(private: str, report) -> None:
    """Refuse (PermissionError) and ``report(text)`` processes, writes outside ``private``, sockets."""
    private = os.path.realpath(private)

    def hook(event, args):
        why = None
        if event in _PROCESS_EVENTS:
            why = f"tried to start a process ({event}); submissions may not fork or run programs"
        elif event == "open":
            path, mode, flags = (tuple(args) + (None, None))[:3]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                     (isinstance(flags, int) and flags & _WRITE_FLAGS)
            if writes and not _inside(path, private):
                why = f"tried to write {os.fsdecode(path)!s}, outside its private working folder"
        elif event in _PATH_EVENTS:
            for p in args[:2]:
                if isinstance(p, (str, bytes, os.PathLike)) and not _inside(p, private):
                    why = f"tried to change {os.fsdecode(p)!s} ({event}), outside its private working folder"
                    break
        elif event in ("socket.connect", "socket.bind", "socket.sendto"):
            why = f"tried to use the network ({event})"
        elif event == "resource.setrlimit" or (event == "resource.prlimit" and len(args) > 2 and args[2] is not None):
            why = f"tried to change its resource limits ({event})"
        if why:
            report(why)
            raise PermissionError(f"the sandbox refused it: {why}")

    sys.addaudithook(hook)


def _warm_gpu() -> None:
    """Create the CUDA context and compile one kernel before the hook: the driver, NVVM and the
    libraries Numba finds on the way (it may run ldconfig to find them) load now, not refused later."""
    import numpy as np
    from numba import cuda

    @cuda.jit
    def lab_sandbox_warm(x):
        x[0] = 1

    d = cuda.to_device(np.zeros(1, np.int32))
    lab_sandbox_warm[1, 1](d)
    cuda.synchronize()


def drop_uid() -> None:
    """A root grader's child under bubblewrap: become LAB_SANDBOX_UID (no groups, no capabilities)."""
    uid = os.environ.get("LAB_SANDBOX_UID")
    if uid and os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(int(uid), int(uid), int(uid))
        os.setresuid(int(uid), int(uid), int(uid))


def main(argv) -> None:
    drop_uid()
    limits, rest = Limits.from_arg(argv[0]), argv[1:]
    name, path, backend, seed, progress = rest[:5]
    private = os.path.dirname(os.path.abspath(progress))
    simulator = backend == "simulator"
    set_limits(limits, simulator)
    import threading

    threading.stack_size(THREAD_STACK)  # the simulator's thread per CUDA thread: 1024 x 8 MiB would be 8 GiB
    log = open(progress, "a", buffering=1)

    def report(text):
        log.write(json.dumps({"violation": text}) + "\n")

    # what the checker needs, loaded before the hook (Numba may look for tools as it starts)
    from lab.core.session import select

    select("sim" if simulator else "gpu")
    import numba.cuda  # noqa: F401

    import lab.core.simt  # noqa: F401
    import lab.teach.bench  # noqa: F401
    import lab.teach.checker  # noqa: F401 - the executor imports it (its names and encoders)
    import lab.teach.source  # noqa: F401 - the kernel is built from the source (lab.teach.executor.load_student)

    if simulator:
        import lab.core.runner  # noqa: F401
        import lab.core.trace  # noqa: F401
    else:
        _warm_gpu()
    if limits.landlock:
        from lab.core.isolation import exercise_files

        why = landlock(private, exercise_files())
        if why:
            log.write(json.dumps({"note": f"Landlock not in force: {why}"}) + "\n")
    from lab.teach import gpu_compile

    # the offline compile runs in a contained child of its own (lab.teach.compile_sandbox), started by
    # the parent; none from here (the hook would refuse its process)
    gpu_compile.no_more_processes()
    from lab.core.isolation import lockdown

    why = lockdown()  # seccomp: no process, socket, signal elsewhere or executable memory from here on
    if why:
        log.write(json.dumps({"note": f"seccomp not in force: {why}"}) + "\n")
    install_hook(private, report)
    log.write(json.dumps({"ready": True}) + "\n")
    import lab.teach.executor as executor  # the only module that imports the student's file: raw results, no verdict

    (lab.teach.bench.main if "--bench" in rest[5:] else executor.main)(rest)


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(0)  # do not wait for simulator threads still stuck in a student's loop
