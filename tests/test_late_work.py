"""Late work (issue 30, item 6): due dates, extensions and a penalty the instructor chooses, in deadlines.toml; one line
per late student; lateness in the table, the report and the exports (item 7: Canvas's and Moodle's import files)."""

from __future__ import annotations

import csv
import datetime as dt
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import SOLUTIONS
from grader.classroom import course, deadlines
from test_grading_day import REPO, _course, make, scratch  # noqa: F401 (the fixture)

UTC = dt.timezone.utc


def test_due_dates_and_extensions_are_read_as_people_write_them():
    shanghai = deadlines.parse_due("2026-12-01 23:59 +08:00")
    assert deadlines.as_gradebook_time(shanghai) == dt.datetime(2026, 12, 1, 15, 59)
    assert deadlines.format_due(shanghai) == "2026-12-01 23:59 +08:00"
    assert deadlines.parse_due("2026-12-01 23:59 Asia/Shanghai") == shanghai
    assert deadlines.parse_due("2026-12-01T15:59:00Z") == shanghai
    assert deadlines.parse_due("2026-12-01 23:59", local=dt.timezone(dt.timedelta(hours=8))) == shanghai
    for text, amount in (("2 days", dt.timedelta(days=2)), ("36 hours", dt.timedelta(hours=36)),
                         ("1 week 2 days", dt.timedelta(days=9)), ("90 min", dt.timedelta(minutes=90)),
                         ("2d 3h", dt.timedelta(days=2, hours=3)), ("0", dt.timedelta(0))):
        assert deadlines.parse_extension(text) == amount, text
    assert deadlines.describe_extension(dt.timedelta(hours=36)) == "36 hours"
    assert deadlines.describe_extension(dt.timedelta(days=1)) == "1 day"
    assert deadlines.describe_duration(dt.timedelta(days=1, hours=2, minutes=1)) == "1 day 2 h"
    assert deadlines.describe_duration(dt.timedelta(minutes=4, seconds=1)) == "5 min"
    for wrong in ("3 fortnights", "soon", "2"):
        with pytest.raises(deadlines.DeadlineError, match="amount and a unit"):
            deadlines.parse_extension(wrong)
    with pytest.raises(deadlines.DeadlineError, match="2026-12-01 23:59 \\+08:00"):
        deadlines.parse_due("next friday-ish")


def test_the_penalty_policies():
    per_day = deadlines.Policy("per_day", percent_per_day=10, max_percent=30, grace_minutes=15)
    assert per_day.points_off(50, 10 * 60) is None  # within the grace
    assert per_day.points_off(50, 16 * 60) == 5.0  # a started day
    assert per_day.points_off(50, 86400 + 1) == 10.0  # two started days
    assert per_day.points_off(50, 9 * 86400) == 15.0  # at most 30 %
    assert deadlines.Policy("zero").points_off(50, 1) == 50
    assert deadlines.Policy().points_off(50, 86400) is None  # none: shown, not taken


def test_the_file_keeps_the_instructors_policy_and_refuses_what_it_cannot_read(tmp_path):
    (tmp_path / "deadlines.toml").write_text('[late]\npenalty = "zero"   # strict\n\n[autograd]\ndue = "2026-12-01 23:59 +08:00"\n')
    found = deadlines.load(tmp_path)
    found["autograd"].extensions["erin"] = dt.timedelta(days=2)
    deadlines.save(tmp_path, found)
    text = (tmp_path / "deadlines.toml").read_text()
    assert 'penalty = "zero"   # strict' in text and 'erin = "2 days"' in text
    assert deadlines.load_policy(tmp_path).penalty == "zero"
    assert oct((tmp_path / "deadlines.toml").stat().st_mode & 0o777) == "0o600"
    assert deadlines.for_assignment(deadlines.load(tmp_path), "autograd-zh").extensions == {"erin": dt.timedelta(days=2)}
    (tmp_path / "deadlines.toml").write_text('[late]\npenalty = "half"\n')
    with pytest.raises(deadlines.DeadlineError, match="not one of none, zero, per_day"):
        deadlines.load_policy(tmp_path)
    (tmp_path / "deadlines.toml").write_text('[autograd]\ndue = "tomorrow-ish"\n')
    with pytest.raises(deadlines.DeadlineError, match=r"deadlines.toml, \[autograd\]: cannot read the due date"):
        deadlines.load(tmp_path)


