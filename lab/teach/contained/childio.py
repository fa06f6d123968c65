"""Reading a file that an untrusted child process could have replaced: the grader's progress file
and the executor's result files (:mod:`lab.teach.checker`'s judge). Nothing here prints."""
from __future__ import annotations

import errno
import os
import stat
import io
import math
import numpy as np
from numpy.lib import format as npy

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


NPZ_MEMBERS_MAX = 1024  # arrays in one result file at most
NPY_HEADER_MAX = 10_000  # bytes of one array's header (NumPy's own default limit)


def read_npz(data: bytes, expected: dict) -> dict:
    """The arrays of a child's ``.npz`` (``numpy.savez``'s: a zip of ``.npy`` members, stored, not
    compressed), each checked against ``expected`` BEFORE anything of it is allocated or
    decompressed: {key: (dtype, shape)}, a shape's first entry may be ``(None, max_rows)`` (a table
    of at most that many rows). A member not expected is not read; a compressed member (a zip bomb:
    a few MB that inflate to GiB), a dtype or shape other than the expected one (a 300-byte header
    that names 8 GiB), a header larger than :data:`NPY_HEADER_MAX`, more than
    :data:`NPZ_MEMBERS_MAX` members, or data shorter or longer than the header says:
    UnsafeChildFile. Returns {key: array}. Source: the NumPy ``.npy`` format (numpy.lib.format),
    APPNOTE.TXT (zip)."""
    import zipfile  # lazy: heavy for lab exercise list's start (zipfile)

    try:
        z = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as e:
        raise UnsafeChildFile(f"not an array file ({type(e).__name__})") from None
    infos = z.infolist()
    if len(infos) > NPZ_MEMBERS_MAX:
        raise UnsafeChildFile(f"more than {NPZ_MEMBERS_MAX} arrays in one result file")
    out = {}
    for info in infos:
        key = info.filename[:-4] if info.filename.endswith(".npy") else None
        if key not in expected or key in out:
            continue
        dtype, shape = expected[key]
        dtype = np.dtype(dtype)
        if info.compress_type != zipfile.ZIP_STORED:
            raise UnsafeChildFile(f"{key}: a compressed array (the checker's child stores them)")
        rows = shape[0] if shape and isinstance(shape[0], tuple) else None
        most = math.prod((rows[1] if rows else shape[0],) + tuple(shape[1:])) if shape else 1
        if info.file_size > most * dtype.itemsize + NPY_HEADER_MAX + 64:
            raise UnsafeChildFile(f"{key}: larger than an array of shape {shape} and dtype {dtype}")
        try:
            with z.open(info) as f:
                version = npy.read_magic(f)
                if version not in ((1, 0), (2, 0), (3, 0)):
                    raise ValueError(f"npy version {version}")
                reader = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
                got_shape, fortran, got_dtype = reader(f, max_header_size=NPY_HEADER_MAX)
                ok_shape = (len(got_shape) == len(shape) and
                            all(isinstance(g, int) and (g == w if not isinstance(w, tuple) else 0 <= g <= w[1])
                                for g, w in zip(got_shape, shape)))
                if got_dtype != dtype or got_dtype.hasobject or not ok_shape:
                    raise UnsafeChildFile(f"{key}: an array of shape {tuple(got_shape)} and dtype {got_dtype}, not "
                                          f"the asked {tuple(w if not isinstance(w, tuple) else 'n' for w in shape)} "
                                          f"{dtype}")
                nbytes = math.prod(got_shape) * dtype.itemsize
                raw = f.read(nbytes + 1)
                if len(raw) != nbytes:
                    raise UnsafeChildFile(f"{key}: {len(raw)} bytes of data where its header says {nbytes}")
        except UnsafeChildFile:
            raise
        except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
            raise UnsafeChildFile(f"{key}: not an array ({type(e).__name__})") from None
        a = np.frombuffer(raw, dtype=dtype).reshape(got_shape, order="F" if fortran else "C")
        out[key] = a.copy()
    return out
