"""Reading a file that an untrusted child process could have replaced: the grader's progress and
result files. Nothing here prints."""
from __future__ import annotations

import errno
import os
import stat

PROGRESS_CAP = 8 << 20  # bytes of a child's progress file read at most (a flood stops there)


class UnsafeChildFile(OSError):
    """The file is no longer a regular file of ours: a link, a FIFO, a device, a folder."""


def read_child_file(path, cap: int = PROGRESS_CAP) -> str:
    """The first ``cap`` bytes of ``path`` as text (invalid UTF-8 replaced), opened without
    following a link (``O_NOFOLLOW``) and without blocking (``O_NONBLOCK``: a FIFO cannot stall the
    reader), and read only when it is a regular file. UnsafeChildFile, naming what it is, when it is
    not; FileNotFoundError when it is gone."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        if e.errno == errno.ELOOP or os.path.islink(path):
            raise UnsafeChildFile(f"{path} was replaced by a symbolic link") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode)
                    or stat.S_ISBLK(st.st_mode) else "a folder" if stat.S_ISDIR(st.st_mode)
                    else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise UnsafeChildFile(f"{path} was replaced by {kind}")
        chunks, left = [], cap
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks).decode("utf-8", errors="replace")
    finally:
        os.close(fd)
