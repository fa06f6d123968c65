"""The operating system's isolation for untrusted code (the exercise checker's child under
``lab exercise check`` and ``grade``), from maintained tools, with a probe for each layer so that
``lab doctor`` can say which are in force and the sandbox can degrade with a note:

* **bubblewrap** (``bwrap``, https://github.com/containers/bubblewrap; ``apt-get install bubblewrap``):
  new user (unless the grader is root), pid, network, IPC, UTS and cgroup namespaces; an empty
  root in which only the system's library folders, Python, the site-packages and the lab's own
  packages are bound read-only (not /etc/passwd, /home, the class folder, the gradebook, other
  students' folders, the exercises' ``solution.py``); a private /dev (and /dev/shm), /proc of its
  own pid namespace, a private /tmp; the private working folder a size-capped tmpfs; all
  capabilities dropped; ``--die-with-parent`` and a pid namespace, so every process of a
  submission ends with it; ``--new-session`` (no TIOCSTI into the grader's terminal).
* **seccomp** (libseccomp, https://github.com/seccomp/libseccomp, ``seccomp(2)``), loaded by the
  child itself after Python, Numba and the lab were imported (:func:`lockdown`): no new process
  (fork, vfork, clone without ``CLONE_THREAD``, execve), no socket, no signal to another process,
  nor one sent by proxy (``F_SETOWN``/``F_SETSIG``, ``FIOSETOWN``: SIGIO to another process), no
  keystrokes into a terminal (TIOCSTI, TIOCLINUX), no change to another process's priority, CPUs,
  scheduling or I/O class, no ptrace or reading another process's memory, no executable memory made
  writable, no new resource limits, no namespaces or mounts, no io_uring. Every thread, the native
  ABI only.
* **capabilities** (:func:`drop_capabilities`): every one given up in the child before the
  submission runs (a root grader's child without bubblewrap keeps uid 0, with none).
* **Landlock** (``landlock(7)``, :func:`landlock`; its read roots from :mod:`lab.teach.contained.sandbox`): writes only to the private
  folder, reads only the system's, Python's and the lab's folders (the layer on Linux without
  user namespaces).
* **resource limits**: CPU seconds, address space, file size, and ``RLIMIT_NPROC`` as the
  per-submission thread limit (:data:`THREADS_MAX`), which the kernel counts per user namespace
  (Linux >= 5.14), or per uid when the grader is root: then each child runs as a uid of its own
  (:func:`child_uid`).

Nothing here prints. Source: bwrap(1), seccomp_rule_add(3), landlock(7), setrlimit(2),
user_namespaces(7).
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import glob
import itertools
import os
import shutil
import subprocess
import sys
from lab.core.settings import on

THREADS_MAX = 2048  # RLIMIT_NPROC in the child: a 1024-thread block in the simulator, Numba's, some room
TMPFS_MB = 512  # the private working folder under bubblewrap: a tmpfs this large (the disk limit)
UID_BASE = 1_500_000  # a root grader's children run as UID_BASE + k (unmapped, unprivileged uids)
# /etc: only what the dynamic loader and the C library need (not passwd, group, hosts, ...)
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives", "nvidia")
SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin")
FIX_BWRAP = "install bubblewrap (apt-get install bubblewrap; dnf install bubblewrap)"
FIX_USERNS = ("allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu "
              "kernel.apparmor_restrict_unprivileged_userns=0), or grade as root, or in a container or VM")


def _run(cmd, timeout=20.0) -> tuple[int, str]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as e:
        return -1, str(e)
    return p.returncode, (p.stderr or p.stdout).strip()


# --- bubblewrap ------------------------------------------------------------------------------------
def bwrap_path() -> str | None:
    """bubblewrap's executable: LAB_BWRAP (a path, e.g. a copy carried to a machine without a package
    manager; "0" turns bubblewrap off), else ``bwrap`` on PATH."""
    chosen = os.environ.get("LAB_BWRAP")
    if chosen == "0":
        return None
    return shutil.which(chosen or "bwrap")


@functools.cache
def bwrap_problem() -> str | None:
    """None when bubblewrap can make this process's sandbox here (its namespaces tried once), else why not."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap is Linux-only ({sys.platform})"
    exe = bwrap_path()
    if exe is None:
        chosen = os.environ.get("LAB_BWRAP")
        return ("turned off (LAB_BWRAP=0)" if chosen == "0"
                else f"LAB_BWRAP={chosen} is not an executable file or program" if chosen
                else "bubblewrap (bwrap) is not installed")
    cmd = [exe, *_namespace_args(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
    code, err = _run(cmd)
    if code != 0:
        last = err.splitlines()[-1] if err else f"exit code {code}"
        return f"bubblewrap cannot create its namespaces here ({last})"
    return None


@functools.cache
def _bwrap_has(option: str) -> bool:
    code, text = _run([bwrap_path() or "bwrap", "--help"])
    return option in text


def _namespace_args() -> list[str]:
    """All namespaces; a root grader keeps the initial user namespace (its children then change to an
    unprivileged uid of their own, :func:`child_uid`, which ``RLIMIT_NPROC`` counts) and drops every
    capability."""
    if os.geteuid() == 0:
        return ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return ["--unshare-all", "--disable-userns"] if _bwrap_has_disable_userns() else ["--unshare-all"]


def _bwrap_has_disable_userns() -> bool:
    return bool(bwrap_path()) and _bwrap_has("--disable-userns")


_UIDS = itertools.count()


def child_uid() -> int | None:
    """An unprivileged uid for the next child of a root grader (distinct for every child of this
    process, and per grader process), or None when this process is not root."""
    if os.geteuid() != 0:
        return None
    return UID_BASE + (os.getpid() % 1000) * 10_000 + next(_UIDS) % 10_000


def thread_limit_applies() -> bool:
    """Whether ``RLIMIT_NPROC`` limits one child alone: under bubblewrap, as a uid of its own (a root
    grader) or in a user namespace of its own (Linux >= 5.14 counts it per user namespace)."""
    if bwrap_problem() is not None:
        return False
    if os.geteuid() == 0:
        return True
    try:
        major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (5, 14)


def _python_roots() -> list[str]:
    """Python's own folders and every sys.path folder below a Python prefix (stdlib, site-packages)."""
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    roots = set(prefixes)
    roots.add(os.path.dirname(os.path.realpath(sys.executable)))
    for p in sys.path:
        if p and os.path.isdir(p):
            roots.add(os.path.realpath(p))
    return sorted(roots)


def _is_package(path: str) -> bool:
    """A regular package (an ``__init__.py``), or a namespace package (PEP 420: a folder named like
    a module holding one, e.g. ``cuda/pathfinder/``)."""
    if os.path.isfile(os.path.join(path, "__init__.py")):
        return True
    if not os.path.basename(path).isidentifier():
        return False
    try:
        return any(os.path.isfile(os.path.join(path, e, "__init__.py")) for e in os.listdir(path))
    except OSError:
        return False


def read_paths(lab_root: str) -> tuple[list[str], list[str]]:
    """(folders read, folders only listed): the system's library folders, Python's, each folder on
    sys.path that lies in a Python prefix or is a site-packages; of any other folder on sys.path (a
    project's root: PYTHONPATH, an editable install), and of ``lab_root``, only its Python packages
    (folders with an ``__init__.py``), never its other files (a class folder, a gradebook): such a
    folder is only listed (Python's import system lists the folders on sys.path)."""
    prefixes = [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)]
    binds, projects = [], {os.path.realpath(lab_root)}
    for d in SYSTEM_DIRS:
        if os.path.exists(d):
            binds.append(d)
    for p in _python_roots():
        inside = any(p == q or p.startswith(q + os.sep) for q in prefixes)
        if inside or "site-packages" in p or "dist-packages" in p:
            binds.append(p)
        else:
            projects.add(p)
    listed = []
    for proj in sorted(projects):
        if any(proj.startswith(b + os.sep) or proj == b for b in binds):
            continue
        listed.append(proj)
        try:
            entries = sorted(os.listdir(proj))
        except OSError:
            continue
        for e in entries:
            full = os.path.join(proj, e)
            if not e.startswith(".") and os.path.isdir(full) and _is_package(full) and e != "tests":
                binds.append(full)
    return binds, listed


# the exercises' files a child never reads (shown empty under bubblewrap, left out of Landlock's rules):
# the reference solutions and the hidden tests (the judge makes the cases; the child gets only inputs).
# A --bench child too: the judge sends the bench's problem, and the reference runs in a child of its own.
HIDDEN_FROM_CHILD = ("solution.py", "hidden.py")


def exercise_files(names=None) -> list[str]:
    """The exercises' files of these names (the reference solutions) in every ``exercises`` package
    that the child could see, and in the teacher's folder of solutions (``LAB_SOLUTIONS``, laid out
    like the package: where it lies inside a folder the child reads): hidden from it."""
    names = HIDDEN_FROM_CHILD if names is None else names
    out = []
    seen = set()
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    folders = [(os.path.join(p or ".", "exercises"), True) for p in [here] + sys.path]
    teacher = os.environ.get("LAB_SOLUTIONS", "").strip()  # (exercises.SOLUTIONS_ENV)
    if teacher:
        folders.append((os.path.expanduser(teacher), False))
    for d, package in folders:
        d = os.path.realpath(d)
        if d in seen or not (_is_package(d) if package else os.path.isdir(d)):
            continue
        seen.add(d)
        for n in names:
            out += glob.glob(os.path.join(d, "*", n))
            stem, ext = os.path.splitext(n)
            if ext == ".py":  # its compiled form too, where an import wrote one (an older lab, a test run)
                out += glob.glob(os.path.join(d, "*", "__pycache__", f"{stem}.*.pyc"))
    return sorted(out)


def _more_binds(paths: list[str], binds: list[str]) -> list[str]:
    """bubblewrap arguments that make each of ``paths`` readable beside ``binds``: nothing for a path
    already inside one (binding onto it would fail: /usr/local/cuda, a link inside /usr, on the
    H100 machine), else its real folder bound, and a link to it where ``path`` is a link."""
    covered = list(binds)

    def inside(p):
        return any(p == b or p.startswith(b.rstrip("/") + "/") for b in covered)

    args = []
    for p in paths:
        real = os.path.realpath(p)
        if not inside(real):
            args += ["--ro-bind-try", real, real]
            covered.append(real)
        if p != real and not inside(p):
            args += ["--symlink", real, p]
            covered.append(p)
    return args


def _ancestors(path: str) -> list[str]:
    """``path`` and the folders above it, up to (not including) /."""
    out = []
    while path not in ("/", ""):
        out.append(path)
        path = os.path.dirname(path)
    return out


def gpu_devices() -> list[str]:
    return sorted(glob.glob("/dev/nvidia*") + glob.glob("/dev/nvidia-caps/*"))


def bwrap_command(argv: list[str], private: str, files: list[str], rw_files: list[str], gpu: bool,
                  hide: list[str], lab_root: str, uid: int | None) -> list[str]:
    """``argv`` run under bubblewrap (see the module's docstring). ``private``: the working folder
    (a fresh tmpfs of :data:`TMPFS_MB` MiB at that path); ``files``: the host files of it that the
    child reads (the submission's copy), ``rw_files`` those it writes (its progress file; bound, so
    they cannot be replaced by a link or a FIFO); ``hide``: files shown empty (/dev/null; a compiled
    file's whole ``__pycache__`` folder shown empty);
    ``uid``: for a root grader, the uid the child changes to (it owns the tmpfs)."""
    exe = bwrap_path()
    args = [exe, *_namespace_args(), "--die-with-parent", "--new-session", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp"]
    binds, _ = read_paths(lab_root)
    etc = [f"/etc/{e}" for e in ETC_FILES]  # /etc too: a root grader's child (another uid) must pass through it
    parents = sorted({os.path.dirname(p) for b in binds + etc + [private] for p in _ancestors(b)} - {"/", "/tmp"})
    if _bwrap_has("--perms"):  # the folders above the binds: traversable by any uid (not the umask's)
        for d in parents:
            args += ["--perms", "0755", "--dir", d]
    for b in binds:
        args += ["--ro-bind-try", b, b]
    for e in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{e}", f"/etc/{e}"]
    if gpu:  # the driver's devices, /sys (PCI topology)
        for d in gpu_devices():
            args += ["--dev-bind-try", d, d]
        args += ["--ro-bind-try", "/sys", "/sys"]  # (the fresh /proc has /proc/driver/nvidia)
        extra = [os.environ[v] for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
        extra += [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d and os.path.isdir(d)]
        args += _more_binds(extra, binds)
    else:
        args += ["--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    if _bwrap_has("--size"):  # a tmpfs of TMPFS_MB: the disk limit
        args += ["--size", str(TMPFS_MB << 20)]
        if uid is not None and _bwrap_has("--perms"):
            args += ["--perms", "0777"]  # the child (another uid) makes its files in it; it is alone in there
        args += ["--tmpfs", private]
    else:  # an older bubblewrap (< 0.5) makes tmpfs of no size: the host folder itself, which the grader measures
        if uid is not None:
            os.chmod(private, 0o777)  # (its own folder, 0700 above it: no one else reaches it)
        args += ["--bind", private, private]
    for f in files:
        args += ["--ro-bind", f, f]
    for f in rw_files:
        args += ["--bind", f, f]
    # a compiled file (__pycache__/solution.*.pyc) comes and goes with other processes' imports and tests: its
    # whole folder is masked by an empty tmpfs, never the file itself, which may be gone by the time bubblewrap
    # binds over it ("Can't create file ... Read-only file system": the child never started, an honest 0 of N)
    caches = sorted({os.path.dirname(f) for f in hide if os.path.basename(os.path.dirname(f)) == "__pycache__"})
    for d in caches:
        args += ["--tmpfs", d]
    for f in hide:
        if os.path.dirname(f) not in caches:
            args += ["--ro-bind", "/dev/null", f]
    args += ["--chdir", private, "--", *argv]
    return args


# --- seccomp -------------------------------------------------------------------------------------------
_ALLOW, _KILL_PROCESS = 0x7FFF0000, 0x80000000
_CMP_NE, _CMP_EQ, _CMP_MASKED_EQ = 1, 4, 7
_CLONE_THREAD = 0x00010000
_PROT_WRITE, _PROT_EXEC = 0x2, 0x4
_FLTATR_CTL_TSYNC = 4


def _errno(e: int) -> int:
    return 0x00050000 | (e & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


@functools.cache
def _libseccomp():
    if not sys.platform.startswith("linux"):
        return None
    for name in ("libseccomp.so.2", ctypes.util.find_library("seccomp")):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name, use_errno=True)
        except OSError:
            continue
        lib.seccomp_init.restype = ctypes.c_void_p
        lib.seccomp_init.argtypes = [ctypes.c_uint32]
        lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
        lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                               ctypes.POINTER(_ArgCmp)]
        lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
        lib.seccomp_load.argtypes = [ctypes.c_void_p]
        lib.seccomp_release.argtypes = [ctypes.c_void_p]
        return lib
    return None


def seccomp_problem() -> str | None:
    """None when libseccomp can be loaded here, else why not."""
    if not sys.platform.startswith("linux"):
        return f"seccomp is Linux-only ({sys.platform})"
    if _libseccomp() is None:
        return "libseccomp (libseccomp.so.2) is not installed"
    return None


# ioctl requests refused (the request is an ``unsigned int``: compared on its low 32 bits, so a
# value with high bits set cannot slip past): typing into a terminal (TIOCSTI, "faking input";
# TIOCLINUX's selection paste), taking a terminal as the controlling one (TIOCSCTTY) or as the
# console (TIOCCONS), and naming the process that gets SIGIO/SIGURG (FIOSETOWN, SIOCSPGRP: the
# ioctl forms of F_SETOWN). Source: ioctl_tty(2), ioctl(2), socket(7).
IOCTLS_REFUSED = {"TIOCSTI": 0x5412, "TIOCLINUX": 0x541C, "TIOCSCTTY": 0x540E, "TIOCCONS": 0x541D,
                  "FIOSETOWN": 0x8901, "SIOCSPGRP": 0x8902}
# fcntl commands refused: F_SETOWN/F_SETOWN_EX name a process (another student's child, the grader)
# that the kernel then signals (SIGIO, or F_SETSIG's signal) on I/O of the descriptor: a kill by proxy.
# Source: fcntl(2), "Managing signals".
FCNTLS_REFUSED = {"F_SETOWN": 8, "F_SETSIG": 10, "F_SETOWN_EX": 15}
# calls that act on another process's scheduling, priority, CPUs or memory placement when given
# its pid: (call, the argument holding the pid). Only 0 (this thread or process) passes: libseccomp
# compares one argument once per rule, so "neither 0 nor our own pid" cannot be said, and naming
# oneself by pid is refused too (the C library and Python name themselves by 0).
# Source: setpriority(2), sched_setaffinity(2), sched_setscheduler(2), sched_setattr(2), ioprio_set(2),
# migrate_pages(2), move_pages(2).
OTHER_PROCESS_CALLS = (("sched_setaffinity", 0), ("sched_setscheduler", 0), ("sched_setparam", 0),
                       ("sched_setattr", 0), ("migrate_pages", 0), ("move_pages", 0))
_PRIO_PROCESS, _IOPRIO_WHO_PROCESS = 0, 1
_LOW32 = 0xFFFFFFFF


def _rules(pid: int) -> list[tuple[str, int, list[tuple[int, int, int, int]]]]:
    """(system call, action, [(argument, comparison, a, b)]) refused after :func:`lockdown` (the
    comparisons of one rule all hold; any rule refuses)."""
    eperm, enosys = _errno(1), _errno(38)
    out = [(n, eperm, []) for n in ("fork", "vfork", "execve", "execveat", "socket", "ptrace",
                                   "process_vm_readv", "process_vm_writev", "setrlimit", "unshare", "setns",
                                   "mount", "umount2", "pivot_root", "chroot", "bpf", "perf_event_open",
                                   "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
                                   "pidfd_open", "pidfd_send_signal", "tkill", "kcmp", "keyctl",
                                   "add_key", "request_key", "setuid", "setgid", "setreuid", "setregid",
                                   "setresuid", "setresgid", "setgroups")]
    out.append(("clone3", enosys, []))  # the C library then uses clone(2), whose flags can be checked
    out.append(("clone", eperm, [(0, _CMP_MASKED_EQ, _CLONE_THREAD, 0)]))  # a process, not a thread
    out.append(("prlimit64", eperm, [(2, _CMP_NE, 0, 0)]))  # setting a limit (reading one is fine)
    for call in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
        out.append((call, eperm, [(0, _CMP_NE, pid, 0)]))  # a signal to another process
    for call in ("mprotect", "pkey_mprotect"):
        out.append((call, eperm, [(2, _CMP_MASKED_EQ, _PROT_EXEC, _PROT_EXEC)]))  # making memory executable
    out.append(("mmap", eperm, [(2, _CMP_MASKED_EQ, _PROT_WRITE | _PROT_EXEC, _PROT_WRITE | _PROT_EXEC)]))
    for request in IOCTLS_REFUSED.values():
        out.append(("ioctl", eperm, [(1, _CMP_MASKED_EQ, _LOW32, request)]))
    for command in FCNTLS_REFUSED.values():
        out.append(("fcntl", eperm, [(1, _CMP_MASKED_EQ, _LOW32, command)]))
    # another process: any pid but 0 (compared on all 64 bits: refusing more, never less)
    for call, arg in OTHER_PROCESS_CALLS:
        out.append((call, eperm, [(arg, _CMP_NE, 0, 0)]))
    for call, which in (("setpriority", _PRIO_PROCESS), ("ioprio_set", _IOPRIO_WHO_PROCESS)):
        out.append((call, eperm, [(0, _CMP_NE, which, 0)]))  # a process group, a user: others
        out.append((call, eperm, [(1, _CMP_NE, 0, 0)]))
    return out


def lockdown() -> str | None:
    """Load the seccomp filter (:func:`_rules`) into this process, every thread of it (TSYNC). After
    this no call of the list succeeds (EPERM), whoever makes it: Python, ctypes, a compiled
    extension. Returns None when in force, else why not."""
    why = seccomp_problem()
    if why:
        return why
    if not on("LAB_SANDBOX_SECCOMP"):  # the grader's switch (never the student's: set before it runs)
        return "turned off (LAB_SANDBOX_SECCOMP=0)"
    lib = _libseccomp()
    ctx = lib.seccomp_init(_ALLOW)
    if not ctx:
        return "seccomp_init failed"
    try:
        if lib.seccomp_attr_set(ctx, _FLTATR_CTL_TSYNC, 1) != 0:
            return "seccomp: cannot synchronise the filter over threads (TSYNC)"
        for call, action, cmps in _rules(os.getpid()):
            nr = lib.seccomp_syscall_resolve_name(call.encode())
            if nr < 0:  # not a system call of this architecture (e.g. fork on arm64)
                continue
            arr = (_ArgCmp * max(len(cmps), 1))(*[_ArgCmp(*c) for c in cmps])
            rc = lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), arr)
            if rc != 0:
                return f"seccomp_rule_add({call}) failed ({os.strerror(-rc)})"
        rc = lib.seccomp_load(ctx)
        if rc != 0:
            return f"seccomp_load failed ({os.strerror(-rc)})"
    finally:
        lib.seccomp_release(ctx)
    return None


# --- capabilities -------------------------------------------------------------------------------------
_PR_CAPBSET_DROP, _PR_SET_KEEPCAPS, _PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT = 24, 8, 38, 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def capabilities() -> dict[str, int]:
    """This process's capability sets from /proc/self/status: {"CapInh", "CapPrm", "CapEff", "CapBnd",
    "CapAmb"} as integers (empty off Linux)."""
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Cap"):
                    k, v = line.split(":", 1)
                    out[k] = int(v.strip(), 16)
    except (OSError, ValueError):
        pass
    return out


def drop_capabilities() -> str | None:
    """Give up every capability for good, in this process and whatever it could run: the bounding set
    emptied (where this process may: CAP_SETPCAP), the ambient set cleared, the effective, permitted
    and inheritable sets zeroed (``capset(2)``), ``PR_SET_NO_NEW_PRIVS`` (no set-uid or file
    capability regains any). A root grader's child without bubblewrap keeps uid 0 but can no longer
    override file permissions, set files immutable, kill other users' processes or type into a
    terminal (CAP_SYS_ADMIN). Returns None when no capability is left in the effective and permitted
    sets, else why not. Source: capabilities(7), prctl(2), capset(2)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    last = 63
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    for cap in range(last + 1):  # EPERM without CAP_SETPCAP (e.g. after bubblewrap): then it stays, unused
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    libc.prctl(_PR_SET_KEEPCAPS, 0, 0, 0, 0)
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        return f"capset failed ({os.strerror(ctypes.get_errno())})"
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS) failed ({os.strerror(ctypes.get_errno())})"
    caps = capabilities()
    left = caps.get("CapEff", 0) | caps.get("CapPrm", 0) | caps.get("CapAmb", 0)
    return None if not left else f"capabilities left after dropping them ({left:#x})"


# --- Landlock -------------------------------------------------------------------------------------------
_SYS_CREATE, _SYS_ADD, _SYS_RESTRICT = 444, 445, 446  # the same number on every architecture
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_WRITES = sum(1 << k for k in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))  # write, remove, make any node
_REFER, _TRUNCATE = 1 << 13, 1 << 14
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _expand(roots: list[str], hide: list[str], read_file: int, read_dir: int) -> list[tuple[str, int]]:
    """Landlock rules reading ``roots`` but not the files ``hide``: a root that holds one of them is
    granted folder by folder and file by file (a rule on a folder covers everything below it)."""
    hide = {os.path.realpath(h) for h in hide}
    rules = []
    for r in roots:
        inside = [h for h in hide if h.startswith(r.rstrip(os.sep) + os.sep)]
        if not inside or not os.path.isdir(r):
            rules.append((r, read_file | read_dir))
            continue
        for folder, _dirs, files in os.walk(r):
            rules.append((folder, read_dir))
            rules += [(os.path.join(folder, f), read_file) for f in files
                      if os.path.realpath(os.path.join(folder, f)) not in hide]
    return rules


def landlock(private: str, read_roots: list[str], hide: list[str] = (), listed: list[str] = ()) -> str | None:
    """Confine this process with Landlock (``landlock(7)``): write only under ``private`` and to the
    devices (/dev/null ..., the GPU's; not /dev/shm);
    read only ``read_roots`` (but not the files ``hide``: the reference solutions) and ``private``;
    list (not read) the folders ``listed``.
    Returns None when in force, else why not (no Landlock here)."""
    if not sys.platform.startswith("linux"):
        return f"Landlock is Linux-only ({sys.platform})"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(ctypes.c_long(_SYS_CREATE), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return f"the kernel has no Landlock ({os.strerror(ctypes.get_errno())})"
    handled = _WRITES | _READ_FILE | _READ_DIR | _WRITE_FILE | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    attr = ctypes.c_uint64(handled)
    fd = libc.syscall(ctypes.c_long(_SYS_CREATE), ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
    if fd < 0:
        return f"landlock_create_ruleset failed ({os.strerror(ctypes.get_errno())})"
    # /dev: the devices it writes (not /dev/shm: no channel between submissions), the GPU's included
    devices = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", *gpu_devices()]
    rules = _expand(read_roots, list(hide), _READ_FILE, _READ_DIR) + [(d, _READ_DIR) for d in listed]
    rules += [(private, handled)] + [(d, handled & _FILE_RIGHTS) for d in devices]
    try:
        for path, rights in rules:
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not os.path.isdir(path):
                    rights &= _FILE_RIGHTS
                rule = _PathBeneath(rights & handled, pfd)
                if libc.syscall(ctypes.c_long(_SYS_ADD), ctypes.c_int(fd), ctypes.c_int(1), ctypes.byref(rule),
                                ctypes.c_uint32(0)) != 0:
                    return f"landlock_add_rule({path}) failed ({os.strerror(ctypes.get_errno())})"
            finally:
                os.close(pfd)
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS: required to restrict oneself
            return f"prctl(PR_SET_NO_NEW_PRIVS) failed ({os.strerror(ctypes.get_errno())})"
        if libc.syscall(ctypes.c_long(_SYS_RESTRICT), ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            return f"landlock_restrict_self failed ({os.strerror(ctypes.get_errno())})"
    finally:
        os.close(fd)
    return None


# --- Landlock and the others: probes ------------------------------------------------------------------
def landlock_abi() -> int:
    """Landlock's ABI version in this kernel (0: none)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        abi = libc.syscall(ctypes.c_long(_SYS_CREATE), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except (OSError, AttributeError):
        return 0
    return max(int(abi), 0)


def protections() -> list[dict]:
    """What a submission's child gets here: [{"name", "status" ("ok"/"warn"), "message", "fix"}]."""
    out = []
    why = bwrap_problem()
    if why is None:
        who = ("the grader is root: each child runs as an unprivileged uid of its own, no capabilities"
               if os.geteuid() == 0 else "in a user namespace")
        out.append({"name": "sandbox: namespaces (bubblewrap)", "status": "ok",
                    "message": f"no network, own pid namespace and /dev/shm, read-only system, private "
                               f"folder a {TMPFS_MB} MiB tmpfs; {who}", "fix": ""})
    else:
        fix = FIX_BWRAP if "not installed" in why else (FIX_USERNS if "namespace" in why else "use Linux, "
                                                        "or grade in a Linux container or VM")
        out.append({"name": "sandbox: namespaces (bubblewrap)", "status": "warn",
                    "message": f"{why}: submissions can read what you can read, reach the network, see "
                               f"other processes", "fix": fix})
    why = seccomp_problem()
    out.append({"name": "sandbox: seccomp", "status": "ok" if why is None else "warn",
                "message": ("no process, socket, signal to another process (nor SIGIO aimed at one: "
                            "F_SETOWN), keystrokes into a terminal (TIOCSTI), change to another process's "
                            "priority or CPUs, or executable memory once the checker is loaded")
                           if why is None else
                           f"{why}: processes and sockets made through the C library are not stopped",
                "fix": "" if why is None else "install libseccomp (apt-get install libseccomp2)"})
    abi = landlock_abi()
    out.append({"name": "sandbox: Landlock", "status": "ok" if abi else "warn",
                "message": f"ABI {abi}: writes only to the private folder" if abi else
                           "this kernel has no Landlock (Linux >= 5.13 with landlock in its LSM list)",
                "fix": "" if abi else "a newer kernel, or rely on bubblewrap"})
    ok_threads = thread_limit_applies()
    out.append({"name": "sandbox: thread limit", "status": "ok" if ok_threads else "warn",
                "message": (f"at most {THREADS_MAX} threads per submission (RLIMIT_NPROC, counted per "
                            f"submission)") if ok_threads else
                           "no per-submission thread limit: RLIMIT_NPROC needs bubblewrap (a uid or user "
                           "namespace per submission, Linux >= 5.14)",
                "fix": "" if ok_threads else FIX_BWRAP + " (and Linux >= 5.14)"})
    return out