def _stamp(root: Path, student: str, when: str) -> None:
    (root / "submitted" / student / "autograd" / "timestamp.txt").write_text(when + "\n")


def _rows(path: Path) -> dict[str, dict[str, str]]:
    rows = list(csv.DictReader(open(path, encoding="utf-8")))
    key = next(k for k in ("student_id", "SIS Login ID", "Username", "student") if k in rows[0])
    return {r[key]: r for r in rows}


@pytest.mark.slow
def test_late_work_from_the_due_date_to_the_lms(scratch):  # noqa: F811 (the fixture)
    root = _course(scratch / "course", {"ada": "autograd", "ben": "autograd", "dee": "autograd"})
    (root / "submitted" / "dee" / "autograd" / "04_modern_functions.ipynb").unlink()  # dee handed in four of six
    (root / "submitted" / "dee" / "autograd" / "06_labs.ipynb").unlink()  # (the labs score nothing: no note)
    # cat took the Chinese notebooks and handed them in under autograd/ (item 4: her language is read from them)
    course.build_submission(REPO / "notebooks" / "autograd-zh", course.answer_sources(SOLUTIONS),
                            root / "submitted" / "cat" / "autograd")
    _stamp(root, "ada", "2026-12-01 15:00:00.000000 UTC")  # before 23:59 in Shanghai
    _stamp(root, "ben", "2026-12-02 18:00:00.000000 UTC")  # 26 h 1 min late: two started days
    _stamp(root, "cat", "2026-12-02 10:00:00.000000 UTC")  # 18 h late, within her extension of a day
    broken = root / "deadlines.toml"
    broken.write_text('[autograd]\ndue = "Dec 1st-ish"\n')
    done = make(root, "autograde")
    assert done.returncode != 0 and "cannot read the due date" in done.stdout and "nothing was graded" in done.stdout
    assert not (root / "autograded").exists()
    broken.unlink()

    done = make(root, "due", "DUE=2026-12-01 23:59 +08:00")
    assert done.returncode == 0 and "autograd and autograd-zh: due 2026-12-01 23:59 +08:00" in done.stdout, done.stdout
    done = make(root, "extension", "STUDENT=cat", "EXTENSION=1 day")
    assert "cat, autograd: an extension of 1 day, due 2026-12-02 23:59 +08:00 for them" in done.stdout, done.stdout
    text = broken.read_text().replace("# [late]", "[late]").replace('# penalty = "per_day"', 'penalty = "per_day"') \
        .replace("# percent_per_day = 10", "percent_per_day = 10")
    broken.write_text(text)

    done = make(root, "autograde")
    out = done.stdout
    assert done.returncode == 0, out
    late = [line for line in out.splitlines() if line.startswith("late: ")]
    assert late == ["late: ben (autograd) handed in 1 day 2 h after the due date 2026-12-01 23:59 +08:00: -11.4 points "
                    "(10 % of the score per day late, at most 100 %)"], out
    assert "seconds late" not in out and "Late submission penalty" not in out  # (nbgrader's own lines: in its log)
    assert "    note: dee handed in no 04_modern_functions.ipynb: its exercises score 0" in out, out
    assert "No submitted file" not in out and "gradebook: gradebook.db" in out, out
    # cat's locked cells are the Chinese release's, not edits: no warning, no flag (the messy class had six)
    assert "cat/autograd" not in out and "flagged for review" not in out, out
    table = {line.split()[0]: line for line in out.splitlines() if line.startswith(("ada ", "ben ", "cat ", "dee "))}
    assert table["ben"].endswith("1 day 2 h (-11.4)  45.6/57"), table
    assert table["ada"].endswith("57/57") and table["cat"].endswith("57/57"), table
    assert table["cat"].split()[1] == "zh" and table["ada"].split()[1] == "en", table
    with sqlite3.connect(root / "gradebook.db") as db:
        penalties = dict(db.execute("SELECT submitted_assignment.student_id, SUM(late_submission_penalty) FROM "
                                    "submitted_notebook JOIN submitted_assignment ON submitted_notebook.assignment_id "
                                    "= submitted_assignment.id GROUP BY submitted_assignment.student_id"))
    assert penalties == {"ada": None, "ben": pytest.approx(11.4), "cat": None, "dee": None}

    done = make(root, "export")
    assert done.returncode == 0 and "export from the gradebook gradebook.db: 4 students, 4 graded, 1 with a late penalty, out of 57 points each" in done.stdout
    exports = root / "exports"
    assert oct(exports.stat().st_mode & 0o777) == "0o700"
    plain, canvas, moodle = (_rows(exports / name) for name in ("grades.csv", "canvas.csv", "moodle.csv"))
    assert (plain["ben"]["raw_score"], plain["ben"]["minutes_late"], plain["ben"]["late_penalty"], plain["ben"]["score"]) \
        == ("57", "1561", "11.4", "45.6")
    assert list(csv.reader(open(exports / "canvas.csv")))[:2] == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Autograd custom Functions"],
        ["Points Possible", "", "", "", "", "57"]]
    assert canvas["ben"]["Autograd custom Functions"] == "45.6" and canvas["cat"]["Autograd custom Functions"] == "57"
    assert moodle["ben"]["Autograd custom Functions"] == "45.6"
    assert (plain["cat"]["language"], plain["ada"]["language"]) == ("zh", "en")
    assert "late by 1561 min: -11.4" in moodle["ben"]["Autograd custom Functions (feedback)"]

    subprocess.run([str(root / ".venv" / "bin" / "python"), "-m", "grader.classroom.report", "--root", str(root),
                    "--out", str(root / "reports")], check=True, capture_output=True)
    report = _rows(root / "reports" / "scores.csv")
    assert (report["ben"]["total"], report["ben"]["minutes_late"], report["ben"]["late_penalty"]) == ("45.6", "1561", "11.4")
    assert report["cat"]["lang"] == "zh"
    assert "1 day 2 h, -11.4 points" in (root / "reports" / "class-report.html").read_text()

    done = make(root, "extension", "STUDENT=ben", "EXTENSION=2 days")  # no regrading: the penalty is computed again
    assert "1 graded submission(s) given a new late penalty" in done.stdout, done.stdout
    scores = make(root, "scores").stdout
    header = next(line for line in scores.splitlines() if line.startswith("student "))
    assert " late " not in header and [l for l in scores.splitlines() if l.startswith("ben ")][0].endswith("57/57")
    assert scores.startswith("Scores from the gradebook gradebook.db "), scores

    (root / "gradebook.db").unlink()  # a new gradebook (as a switch to PostgreSQL): the file gives its dates back
    done = make(root, "autograde", "STUDENT=ben,cat")
    assert done.returncode == 0 and not [l for l in done.stdout.splitlines() if l.startswith("late: ")], done.stdout
    assert "manual grades and comments given in formgrader stay in the other gradebook" in done.stdout, done.stdout
    with sqlite3.connect(root / "gradebook.db") as db:
        assert db.execute("SELECT duedate FROM assignment WHERE name = 'autograd'").fetchone()[0].startswith("2026-12-01 15:59")
        extensions = dict(db.execute("SELECT student_id, extension FROM submitted_assignment"))
    assert extensions == {"ben": "1970-01-03 00:00:00.000000", "cat": "1970-01-02 00:00:00.000000"}
