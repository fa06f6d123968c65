"""Reading a file that an untrusted child process could have replaced: the grader's progress file
and the executor's result files (:mod:`lab.teach.checker`'s judge). Nothing here prints."""
from __future__ import annotations

import errno
import os
import stat

PROGRESS_CAP = 8 << 20  # bytes of a child's progress file read at most (a flood stops there)


class UnsafeChildFile(OSError):
    """The file is no longer a regular file of ours (a link, a FIFO, a device, a folder), or larger
    than the reader takes."""


def _kind(mode) -> str:
    return ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a folder" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def read_child_file(folder, name: str, cap: int = PROGRESS_CAP, dir_fd=None, start: int = 0) -> bytes | None:
    """The bytes of ``name`` in the child's ``folder`` (or opened relative to ``dir_fd``, an open
    descriptor of that folder), opened without following a link (``O_NOFOLLOW``) and without
    blocking (``O_NONBLOCK``: a FIFO cannot stall the reader), read only when it is a regular file of
    at most ``cap`` bytes; from byte ``start`` on (what was read before is not read again). None when
    it does not exist; UnsafeChildFile, naming what it is, when it is a link, not a regular file, or
    larger than ``cap``."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    path = os.path.join(os.fspath(folder), name)
    try:
        fd = os.open(name, flags, dir_fd=dir_fd) if dir_fd is not None else os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafeChildFile(f"{name} was replaced by a symbolic link") from None
        raise UnsafeChildFile(f"{name} could not be opened ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeChildFile(f"{name} was replaced by {_kind(st.st_mode)}")
        if st.st_size > cap:
            raise UnsafeChildFile(f"{name} is larger than {cap} bytes")
        if start:
            os.lseek(fd, start, os.SEEK_SET)
        chunks, left = [], cap + 1 - start
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        data = b"".join(chunks)
        if len(data) + start > cap:
            raise UnsafeChildFile(f"{name} is larger than {cap} bytes")
        return data
    finally:
        os.close(fd)
