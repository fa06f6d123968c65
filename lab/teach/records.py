"""The workspace's records (``.lab-state.json``): the exercises started, the hints shown, and per
exercise the last check's record, which says whether it passed, the sha256 of the file content it
checked, the time and the backend, signed with an HMAC whose key lives outside the workspace
(:func:`record_key`, the user's data folder). :func:`check_status` says "passed" only when that record
verifies and the file still has that content: the workspace records checks, not claims. The key
guards against editing the state file, not against the same user's code reading the key. Nothing
here prints. Source: RFC 2104 (HMAC), FIPS 180-4 (SHA-256).
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
from datetime import datetime, timezone
from pathlib import Path

from lab.core.errors import LabError
from lab.teach.contained.childio import read_child_file
from platformdirs import user_data_dir


STATE = ".lab-state.json"
STATE_CAP = 4 << 20  # bytes of a state file read at most (hints and records of every exercise: a few KiB)
NOT_STARTED, IN_PROGRESS, PASSED = "not started", "in progress", "passed"


def read_state(ws: Path) -> dict:
    """The workspace's state; a missing or damaged state file counts as a fresh workspace, and so does
    one that is not a regular file or is larger than :data:`STATE_CAP` (a link to /dev/zero or a FIFO
    in a student's workspace that a teacher lists: read without following, without waiting)."""
    try:
        data = read_child_file(ws, STATE, STATE_CAP)
        state = json.loads(data) if data is not None else None
    except (OSError, ValueError):  # (UnsafeChildFile is an OSError)
        state = None
    state = state if isinstance(state, dict) else {}
    for key in ("status", "hints", "checks"):
        if not isinstance(state.get(key), dict):
            state[key] = {}
    return state


def save_state(ws: Path, state: dict) -> None:
    """Write the state file of an existing workspace (only ``lab exercise start`` makes the folder):
    LabError when it is missing."""
    if not ws.is_dir():
        raise LabError(f"workspace {ws} does not exist (`lab exercise start NAME` makes it)")
    with writing(ws):
        from lab.core.files import write_atomic  # lazy: heavy for lab exercise list's start (lab.core.files)

        write_atomic(ws / STATE, json.dumps(state, indent=1, sort_keys=True), "workspace state")


@contextlib.contextmanager
def writing(ws: Path):
    """OSError while writing the workspace -> LabError naming it (one line, exit code 2)."""
    try:
        yield
    except OSError as e:
        where = e.filename or ws
        raise LabError(f"cannot write the exercise workspace {ws}: {e.strerror or e} ({where}); "
                       f"choose another with --dir or LAB_EXERCISES_DIR") from None


KEY_FILE = "workspace-key"  # 32 random bytes, mode 0600, in the user's data folder (never in a workspace)


def record_key(create: bool = True) -> bytes | None:
    """The per-user HMAC key for check records: ``$LAB_DATA_DIR/workspace-key``, else platformdirs'
    user data folder for the lab; made on first use when ``create``. None when it cannot be read or
    made (then no record verifies and no exercise is listed as passed)."""
    base = os.environ.get("LAB_DATA_DIR")
    if not base:
        base = user_data_dir("numba-gpu-lab", appauthor=False)
    path = Path(base) / KEY_FILE
    with contextlib.suppress(OSError):
        key = path.read_bytes()
        if len(key) >= 32:
            return key
    if not create:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
    except FileExistsError:
        pass  # another check made it meanwhile
    except OSError:
        return None
    with contextlib.suppress(OSError):
        key = path.read_bytes()
        return key if len(key) >= 32 else None
    return None


def _mac(key: bytes, name: str, rec: dict) -> str:
    fields = [name, bool(rec.get("passed")), str(rec.get("sha256")), str(rec.get("at")), str(rec.get("backend"))]
    return hmac.new(key, json.dumps(fields).encode(), hashlib.sha256).hexdigest()


def record_check(state: dict, name: str, passed: bool, digest: str, backend: str, key: bytes | None) -> None:
    """Store the check of DIR/NAME.py (content ``digest``) in ``state``, signed with ``key``."""
    rec = {"passed": bool(passed), "sha256": digest, "backend": backend,
           "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    rec["mac"] = _mac(key, name, rec) if key else ""
    state["checks"][name] = rec


def check_status(ws: Path, name: str, state: dict, key: bytes | None) -> tuple[str, dict | None]:
    """(status, last_check) of exercise ``name`` (see :func:`listing`)."""
    rec = state["checks"].get(name)
    file = ws / f"{name}.py"
    started = file.is_file() or name in state["status"]
    if not isinstance(rec, dict):
        return (IN_PROGRESS if started else NOT_STARTED), None
    verified = bool(key) and isinstance(rec.get("mac"), str) and hmac.compare_digest(rec["mac"], _mac(key, name, rec))
    from lab.teach.submission import MAX_BYTES  # lazy: heavy for lab exercise list's start (lab.teach.submission)

    try:  # the file as a submission is read: a regular file, never through a link, never waiting on a FIFO
        data = read_child_file(ws, f"{name}.py", MAX_BYTES)
        changed = data is None or _sha256(data) != rec.get("sha256")
    except OSError:
        changed = True
    last = {"passed": bool(rec.get("passed")), "at": str(rec.get("at")), "backend": str(rec.get("backend")),
            "file_changed": changed, "verified": verified}
    if verified and not changed and last["passed"]:
        return PASSED, last
    return IN_PROGRESS, last


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
