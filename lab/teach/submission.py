"""A submitted file, taken once: what ``lab exercise check`` and ``grade`` judge is the bytes read
here, never the path again. Nothing here prints.

* **What may be submitted**: a regular file of its own (:func:`read`): not a symbolic link (a link
  to the shipped ``exercises/NAME/solution.py``, to another student's file or to ``~/.ssh/id_rsa``
  once passed, or printed its target), not a FIFO, device, socket or folder, not a hard link (a
  file with more than one name: :data:`HARD_LINKS`), at most :data:`MAX_BYTES`. It is opened
  without following a link (``O_NOFOLLOW``) and without blocking (``O_NONBLOCK``), and checked on
  the descriptor it is read from (``fstat``), so a file swapped between a check and the read is
  caught, not followed.
* **Read once** (:func:`snapshot`): its bytes go into a private copy (a folder only the grader
  can read) that every step uses, the tests, the offline compile, the sanitizer, the
  benchmark; the workspace's signed record hashes those bytes (:attr:`Snapshot.sha256`). A file
  changed while it is checked does not change what was checked.

Hard links: a hard link cannot be told apart from the file's other names, one of which may be
another student's submission or a reference solution; a submission must therefore be a file with
one name (``st_nlink == 1``). A teacher who collected files with ``cp -l`` or ``rsync
--link-dest`` copies them (``cp``) first; the refusal says so.

Source: open(2) (O_NOFOLLOW, O_NONBLOCK), fstat(2), inode(7) (st_nlink).
"""
from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from lab.core.files import write_new

MAX_BYTES = 1 << 20  # a kernel's source file: 1 MiB is far more than any exercise needs
HARD_LINKS = 1  # names a submitted file may have (st_nlink): only its own


class SubmissionError(ValueError):
    """A file that is not taken as a submission; the message says what it is (one line)."""


def kind(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in words."""
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a folder" if stat.S_ISDIR(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a regular file" if stat.S_ISREG(mode)
            else "not a regular file")


def _refusal(mode: int) -> str:
    what = kind(mode)
    if stat.S_ISLNK(mode):
        return f"{what}: submit the file itself, not a link (a link's target is not read)"
    return f"{what}, not a regular file: submit the .py file itself"


def _open_folder(path) -> int | None:
    """A descriptor of the folder that holds ``path``, opened without following a link (its last
    component: a student's folder swapped for a link to another's after the grader listed it)."""
    folder = os.path.dirname(os.path.abspath(path))
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(folder, flags)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(folder):
            raise SubmissionError(f"its folder {os.path.basename(folder)} is a symbolic link now (a link's target "
                                  f"is not read)") from None
        raise SubmissionError(f"its folder cannot be opened ({e.strerror or e})") from None


def read(path, folder: bool = False) -> bytes:
    """The bytes of the submitted file ``path``, read once; SubmissionError (what it is instead)
    for a link, a FIFO, device, socket or folder, a hard link (more than :data:`HARD_LINKS`
    names), a file larger than :data:`MAX_BYTES`, or one that cannot be read. ``folder``: the
    folder that holds it must not be a link either (grading: the student's folder, listed as a
    folder, swapped for a link to another student's before it is read)."""
    flags = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
             | getattr(os, "O_NOCTTY", 0))
    dfd = _open_folder(path) if folder and os.open in os.supports_dir_fd else None
    try:
        fd = os.open(os.path.basename(path) if dfd is not None else path, flags, dir_fd=dfd)
    except OSError as e:
        if e.errno == errno.ELOOP or (e.errno == errno.ENXIO and os.path.islink(path)):
            raise SubmissionError(_refusal(stat.S_IFLNK)) from None
        if e.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket
            raise SubmissionError(_refusal(stat.S_IFSOCK)) from None
        if e.errno == errno.ENOENT:
            raise SubmissionError("no such file") from None
        raise SubmissionError(f"cannot be read ({e.strerror or e})") from None
    finally:
        if dfd is not None:
            os.close(dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SubmissionError(_refusal(st.st_mode))
        if st.st_nlink > HARD_LINKS:
            raise SubmissionError(f"a hard link (one file with {st.st_nlink} names; another may be someone else's "
                                  f"file): submit a copy of its own (cp, not cp -l or a link)")
        if st.st_size > MAX_BYTES:
            raise SubmissionError(f"larger than {MAX_BYTES >> 20} MiB ({st.st_size} bytes): not a kernel's source")
        chunks, left = [], MAX_BYTES + 1
        while left > 0:
            try:
                b = os.read(fd, min(left, 1 << 16))
            except BlockingIOError:
                raise SubmissionError("could not be read without waiting") from None
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        data = b"".join(chunks)
        if len(data) > MAX_BYTES:
            raise SubmissionError(f"larger than {MAX_BYTES >> 20} MiB: not a kernel's source")
        return data
    except OSError as e:
        raise SubmissionError(f"cannot be read ({e.strerror or e})") from None
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Snapshot:
    """A submission read once: ``path``, its private copy (the same file name, in a folder of the
    grader's own, mode 0700), ``source`` the file it was read from, ``sha256`` of the bytes."""

    path: Path
    source: Path
    sha256: str

    def remove(self) -> None:
        shutil.rmtree(self.path.parent, ignore_errors=True)


def snapshot(path, root: str | None = None, folder: bool = False) -> Snapshot:
    """Read ``path`` once (:func:`read`, ``folder`` as there) into a private copy (a new folder of its
    own under ``root``, default the temporary folder); SubmissionError as :func:`read`. The caller
    removes it (:meth:`Snapshot.remove`)."""
    data = read(path, folder=folder)
    folder = tempfile.mkdtemp(prefix="lab-submission-", dir=root)
    copy = Path(folder) / Path(path).name
    write_new(copy, data)
    return Snapshot(copy, Path(path), hashlib.sha256(data).hexdigest())
