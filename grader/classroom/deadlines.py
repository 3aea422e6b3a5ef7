"""Due dates and extensions: the course's ``deadlines.toml``, copied into nbgrader's gradebook when grading.

``deadlines.toml`` sits in the course folder. ``make due`` and ``make extension`` write it; an instructor may edit it::

    [autograd]                       # the course's assignment; its translations (autograd-zh) follow it
    due = "2026-12-01 23:59 +08:00"  # a time zone always (make due writes the server's when none is given)

    [autograd.extensions]            # per student: weeks, days, hours, minutes
    erin = "2 days"

    [late]                           # the penalty: none (the default), zero, or per_day
    penalty = "per_day"
    percent_per_day = 10             # of a late notebook's score, per day or part of a day late
    max_percent = 100
    grace_minutes = 15               # lateness up to this costs nothing (it is still shown)

Why a file as well as the gradebook: nbgrader keeps both only in the gradebook (``Assignment.duedate``,
``SubmittedAssignment.extension``), so a new gradebook (PostgreSQL for ``JOBS=N``, a fresh ``gradebook.db``) lost
them without a word, and an extension could be granted only once the student's submission was in the gradebook.
The file is the instructor's record; ``make autograde`` copies it into the gradebook before each late penalty is
computed (``grader.classroom.plugins.late``), so nbgrader's formgrader and export show the same dates.

A submission is late by its ``timestamp.txt`` (written by ``nbgrader collect``; one copied in by hand has none and
is never late) after the due date plus the student's extension. The penalty is the ``[late]`` policy's, the same
for every assignment: with none, lateness is recorded and shown and costs nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from grader.classroom.folders import ASSIGNMENT, TRANSLATED
from grader.classroom.untrusted import printable

FILE_NAME = "deadlines.toml"
POLICY = "late"  # the file's table for the penalty (not an assignment)
PENALTIES = ("none", "zero", "per_day")


class DeadlineError(ValueError):
    """A due date, an extension or the file itself cannot be read; str() says what and how to write it."""


@dataclass
class Deadline:
    """One assignment's due date (aware, or None: no due date) and its extensions by student."""

    due: dt.datetime | None = None
    extensions: dict[str, dt.timedelta] = field(default_factory=dict)


@dataclass(frozen=True)
class Policy:
    """The late penalty: ``none`` (no points off), ``zero`` (a late notebook scores 0, nbgrader's), ``per_day``
    (``percent_per_day`` of the notebook's score per day or part of a day late, at most ``max_percent``); lateness
    within ``grace_minutes`` costs nothing."""

    penalty: str = "none"
    percent_per_day: float = 10.0
    max_percent: float = 100.0
    grace_minutes: float = 0.0

    def points_off(self, score: float, seconds_late: float) -> float | None:
        """The penalty for a notebook scoring ``score``, ``seconds_late`` after its due date (None: none)."""
        if seconds_late <= self.grace_minutes * 60 or self.penalty == "none" or score <= 0:
            return None
        if self.penalty == "zero":
            return score
        days = math.ceil(seconds_late / 86400)
        return score * min(self.max_percent, days * self.percent_per_day) / 100

    def describe(self) -> str:
        grace = f" ({self.grace_minutes:g} min of grace)" if self.grace_minutes else ""
        if self.penalty == "none":
            return "no points off for lateness"
        if self.penalty == "zero":
            return f"a late notebook scores 0{grace}"
        return f"{self.percent_per_day:g} % of the score per day late, at most {self.max_percent:g} %{grace}"


# --- reading and writing what an instructor types -------------------------------------------------------------

_UNITS = {"w": "weeks", "week": "weeks", "weeks": "weeks", "d": "days", "day": "days", "days": "days",
          "h": "hours", "hour": "hours", "hours": "hours", "m": "minutes", "min": "minutes", "mins": "minutes",
          "minute": "minutes", "minutes": "minutes"}
_AMOUNT = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)")


def parse_extension(text: str) -> dt.timedelta:
    """"2 days", "36 hours", "1 week 2 days", "90 min", "2d 3h" -> a timedelta; "0" or "" -> no extension."""
    words = str(text).strip().lower().replace(",", " ")
    if words in ("", "0", "none"):
        return dt.timedelta(0)
    parts: dict[str, float] = {}
    for amount, unit in _AMOUNT.findall(words):
        name = _UNITS.get(unit, "?")
        parts[name] = parts.get(name, 0.0) + float(amount)
    if _AMOUNT.sub("", words).strip() or "?" in parts or not parts:
        raise DeadlineError(f"cannot read the extension {printable(text)!r}: write an amount and a unit, such as "
                            "\"2 days\", \"36 hours\", \"1 week 2 days\" or \"90 minutes\"")
    return dt.timedelta(**parts)


