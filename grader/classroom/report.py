"""The class report: scores per exercise, and which mistakes the class made, as one self-contained HTML page.

    python -m grader.classroom.report                  # course in the current directory, after `nbgrader autograde`
    python -m grader.classroom.report --assignment autograd-zh   # only the students who handed in the Chinese notebooks
    python -m grader.classroom.report --root .demo     # another course root
    GRADER_DB_URL=postgresql+psycopg://... python -m grader.classroom.report   # a PostgreSQL gradebook (or --db URL)

Reads nbgrader's gradebook (scores) and grader_results/ (the diagnoses and flags TrustedExecute saved), writes
reports/class-report.html (plots embedded), reports/scores.csv (student × exercise),
reports/diagnoses.csv (diagnosis × students) and reports/flags.csv (student, notebook, cell, what: the
tampering attempts the grader saw, to review by hand).

The report covers every assignment of the course in the gradebook (autograd and its translations, autograd-zh: the
same exercises and points), each student's language shown (a column "lang": en, zh). It is written in English
whatever the students' language: a diagnosis only students of a translation made is named by its English sentence.

What students control (their ids, notebook and cell names, what their code attempted) is escaped in the page and
written to the CSVs as text a spreadsheet will not run: a cell starting with =, +, -, @, a tab or a carriage
return gets a leading ' (``grader.classroom.untrusted.csv_cell``, as OWASP recommends).
"""

from __future__ import annotations

import argparse
import base64
import csv
import html
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from grader.classroom.folders import ASSIGNMENTS, language_of
from grader.classroom.untrusted import csv_cell, hide_password, printable, private_folder

Scores = dict[str, dict[str, tuple[float, float]]]  # student -> exercise -> (score, max)
RESULTS_DIR = "grader_results"  # <course root>/grader_results/<assignment>/<student>/<notebook>.json: what
# TrustedExecute saw in each notebook (verdicts, diagnoses, flags), written while autograding


# Diagnoses that are not mistakes: an exercise left as released (its stub, a blank submission) is "not attempted";
# a submission that could not be read is one problem of the whole notebook, reported once (under the notebook's
# name), not once per exercise it holds. The report lists both apart from the class's mistakes.
NOT_ATTEMPTED = frozenset({"not_implemented", "unfinished_exercise", "unfinished_skipped"})
# A grader error (``grader.judge.runner.not_graded``) is the grader's, never the student's: listed apart too.
GRADER_ERROR = "not_graded_grader_error"
WHOLE_NOTEBOOK = frozenset({"unreadable_submission", GRADER_ERROR})
KINDS = {"mistake": "mistake", "not_attempted": "not attempted", "unreadable": "not graded (unreadable)",
         "grader_error": "not graded (grader error)"}


@dataclass
class Diagnosis:
    exercise: str  # the exercise; for a whole-notebook problem, the notebook
    mistake: str
    title: str  # one example of the sentence students read
    students: set[str] = field(default_factory=set)
    checks: set[str] = field(default_factory=set)
    english: bool = True  # the title is one an English notebook showed (else the message table's English sentence)

    @property
    def count(self) -> int:
        return len(self.students)

    @property
    def kind(self) -> str:
        """'mistake', 'not_attempted', 'unreadable' or 'grader_error'."""
        if self.mistake in NOT_ATTEMPTED:
            return "not_attempted"
        if self.mistake == GRADER_ERROR:
            return "grader_error"
        return "unreadable" if self.mistake in WHOLE_NOTEBOOK else "mistake"


def assignments_of(assignment: str | Sequence[str]) -> tuple[str, ...]:
    """One assignment's name, or several (the course's: ASSIGNMENTS), as a tuple."""
    return (assignment,) if isinstance(assignment, str) else tuple(assignment)


