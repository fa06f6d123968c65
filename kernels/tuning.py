"""Tuned launch configurations: what ``lab tune`` found fastest, read back by every ``auto`` rung.

Like ``triton.autotune`` (a list of configs, a ``key`` of arguments whose change triggers a re-tune,
a cache of the winners), with the key a *shape class* rather than the exact shape, so one tuning run
serves every shape near the tuned ones, and the cache kept on disk per GPU:

* key: (device name, compute capability, compiler, kernel, shape class);
* shape class (:func:`shape_class`): each dimension of the size as ``1`` (a vector dimension: M = 1
  or N = 1 of a matmul are different problems) or ``2^e`` with e = round(log2(d)), so 1000 and
  1024 share ``2^10`` and a tile count within ~1.4x; e.g. matmul 4096 -> ``2^12x2^12x2^12``,
  1 x 4096 x 4096 -> ``1x2^12x2^12``;
* value: the rung, its threads per block and its tunable parameters (``Variant.tunables``), with
  the time measured when it won; or the rung ``"heuristic"`` (threads 0), where the heuristic's
  own choice at each shape beat every fixed configuration over the class's shapes.

Where the winners live (later ones win):

1. shipped tables, ``kernels/tuned/*.json``: each applies when its ``match`` text is in the device
   name (``"H100"``: any H100) and its compute capability is the device's;
2. the user's cache, ``tuned.json`` in ``platformdirs.user_cache_dir("numba-gpu-lab")``, or in
   ``$LAB_CACHE_DIR`` (tests, CI); ``lab tune`` on a GPU writes it (atomically, lab.core.files).

An entry marked ``"simulated": true`` (tuned in the CUDA simulator) is never used: simulated times
say nothing of a GPU, and ``lab tune`` in the simulator must not change ``auto``'s later choices.

A file that cannot be read (not JSON, wrong layout) is ignored as a whole and said once
(:func:`problems`): ``auto`` falls back to the heuristic ``choose()``, and ``lab run`` prints the
one-line warning. File format: docs/schemas/tune-cache.json. Nothing here imports ``numba``.
"""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

CACHE_ENV = "LAB_CACHE_DIR"
HEURISTIC_RUNG = "heuristic"  # an entry's rung when the heuristic's own per-shape choice won its class
CACHE_FILE = "tuned.json"
SHIPPED_DIR = Path(__file__).resolve().parent / "tuned"
FORMAT = "lab-tuned-configs"
FORMAT_VERSION = 1

_tables: dict = {}  # path -> (mtime_ns, size, {key: entry}) of each file read
_problems: dict = {}  # path -> one-line problem
_device: list = []  # (name, compute capability) of this process's device, found once


_paths: dict = {}  # $LAB_CACHE_DIR (or None) -> the cache file: found once per value
_hits: dict = {}  # (kernel, size, $LAB_TUNED, $LAB_CACHE_DIR) -> (monotonic time, lookup's answer)


def cache_dir() -> Path:
    """Folder of the user's tuned cache: $LAB_CACHE_DIR, else platformdirs' user cache dir."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    try:
        import platformdirs  # lazy: optional (platformdirs: the fallback when it is missing)
    except ImportError:  # a declared dependency; the fallback is its Linux answer
        return Path.home() / ".cache" / "numba-gpu-lab"
    return Path(platformdirs.user_cache_dir("numba-gpu-lab"))


def cache_path() -> Path:
    """The user's tuned cache file (it may not exist yet)."""
    env = os.environ.get(CACHE_ENV)
    path = _paths.get(env)
    if path is None:
        path = _paths[env] = cache_dir() / CACHE_FILE
    return path


def shape_class(size) -> str:
    """The class of a problem size: each dimension ``1`` or ``2^round(log2 d)``, joined by ``x``
    (e.g. (1000, 1030, 517) -> ``2^10x2^10x2^9``; (1, 4096, 4096) -> ``1x2^12x2^12``)."""
    return "x".join("1" if d <= 1 else f"2^{max(1, round(math.log2(d)))}" for d in size)


def device() -> tuple[str, str]:
    """(name, compute capability "9.0") of the current device; the simulator is ("Numba CUDA
    simulator", "sim")."""
    if not _device:
        from kernels.compiler import SIMULATOR, cuda  # lazy: backend chosen first (numba)

        if SIMULATOR:
            _device.append(("Numba CUDA simulator", "sim"))
        else:
            try:
                dev = cuda.get_current_device()
                name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
                _device.append((name, "{}.{}".format(*dev.compute_capability)))
            except Exception:  # no usable device: nothing tuned applies
                _device.append(("no device", "none"))
    return _device[0]


def compiler() -> str:
    from kernels.compiler import COMPILER  # lazy: backend chosen first (numba)

    return COMPILER


def key(kernel: str, cls: str, dev: tuple[str, str] | None = None, comp: str | None = None) -> str:
    """The cache key: device name | compute capability | compiler | kernel | shape class."""
    name, cc = dev or device()
    return "|".join((name, cc, comp or compiler(), kernel, cls))


