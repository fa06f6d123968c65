"""Output files: checked before long work starts, written atomically (a temporary file in the same
folder, then ``os.replace``), so an interrupted or failed run never leaves half a file behind.

Errors are :class:`lab.core.errors.LabError` (one line, exit code 2 in the CLI) naming the path.
"""
from __future__ import annotations

import contextlib
import os
import tempfile

from lab.core.errors import LabError


def check_writable(path: str | os.PathLike | None, what: str = "output") -> None:
    """Raise LabError now if ``path`` could not be written later (missing folder, no permission,
    a folder in the way). ``None`` and ``-`` (stdout) pass."""
    if path is None or str(path) == "-":
        return
    path = os.fspath(path)
    if path == "":
        raise LabError(f"{what} path is empty")
    if os.path.isdir(path):
        raise LabError(f"cannot write {what} {path}: it is a folder")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise LabError(f"cannot write {what} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise LabError(f"cannot write {what} {path}: permission denied")
    try:  # the authoritative test, as the atomic write will do it: access() says yes to root, even
        fd, probe = tempfile.mkstemp(prefix=".lab-", dir=folder)  # on /proc or a read-only mount
    except OSError as e:
        raise LabError(f"cannot write {what} {path}: {e.strerror or e}") from None
    os.close(fd)
    os.unlink(probe)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, what: str = "output"):
    """Yield a temporary path beside ``path``; on success it replaces ``path`` (``os.replace``).
    For writers that want a file name (matplotlib's ``savefig``, torch's trace export)."""
    path = os.fspath(path)
    check_writable(path, what)
    folder = os.path.dirname(os.path.abspath(path))
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
            raise LabError(f"cannot write {what} {path}: nothing was written")
        os.replace(tmp, path)
    except OSError as e:
        raise LabError(f"cannot write {what} {path}: {e.strerror or e}") from None
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