def diagnoses_from_results(results_dir: Path, assignment: str | Sequence[str]) -> list[Diagnosis]:
    """Every (exercise, mistake) found in the class (of one assignment or several: the English notebooks and their
    translations), with the students behind it; most frequent first. Its sentence is one an English notebook
    showed, else the English one of the message table (read in a translation's results, the student's sentence is
    in their language; the report stays English)."""
    found: dict[tuple[str, str], Diagnosis] = {}
    for name in assignments_of(assignment):
        english = language_of(name) == "en"
        for path in sorted((results_dir / name).glob("*/*.json")):
            student = path.parent.name
            try:
                result = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
            for exercise, data in result.get("exercises", {}).items():
                for cell in data.get("cells", []):
                    for finding in cell.get("findings", []):
                        mistake = str(finding.get("mistake"))
                        key = (path.stem if mistake in WHOLE_NOTEBOOK else exercise, mistake)
                        entry = found.get(key)
                        if entry is None:
                            entry = found[key] = Diagnosis(key[0], key[1], _title(finding) if english
                                                           else _english_title(finding), english=english)
                        elif english and not entry.english:
                            entry.title, entry.english = _title(finding), True
                        entry.students.add(student)
                        entry.checks.add(cell.get("grade_id", ""))
    return sorted(found.values(), key=lambda d: (-d.count, d.exercise, d.mistake))


@dataclass(frozen=True)
class Flag:
    student: str
    notebook: str
    cell: str  # grade_id, or "cell N"
    what: str  # what the code attempted, e.g. "gc.get_referrers"


FLAG_COLUMNS = ["student", "notebook", "cell", "what"]


def flags_from_results(results_dir: Path, assignment: str | Sequence[str]) -> list[Flag]:
    """Every flag TrustedExecute saved for the assignment(s), by student and notebook (malformed ones skipped)."""
    found: list[Flag] = []
    for path in sorted(p for name in assignments_of(assignment) for p in (results_dir / name).glob("*/*.json")):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError, UnicodeDecodeError):
            continue
        flags = result.get("flags") if isinstance(result, dict) else None
        for flag in flags if isinstance(flags, list) else []:
            if isinstance(flag, dict) and isinstance(flag.get("cell"), str) and isinstance(flag.get("what"), str):
                found.append(Flag(path.parent.name, path.stem, flag["cell"], flag["what"]))
    return found


def flagged_submissions(flags: list[Flag]) -> int:
    """How many submitted notebooks have at least one flag."""
    return len({(f.student, f.notebook) for f in flags})


def write_flags_csv(flags: list[Flag], out: Path) -> Path:
    path = out / "flags.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(FLAG_COLUMNS)
        for flag in flags:
            writer.writerow([csv_cell(v) for v in (flag.student, flag.notebook, flag.cell, flag.what)])
    return path


def _flags_section(flags: list[Flag]) -> str:
    from grader.spec.messages import message, say

    esc = html.escape
    if not flags:
        return f"<p>{esc(say('no_flags'))}</p>"
    rows = "".join(f"<tr><td>{esc(f.student)}</td><td>{esc(f.notebook)}</td><td><code>{esc(f.cell)}</code></td>"
                   f"<td><code>{esc(f.what)}</code></td></tr>" for f in flags)
    summary = say("flagged_summary", count=flagged_submissions(flags), path="flags.csv")
    return (f"<p><b>{esc(summary)}</b>. {esc(message('flagged_notebook').hint)}</p>"
            f"<table><tr><th>student</th><th>notebook</th><th>cell</th><th>what was attempted</th></tr>{rows}</table>")


def _title(finding: dict[str, Any]) -> str:
    title = str(finding.get("title", finding.get("mistake", "")))
    return title.removeprefix("✗ ").split(": ", 1)[-1] if title.startswith("✗") else title


class _Kept(dict):  # type: ignore[type-arg]
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _english_title(finding: dict[str, Any]) -> str:
    """The English sentence of a finding seen in a translated notebook: the message table's English title, filled
    with the fields the finding kept (the others shown as {name}); the finding's own title when its mistake has no
    message (a reason written at grading time, e.g. an unreadable submission's)."""
    from grader.spec.messages import TABLES

    template = TABLES["en"].get(str(finding.get("mistake")))
    if template is None:
        return _title(finding)
    try:
        fields = finding.get("fields") if isinstance(finding.get("fields"), dict) else {}
        return template.title.format_map(_Kept({**{k: v for k, v in finding.items() if k not in ("title", "fields")},
                                                **fields}))
    except (ValueError, TypeError, IndexError, AttributeError):  # (a format spec a missing field cannot take)
        return template.title


