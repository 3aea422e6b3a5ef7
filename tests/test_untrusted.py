"""What submissions control cannot act on the instructor, and the gradebook's password stays secret (issue 19,
parts 6 and 7).

* a student's markdown cell with ``<img onerror>``, ``<script>`` and a ``javascript:`` link is not live in the
  feedback page (`nbgrader generate_feedback`) nor in formgrader's view of the submission, and its ordinary
  markdown (heading, table, code, math, a data: image) is still there;
* a student id with an ANSI escape and a newline reaches the terminal and nbgrader's log written out (``\\x1b``);
* CSV cells a spreadsheet would run as a formula are neutralised;
* a password in GRADER_DB_URL is on no command line of any process during `make autograde JOBS=2`, in no log
  and no message; the logs are readable by their owner only.
"""

from __future__ import annotations

import csv
import os
import shutil
import stat
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import nbformat
import pytest

from grader.classroom import course, report
from grader.classroom.untrusted import csv_cell, hide_password, printable, redact
from test_adversarial import AVAILABLE, WHY
from test_gradebook_postgres import postgres_url  # noqa: F401 (the fixture: a PostgreSQL server of the test's own)

REPO = course.REPO
NOTEBOOK = "01_autograd_basics"
ESCAPED_ID = "eve\x1b[2J"  # a student id that clears the screen
NEWLINE_ID = "eve\x1b[2J\nrm"  # ... and starts a new (forged) line
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
PAYLOAD = f"""## Mallory's notes

Ordinary *markdown* stays: $\\frac{{\\partial L}}{{\\partial x}} = 2x$ and a table.

| input | gradient |
|-------|----------|
| x     | 2x       |

```python
def helper_mallory(x):
    return 2 * x
```

![a dot](data:image/png;base64,{PNG})

<img src=x onerror="alert('mallory-img')">

<script>alert('mallory-script')</script>

[click me](javascript:alert('mallory-link'))

<div class="alert alert-success score mallory-banner" id="mallory-score" style="font-size: 3em">Score 6/6 (verified)</div>

<span id="mallory-span" class="label label-success">all checks passed</span> <b style="color: green">mallory-bold</b>

<style>.mallory-style, #notebook-container {{ display: none }}</style>

<link rel="stylesheet" href="https://evil.example/mallory.css">

<svg class="mallory-svg" width="10" height="10"><rect class="mallory-rect" width="10" height="10"/></svg>

<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgnbWFsbG9yeScpPC9zY3JpcHQ+">mallory-data-link</a>
"""


# --- fast ----------------------------------------------------------------------------------------------------


def test_control_characters_and_ansi_escapes_are_written_out():
    assert printable(NEWLINE_ID) == "eve\\x1b[2J\\nrm"
    assert printable("étudiant-7 ü") == "étudiant-7 ü", "letters of any script are kept"
    assert printable("a\u202eb\rc\td") == "a\\u202eb\\rc\\td"
    table = course.render_scores({NEWLINE_ID: {"square": (2.0, 6.0)}})
    assert "\x1b" not in table and "eve\\x1b[2J\\nrm" in table and len(table.splitlines()) == 3, table


def test_csv_cells_a_spreadsheet_would_run_are_neutralised(tmp_path):
    evil = {("=HYPERLINK(\"x\",\"y\")", "-2+3"): [{"cell": "+cmd|' /C calc'!A0", "what": "@SUM(1)"},
                                                            {"cell": "\tcell", "what": "\rwhat"}]}
    from test_report import plant_flags

    plant_flags(tmp_path / "grader_results", evil)
    flags = report.flags_from_results(tmp_path / "grader_results", "autograd")
    out = tmp_path / "reports"
    out.mkdir()
    rows = list(csv.reader(open(report.write_flags_csv(flags, out), newline="")))[1:]
    evil_rows = [r for r in rows if "HYPERLINK" in r[0]]
    assert evil_rows == [["'=HYPERLINK(\"x\",\"y\")", "'-2+3", "'+cmd|' /C calc'!A0", "'@SUM(1)"],
                         ["'=HYPERLINK(\"x\",\"y\")", "'-2+3", "'\tcell", "'\rwhat"]], rows
    assert ["s20" in r[0] for r in rows].count(True) == 0 and csv_cell("s03") == "s03", "plain names unchanged"
    scores_csv, diagnoses_csv = report.write_csvs({"=1+1": {"square": (2.0, 6.0)}}, [
        report.Diagnosis("square", "wrong_sign", "=cmd()", {"=1+1"}, {"square-first-order"})], out)
    assert list(csv.reader(open(scores_csv)))[1] == ["'=1+1", "2", "2", "6", "en", "graded", "0", "0"]
    assert list(csv.reader(open(diagnoses_csv)))[1] == ["square", "wrong_sign", "1", "'=cmd()", "'=1+1",
                                                        "square-first-order", "mistake"]


