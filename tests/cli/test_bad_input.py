"""The hostile user's checklist (issue "Safe by default"): every output option refuses what is not a
regular file, a link is written through to its target, a simulator run does not replace a GPU's
results, a missing workspace is said (not made), and a long simulator sweep is refused up front with
advice that names the options sweep has. (Ctrl-C: test_interrupt.py; COLUMNS: test_columns.py;
settings: tests/core/test_settings.py.)"""
import os
import socket
import stat
from pathlib import Path

import pytest

from tests.cli.test_fuzz import lab  # the in-process CLI harness of the bad-input checks
from tests.conftest import SIMULATOR

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not SIMULATOR, reason="tiny simulator sizes")

# every output option of every command, with arguments that reach it (the path is appended)
OUTPUTS = [
    ("bench", "vecadd", "--quick", "--contenders", "numba", "--out"),
    ("sweep", "vecadd", "--threads", "32", "--sizes", "100", "--contenders", "numba", "--png"),
    ("roofline", "--kernels", "vecadd", "--contenders", "numba", "--png"),
    ("profile", "vecadd", "--size", "100", "--trace"),
    ("tune", "vecadd", "--out"),
    ("grid", "vecadd", "--size", "100", "--png"),
    ("grid", "vecadd", "--size", "100", "--svg"),
    ("occupancy", "vecadd", "--png"),
    ("exercise", "grade", "{class}", "--csv"),
]


@pytest.fixture
def specials(tmp_path):
    """A FIFO, a listening socket, a folder, a device node and a link to a device, by name."""
    os.mkfifo(tmp_path / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    (tmp_path / "folder").mkdir()
    (tmp_path / "to-null").symlink_to("/dev/null")
    (tmp_path / "class" / "s1").mkdir(parents=True)
    yield {"fifo": tmp_path / "fifo", "socket": tmp_path / "sock", "folder": tmp_path / "folder",
           "device": Path("/dev/null"), "link to a device": tmp_path / "to-null", "kernel file": Path("/proc/version")}
    sock.close()


def _kind(path):
    return stat.S_IFMT(os.stat(path).st_mode)


@pytest.mark.parametrize("argv", OUTPUTS, ids=lambda a: f"{a[0]} {a[-1]}" if a[0] != "exercise" else "grade --csv")
def test_no_output_option_replaces_anything_but_a_regular_file(argv, specials, tmp_path):
    argv = [a.replace("{class}", str(tmp_path / "class")) for a in argv]
    for what, path in specials.items():
        before = (_kind(path), os.path.realpath(path))
        code, out, err = lab(*argv, str(path))
        assert code == 2, (argv, what, code, err[-500:])
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: cannot write") and "Traceback" not in err, (what, err)
        assert (_kind(path), os.path.realpath(path)) == before, f"{what} was replaced"
    assert Path("/dev/null").is_char_device()


def test_a_link_is_written_through_to_its_target(tmp_path):
    target = tmp_path / "real.png"
    target.write_bytes(b"old")
    link = tmp_path / "link.png"
    link.symlink_to(target)
    code, _, err = lab("grid", "vecadd", "--size", "100", "--png", str(link))
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(target)  # still a link, to the same file
    assert target.read_bytes().startswith(b"\x89PNG")  # whose content was replaced
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".lab-")]  # no temporary left behind


def test_a_simulator_run_does_not_replace_a_gpus_results(tmp_path):
    gpu = tmp_path / "benchmarks.md"
    gpu.write_text((ROOT / "docs" / "benchmarks.md").read_text())  # the committed GPU numbers
    before = gpu.read_text()
    code, _, err = lab("bench", "vecadd", "--quick", "--contenders", "numba", "--out", str(gpu))
    assert code == 2 and "results made on a GPU" in err and "--force" in err and gpu.read_text() == before
    code, _, err = lab("bench", "vecadd", "--quick", "--contenders", "numba", "--out", str(gpu), "--force")
    assert code == 0, err
    assert "backend: simulator" in gpu.read_text()
    # and a file the simulator made is replaced without --force
    code, _, err = lab("bench", "vecadd", "--quick", "--contenders", "numba", "--out", str(gpu))
    assert code == 0, err