def exercises_in(scores: Scores) -> list[str]:
    order: list[str] = []
    for row in scores.values():
        order += [e for e in row if e not in order]
    return order


def write_csvs(scores: Scores, diagnoses: list[Diagnosis], out: Path, languages: dict[str, str] | None = None,
               late: dict[str, Any] | None = None) -> tuple[Path, Path]:
    """scores.csv (student, a column per exercise, total after the late penalty, max, lang: the language of the
    notebooks handed in, status: graded or not submitted (an enrolled student's empty row), minutes_late and
    late_penalty) and diagnoses.csv; ``languages``: {student: "en" or "zh"} (default: every student "en");
    ``late``: {student: gradebook.Lateness}."""
    exercises = exercises_in(scores)
    languages, late = languages or {}, late or {}
    scores_csv, diagnoses_csv = out / "scores.csv", out / "diagnoses.csv"
    with open(scores_csv, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", *map(csv_cell, exercises), "total", "max", "lang", "status", "minutes_late",
                         "late_penalty"])
        for student in sorted(scores):
            row = scores[student]
            lateness = late.get(student)
            penalty = lateness.penalty if lateness is not None else 0.0
            minutes = round(lateness.late.total_seconds() / 60) if lateness is not None else 0
            writer.writerow([csv_cell(student), *(f"{row[e][0]:g}" if e in row else "" for e in exercises),
                             f"{round(sum(s for s, _ in row.values()) - penalty, 2):g}" if row else "",
                             f"{sum(m for _, m in row.values()):g}" if row else "",
                             languages.get(student, "en") if row else "", "graded" if row else "not submitted",
                             minutes if row else "", f"{penalty:g}" if row else ""])
    with open(diagnoses_csv, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["exercise", "mistake", "students", "diagnosis", "who", "checks", "kind"])
        for d in diagnoses:
            writer.writerow([csv_cell(d.exercise), csv_cell(d.mistake), d.count, csv_cell(d.title),
                             csv_cell(" ".join(sorted(d.students))), csv_cell(" ".join(sorted(d.checks))),
                             KINDS[d.kind]])
    return scores_csv, diagnoses_csv


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def plots(scores: Scores, diagnoses: list[Diagnosis]) -> dict[str, str]:
    """Score distributions per exercise, and the most frequent diagnoses, as embedded PNGs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    images: dict[str, str] = {}
    exercises = exercises_in(scores)
    if exercises:
        columns = min(4, len(exercises))
        rows = -(-len(exercises) // columns)
        fig, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.4 * rows), squeeze=False)
        for ax, exercise in zip(axes.flat, exercises):
            values = [row[exercise][0] for row in scores.values() if exercise in row]
            top = max((row[exercise][1] for row in scores.values() if exercise in row), default=1)
            whole = all(float(v).is_integer() for v in values)
            points = [float(p) for p in range(int(top) + 1)] if whole else [p / 2 for p in range(int(top * 2) + 1)]
            ax.bar([f"{p:g}" for p in points], [sum(1 for v in values if v == p) for p in points], color="#4c72b0")
            ax.set_title(f"{exercise} (max {top:g})", fontsize=10)
            ax.set_xlabel("points", fontsize=8)
            ax.set_ylabel("students", fontsize=8)
            ax.tick_params(labelsize=8)
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        for ax in list(axes.flat)[len(exercises):]:
            ax.axis("off")
        fig.tight_layout()
        images["distribution"] = _png(fig)
        plt.close(fig)
    top = [d for d in diagnoses if d.kind == "mistake"][:12]
    if top:
        fig, ax = plt.subplots(figsize=(8, 0.45 * len(top) + 0.8))
        labels = [f"{d.exercise}: {d.mistake.replace('_', ' ')}" for d in top][::-1]
        ax.barh(labels, [d.count for d in top][::-1], color="#dd8452")
        ax.set_xlabel("students")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.tick_params(labelsize=8)
        fig.tight_layout()
        images["diagnoses"] = _png(fig)
        plt.close(fig)
    return images


def render_html(scores: Scores, diagnoses: list[Diagnosis], images: dict[str, str], title: str,
                flags: list[Flag] | None = None, languages: dict[str, str] | None = None,
                elsewhere: str = "", late: dict[str, Any] | None = None) -> str:
    """The page; ``languages``: {student: "en" or "zh"} (default: all "en"), shown per student and counted in the
    summary; ``elsewhere``: a sentence saying where the course's other assignments' report is, if any; ``late``:
    {student: gradebook.Lateness}, a column when anyone is late (the total after the penalty). An enrolled student
    with an empty row is shown as not submitted."""
    exercises = exercises_in(scores)
    esc = html.escape
    languages = {s: (languages or {}).get(s, "en") for s in scores if scores[s]}
    spoken = {lang: sum(1 for v in languages.values() if v == lang) for lang in sorted(set(languages.values()))}
    by_language = " (" + ", ".join(f"{n} {LANGUAGE_NAMES.get(lang, lang)}" for lang, n in spoken.items()) + ")"
    summary_rows = []
    for exercise in exercises:
        values = [row[exercise][0] for row in scores.values() if exercise in row]
        top = max((row[exercise][1] for row in scores.values() if exercise in row), default=0)
        mean = sum(values) / len(values) if values else 0
        full = sum(1 for v in values if v == top)
        summary_rows.append(f"<tr><td>{esc(exercise)}</td><td>{mean:.2f} / {top:g}</td><td>{full} of {len(values)}</td></tr>")
    mistakes = [d for d in diagnoses if d.kind == "mistake"]
    diagnosis_rows = "".join(
        f"<tr><td>{esc(d.exercise)}</td><td><b>{d.count}</b></td><td>{esc(d.title)}<br><small><code>{esc(d.mistake)}</code>"
        f" · {esc(', '.join(sorted(d.checks)))}</small></td><td>{esc(_who(d.students, languages))}</td></tr>"
        for d in mistakes) or '<tr><td colspan="4">(no mistakes: every exercise attempted was right)</td></tr>'
    apart = _apart_section([d for d in diagnoses if d.kind != "mistake"], languages)
    late = {s: v for s, v in (late or {}).items() if v.late and s in scores}
    absent = sorted(s for s in scores if not scores[s])
    score_rows = "".join(
        f"<tr><td>{esc(s)}</td><td>{esc(languages[s]) if scores[s] else '-'}</td>" + ("".join(
            f"<td>{scores[s][e][0]:g}/{scores[s][e][1]:g}</td>" if e in scores[s] else "<td>-</td>" for e in exercises)
            if scores[s] else f'<td colspan="{len(exercises)}"><i>not submitted</i></td>')
        + (f"<td>{esc(_late_cell(late.get(s)))}</td>" if late else "")
        + (f"<td><b>{round(sum(v for v, _ in scores[s].values()) - (late[s].penalty if s in late else 0), 2):g}</b></td>"
           if scores[s] else "<td>-</td>") + "</tr>" for s in sorted(scores))
    graded = len(scores) - len(absent)
    counts = (f"{graded} students{by_language if spoken else ''}"
              + (f", {len(absent)} enrolled who submitted nothing ({esc(', '.join(absent[:20]))}"
                 f"{' and more' if len(absent) > 20 else ''})" if absent else "")
              + (f", {len(late)} late" if late else ""))
    flagged = f" · {flagged_submissions(flags)} submission(s) flagged for review" if flags else ""
    image = lambda key, alt: f'<img alt="{alt}" src="{images[key]}">' if key in images else "<p>(no data)</p>"  # noqa: E731
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }} td, th {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }}
th {{ background: #f3f3f3; }} img {{ max-width: 100%; }} small {{ color: #666; }}
</style></head><body>
<h1>{esc(title)}</h1>
<p>{counts} · {len(exercises)} exercises · {sum(d.count for d in mistakes)} diagnosed mistakes across the class{flagged}.{(" " + esc(elsewhere)) if elsewhere else ""}</p>
<h2>Flagged submissions</h2>
{_flags_section(flags or [])}
<h2>Score distribution per exercise</h2>
{image("distribution", "histograms of points per exercise")}
<table><tr><th>exercise</th><th>mean</th><th>full marks</th></tr>{''.join(summary_rows)}</table>
<h2>Most frequent mistakes</h2>
{image("diagnoses", "most frequent diagnoses, by number of students")}
<table id="mistakes"><tr><th>exercise</th><th>students</th><th>diagnosis (as students read it)</th><th>who</th></tr>{diagnosis_rows}</table>
{apart}
<h2>Scores per student</h2>
<table id="scores"><tr><th>student</th><th>lang</th>{''.join(f'<th>{esc(e)}</th>' for e in exercises)}{'<th>late</th>' if late else ''}<th>total</th></tr>{score_rows}</table>
</body></html>
"""