def describe_duration(delta: dt.timedelta) -> str:
    """A duration as a person says it, to the minute: "2 days 3 h", "5 h 20 min", "4 min"."""
    minutes = math.ceil(delta.total_seconds() / 60 - 1e-9)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    parts = [f"{days} day{'s' if days != 1 else ''}" if days else "", f"{hours} h" if hours else "",
             f"{minutes} min" if minutes and not days else ""]
    return " ".join(p for p in parts if p) or "0 min"


def parse_due(text: str, local: dt.tzinfo | None = None) -> dt.datetime:
    """"2026-12-01 23:59 +08:00", "2026-12-01T23:59:00Z", "2026-12-01 23:59 Asia/Shanghai" -> an aware datetime.
    Without a time zone: ``local`` (default: this machine's), which ``make due`` then writes out."""
    import dateutil.parser
    import dateutil.tz

    words = str(text).strip()
    zone = None
    pieces = words.rsplit(" ", 1)
    if len(pieces) == 2 and "/" in pieces[1]:  # an IANA name: Asia/Shanghai
        zone = dateutil.tz.gettz(pieces[1])
        if zone is None:
            raise DeadlineError(f"unknown time zone {printable(pieces[1])!r} in the due date {printable(text)!r}")
        words = pieces[0]
    try:
        when = dateutil.parser.isoparse(words) if "T" in words else dateutil.parser.parse(words)
    except (ValueError, OverflowError):
        raise DeadlineError(f"cannot read the due date {printable(text)!r}: write it as 2026-12-01 23:59 +08:00 "
                            "(a date, a time, and the time zone's offset or name)") from None
    if zone is not None:
        when = when.replace(tzinfo=zone)
    elif when.tzinfo is None:
        when = when.replace(tzinfo=local) if local is not None else when.astimezone()
    return when


def format_due(when: dt.datetime) -> str:
    """"2026-12-01 23:59 +08:00" (what the file holds and what people read)."""
    offset = when.strftime("%z")
    seconds = f":{when.second:02d}" if when.second else ""
    return f"{when:%Y-%m-%d %H:%M}{seconds} {offset[:3]}:{offset[3:]}"


def as_gradebook_time(when: dt.datetime) -> dt.datetime:
    """nbgrader's form: naive, in UTC (nbgrader.utils.parse_utc)."""
    return when.astimezone(dt.timezone.utc).replace(tzinfo=None)


# --- the file ---------------------------------------------------------------------------------------------------

def path_of(root: Path) -> Path:
    return Path(root) / FILE_NAME


def load(root: Path) -> dict[str, Deadline]:
    """{assignment: Deadline} from the course's deadlines.toml ({} without one). Raises DeadlineError naming the
    file, the entry and how to write it."""
    path = path_of(root)
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DeadlineError(f"{path} is not valid TOML ({exc}); fix it, or remove it and run make due again") from None
    found: dict[str, Deadline] = {}
    for assignment, entry in data.items():
        if assignment == POLICY:
            continue
        if not isinstance(entry, dict):
            raise DeadlineError(f"{path}: {printable(assignment)} should be a table ([{printable(assignment)}] with "
                                "due = \"...\"), not a value")
        deadline = Deadline()
        try:
            if entry.get("due"):
                deadline.due = parse_due(str(entry["due"]))
            for student, amount in (entry.get("extensions") or {}).items():
                deadline.extensions[str(student)] = parse_extension(str(amount))
        except DeadlineError as exc:
            raise DeadlineError(f"{path}, [{printable(assignment)}]: {exc}") from None
        found[str(assignment)] = deadline
    return found