def entry_key(e: dict) -> str:
    return "|".join((e["device"], e["compute_capability"], e["compiler"], e["kernel"], e["shape_class"]))


def validate(doc) -> list[dict]:
    """The entries of a tuned-configs document; ValueError naming what is wrong."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"not a tuned-configs file (no \"format\": \"{FORMAT}\")")
    entries = doc.get("entries")
    if not isinstance(entries, list):
        raise ValueError("\"entries\" is not a list")
    need = {"device": str, "compute_capability": str, "compiler": str, "kernel": str, "shape_class": str,
            "rung": str, "threads": int, "params": dict}
    for i, e in enumerate(entries):
        for field, typ in need.items():
            if not isinstance(e, dict) or not isinstance(e.get(field), typ):
                raise ValueError(f"entry {i}: {field!r} missing or not a {typ.__name__}")
    return entries


RECHECK_S = 1.0  # a file read is trusted this long before its size and time are looked at again
_checked: dict = {}  # path -> monotonic time of the last stat


def read(path: Path) -> dict:
    """{key: entry} of one file ({} when it is missing); a file that cannot be read is {} and a
    problem (:func:`problems`). Re-read when the file changes (looked at most once a RECHECK_S:
    auto's launch math runs per call of a torch op, and a stat per call would cost microseconds)."""
    now = time.monotonic()
    memo = _tables.get(path)
    if memo is not None and now - _checked.get(path, -1e9) < RECHECK_S:
        return memo[2]
    _checked[path] = now
    try:
        st = path.stat()
    except OSError:
        _tables[path] = (None, None, {})
        _problems.pop(path, None)
        return {}
    memo = _tables.get(path)
    if memo and memo[0] == st.st_mtime_ns and memo[1] == st.st_size:
        return memo[2]
    try:
        doc = json.loads(path.read_text())
        entries = validate(doc)
        table = {entry_key(e): e for e in entries}
        match = doc.get("match")
        if isinstance(match, str) and match:  # a shipped table: any device whose name has ``match``
            table = {"|".join(("*" + match, *k.split("|")[1:])): e for k, e in table.items()}
        _problems.pop(path, None)
    except (OSError, ValueError, UnicodeDecodeError) as e:  # JSONDecodeError is a ValueError
        table = {}
        _problems[path] = (f"tuned configurations in {path} unreadable ({' '.join(str(e).split())}): "
                           f"auto uses its heuristic; `lab tune` rewrites the file")
    _tables[path] = (st.st_mtime_ns, st.st_size, table)
    return table


_shipped: dict = {}  # SHIPPED_DIR -> its *.json files, listed once a process


def shipped_paths() -> list[Path]:
    if SHIPPED_DIR not in _shipped:
        _shipped[SHIPPED_DIR] = sorted(SHIPPED_DIR.glob("*.json")) if SHIPPED_DIR.is_dir() else []
    return _shipped[SHIPPED_DIR]


def lookup(kernel: str, size) -> tuple[dict, str] | None:
    """(entry, source) for ``kernel`` at ``size`` on this device and compiler, or None: the user's
    cache first ("cache"), then a shipped table whose ``match`` is in the device name ("shipped")."""
    env = os.environ
    memo_key = (kernel, tuple(size), env.get("LAB_TUNED"), env.get(CACHE_ENV))
    now = time.monotonic()
    memo = _hits.get(memo_key)
    if memo is not None and now - memo[0] < RECHECK_S:  # the same shape again (a torch op's calls)
        return memo[1]
    if len(_hits) > 4096:
        _hits.clear()
    off = (memo_key[2] or "").strip().lower() in ("0", "off", "no", "false")
    hit = None if off else _lookup(kernel, size)  # LAB_TUNED=0 (off/no/false): the heuristic only
    _hits[memo_key] = (now, hit)
    return hit


def _lookup(kernel: str, size) -> tuple[dict, str] | None:
    """An entry measured on a GPU (never a simulated one: ``lab tune`` in the simulator times Python
    interpreting threads, which says nothing of a GPU, and must not change ``auto``'s choices)."""
    name, cc = device()
    cls = shape_class(size)
    hit = read(cache_path()).get(key(kernel, cls, (name, cc)))
    if hit and not hit.get("simulated"):
        return hit, "cache"
    for path in shipped_paths():
        for k, e in read(path).items():
            dev_match, rest = k.split("|", 1)
            if (dev_match.startswith("*") and dev_match[1:] in name and rest == key(kernel, cls, ("", cc))[1:]
                    and not e.get("simulated")):
                return e, "shipped"
    return None


def problems() -> list[str]:
    """One line per tuned-configs file that could not be read (after a lookup touched it)."""
    return list(_problems.values())


def forget() -> None:
    """Drop what was read (the next lookup re-reads the files), e.g. after ``lab tune`` wrote."""
    _tables.clear()
    _problems.clear()
    _checked.clear()
    _shipped.clear()
    _hits.clear()


def describe_params(params: dict) -> str:
    """``bk=32, splits=4`` (sorted), or "" when there are none."""
    return ", ".join(f"{k}={v}" for k, v in sorted(params.items()))