def _late_cell(lateness: Any) -> str:
    """"1 day 2 h, -5.7 points" ('' when on time)."""
    if lateness is None or not lateness.late:
        return ""
    from grader.classroom.deadlines import describe_duration

    return describe_duration(lateness.late) + (f", -{lateness.penalty:g} points" if lateness.penalty else "")


def _who(students: set[str], languages: dict[str, str]) -> str:
    """"chen, wen (zh)": the students, each in a translation marked with its language."""
    return ", ".join(s if languages.get(s, "en") == "en" else f"{s} ({languages[s]})" for s in sorted(students))


def _apart_section(diagnoses: list[Diagnosis], languages: dict[str, str] | None = None) -> str:
    """The exercises not attempted (stubs left as released, blank submissions) and the submissions that could not
    be graded (unreadable): apart from the mistakes, one small table each (none when there are none)."""
    esc = html.escape
    parts = []
    missing = [d for d in diagnoses if d.kind == "not_attempted"]
    if missing:
        by_exercise: dict[str, set[str]] = {}
        for d in missing:
            by_exercise.setdefault(d.exercise, set()).update(d.students)
        rows = "".join(f"<tr><td>{esc(e)}</td><td><b>{len(who)}</b></td><td>{esc(_who(who, languages or {}))}</td></tr>"
                       for e, who in sorted(by_exercise.items(), key=lambda item: (-len(item[1]), item[0])))
        parts.append("<h3>Not attempted</h3><p>Exercises handed in as released (the stub still raises "
                     "NotImplementedError): not mistakes, so not counted above.</p>"
                     f'<table id="not-attempted"><tr><th>exercise</th><th>students</th><th>who</th></tr>{rows}</table>')
    unreadable = [d for d in diagnoses if d.kind == "unreadable"]
    if unreadable:
        rows = "".join(f"<tr><td>{esc(d.exercise)}</td><td><b>{d.count}</b></td><td>{esc(d.title)}</td>"
                       f"<td>{esc(_who(d.students, languages or {}))}</td></tr>" for d in unreadable)
        parts.append("<h3>Submissions that could not be graded</h3><p>Each is listed once, under its notebook; every "
                     "test cell of it scored 0. Ask the student to hand it in again.</p>"
                     f'<table id="unreadable"><tr><th>notebook</th><th>students</th><th>why (one example)</th>'
                     f"<th>who</th></tr>{rows}</table>")
    failed = [d for d in diagnoses if d.kind == "grader_error"]
    if failed:
        rows = "".join(f"<tr><td>{esc(d.exercise)}</td><td><b>{d.count}</b></td><td>{esc(d.title)}</td>"
                       f"<td>{esc(_who(d.students, languages or {}))}</td></tr>" for d in failed)
        parts.append("<h3>Submissions the grader failed on</h3><p>Not graded: a grader error, not the student's. Every "
                     "test cell of each scored 0; fix the grader (the reason is in nbgrader's log), then autograde "
                     f'these again with --force.</p><table id="grader-errors"><tr><th>notebook</th><th>students</th>'
                     f"<th>why (one example)</th><th>who</th></tr>{rows}</table>")
    return "\n".join(parts)


