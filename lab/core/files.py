"""Output files: every file the lab writes goes through here. Checked before long work starts, written
atomically (a temporary file in the same folder, then ``os.replace``), so an interrupted or failed run
never leaves half a file behind.

What may be replaced: only a regular file, or a new path. A symbolic link is written *through*: its
final target is replaced (atomically, beside the target), and the link stays a link. A device node
(``/dev/full``, ``/dev/null``), a FIFO, a socket, a folder, or a file of the kernel's (``/proc``,
``/sys``) is refused, before any work, with one line: as root, ``os.replace`` would otherwise put a
regular file where ``/dev/full`` was. ``-`` means stdout where an option produces text.

A results file made on a GPU (its text names the GPU) is not replaced by a run in the CUDA
simulator unless asked (:func:`check_results`, the commands' ``--force``).

Errors are :class:`lab.core.errors.LabError` (one line, exit code 2 in the CLI) naming the path.
"""
from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile

from lab.core.errors import LabError

_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))
_KERNEL_FILES = ("/proc", "/sys")


def target(path: str | os.PathLike, what: str = "output") -> str:
    """The file that writing ``path`` replaces: ``path`` itself, or a symbolic link's final target.
    LabError (one line) when that is anything but a regular file or a path that does not exist yet."""
    path = os.fspath(path)
    if path == "":
        raise LabError(f"{what} path is empty")
    real = os.path.realpath(path)  # a link's final target (a dangling link: where its target would be)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise LabError(f"cannot write {what} {path}: {e.strerror or e}") from None
    through = f" (a link to {real})" if real != os.path.abspath(path) and os.path.islink(path) else ""
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        raise LabError(f"cannot write {what} {path}{through}: it is {kind}; only a regular file is replaced")
    if any(real == top or real.startswith(top + os.sep) for top in _KERNEL_FILES):
        raise LabError(f"cannot write {what} {path}{through}: it is a file of the kernel's ({real.split(os.sep)[1]} "
                       "is not storage)")
    return real


def check_writable(path: str | os.PathLike | None, what: str = "output") -> None:
    """Raise LabError now if ``path`` could not be written later (not a regular file or new path,
    missing folder, no permission). ``None`` and ``-`` (stdout) pass."""
    if path is None or str(path) == "-":
        return
    shown = os.fspath(path)
    path = target(path, what)
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise LabError(f"cannot write {what} {shown}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise LabError(f"cannot write {what} {shown}: permission denied")
    try:  # the authoritative test, as the atomic write will do it: access() says yes to root, even
        fd, probe = tempfile.mkstemp(prefix=".lab-", dir=folder)  # on a read-only mount
    except OSError as e:
        raise LabError(f"cannot write {what} {shown}: {e.strerror or e}") from None
    os.close(fd)
    os.unlink(probe)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, what: str = "output"):
    """Yield a temporary path beside ``path``; on success it replaces ``path`` (``os.replace``).
    For writers that want a file name (matplotlib's ``savefig``, torch's trace export)."""
    shown = os.fspath(path)
    check_writable(shown, what)
    path = target(shown, what)  # a link's target is what gets replaced
    folder = os.path.dirname(path)
    suffix = os.path.splitext(path)[1]
    try:
        fd, tmp = tempfile.mkstemp(prefix=".lab-", suffix=suffix, dir=folder)
    except OSError as e:
        raise LabError(f"cannot write {what} {path}: {e.strerror or e}") from None
    os.close(fd)
    try:
        os.chmod(tmp, _mode(path))  # mkstemp's file is private (0600); the output gets a usual file's mode
        yield tmp
        if not os.path.exists(tmp) or os.path.getsize(tmp) == 0:
            raise LabError(f"cannot write {what} {shown}: nothing was written")
        if target(shown, what) != path:  # the link was changed meanwhile: check its new target first
            raise LabError(f"cannot write {what} {shown}: it changed while it was written")
        os.replace(tmp, path)
    except OSError as e:
        raise LabError(f"cannot write {what} {shown}: {e.strerror or e}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _mode(path: str) -> int:
    """The mode a new file at ``path`` gets from open() (0666 less the umask), or the existing file's."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic(path: str | os.PathLike, data: str | bytes, what: str = "output") -> None:
    """Write ``data`` (text as UTF-8) to ``path`` atomically; LabError naming the path on failure."""
    with atomic_path(path, what) as tmp:
        with open(tmp, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)


def write_new(path: str | os.PathLike, data: bytes, mode: int = 0o644) -> None:
    """Create ``path`` and write ``data``: a file that must not exist yet (``O_EXCL``; a name already
    there, a link included, is never written through: OSError), e.g. a private copy in a fresh folder
    of the lab's own. Empty data makes an empty file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def write_in_place(dir_fd: int, name: str, data: bytes) -> str | None:
    """Replace the contents of ``name`` (relative to ``dir_fd``, an open folder) with ``data`` in
    place, only while it is a regular file: a file the lab shares with a contained child (bound into
    its folder by its inode, so it is never replaced by another file). No link followed
    (``O_NOFOLLOW``), no FIFO waited on (``O_NONBLOCK``), nothing but a regular file written. None
    when written, else what is wrong, in words."""
    flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as e:
        return f"{name}: {e.strerror or e}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return f"{name} is no longer a regular file"
        os.ftruncate(fd, 0)
        os.write(fd, data)
    except OSError as e:
        return f"{name}: {e.strerror or e}"
    finally:
        os.close(fd)
    return None


# Text that only a GPU run writes into a results file: the device's name (lab run's header, lab bench's
# "device:" line, docs/results' "device" key), its compute capability as a GPU has it, or "backend: gpu".
_GPU_MADE = re.compile(r"NVIDIA|GeForce|Quadro|Tesla [A-Z]|backend: gpu|\"backend\": \"gpu\"")
_SIM_MADE = re.compile(r"backend: simulator|\"backend\": \"simulator\"|Numba CUDA simulator")


def check_results(path: str | os.PathLike | None, simulator: bool, force: bool = False, what: str = "report") -> None:
    """Refuse (LabError, one line) to let a CUDA-simulator run replace a results file made on a GPU:
    ``lab bench --out docs/benchmarks.md`` on a CPU machine replaced the committed GPU numbers with
    the simulator's. A GPU run, ``force``, a new file, ``-`` or a file the simulator made pass."""
    if path is None or str(path) == "-" or not simulator or force:
        return
    try:
        with open(target(path, what), "rb") as f:
            head = f.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return
    gpu = _GPU_MADE.search(head)
    if gpu and not _SIM_MADE.search(head):
        raise LabError(f"will not replace {what} {os.fspath(path)}: it holds results made on a GPU ({gpu.group(0)!r}) "
                       "and this run is in the CUDA simulator, whose times are not GPU times; --force replaces it")