def load_policy(root: Path) -> Policy:
    """The ``[late]`` policy of the course's deadlines.toml (none without one). Raises DeadlineError."""
    path = path_of(root)
    if not path.is_file():
        return Policy()
    try:
        entry = tomllib.loads(path.read_text(encoding="utf-8")).get(POLICY) or {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DeadlineError(f"{path} is not valid TOML ({exc}); fix it, or remove it and run make due again") from None
    unknown = sorted(set(entry) - {"penalty", "percent_per_day", "max_percent", "grace_minutes"})
    penalty = str(entry.get("penalty", "none"))
    if unknown or penalty not in PENALTIES:
        raise DeadlineError(f"{path}, [{POLICY}]: " + (f"unknown setting(s) {', '.join(map(printable, unknown))}" if unknown
                            else f"penalty = {printable(penalty)!r} is not one of {', '.join(PENALTIES)}")
                            + "; see docs/instructors.md, \"Late work\"")
    try:
        numbers = {k: float(entry[k]) for k in ("percent_per_day", "max_percent", "grace_minutes") if k in entry}
    except (TypeError, ValueError):
        raise DeadlineError(f"{path}, [{POLICY}]: percent_per_day, max_percent and grace_minutes are numbers") from None
    if any(v < 0 for v in numbers.values()) or numbers.get("max_percent", 0) > 100:
        raise DeadlineError(f"{path}, [{POLICY}]: the numbers are 0 or more, max_percent at most 100")
    return Policy(penalty, **numbers)


def for_assignment(deadlines: dict[str, Deadline], assignment: str) -> Deadline | None:
    """The entry of ``assignment``, else of the assignment it translates (autograd-zh follows autograd)."""
    if assignment in deadlines:
        return deadlines[assignment]
    if assignment in TRANSLATED:
        return deadlines.get(ASSIGNMENT)
    return None


def save(root: Path, deadlines: dict[str, Deadline]) -> Path:
    """Write the due dates and extensions, keeping the file's [late] policy as it was written (readable by the
    instructors only: an extension can say why a student needed one)."""
    from grader.classroom.untrusted import private_file

    lines = ["# Due dates and extensions of the course (make due, make extension; docs/instructors.md, \"Late work\").",
             "# make autograde copies them into the gradebook.", ""]
    lines += _policy_lines(path_of(root))
    for assignment in sorted(deadlines):
        deadline = deadlines[assignment]
        lines.append(f"[{_key(assignment)}]")
        if deadline.due is not None:
            lines.append(f"due = {json.dumps(format_due(deadline.due))}")
        if deadline.extensions:
            lines += ["", f"[{_key(assignment)}.extensions]"]
            lines += [f"{_key(student)} = {json.dumps(describe_extension(amount))}"
                      for student, amount in sorted(deadline.extensions.items())]
        lines.append("")
    path = path_of(root)
    tmp = path.with_name(path.name + ".tmp")
    with private_file(tmp, "w") as out:
        out.write("\n".join(lines))
    tmp.replace(path)
    return path


def _policy_lines(path: Path) -> list[str]:
    """The [late] table of the file as written (comments included), to keep it when the rest is rewritten;
    a starter table, commented out, when there is none."""
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    kept: list[str] = []
    inside = False
    for line in text.splitlines():
        header = re.match(r"\s*\[([^\]]*)\]", line)
        if header:
            inside = header.group(1).strip() == POLICY
        if inside:
            kept.append(line)
    if kept:
        return [*kept, ""] if kept[-1].strip() else kept
    return ["# The late penalty (none until you choose one): uncomment and edit.", f"# [{POLICY}]",
            "# penalty = \"per_day\"          # none, zero, or per_day", "# percent_per_day = 10          # of a late notebook's score, per day or part of a day",
            "# max_percent = 100", "# grace_minutes = 15            # lateness up to this costs nothing", ""]


def describe_extension(amount: dt.timedelta) -> str:
    """What the file says for an extension: "2 days", "36 hours", "90 minutes" (exact, readable back)."""
    minutes = round(amount.total_seconds() / 60)
    for unit, size in (("days", 24 * 60), ("hours", 60)):
        if minutes % size == 0:
            count = minutes // size
            return f"{count} {unit[:-1] if count == 1 else unit}"
    return f"{minutes} minutes"


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)


# --- into the gradebook (nbgrader's API: the caller holds an open Gradebook) -----------------------------------

def apply(gradebook: object, assignment: str, deadline: Deadline | None, students: list[str] | None = None) -> None:
    """The due date onto nbgrader's Assignment row and the extensions onto the students' SubmittedAssignment rows
    (those in ``students``, default every one of the assignment), without committing (the caller does).
    No entry in the file: the gradebook is left as it is (a due date set with nbgrader's own commands stays)."""
    if deadline is None:
        return
    from nbgrader.api import Assignment, SubmittedAssignment

    db = gradebook.db  # type: ignore[attr-defined]
    row = db.query(Assignment).filter(Assignment.name == assignment).one_or_none()
    if row is None:
        return
    due = as_gradebook_time(deadline.due) if deadline.due is not None else None
    if row.duedate != due:
        row.duedate = due
    query = db.query(SubmittedAssignment).filter(SubmittedAssignment.assignment_id == row.id)
    if students is not None:
        query = query.filter(SubmittedAssignment.student_id.in_(students))
    for submission in query:
        extension = deadline.extensions.get(submission.student_id) or None
        if submission.extension != extension:
            submission.extension = extension