LANGUAGE_NAMES = {"en": "English", "zh": "Chinese"}


def build(root: Path, assignment: str | Sequence[str], out: Path, db_url: str | None = None) -> Path:
    """Write the report for the course in ``root`` over one assignment or several (default of the command: every
    one of the course, ASSIGNMENTS); return the HTML page's path."""
    from grader.classroom.gradebook import class_lateness, class_scores, gradebook_students

    db_url = db_url or f"sqlite:///{(root / 'gradebook.db').resolve()}"
    assignments = assignments_of(assignment)
    scores, languages = class_scores(db_url, assignments, with_enrolled=True, results=root / RESULTS_DIR)
    late = class_lateness(db_url, assignments)
    shown = [a for a in assignments if any(languages.get(s) == language_of(a) for s in scores)] or list(assignments)
    others = [a for a in ASSIGNMENTS if a not in assignments and gradebook_students(db_url, a)]
    elsewhere = (f"Not in this report: {', '.join(others)}, also in the gradebook (make report without ASSIGNMENT "
                 "covers every assignment of the course)." if others else "")
    diagnoses = diagnoses_from_results(root / RESULTS_DIR, assignments)
    flags = flags_from_results(root / RESULTS_DIR, assignments)
    private_folder(out)  # (grades and names: the instructor's only, also on a shared server)
    write_csvs(scores, diagnoses, out, languages, late)
    write_flags_csv(flags, out)
    page = out / "class-report.html"
    page.write_text(render_html(scores, diagnoses, plots(scores, diagnoses), f"Class report: {', '.join(shown)}",
                                flags, languages, elsewhere, late), encoding="utf-8")
    return page