def test_a_database_url_is_shown_without_its_password():
    url = "postgresql+psycopg://grader:S3cr%40t-pw@db.example.org:5432/gb"
    assert hide_password(url) == "postgresql+psycopg://grader:***@db.example.org:5432/gb"
    assert course.shown_url(url) == hide_password(url)
    said = f"could not connect to {url}; password S3cr@t-pw rejected (S3cr%40t-pw)"
    assert "S3cr" not in redact(said, url) and "db.example.org" in redact(said, url)
    assert redact("sqlite:////srv/gradebook.db", "sqlite:////srv/gradebook.db") == "sqlite:////srv/gradebook.db"


def test_nbgrader_job_takes_the_gradebook_from_the_environment(monkeypatch):
    from grader.classroom import nbgrader_job

    monkeypatch.setenv("GRADER_DB_URL", "postgresql+psycopg://u:pw-secret@h/db")
    args, nbgrader_args = nbgrader_job.parse(["--root", "/srv/course", "--", "autograde", "autograd"])
    assert args.db_url == "postgresql+psycopg://u:pw-secret@h/db"
    assert not any("pw-secret" in a for a in nbgrader_args), nbgrader_args


# --- end to end: a graded class with hostile markdown and a hostile student id -------------------------------------


def _add_markdown(path: Path, source: str) -> None:
    nb = nbformat.read(str(path), as_version=4)
    cell = nbformat.v4.new_markdown_cell(source)
    if "id" not in nb.cells[0]:
        del cell["id"]  # (the released notebooks are nbformat 4.4: no cell ids)
    nb.cells.append(cell)
    nbformat.write(nb, str(path))


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in course.nbgrader_env().items() if k not in ("GRADER_DB_URL", "GRADER_JOBS")}
    return {**env, **extra}


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory, released_template):
    """A course autograded by `python -m grader.classroom.course autograde`: mallory's first notebook ends with the markdown
    payload, and a student whose id holds an ANSI escape and a newline; (root, terminal output)."""
    if not AVAILABLE:
        pytest.skip(f"sandbox unavailable: {WHY}")
    base = tmp_path_factory.mktemp("hostile")
    template = released_template  # (conftest's, made once: copied below)
    root = base / "course"
    shutil.copytree(template, root, symlinks=True)
    answers = course.answer_sources(REPO / "solutions" / course.ASSIGNMENT)
    for student in ("mallory", ESCAPED_ID):
        built = base / "built" / student.encode().hex()
        course.build_submission(root / "release" / course.ASSIGNMENT, answers, built)
        target = root / "submitted" / student / course.ASSIGNMENT
        target.mkdir(parents=True)
        shutil.copy(built / f"{NOTEBOOK}.ipynb", target)
    _add_markdown(root / "submitted" / "mallory" / course.ASSIGNMENT / f"{NOTEBOOK}.ipynb", PAYLOAD)
    done = subprocess.run([sys.executable, "-m", "grader.classroom.course", "autograde", "--root", str(root)], cwd=REPO,
                          env=_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-3000:]
    return root, done.stdout + done.stderr