def refresh_gradebook(root: Path, db_url: str) -> int:
    """The file's due dates and extensions into the gradebook, and every graded notebook's late penalty computed
    again with the file's policy (the same ``Policy.points_off`` autograding uses: a changed extension or policy
    applies without grading again). Returns how many graded submissions' penalties changed."""
    from nbgrader.api import Assignment, Gradebook, SubmittedAssignment

    found, policy = load(root), load_policy(root)
    changed = 0
    with Gradebook(db_url) as gradebook:
        for (name,) in gradebook.db.query(Assignment.name):
            deadline = for_assignment(found, name)
            apply(gradebook, name, deadline)
            for submission in (gradebook.db.query(SubmittedAssignment).join(Assignment)
                               .filter(Assignment.name == name)):
                late = submission.total_seconds_late
                before = [n.late_submission_penalty for n in submission.notebooks]
                for notebook in submission.notebooks:
                    penalty = policy.points_off(notebook.score, late) if late > 0 else None
                    notebook.late_submission_penalty = min(penalty, notebook.score) if penalty else None
                changed += before != [n.late_submission_penalty for n in submission.notebooks]
        gradebook.db.commit()
    return changed


def set_due(root: Path, db_url: str, assignment: str, text: str) -> str:
    """`make due DUE=...`: the assignment's due date into the file and the gradebook ("" or "none": removed).
    Returns what to print."""
    found = load(root)
    entry = found.setdefault(assignment, Deadline())
    entry.due = None if str(text).strip().lower() in ("", "none") else parse_due(text)
    path = save(root, found)
    changed = refresh_gradebook(root, db_url)
    followers = [t for t in TRANSLATED if t not in found] if assignment == ASSIGNMENT else []
    what = f"due {format_due(entry.due)}" if entry.due else "no due date"
    return (f"{printable(assignment)}{' and ' + ', '.join(followers) if followers else ''}: {what} (in {path}; "
            f"the gradebook updated, {changed} graded submission(s) given a new late penalty)")


def set_extension(root: Path, db_url: str, assignment: str, student: str, text: str) -> str:
    """`make extension STUDENT=erin EXTENSION="2 days"`: one student's extension ("0": removed). Returns what to
    print."""
    if not student.strip():
        raise DeadlineError("name the student: make extension STUDENT=erin EXTENSION=\"2 days\"")
    found = load(root)
    entry = found.setdefault(assignment, Deadline())
    amount = parse_extension(text)
    if amount:
        entry.extensions[student] = amount
    else:
        entry.extensions.pop(student, None)
    path = save(root, found)
    changed = refresh_gradebook(root, db_url)
    due = f"due {format_due(entry.due + amount)} for them" if entry.due else \
        "no due date yet (make due DUE=...)"
    what = f"an extension of {describe_extension(amount)}" if amount else "no extension"
    return (f"{printable(student)}, {printable(assignment)}: {what}, {due} (in {path}; "
            f"{changed} graded submission(s) given a new late penalty)")


def late_line(student: str, assignment: str, late: object, deadline: Deadline | None, policy: Policy) -> str:
    """One line for a late student (``late``: gradebook.Lateness): by how much, after which due date, the
    extension, the points off and the policy that took them."""
    due = late.due.replace(tzinfo=dt.timezone.utc)  # type: ignore[attr-defined]
    zone = deadline.due.tzinfo if deadline is not None and deadline.due is not None else None
    extension = late.extension  # type: ignore[attr-defined]
    penalty = late.penalty  # type: ignore[attr-defined]
    return (f"late: {printable(student)} ({printable(assignment)}) handed in {describe_duration(late.late)} after "  # type: ignore[attr-defined]
            f"{'their' if extension else 'the'} due date {format_due(due.astimezone(zone) if zone else due)}"
            + (f" (an extension of {describe_extension(extension)} included)" if extension else "")
            + (f": -{penalty:g} points ({policy.describe()})" if penalty else
               ": no points off (the late policy is none: deadlines.toml, [late])" if policy.penalty == "none" else
               ": no points off (within the grace, or nothing to take)"))
