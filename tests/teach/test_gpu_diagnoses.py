"""The exercise checker's compute-sanitizer diagnoses (``lab exercise check --gpu``), from a report
recorded on the H100: which reports are the student's, and the message they become."""
from pathlib import Path

from lab.core import sanitizer as san
from lab.teach.messages import sanitizer_message
from lab.teach.workspace import _in_student_file

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "hardware" / "racecheck_student.txt"


def test_a_race_named_by_base_name_is_the_students_and_becomes_a_race_message():
    """compute-sanitizer named the student's module by its base name only (block_sum.py:20), so a
    full-path comparison found nothing: racecheck's hazards were dropped (H100, 2026-11-23)."""
    reports = san.parse_report(RECORDED.read_text(), "racecheck")
    assert reports and all(r.file == "block_sum.py" for r in reports)
    mine = "/home/student/work/block_sum.py"
    assert all(_in_student_file(r, mine, "block_sum") for r in reports)
    msg = sanitizer_message(reports[0], sum(r.count for r in reports))
    assert msg.startswith("race (compute-sanitizer racecheck on the GPU") and "line 20 of your file" in msg


def test_reports_in_other_files_or_lab_kernels_of_the_same_name_are_not_the_students():
    r = san.parse_report(RECORDED.read_text(), "racecheck")[0]
    assert not _in_student_file(r, "/home/student/work/vecadd.py", "vecadd")  # another base name
    r.kernel = "kernels::block_sum::block_sum_kernel"  # a lab kernel in a file that is also block_sum.py
    assert not _in_student_file(r, "/home/student/work/block_sum.py", "block_sum")
    r.file = "/home/student/work/block_sum.py"  # a full path is compared as a path
    assert _in_student_file(r, "/home/student/work/block_sum.py", "block_sum")
    assert not _in_student_file(r, "/elsewhere/block_sum.py", "block_sum")