def test_a_missing_workspace_is_said_not_made(tmp_path):
    missing = tmp_path / "nope"
    for args in (("exercise", "hint", "vecadd"), ("exercise", "list")):
        code, _, err = lab(*args, "--dir", str(missing))
        assert code == 2 and "does not exist" in err and "lab exercise start" in err, (args, err)
    assert not missing.exists()
    code, _, err = lab("exercise", "notebook", "vecadd", "--out", str(missing / "deeper" / "nb"))
    assert code == 2 and not missing.exists()
    code, _, err = lab("exercise", "start", "vecadd", "--dir", str(missing))
    assert code == 0 and (missing / "vecadd.py").is_file()  # start makes it


def test_a_long_simulator_sweep_is_refused_with_its_own_options():
    code, _, err = lab("sweep", "vecadd", "--threads", "128,256,512", "--sizes", "3000000")
    assert code == 2 and "roughly" in err and "--yes" in err and "--sizes" in err and "--size " not in err


@pytest.mark.parametrize("argv,advice", [
    (("counters", "vecadd", "--size", "50000000"), "--size "),
    (("profile", "vecadd", "--size", "50000000", "--contenders", "numba"), "--size "),
    (("tune", "matmul", "--shapes", "2048x2048x2048", "--budget", "100000"), "--shapes"),
], ids=lambda a: a[0] if isinstance(a, tuple) else None)
def test_every_long_simulator_command_is_refused_with_its_own_options(argv, advice):
    """counters, profile and tune estimate a simulator run before making any input (lab.core.simulator.
    refuse_long): hours are refused in one line naming an option the command has, and --yes."""
    code, _, err = lab(*argv)
    assert code == 2 and "roughly" in err and "--yes" in err and advice in err and len(err.strip().splitlines()) == 1


def test_a_file_with_null_bytes_is_named_without_line_none(tmp_path):
    path = tmp_path / "vecadd.py"
    path.write_bytes(b"from numba import cuda\n\x00\x00\n")
    code, out, err = lab("exercise", "check", "vecadd", "--file", str(path), "--dir", str(tmp_path))
    assert code in (1, 2) and "line None" not in out + err


def test_grading_reports_links_hidden_folders_and_nested_files_as_what_they_are(tmp_path):
    """A linked submission (to the shipped solution, or another student's file) is never followed;
    hidden, linked and oddly named student folders and files one folder down are named in a note;
    a folder name with a newline cannot print rows of its own."""
    from lab.teach.grade import Refused, discover

    solution = ROOT / "exercises" / "vecadd" / "solution.py"
    root = tmp_path / "class"
    for d in ("s1/sub", ".hidden", "s2", "s3", "bad\nname | vecadd | passed"):
        (root / d).mkdir(parents=True)
    (root / "s1" / "sub" / "vecadd.py").write_text(solution.read_text())
    (root / ".hidden" / "vecadd.py").write_text(solution.read_text())
    (root / "s2" / "vecadd.py").symlink_to(solution)
    (root / "s2" / "dot.py").symlink_to(root / "s3" / "dot.py")
    (root / "s3" / "dot.py").write_text("x = 1\n")
    os.link(root / "s3" / "dot.py", root / "s3" / "hard.py")
    (root / "s3" / "vecadd.py").write_text(solution.read_text())
    os.mkfifo(root / "s3" / "softmax_fused.py")
    (root / "linked").symlink_to(root / "s3")
    students, names, files, notes = discover(root)
    assert students == ["s1", "s2", "s3"]
    assert isinstance(files[("s2", "vecadd")], Refused) and "symbolic link" in files[("s2", "vecadd")]
    assert isinstance(files[("s2", "dot")], Refused)
    assert isinstance(files[("s3", "dot")], Refused) and "hard link" in files[("s3", "dot")]
    assert isinstance(files[("s3", "softmax_fused")], Refused) and "not a regular file" in files[("s3", "softmax_fused")]
    assert files[("s3", "vecadd")] == root / "s3" / "vecadd.py"
    assert ("s1", "vecadd") not in files
    text = "\n".join(notes)
    assert ".hidden: a hidden folder" in text and "linked: a symbolic link" in text
    assert "s1/sub/: vecadd.py one folder down" in text
    assert "'bad\\nname | vecadd | passed'" in text and all("\n" not in n for n in notes)