def flag_line(root: Path, assignment: str | Sequence[str] = ASSIGNMENTS, out: Path | None = None) -> str:
    """'N submission(s) flagged for review: see reports/flags.csv' (writing that file), or '' when none."""
    from grader.spec.messages import say

    flags = flags_from_results(root / RESULTS_DIR, assignment)
    if not flags:
        return ""
    out = out or root / "reports"
    private_folder(out)  # (grades and names: the instructor's only, also on a shared server)
    return say("flagged_summary", count=flagged_submissions(flags), path=write_flags_csv(flags, out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.classroom.report", description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path("."), help="course root (holds gradebook.db)")
    parser.add_argument("--assignment", default=None,
                        help=f"only this assignment (default: every one of the course in the gradebook: "
                             f"{', '.join(ASSIGNMENTS)})")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: <root>/reports)")
    parser.add_argument("--db", default=None, help="the gradebook's URL (default: GRADER_DB_URL, else "
                                                   "sqlite:///<root>/gradebook.db)")
    args = parser.parse_args(argv)
    from grader.classroom.gradebook import gradebook_url

    db_url = args.db or gradebook_url(args.root)
    if db_url.startswith("sqlite:") and not (args.root / "gradebook.db").exists() and args.db is None:
        print(f"No gradebook.db in {args.root.resolve()}: run `make autograde` (nbgrader autograde) first.",
              file=sys.stderr)
        return 2
    assignments = (args.assignment,) if args.assignment else ASSIGNMENTS
    page = build(args.root, assignments, args.out or args.root / "reports", db_url)
    print(f"Class report (from the gradebook {printable(hide_password(db_url))}): {page}\n  scores:    {page.parent / 'scores.csv'}\n  diagnoses: {page.parent / 'diagnoses.csv'}"
          f"\n  flags:     {page.parent / 'flags.csv'}")
    line = flag_line(args.root, assignments, page.parent)
    if line:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
