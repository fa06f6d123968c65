"""Containment for untrusted submissions (``lab exercise grade``): the checker's child process
(:mod:`lab.teach.contained.executor`, or :mod:`lab.teach.contained.measure` with ``--bench``) run as ``python -m lab.teach.contained.sandbox LIMITS NAME PATH BACKEND SEED PROGRESS
[--bench]``, which, before the kernel is built from the student's source (lab.teach.contained.source):

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
import resource
import threading
import lab.teach.contained.executor as executor
import numpy as np
from lab.core import isolation, session
from lab.core.isolation import drop_capabilities, lockdown

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


# the child's environment: only these exact names of the grader's, never the whole of it, and no
# prefix (a prefix such as NVIDIA_ once passed the grader's NVIDIA_API_KEY): the locale, Python's
# own, what CUDA and the driver read (CUDA_HOME/CUDA_PATH to find the toolkit, the devices visible,
# the container runtime's NVIDIA_VISIBLE_DEVICES and NVIDIA_DRIVER_CAPABILITIES), the Numba settings
# that change how a kernel compiles or runs, and the lab's own switches for the child
ENV_NAMES = frozenset((
    "PATH", "LANG", "LANGUAGE", "TZ", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY",
    "LC_MESSAGES", "LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT", "LC_IDENTIFICATION",
    "PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONSAFEPATH", "LD_LIBRARY_PATH",
    "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_CACHE_DISABLE", "CUDA_MODULE_LOADING",
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
    "NUMBA_ENABLE_CUDASIM", "NUMBA_DISABLE_CUDA", "NUMBA_CUDA_DRIVER", "NUMBA_CUDA_USE_NVIDIA_BINDING",
    "NUMBA_CUDA_DEFAULT_PTX_CC", "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM",
    "NUMBA_CUDA_ARRAY_INTERFACE_SYNC", "NUMBA_CUDA_WARN_ON_IMPLICIT_COPY", "NUMBA_CUDA_DEBUGINFO", "NUMBA_OPT",
    "NUMBA_DEBUGINFO", "NUMBA_BOUNDSCHECK", "NUMBA_FASTMATH",
    "LAB_COMPILER", "LAB_COMPILER_WHY", "LAB_GPU_COMPILE", "LAB_LINEINFO", "LAB_SANITIZER", "LAB_KERNEL_CACHE",
    "LAB_SANDBOX_SECCOMP", "LAB_SANDBOX_UID", "LAB_SANDBOX_THREADS", "LAB_EXERCISE_TIMEOUT", "LAB_DEBUG",
    "LAB_SOLUTIONS",  # (only so that Landlock leaves the teacher's solutions out where a read root holds them)
    *THREAD_VARS))


def child_environment(env: dict) -> dict:
    """The allow-listed part of ``env``: the variables named exactly in :data:`ENV_NAMES`."""
    return {k: v for k, v in env.items() if k in ENV_NAMES}


FOLDER_CHECK_S = 0.25  # the parent measures a child's private folder this often
FOLDER_ENTRIES_MAX = 20_000  # files and folders a child may make in it


def folder_problem(folder: str, mb: int | None = None) -> str | None:
    """What is wrong with a child's private ``folder``, or None: more than ``mb`` MiB on disk
    (allocated blocks: sparse files count what they hold; default :data:`lab.core.isolation.TMPFS_MB`,
    bubblewrap's tmpfs size) or more than :data:`FOLDER_ENTRIES_MAX` entries. Under bubblewrap the
    child writes into a size-capped tmpfs; without it, into the grader's disk: the parent measures
    (every :data:`FOLDER_CHECK_S` s) and stops a child past the limit (``RLIMIT_FSIZE`` caps one
    file only). No link is followed."""
    cap = (isolation.TMPFS_MB if mb is None else mb) << 20
    used, entries, stack = 0, 0, [folder]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for e in it:
                    entries += 1
                    if entries > FOLDER_ENTRIES_MAX:
                        return f"made more than {FOLDER_ENTRIES_MAX} files in its private folder (the file limit)"
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    used += st.st_blocks * 512 if hasattr(st, "st_blocks") else st.st_size
                    if used > cap:
                        return f"filled its private folder past {cap >> 20} MiB (the disk limit)"
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
        except OSError:
            continue
    return None


def python(module: str) -> list[str]:
    """``python -m MODULE`` without the working folder on sys.path (:func:`lab.core.session.python_module`)."""
    return session.python_module(module)


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


def layer_notes(landlock: bool = True) -> list[str]:
    """What this machine's sandbox lacks, as the grader's notes (made here, in the parent: a child
    writes no note the grader shows; a layer that should be in force and fails in the child stops
    the child instead, :func:`main`)."""
    notes = []
    why = isolation.bwrap_problem()
    if why:
        notes.append(f"bubblewrap not in force: {why}; {isolation.FIX_BWRAP}" if "installed" in why
                     else f"bubblewrap not in force: {why}")
    if landlock and not isolation.landlock_abi():
        notes.append("Landlock not in force: the kernel has no Landlock (Linux >= 5.13 with landlock in its LSM list)")
    why = _seccomp_off()
    if why:
        notes.append(f"seccomp not in force: {why}")
    return notes


def _seccomp_off() -> str | None:
    if os.environ.get("LAB_SANDBOX_SECCOMP") == "0":
        return "turned off (LAB_SANDBOX_SECCOMP=0)"
    return isolation.seccomp_problem()


ROOT_NEEDS = ("grading as root without bubblewrap needs Landlock to keep the submissions' processes (uid 0, "
              "though without capabilities) from reading and writing root's files")


def refusal(limits: Limits) -> str | None:
    """Why this grader must not run submissions here, or None: a root grader without bubblewrap
    runs its children as uid 0 without capabilities (:func:`contain_process`), which only Landlock
    keeps out of root's own files; without Landlock (or with ``--no-landlock``) it refuses."""
    if os.geteuid() != 0 or isolation.bwrap_problem() is None:
        return None
    if limits.landlock and isolation.landlock_abi():
        return None
    why = "Landlock is turned off (--no-landlock)" if not limits.landlock else "this kernel has no Landlock"
    return f"{ROOT_NEEDS}, and {why}: {isolation.FIX_BWRAP}, or grade as an unprivileged user"


def wrap(cmd: list[str], private: str, copy: Path, progress: str, backend: str, bench: bool,
         env: dict, channel_in=(), channel_out=(), landlock: bool = True) -> tuple[list[str], list[str]]:
    """The child's command under bubblewrap where it works here (:mod:`lab.core.isolation`), and
    ``env`` completed for it (a root grader's child: LAB_SANDBOX_UID, its own uid, which then owns
    ``progress``; LAB_SANDBOX_THREADS, the thread limit). Returns (command, notes: the layers not
    in force, :func:`layer_notes`). ``channel_in``/``channel_out``: the judge's request files the child reads and the
    result files it writes (:func:`lab.teach.contained.channel.write_request`), bound into its folder."""
    why = isolation.bwrap_problem()
    if why:
        return cmd, layer_notes(landlock)
    uid = isolation.child_uid()
    if uid is not None:
        for f in (progress, *channel_out):
            os.chown(f, uid, uid)
        env["LAB_SANDBOX_UID"] = str(uid)
    if isolation.thread_limit_applies():
        env["LAB_SANDBOX_THREADS"] = str(isolation.THREADS_MAX)
    root = str(Path(__file__).resolve().parents[3])  # the folder holding lab/, kernels/, exercises/
    hide = isolation.exercise_files()  # (a --bench child too: the judge sends its problem, the reference runs elsewhere)
    return (isolation.bwrap_command(cmd, private, [str(copy), *channel_in], [progress, *channel_out], backend != "simulator",
                            hide, root, uid), layer_notes(landlock))


# --- 1. resource limits ------------------------------------------------------------------------------------
def set_limits(limits: Limits, simulator: bool) -> None:
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
_LAB_ROOT = str(Path(__file__).resolve().parents[3])  # the folder holding lab/, kernels/, exercises/


SHARED_DEV = ("shm", "mqueue")  # /dev's folders of other processes' data: never read by a child


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _read_roots() -> list[str]:
    """What the checker must read: the system's library folders, Python's, the site-packages, the
    lab's packages (not the folder around them: a class or a gradebook may lie there),
    the loader's /etc files, /proc, /sys, /dev, CUDA's folders (:func:`lab.core.isolation.read_paths`)."""
    roots, _ = isolation.read_paths(_LAB_ROOT)
    roots += [f"/etc/{e}" for e in isolation.ETC_FILES] + ["/sys"]
    # /dev's devices, not its shared memory: /dev/shm and /dev/mqueue hold other processes' data (the
    # grader's, another program's; without bubblewrap the child shares the machine's /dev); not its
    # links either (/dev/core -> /proc/kcore: what a link names is granted, or not, where it lies)
    roots += [os.path.join("/dev", e) for e in _listdir("/dev")
              if e not in SHARED_DEV and not os.path.islink(os.path.join("/dev", e))]
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
    # /dev listed (its names, as before; what it holds read only device by device, _read_roots)
    return isolation.landlock(private, _read_roots(), hide, [*isolation.read_paths(_LAB_ROOT)[1], "/dev"])


# --- 3. the audit hook --------------------------------------------------------------------------------------
_PROCESS_EVENTS = {"os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                   "subprocess.Popen", "pty.spawn", "os.startfile"}
_PATH_EVENTS = {"os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.utime",
                "os.symlink", "os.link", "os.rename", "shutil.rmtree", "shutil.copyfile", "shutil.move"}
_NET_EVENTS = {"socket.connect", "socket.bind", "socket.sendto"}
_LIMIT_EVENTS = {"resource.setrlimit", "resource.prlimit"}
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

    watched = _PROCESS_EVENTS | _PATH_EVENTS | _NET_EVENTS | _LIMIT_EVENTS | {"open"}

    def hook(event, args):
        if event not in watched:  # most events (id(), a frame's f_code, sys._getframe: the tracer's, per access)
            return
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
        elif event in _NET_EVENTS:
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
    from numba import cuda  # lazy: backend chosen first (numba)

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


def contain_process() -> None:
    """Before anything else in a child: no terminal (its own session, standard streams that are
    not a terminal: no TIOCSTI into the grader's), a root grader's uid given up
    (:func:`drop_uid`), and no capability left (:func:`lab.core.isolation.drop_capabilities`; a
    root grader's child without bubblewrap keeps uid 0 but no capability). A child that cannot drop
    its capabilities stops here (exit code 3, the reason on stderr): it never runs a submission."""
    if os.getsid(0) != os.getpid():
        try:
            os.setsid()
        except OSError:
            pass
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                os.dup2(null, fd)
        except OSError:
            pass
    os.close(null)
    drop_uid()
    why = drop_capabilities()
    if why:
        sys.stderr.write(f"the sandbox could not drop its capabilities: {why}\n")
        sys.stderr.flush()
        os._exit(3)


def _stop(why: str) -> None:
    sys.stderr.write(f"the sandbox is not what the grader expects: {why}\n")
    sys.stderr.flush()
    os._exit(3)


def confine(private: str, limits: Limits) -> None:
    """Landlock (:func:`landlock`, the solutions hidden) where ``limits`` asks for it. Where the
    kernel has Landlock and it still fails, the child stops (exit code 3): the grader said it is in
    force (:func:`layer_notes` says only what this machine lacks)."""
    if limits.landlock:
        why = landlock(private, isolation.exercise_files())
        if why and isolation.landlock_abi():
            _stop(f"Landlock: {why}")


def lock() -> None:
    """seccomp (:func:`lab.core.isolation.lockdown`); where libseccomp is there and the grader did
    not turn it off, a failure stops the child (exit code 3)."""
    why = lockdown()
    if why and not _seccomp_off():
        _stop(f"seccomp: {why}")


def main(argv) -> None:
    contain_process()
    limits, rest = Limits.from_arg(argv[0]), argv[1:]
    name, path, backend, seed, progress = rest[:5]
    private = os.path.dirname(os.path.abspath(progress))
    simulator = backend == "simulator"
    set_limits(limits, simulator)
    threading.stack_size(THREAD_STACK)  # a student's threads (the simulator's blocks run on greenlets): small stacks
    log = open(progress, "a", buffering=1)

    def report(text):
        log.write(json.dumps({"violation": text}) + "\n")

    # what the checker needs, loaded before the hook (Numba may look for tools as it starts)
    from lab.core.simulator import select  # lazy: backend chosen first (the contained child's warm-up, after select)

    select("sim" if simulator else "gpu")
    import numba.cuda  # noqa: F401  # lazy: backend chosen first (numba)

    import lab.core.simt  # noqa: F401  # lazy: backend chosen first (the contained child's warm-up, after select)
    import lab.teach.contained.executor  # noqa: F401 - its channel, counts and messages too  # lazy: backend chosen first (the contained child's warm-up, after select)
    import lab.teach.contained.measure  # noqa: F401  # lazy: backend chosen first (the contained child's warm-up, after select)
    import lab.teach.contained.source  # noqa: F401 - the kernel is built from the source (lab.teach.contained.executor.load_student)  # lazy: backend chosen first (the contained child's warm-up, after select)

    if simulator:
        import lab.core.runner  # noqa: F401  # lazy: backend chosen first (the contained child's warm-up, after select)
        import lab.core.trace  # noqa: F401  # lazy: backend chosen first (the contained child's warm-up, after select)
    else:
        _warm_gpu()
    confine(private, limits)
    from lab.teach.contained import gpu_compile  # lazy: backend chosen first (the contained child's warm-up, after select)

    # the offline compile runs in a contained child of its own (lab.teach.contained.compile_sandbox), started by
    # the parent; none from here (the hook would refuse its process)
    gpu_compile.no_more_processes()
    lock()  # seccomp: no process, socket, signal elsewhere or executable memory from here on
    install_hook(private, report)
    log.write(json.dumps({"ready": True}) + "\n")
    (lab.teach.contained.measure.main if "--bench" in rest[5:] else executor.main)(rest)


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(0)  # do not wait for simulator threads still stuck in a student's loop