def _live_markup(page: str) -> list[str]:
    """What in the page could run a script: <script> elements carrying the student's code; in the notebook's part
    of the page (formgrader's own navigation has its onclick handlers), on* attributes and javascript: URLs."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "html.parser")
    live = [f"<script>{s.string}</script>" for s in soup.find_all("script") if "mallory" in (s.string or "")]
    notebook = soup.find(id="notebook-container") or soup
    assert "Mallory's notes" in notebook.get_text()
    for element in notebook.find_all(True):
        for name, value in element.attrs.items():
            value = " ".join(value) if isinstance(value, list) else str(value)
            if name.lower().startswith("on"):
                live.append(f"<{element.name} {name}={value!r}>")
            if name.lower() in ("href", "src", "action", "formaction", "xlink:href") and \
                    "".join(value.split()).lower().startswith(("javascript:", "vbscript:")):
                live.append(f"<{element.name} {name}={value!r}>")
    return live


def _assert_markdown_kept(page: str) -> None:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "html.parser")
    heading = [h for h in soup.find_all("h2") if "Mallory's notes" in h.get_text()]
    assert heading, "the heading is still a heading"
    assert any("gradient" in th.get_text() for th in soup.find_all("th")), "the table is still a table"
    assert "helper_mallory" in soup.get_text() and soup.find(class_="highlight"), "the code block, highlighted"
    assert "\\partial L" in soup.get_text(), "the math, for MathJax"
    assert any(img.get("src", "").startswith("data:image/png;base64,") and img.get("alt") == "a dot"
               for img in soup.find_all("img")), "the data: image"
    assert "click me" in soup.get_text(), "the link's text"


def _spoofing_markup(page: str) -> list[str]:
    """What of the student's markdown could pass for the page's own: a class, id or style it wrote (all of
    PAYLOAD's carry "mallory"), a <style> or <link> of its own, or a data: URL other than an image's."""
    from bs4 import BeautifulSoup
    from pygments.token import STANDARD_TYPES

    soup = BeautifulSoup(page, "html.parser")
    found = [f"<style>{s.string[:80]}</style>" for s in soup.find_all("style") if "mallory" in (s.string or "")]
    found += [f"<link {link.attrs}>" for link in soup.find_all("link") if "mallory" in str(link.attrs)]
    (heading,) = [h for h in soup.find_all("h2") if "Mallory's notes" in h.get_text()]
    highlighting = {"highlight", *(name for name in STANDARD_TYPES.values() if name)}
    for element in heading.parent.find_all(True):  # the rendered markdown cell: any class but highlighting's
        for name in ("class", "id", "style"):
            value = element.get(name)
            value = " ".join(value) if isinstance(value, list) else str(value or "")
            if value and (name != "class" or value not in highlighting):
                found.append(f"<{element.name} {name}={value!r}>")
        if element.name != "img" and str(element.get("href", "")).lower().startswith("data:"):
            found.append(f"<{element.name} href=data:...>")
    for element in soup.find_all(True):  # and nowhere in the page
        if any("mallory" in str(element.get(name, "")) for name in ("class", "id", "style")):
            found.append(f"<{element.name} {element.attrs}>")
    banner = [t.parent for t in soup.find_all(string=lambda t: "Score 6/6 (verified)" in t)]
    assert banner, "the banner's text is still shown, as text"
    found += [f"<{b.name} {b.attrs}>" for b in banner if b.attrs]
    return found


def test_a_submissions_markdown_cannot_dress_itself_in_the_pages_css():
    """Issue 29: nh3 kept class and id, so a markdown cell drew a "Score 6/6 (verified)" banner with the page's own
    CSS. Rendered here by an HTMLExporter with the repository's nbgrader_config.py (as nbgrader builds them)."""
    from nbconvert.exporters import HTMLExporter
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(PAYLOAD), nbformat.v4.new_raw_cell(PAYLOAD)])
    page, _ = HTMLExporter(config=config).from_notebook_node(nb)
    assert _spoofing_markup(page) == []
    assert "Mallory's notes" in page and _live_markup(page) == []


@pytest.mark.slow
def test_feedback_shows_students_markdown_but_nothing_live(hostile_class):
    root, _ = hostile_class
    done = subprocess.run(course.nbgrader_command("generate_feedback", course.ASSIGNMENT, "--force",
                                                  "--CourseDirectory.release_directory=release",
                                                  f"--CourseDirectory.root={root}"),
                          cwd=REPO, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    page = (root / "feedback" / "mallory" / course.ASSIGNMENT / f"{NOTEBOOK}.html").read_text(encoding="utf-8")
    assert _live_markup(page) == []
    assert _spoofing_markup(page) == []
    _assert_markdown_kept(page)


@pytest.mark.slow
def test_formgrader_shows_students_markdown_but_nothing_live(hostile_class, tmp_path, monkeypatch):
    from nbgrader.api import Gradebook

    from test_browser import JUPYTER, jupyterlab

    if not JUPYTER.exists():
        pytest.fail(f"jupyter is not installed next to {sys.executable}: `make install`")
    root, _ = hostile_class
    monkeypatch.delenv("GRADER_DB_URL", raising=False)
    # formgrader reads nbgrader_config.py from the server's folder: the course's, which loads the repository's
    (root.parent / "nbgrader_config.py").write_text(
        f"c = get_config()\nload_subconfig('nbgrader_config.py', path={str(REPO)!r})\n"
        f"c.CourseDirectory.root = {str(root)!r}\n", encoding="utf-8")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        submission = gb.find_submission_notebook(NOTEBOOK, course.ASSIGNMENT, "mallory").id
    with jupyterlab(root.parent, tmp_path) as server:
        url = f"{server.url}/formgrader/submissions/{submission}/?token={server.token}"
        with urllib.request.urlopen(url, timeout=120) as answer:
            page = answer.read().decode("utf-8")
    assert "Mallory" in page and "formgrader" in page, page[:3000]
    assert _live_markup(page) == []
    assert _spoofing_markup(page) == []
    _assert_markdown_kept(page)


@pytest.mark.slow
def test_a_student_id_with_escapes_is_written_out_in_the_terminal_and_the_log(hostile_class):
    root, said = hostile_class
    log = (root / course.LOG_NAME).read_text(encoding="utf-8")
    assert "\x1b" not in said and "\x1b" not in log
    assert "eve\\x1b[2J/autograd/01_autograd_basics: " in log, "nbgrader's line for the notebook, escaped"
    assert any(line.startswith("eve\\x1b[2J ") for line in said.splitlines()), "the score table, escaped"
    assert stat.S_IMODE((root / course.LOG_NAME).stat().st_mode) == 0o600

    # a line break in a student id: nbgrader cannot match its folder (it would stop the class after its start-up);
    # said at once, escaped
    (root / "submitted" / NEWLINE_ID / course.ASSIGNMENT).mkdir(parents=True)
    shutil.copy(root / "submitted" / "mallory" / course.ASSIGNMENT / f"{NOTEBOOK}.ipynb",
                root / "submitted" / NEWLINE_ID / course.ASSIGNMENT)
    try:
        done = subprocess.run([sys.executable, "-m", "grader.classroom.course", "autograde", "--root", str(root)], cwd=REPO,
                              env=_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(root / "submitted" / NEWLINE_ID)
    said = done.stdout + done.stderr
    assert done.returncode != 0 and "\x1b" not in said and "eve\\x1b[2J\\nrm/" in said, said
    assert "rename that folder" in said and not any(line.startswith("rm") for line in said.splitlines()), said


# --- end to end: the gradebook's password -------------------------------------------------------------------------


def _with_password(url: str, password: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(password=password).render_as_string(hide_password=False)


def _watch_command_lines(secret: str, seen: list[str], stop: threading.Event) -> None:
    """Every process's command line, read from /proc as often as possible until ``stop``: those holding ``secret``."""
    mine = os.getpid()
    while not stop.is_set():
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == mine:
                continue
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    line = f.read().decode("utf-8", "replace").replace("\0", " ")
            except OSError:
                continue
            if secret in line and line not in seen:
                seen.append(line)
        stop.wait(0.02)


@pytest.mark.slow
@pytest.mark.skipif(not AVAILABLE, reason=f"sandbox unavailable: {WHY}")
def test_the_gradebook_password_is_on_no_command_line_log_or_message(postgres_url, tmp_path,  # noqa: F811
                                                                     released_template):
    password = "Pw-" + os.urandom(6).hex()
    db_url = _with_password(postgres_url, password)  # (the test's server trusts its socket: any password works)
    template = released_template  # (conftest's, made once: copied below)
    root = tmp_path / "course"
    shutil.copytree(template, root, symlinks=True)
    (root / "gradebook.db").unlink()
    answers = course.answer_sources(REPO / "solutions" / course.ASSIGNMENT)
    for student in ("ada", "bob"):
        course.build_submission(root / "release" / course.ASSIGNMENT, answers, tmp_path / "built" / student)
        (root / "submitted" / student / course.ASSIGNMENT).mkdir(parents=True)
        shutil.copy(tmp_path / "built" / student / f"{NOTEBOOK}.ipynb", root / "submitted" / student / course.ASSIGNMENT)

    seen: list[str] = []
    stop = threading.Event()
    watcher = threading.Thread(target=_watch_command_lines, args=(password, seen, stop), daemon=True)
    watcher.start()
    try:
        done = subprocess.run([sys.executable, "-m", "grader.classroom.course", "autograde", "--root", str(root), "--jobs", "2"],
                              cwd=REPO, env=_env(GRADER_DB_URL=db_url), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=900)
    finally:
        stop.set()
        watcher.join()
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-5000:]
    assert "2 nbgrader processes record them" in said and "2/2 notebooks graded" in said, said
    assert seen == [], f"command lines holding the password: {seen}"
    assert password not in said and hide_password(db_url) in said, said
    logs = [root / course.LOG_NAME, root / "nbgrader-job1.log", root / "nbgrader-job2.log"]
    for log in logs:
        text = log.read_text(encoding="utf-8")
        assert password not in text, f"{log}: {text[-3000:]}"
        assert stat.S_IMODE(log.stat().st_mode) == 0o600, f"{log} is readable by others"
    assert "generate_assignment" in logs[0].read_text() and "grader.classroom.nbgrader_job" in logs[1].read_text()

    # an unreachable gradebook: the message names it without the password
    wrong = _with_password(postgres_url.replace("/gradebook?", "/no_such_database?"), password)
    done = subprocess.run([sys.executable, "-m", "grader.classroom.course", "autograde", "--root", str(root)],
                          cwd=REPO, env=_env(GRADER_DB_URL=wrong), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode != 0 and "cannot reach the gradebook" in said and "no_such_database" in said, said
    assert password not in said, said
